/**
 * A real Redis Cluster on free loopback ports, owned by one test file: three primaries, slots split
 * by hand with CLUSTER ADDSLOTSRANGE, joined with CLUSTER MEET (each with its own bus port). Built
 * from `startRedisServer`, so a missing `redis-server` skips on a developer machine and fails in CI
 * (`describeWithRedis`).
 */

import { Redis } from "ioredis";
import { freeLoopbackPort, type RedisServer, startRedisServer, waitFor } from "./redis-server.js";

export interface RedisClusterServers {
  readonly nodes: readonly RedisServer[];
  /** Startup nodes for the gateway's `store.cluster`. */
  readonly startupNodes: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

const SLOTS = 16384;

export async function startRedisCluster(primaries = 3): Promise<RedisClusterServers> {
  const nodes: RedisServer[] = [];
  const busPorts: number[] = [];
  try {
    for (let i = 0; i < primaries; i++) {
      // The cluster bus would default to port + 10000, which may lie beyond 65535 or be taken.
      const busPort = await freeLoopbackPort();
      busPorts.push(busPort);
      nodes.push(
        await startRedisServer({
          args: () => [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "2000",
            "--cluster-port",
            String(busPort),
          ],
        }),
      );
    }
    const clients = nodes.map((n) => new Redis(n.port, "127.0.0.1", { lazyConnect: false }));
    try {
      for (const [i, client] of clients.entries()) {
        const first = Math.floor((SLOTS * i) / primaries);
        const last = Math.floor((SLOTS * (i + 1)) / primaries) - 1;
        await client.call("CLUSTER", "ADDSLOTSRANGE", first, last);
      }
      for (const [i, node] of nodes.entries()) {
        if (i > 0) await clients[0]!.call("CLUSTER", "MEET", "127.0.0.1", node.port, busPorts[i]!);
      }
      await waitFor(async () => {
        for (const client of clients) {
          const info = String(await client.call("CLUSTER", "INFO"));
          if (!info.includes("cluster_state:ok") || !info.includes(`cluster_known_nodes:${primaries}`)) {
            return false;
          }
        }
        return true;
      }, "the cluster to reach cluster_state:ok");
    } finally {
      for (const client of clients) client.disconnect();
    }
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
  return {
    nodes,
    startupNodes: nodes.map((n) => ({ host: "127.0.0.1", port: n.port })),
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
