/**
 * Ready means serving (issue 43): a gateway on a real Redis Sentinel set while its primary is
 * SIGKILLed under load. Signed calls (each one a replay record, written with the configured
 * `replicaAcks`) run throughout while /readyz is polled; a 503 counts against readiness when the
 * polls on both sides of it said ready. Goal: none. Three set-ups: one replica with
 * `replicaAcks: 1` (nothing can be granted until the old primary is back as a replica and synced),
 * two replicas with `replicaAcks: 1` (the other replica follows the new primary), and one replica
 * with `replicaAcks: 0`. Each prints its timeline: kill, promotion, not ready, ready, serving.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { afterAll, expect, it } from "vitest";
import { prepareSignedCall, send, startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { type RedisSentinelSet, startRedisSentinelSet } from "../helpers/redis-sentinel.js";
import { describeWithRedis } from "../helpers/redis-server.js";

interface Setup {
  readonly name: string;
  readonly replicas: number;
  readonly replicaAcks: 0 | 1;
  /** The killed primary is started again (as Kubernetes restarts a pod) once the failover is done. */
  readonly restart: boolean;
}

const SETUPS: readonly Setup[] = [
  { name: "one replica, replicaAcks 1", replicas: 1, replicaAcks: 1, restart: true },
  { name: "two replicas, replicaAcks 1", replicas: 2, replicaAcks: 1, restart: false },
  { name: "one replica, replicaAcks 0", replicas: 1, replicaAcks: 0, restart: false },
];

/** Serving again: this many answers in a row were 200. */
const SERVING_RUN = 20;

interface Sample {
  readonly at: number;
  readonly status: number;
}

async function readyzStatus(gw: TestGateway): Promise<number> {
  const r = await request(`${gw.gateway.adminUrl}/readyz`);
  await r.body.text();
  return r.statusCode;
}

/** Whether the /readyz polls just before and just after `at` both said ready. */
function readyAround(polls: readonly Sample[], at: number): boolean {
  const before = polls.filter((p) => p.at <= at).at(-1);
  const after = polls.find((p) => p.at > at);
  return before?.status === 200 && after?.status === 200;
}

describeWithRedis("/readyz through a Redis Sentinel failover under load", () => {
  const running: { set?: RedisSentinelSet; backend?: RecordingBackend; gw?: TestGateway } = {};
  afterAll(async () => {
    await running.gw?.close(1_000);
    await running.backend?.close();
    await running.set?.stop();
  });

  it.each(SETUPS)(
    "$name: ready only while calls are served (no 503 sent while ready)",
    async (setup) => {
      const set = await startRedisSentinelSet(`ready${setup.replicas}${setup.replicaAcks}`, setup.replicas);
      running.set = set;
      const backend = await startRecordingBackend();
      running.backend = backend;
      const gw = await startTestGateway({
        backendUrl: backend.url,
        config: {
          store: {
            type: "redis" as const,
            sentinels: [...set.sentinelNodes],
            name: set.name,
            replicaAcks: setup.replicaAcks,
          },
        },
      });
      running.gw = gw;
      try {
        const signer = gw.pki.tppA.qseal;
        const calls: Sample[] = [];
        const polls: Sample[] = [];
        let stop = false;
        const caller = (async () => {
          while (!stop) {
            const p = await prepareSignedCall({ signer, target: "/v1/accounts" });
            const r = await send(gw, p.method, p.target, p.headers);
            calls.push({ at: Date.now(), status: r.status });
            if (r.status === 503) {
              expect(r.headers["retry-after"]).toBe("5");
              expect(r.json.tppMessages?.[0]?.text).toContain("store is unavailable");
            }
            await sleep(15);
          }
        })();
        const poller = (async () => {
          while (!stop) {
            polls.push({ at: Date.now(), status: await readyzStatus(gw) });
            await sleep(50);
          }
        })();

        while (calls.filter((c) => c.status === 200).length < 10) await sleep(20);
        expect(polls.at(-1)?.status).toBe(200);
        const oldPort = await set.primaryPort();
        const oldPrimary = set.servers.find((s) => s.port === oldPort)!;
        const killedAt = Date.now();
        await oldPrimary.kill();
        const newPort = await set.waitForFailover(oldPort);
        const promotedAt = Date.now();
        if (setup.restart) await oldPrimary.start();
        const servingSince = async (): Promise<number | undefined> => {
          const after = calls.filter((c) => c.at > promotedAt);
          const firstFailure = after.findLastIndex((c) => c.status !== 200);
          const run = after.slice(firstFailure + 1);
          return run.length >= SERVING_RUN ? run[0]!.at : undefined;
        };
        // Until calls are served again and /readyz says so too (a failed call keeps it not ready for
        // up to a second, until the next write probe).
        const settled = async () => {
          const served = await servingSince();
          return served !== undefined && polls.some((p) => p.at > served && p.status === 200);
        };
        const deadline = Date.now() + 40_000;
        while (!(await settled()) && Date.now() < deadline) await sleep(50);
        stop = true;
        await Promise.all([caller, poller]);

        const servedAt = await servingSince();
        const refused = calls.filter((c) => c.status === 503);
        const refusedWhileReady = refused.filter((c) => readyAround(polls, c.at));
        const firstNotReady = polls.find((p) => p.at > killedAt && p.status !== 200)?.at;
        const readyAgain = polls.find((p) => p.at > (firstNotReady ?? killedAt) && p.status === 200)?.at;
        const since = (at: number | undefined) => (at === undefined ? "never" : `+${at - killedAt} ms`);
        console.info(
          `${setup.name}: killed ${oldPort}; not ready ${since(firstNotReady)}; promoted ${newPort} ${since(promotedAt)}; ` +
            `ready ${since(readyAgain)}; serving ${since(servedAt)}; ${calls.length} calls, ${refused.length}× 503, ` +
            `${refusedWhileReady.length} of them while ready`,
        );
        expect(newPort).not.toBe(oldPort);
        expect(new Set(calls.map((c) => c.status))).toEqual(new Set([200, 503]));
        expect(servedAt).toBeDefined();
        expect(firstNotReady).toBeDefined();
        expect(readyAgain).toBeDefined();
        expect(refusedWhileReady).toEqual([]);
      } finally {
        await gw.close(1_000);
        await backend.close();
        await set.stop();
        running.gw = undefined;
        running.backend = undefined;
        running.set = undefined;
      }
    },
    120_000,
  );
});
