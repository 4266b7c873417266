/**
 * What the Redis store does beyond one URL: the `store` configuration for Sentinel and Cluster, a
 * slot whose reply was lost with its connection (given back once Redis answers again, so a crash
 * or a failover burns no quota), and WAIT for replicas (`replicaAcks`) before a granted slot or a
 * new replay record counts. Real redis-servers (test/helpers/redis-server.ts).
 */

import { connect, createServer, type Server, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateConfig } from "../../../src/config/load.js";
import { RedisLimitStore } from "../../../src/limits/redis-store.js";
import {
  describeWithRedis,
  type RedisServer,
  startRedisServer,
  waitFor,
} from "../../helpers/redis-server.js";

const BASE = { trust: { caDir: "/trust" }, register: { file: "/register.json" } };
const T0 = Date.UTC(2026, 2, 14, 9, 30);
const DAY = 86_400_000;

describe("the store configuration for Sentinel and Cluster", () => {
  const store = (s: object) => validateConfig({ ...BASE, store: { type: "redis", ...s } }).store;
  const refusal = (s: object, type = "redis") => {
    try {
      validateConfig({ ...BASE, store: { type, ...s } });
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error("accepted");
  };

  it("accepts Sentinels with the master group's name, and Cluster startup nodes", () => {
    expect(
      store({ sentinels: [{ host: "s1", port: 26379 }], name: "gw", sentinelPassword: "x", password: "y" }),
    ).toMatchObject({
      sentinels: [{ host: "s1", port: 26379 }],
      name: "gw",
      sentinelPassword: "x",
      password: "y",
    });
    expect(store({ cluster: [{ host: "r1", port: 6379 }], replicaAcks: 1 })).toMatchObject({
      cluster: [{ host: "r1", port: 6379 }],
      replicaAcks: 1,
    });
  });

  it("needs exactly one of url, sentinels and cluster, and says which", () => {
    expect(refusal({})).toContain("store.type redis needs one of store.url, store.sentinels");
    expect(refusal({ url: "redis://r:6379", cluster: [{ host: "r", port: 6379 }] })).toContain(
      "store.url and store.cluster: give exactly one way to reach Redis",
    );
    expect(refusal({ sentinels: [{ host: "s", port: 26379 }] })).toContain(
      "store.sentinels needs store.name, the master group",
    );
    expect(refusal({ url: "redis://r:6379", name: "gw" })).toContain(
      "store.name is the Sentinel master group",
    );
    expect(refusal({ cluster: [{ host: "r", port: 6379 }], sentinelPassword: "x" })).toContain(
      "store.sentinelPassword is only for store.sentinels",
    );
    expect(refusal({ url: "redis://r:6379", password: "x" })).toContain("the password goes in the URL");
    expect(refusal({ cluster: [] })).toContain("list at least one Cluster node");
    expect(refusal({ cluster: [{ host: "r", port: 70000 }] })).toContain("store.cluster.0.port");
    expect(refusal({ cluster: [{ host: "r", port: 6379, tls: true }] })).toContain('Unrecognized key: "tls"');
    expect(refusal({ cluster: [{ host: "r", port: 6379 }] }, "memory")).toContain(
      "store.cluster is for store.type redis, not memory",
    );
  });
});

/** A TCP relay whose replies can be swallowed, then the client's connection cut: a lost reply. */
async function startRelay(targetPort: number) {
  let swallow = false;
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (!swallow) client.write(d);
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    swallowReplies: (on: boolean) => {
      swallow = on;
    },
    cutAll: () => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describeWithRedis("the Redis store when a reply is lost with its connection", () => {
  let redis: RedisServer;
  let direct: Redis;
  beforeAll(async () => {
    redis = await startRedisServer();
    direct = new Redis(redis.url);
  });
  afterAll(async () => {
    direct?.disconnect();
    await redis?.stop();
  });

  it("gives the slot back once Redis answers again, so the TPP keeps all four", async () => {
    const relay = await startRelay(redis.port);
    const store = new RedisLimitStore({ url: relay.url, commandTimeoutMs: 2_000 });
    try {
      await waitFor(() => Promise.resolve(store.ready()), "the store to connect");
      expect((await store.reserve("acc-lost", 4, DAY, T0)).allowed).toBe(true);
      // The script runs in Redis, but its reply never comes back and the connection then drops.
      relay.swallowReplies(true);
      const lost = store.reserve("acc-lost", 4, DAY, T0 + 1);
      await waitFor(async () => (await direct.zcard(store.windowKey("acc-lost"))) === 2, "the script to run");
      relay.cutAll();
      await expect(lost).rejects.toThrow(/reserve failed/);
      expect(store.pendingReleaseCount).toBe(1);
      relay.swallowReplies(false);
      // The client reconnects on its own; on "ready" the owed give-back is sent.
      await waitFor(async () => store.pendingReleaseCount === 0, "the give-back to be sent");
      expect(await direct.zcard(store.windowKey("acc-lost"))).toBe(1);
      const more = [];
      for (let i = 2; i <= 5; i++) more.push((await store.reserve("acc-lost", 4, DAY, T0 + i)).allowed);
      expect(more).toEqual([true, true, true, false]);
    } finally {
      await store.close();
      await relay.close();
    }
  });
});

describeWithRedis("the Redis store waiting for a replica (replicaAcks)", () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let direct: Redis;
  let store: RedisLimitStore;
  beforeAll(async () => {
    primary = await startRedisServer();
    replica = await startRedisServer({ args: () => ["--replicaof", "127.0.0.1", String(primary.port)] });
    direct = new Redis(primary.url);
    const fromReplica = new Redis(replica.url);
    try {
      // Loaded what the primary sent, not only "online" in the primary's view.
      await waitFor(
        async () => String(await fromReplica.info("replication")).includes("master_link_status:up"),
        "the replica to sync",
      );
    } finally {
      fromReplica.disconnect();
    }
    store = new RedisLimitStore({ url: primary.url, replicaAcks: 1 });
    await waitFor(() => Promise.resolve(store.ready()), "the store to connect");
  });
  afterAll(async () => {
    await store?.close();
    direct?.disconnect();
    await replica?.stop();
    await primary?.stop();
  });

  it("acts on a slot and a replay record once the replica holds them", async () => {
    expect((await store.reserve("acc-wait", 4, DAY, T0)).allowed).toBe(true);
    expect(await store.checkAndRecord("replay-wait", 60_000)).toBe(false);
    expect(await store.checkAndRecord("replay-wait", 60_000)).toBe(true);
  });

  it("refuses (503 upstream) and gives the slot back when no replica acknowledges in time", async () => {
    replica.freeze();
    try {
      await expect(store.reserve("acc-nowait", 4, DAY, T0)).rejects.toThrow(
        /reached 0 of 1 replicas within 250 ms/,
      );
      await waitFor(async () => (await direct.zcard(store.windowKey("acc-nowait"))) === 0, "the give-back");
      await expect(store.checkAndRecord("replay-nowait", 60_000)).rejects.toThrow(
        /reached 0 of 1 replicas within 250 ms/,
      );
      // Connected, but not ready: its write probe waits for the replica as the calls do.
      const full = new RedisLimitStore({ url: primary.url, replicaAcks: 1 });
      try {
        await waitFor(
          async () => (await full.readiness()).reason === "replicas-behind",
          "the store to connect",
        );
        expect(await full.ready()).toBe(false);
        expect((await full.readiness()).detail).toMatch(/reached 0 of the 1 replicas replicaAcks asks for/);
        // A refusal needs no replica: nothing was granted.
        expect((await full.reserve("acc-zero", 0, DAY, T0)).allowed).toBe(false);
      } finally {
        await full.close();
      }
    } finally {
      replica.thaw();
    }
  });
});
