/**
 * A real Redis Sentinel set on free loopback ports, owned by one test file: one primary, one
 * replica (or more), three Sentinels (`redis-server --sentinel`, the same Debian binary) with quorum 2 and a
 * short down-after-milliseconds, so a killed primary is replaced within a few seconds.
 */

import { Redis } from "ioredis";
import { type RedisServer, startRedisServer, waitFor } from "./redis-server.js";

export interface RedisSentinelSet {
  /** The name the Sentinels monitor (`store.name`). */
  readonly name: string;
  /** The servers as started: [0] the first primary, then its replicas. */
  readonly servers: readonly RedisServer[];
  readonly sentinels: readonly RedisServer[];
  readonly sentinelNodes: readonly { host: string; port: number }[];
  /** The port of the primary the Sentinels name now. */
  primaryPort(): Promise<number>;
  /** Resolves once the Sentinels name a primary other than the one on `oldPort`. */
  waitForFailover(oldPort: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/** down-after-milliseconds: how long the primary must be silent before the Sentinels act. */
export const SENTINEL_DOWN_AFTER_MS = 500;

export async function startRedisSentinelSet(name = "gw", replicaCount = 1): Promise<RedisSentinelSet> {
  const started: RedisServer[] = [];
  try {
    const primary = await startRedisServer();
    started.push(primary);
    const replicas: RedisServer[] = [];
    for (let i = 0; i < replicaCount; i++) {
      const replica = await startRedisServer({
        args: () => ["--replicaof", "127.0.0.1", String(primary.port)],
      });
      replicas.push(replica);
      started.push(replica);
    }
    for (const replica of replicas) {
      await waitFor(async () => {
        const client = new Redis(replica.port, "127.0.0.1");
        try {
          return String(await client.info("replication")).includes("master_link_status:up");
        } finally {
          client.disconnect();
        }
      }, "the replica to sync with the primary");
    }
    const sentinels: RedisServer[] = [];
    for (let i = 0; i < 3; i++) {
      const sentinel = await startRedisServer({
        sentinelConfig: () =>
          [
            `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
            `sentinel down-after-milliseconds ${name} ${SENTINEL_DOWN_AFTER_MS}`,
            `sentinel failover-timeout ${name} 5000`,
            `sentinel parallel-syncs ${name} 1`,
            "",
          ].join("\n"),
      });
      sentinels.push(sentinel);
      started.push(sentinel);
    }
    const ask = async (port: number): Promise<{ port: number; sentinels: number; replicas: number }> => {
      const client = new Redis(port, "127.0.0.1");
      try {
        const [, masterPort] = (await client.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)) as string[];
        const master = (await client.call("SENTINEL", "MASTER", name)) as string[];
        const field = (f: string) => Number(master[master.indexOf(f) + 1]);
        return {
          port: Number(masterPort),
          sentinels: field("num-other-sentinels"),
          replicas: field("num-slaves"),
        };
      } finally {
        client.disconnect();
      }
    };
    // Every Sentinel must know the others and the replica before a failover can be elected.
    await waitFor(async () => {
      const views = await Promise.all(sentinels.map((s) => ask(s.port)));
      return views.every((v) => v.sentinels === 2 && v.replicas === replicaCount);
    }, "the Sentinels to discover each other and the replica");
    const primaryPort = async () => (await ask(sentinels[0]!.port)).port;
    return {
      name,
      servers: [primary, ...replicas],
      sentinels,
      sentinelNodes: sentinels.map((s) => ({ host: "127.0.0.1", port: s.port })),
      primaryPort,
      waitForFailover: async (oldPort, timeoutMs = 20_000) => {
        let now = oldPort;
        await waitFor(
          async () => {
            now = await primaryPort();
            if (now === oldPort) return false;
            // Promoted: the new primary answers as a master.
            const client = new Redis(now, "127.0.0.1");
            try {
              return String(await client.info("replication")).includes("role:master");
            } finally {
              client.disconnect();
            }
          },
          "the Sentinels to promote the replica",
          timeoutMs,
        );
        return now;
      },
      stop: async () => {
        await Promise.all(started.map((s) => s.stop()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    throw error;
  }
}
