/**
 * Two gateways on a real Redis Sentinel set (`store.sentinels` + `store.name`: one primary, one
 * replica, three Sentinels, quorum 2) while the primary dies under load and the Sentinels promote
 * the replica: every account still gets exactly four unattended calls (no slot lost, none extra),
 * the gateways answer 503 while no primary is known, and replay records made before the failover
 * still refuse replays after it. The gateways WAIT for one replica (`store.replicaAcks`, 1 by
 * default with Sentinel) before acting on a granted slot or a new replay record.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { prepareSignedCall, send, startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { type RedisSentinelSet, startRedisSentinelSet } from "../helpers/redis-sentinel.js";
import { describeWithRedis } from "../helpers/redis-server.js";
import { UNATTENDED } from "../helpers/shared-store-gateways.js";

const LIMIT = 4;

describeWithRedis("two gateways on a Redis Sentinel set, through a failover", () => {
  let set: RedisSentinelSet;
  let backend: RecordingBackend;
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    set = await startRedisSentinelSet();
    backend = await startRecordingBackend();
    const config = { store: { type: "redis" as const, sentinels: [...set.sentinelNodes], name: set.name } };
    a = await startTestGateway({ backendUrl: backend.url, config });
    b = await startTestGateway({ backendUrl: backend.url, config });
  }, 60_000);
  afterAll(async () => {
    await a?.close(1_000);
    await b?.close(1_000);
    await backend?.close();
    await set?.stop();
  });

  it("lose no quota slot, let no call too many through, fail closed without a primary and keep replay records", async () => {
    const signer = a.pki.tppA.qseal;
    const call = async (gw: TestGateway, target: string, unattended = true) => {
      const p = await prepareSignedCall({ signer, target, ...(unattended ? UNATTENDED : {}) });
      return send(gw, p.method, p.target, p.headers);
    };

    // Replay records written before the failover.
    const recorded = await Promise.all(
      Array.from({ length: 5 }, () => prepareSignedCall({ signer, target: "/v1/accounts" })),
    );
    for (const p of recorded) expect((await send(a, p.method, p.target, p.headers)).status).toBe(200);

    // Load: three clients, unattended calls for 12 accounts spread over both gateways, until every
    // account has been refused once (429) or ran out of time.
    const accounts = Array.from({ length: 12 }, (_, i) => `fo-${i}`);
    const statuses = new Map<string, number[]>(accounts.map((acc) => [acc, []]));
    const codes = new Set<string>();
    let stop = false;
    let noPrimary = false;
    let refusedWithoutPrimary = 0;
    const done = (acc: string) => statuses.get(acc)!.includes(429);
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const open = accounts.filter((acc) => !done(acc));
        if (open.length === 0) return;
        const account = open[(n * 5 + w) % open.length]!;
        const r = await call((n + w) % 2 === 0 ? a : b, `/v1/accounts/${account}/balances`);
        statuses.get(account)!.push(r.status);
        if (r.status === 503) codes.add(r.json.tppMessages?.[0]?.code ?? "");
        if (r.status === 503 && noPrimary) refusedWithoutPrimary++;
        await sleep(25);
      }
    };
    const ok = () => [...statuses.values()].flat().filter((s) => s === 200).length;
    const workers = [0, 1, 2].map(worker);

    // Some slots taken, then the primary dies (SIGKILL: no goodbye, replies in flight lost).
    while (ok() < 12) await sleep(10);
    const oldPort = await set.primaryPort();
    const oldPrimary = set.servers.find((s) => s.port === oldPort)!;
    await oldPrimary.kill();
    noPrimary = true;
    const killedAt = Date.now();
    const newPort = await set.waitForFailover(oldPort);
    noPrimary = false;
    const failoverMs = Date.now() - killedAt;
    // The new primary has no replica until the old one returns, and the gateways WAIT for one:
    // bring it back; the Sentinels make it a replica of the new primary.
    await oldPrimary.start();

    const deadline = Date.now() + 45_000;
    while (accounts.some((acc) => !done(acc)) && Date.now() < deadline) await sleep(50);
    stop = true;
    await Promise.all(workers);

    // Slots given back late (their reply was lost with the primary) are free by now: each account
    // takes calls until refused, and in all it has had exactly four.
    await sleep(500);
    for (const account of accounts) {
      for (let i = 0; i < LIMIT + 1; i++) {
        const r = await call(i % 2 ? a : b, `/v1/accounts/${account}/balances`);
        statuses.get(account)!.push(r.status);
        if (r.status === 429) break;
      }
    }

    const all = [...statuses.values()].flat();
    console.info(
      `failover: primary ${oldPort} → ${newPort} in ${failoverMs} ms; ${all.length} calls: ` +
        `${all.filter((s) => s === 200).length}× 200, ${all.filter((s) => s === 429).length}× 429, ` +
        `${all.filter((s) => s === 503).length}× 503`,
    );
    expect(newPort).not.toBe(oldPort);
    expect(new Set(all)).toEqual(new Set([200, 429, 503]));
    expect([...codes]).toEqual(["SERVICE_UNAVAILABLE"]);
    // Between the kill and the promotion the gateways answered 503 (fail closed, the default).
    expect(refusedWithoutPrimary).toBeGreaterThan(0);
    for (const account of accounts) {
      const mine = statuses.get(account)!;
      expect({ account, ok: mine.filter((s) => s === 200).length }).toEqual({ account, ok: LIMIT });
      expect(backend.requests.filter((r) => r.target.includes(`/${account}/`))).toHaveLength(LIMIT);
    }

    // Replay records from before the failover survived it, and new ones are shared as before.
    for (const p of recorded) {
      const again = await send(b, p.method, p.target, p.headers);
      expect(again.status).toBe(400);
      expect(again.json.tppMessages?.[0]?.text).toContain("already used");
    }
    expect((await call(a, "/v1/accounts", false)).status).toBe(200);
  }, 120_000);
});
