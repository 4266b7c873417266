/**
 * Two gateways sharing a real Redis Cluster of three primaries (`store.cluster`): one limit and
 * one replay record between them, every script on one hash slot, and the keys spread over all
 * three primaries (so the test is not passing on one node by luck).
 */

import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { RedisLimitStore } from "../../src/limits/redis-store.js";
import { prepareSignedCall, send, startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { type RedisClusterServers, startRedisCluster } from "../helpers/redis-cluster.js";
import { describeWithRedis } from "../helpers/redis-server.js";
import {
  expectLimitOfFiftyAcross,
  expectReplayRefusedAcross,
  UNATTENDED,
} from "../helpers/shared-store-gateways.js";

describeWithRedis("two gateways sharing a Redis Cluster (3 primaries)", () => {
  let cluster: RedisClusterServers;
  let backend: RecordingBackend;
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    backend = await startRecordingBackend();
    const config = { store: { type: "redis" as const, cluster: [...cluster.startupNodes] } };
    a = await startTestGateway({ backendUrl: backend.url, config });
    // The second gateway knows one startup node only: it learns the rest from the slot map.
    b = await startTestGateway({
      backendUrl: backend.url,
      config: { store: { type: "redis" as const, cluster: [cluster.startupNodes[2]!] } },
    });
  }, 60_000);
  afterAll(async () => {
    await a?.close(1_000);
    await b?.close(1_000);
    await backend?.close();
    await cluster?.stop();
  });
  beforeEach(() => backend.reset());

  it("let exactly four of 50 concurrent unattended calls through, split between the gateways", () =>
    expectLimitOfFiftyAcross(a, b, backend, "cl-shared"));

  it("refuse a replay across the gateways", () => expectReplayRefusedAcross(a, b));

  it("spread many accounts' windows over all three primaries, four calls each", async () => {
    const accounts = Array.from({ length: 24 }, (_, i) => `cl-spread-${i}`);
    const calls = await Promise.all(
      accounts.flatMap((account) =>
        Array.from({ length: 5 }, () =>
          prepareSignedCall({
            signer: a.pki.tppA.qseal,
            target: `/v1/accounts/${account}/balances`,
            ...UNATTENDED,
          }),
        ),
      ),
    );
    const results = await Promise.all(
      calls.map((p, i) => send(i % 2 ? a : b, p.method, p.target, p.headers)),
    );
    for (const account of accounts) {
      const mine = results.filter((_, i) => calls[i]!.target.includes(`/${account}/`));
      expect(mine.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429]);
    }
    // Every primary holds some of the windows: the gateways really used the whole cluster.
    const perNode = await Promise.all(
      cluster.nodes.map(async (node) => {
        const client = new Redis(node.port, "127.0.0.1");
        try {
          return (await client.keys("psd2gw:{*}:w")).length;
        } finally {
          client.disconnect();
        }
      }),
    );
    for (const count of perNode) expect(count).toBeGreaterThan(0);
  });
});

describeWithRedis("the Redis store's keys on a Redis Cluster", () => {
  let cluster: RedisClusterServers;
  let client: Cluster;
  let store: RedisLimitStore;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    client = new Cluster([...cluster.startupNodes]);
    store = new RedisLimitStore({ client });
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    client?.disconnect();
    await cluster?.stop();
  });

  it("put the keys of each script call, and each account's window and replay record, on one slot", async () => {
    // Every key the store builds for one limit key, as Redis itself hashes it (CLUSTER KEYSLOT).
    const slot = async (key: string) => Number(await client.call("CLUSTER", "KEYSLOT", key));
    const slots = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const key = `tpp|PSDNO-FSA-123|acc-${i}|balances${i % 3 === 0 ? "|{}{}" : ""}`;
      const windowSlot = await slot(store.windowKey(key));
      expect(await slot(store.replayKey(key))).toBe(windowSlot);
      slots.add(windowSlot);
    }
    // …and the keys of different accounts spread out (no shared tag pins them all to one slot).
    expect(slots.size).toBeGreaterThan(150);
  });

  it("run the reserve script, the give-back and the replay record on the cluster without CROSSSLOT", async () => {
    const now = Date.UTC(2026, 2, 14, 9, 30);
    for (let i = 0; i < 30; i++) {
      const key = `acc-${i}`;
      const first = await store.reserve(key, 1, 60_000, now);
      expect(first.allowed).toBe(true);
      expect((await store.reserve(key, 1, 60_000, now + 1)).allowed).toBe(false);
      if (first.allowed) await store.release(key, first.slotId);
      expect((await store.reserve(key, 1, 60_000, now + 2)).allowed).toBe(true);
      expect(await store.checkAndRecord(`replay-${i}`, 60_000)).toBe(false);
      expect(await store.checkAndRecord(`replay-${i}`, 60_000)).toBe(true);
    }
  });
});
