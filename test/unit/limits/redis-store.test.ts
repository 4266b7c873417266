import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisLimitStore, RedisStoreError } from "../../../src/limits/redis-store.js";
import type { Reservation } from "../../../src/limits/store.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../../helpers/redis-server.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const LIMIT = 4;
/** Bound that proves "fails fast rather than hangs"; the store's own timeout is 500 ms. */
const FAST_MS = 2_000;

/** Injected clock: an arbitrary instant, far from Redis's own time, to show Redis TIME is not used. */
const T0 = Date.UTC(2026, 2, 14, 9, 30);

let keyCounter = 0;
/** A fresh logical key per test: the server is shared by the whole file. */
function freshKey(kind = "balances"): string {
  keyCounter++;
  return `PSDDE-BAFIN-123456|account-${keyCounter}|${kind}`;
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

function allowedCount(reservations: readonly Reservation[]): number {
  return reservations.filter((r) => r.allowed).length;
}

async function noScriptErrors(admin: Redis): Promise<number> {
  const errorStats = await admin.info("errorstats");
  return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(errorStats)?.[1] ?? 0);
}

async function elapsedMs(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

describeWithRedis("RedisLimitStore on a real redis-server", () => {
  let server: RedisServer;
  let store: RedisLimitStore;
  const opened: RedisLimitStore[] = [];
  const rawClients: Redis[] = [];

  async function openStore(keyPrefix?: string): Promise<RedisLimitStore> {
    const created = new RedisLimitStore({ url: server.url, ...(keyPrefix ? { keyPrefix } : {}) });
    opened.push(created);
    await eventually(() => created.ready());
    return created;
  }

  function rawClient(): Redis {
    const client = new Redis(server.url);
    rawClients.push(client);
    return client;
  }

  beforeAll(async () => {
    server = await startRedisServer();
    store = await openStore();
  });

  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()));
    await Promise.all(rawClients.map((c) => c.quit().catch(() => c.disconnect())));
    await server?.stop();
  });

  describe("rolling window on the injected clock", () => {
    it("allows 4, refuses the 5th until the oldest slot leaves, then exactly one more", async () => {
      const key = freshKey();
      for (const [i, at] of [0, 1 * HOUR, 2 * HOUR, 3 * HOUR].entries()) {
        expect(await store.reserve(key, LIMIT, DAY, T0 + at)).toMatchObject({ allowed: true, used: i + 1 });
      }

      // The slot taken at T0 leaves the window (now − 24 h, now] at T0 + 24 h exactly.
      expect(await store.reserve(key, LIMIT, DAY, T0 + 23 * HOUR + 59 * MINUTE)).toEqual({
        allowed: false,
        retryAfterMs: MINUTE,
        used: 4,
      });
      expect(await store.reserve(key, LIMIT, DAY, T0 + DAY - 1)).toEqual({
        allowed: false,
        retryAfterMs: 1,
        used: 4,
      });
      expect(await store.reserve(key, LIMIT, DAY, T0 + DAY)).toMatchObject({ allowed: true, used: 4 });

      // Only that one slot was freed: the next waits for the slot taken at T0 + 1 h.
      expect(await store.reserve(key, LIMIT, DAY, T0 + DAY + 1)).toEqual({
        allowed: false,
        retryAfterMs: HOUR - 1,
        used: 4,
      });
    });

    it("is not a calendar day: 4 calls late on one day still count early the next", async () => {
      const key = freshKey("transactions");
      const lateEvening = Date.UTC(2026, 2, 14, 23, 0);
      for (let i = 0; i < LIMIT; i++) {
        expect((await store.reserve(key, LIMIT, DAY, lateEvening + i * MINUTE)).allowed).toBe(true);
      }
      const afterMidnight = Date.UTC(2026, 2, 15, 0, 1);
      expect(await store.reserve(key, LIMIT, DAY, afterMidnight)).toEqual({
        allowed: false,
        retryAfterMs: lateEvening + DAY - afterMidnight,
        used: 4,
      });
    });

    it("refuses every call under a limit of 0, retrying after a whole window", async () => {
      expect(await store.reserve(freshKey(), 0, DAY, T0)).toEqual({
        allowed: false,
        retryAfterMs: DAY,
        used: 0,
      });
    });

    it("refuses a bad window, limit or clock before asking Redis, without counting an error", async () => {
      const errorsBefore = store.stats.errors;
      await expect(store.reserve(freshKey(), LIMIT, 0, T0)).rejects.toThrow(RangeError);
      await expect(store.reserve(freshKey(), LIMIT, 1.5, T0)).rejects.toThrow(RangeError);
      await expect(store.reserve(freshKey(), -1, DAY, T0)).rejects.toThrow(RangeError);
      await expect(store.reserve(freshKey(), LIMIT, DAY, Number.NaN)).rejects.toThrow(RangeError);
      expect(store.stats.errors).toBe(errorsBefore);
    });
  });

  describe("release", () => {
    it("gives the slot back, so the next call is allowed", async () => {
      const key = freshKey();
      const slots: Reservation[] = [];
      for (let i = 0; i < LIMIT; i++) slots.push(await store.reserve(key, LIMIT, DAY, T0 + i));
      expect((await store.reserve(key, LIMIT, DAY, T0 + 10)).allowed).toBe(false);

      const second = slots[1];
      if (!second?.allowed) throw new Error("the second slot should have been allowed");
      await store.release(key, second.slotId);

      expect(await store.reserve(key, LIMIT, DAY, T0 + 11)).toMatchObject({ allowed: true, used: 4 });
      expect((await store.reserve(key, LIMIT, DAY, T0 + 12)).allowed).toBe(false);
    });

    it("ignores an unknown slot id and a key never used", async () => {
      const key = freshKey();
      await store.reserve(key, LIMIT, DAY, T0);
      await expect(store.release(key, "no-such-slot")).resolves.toBeUndefined();
      await expect(store.release(freshKey(), "no-such-slot")).resolves.toBeUndefined();
      expect(await store.reserve(key, LIMIT, DAY, T0 + 1)).toMatchObject({ allowed: true, used: 2 });
    });
  });

  describe("concurrency", () => {
    it("lets exactly 4 of 50 parallel reservations on one key through", async () => {
      const key = freshKey();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.reserve(key, LIMIT, DAY, T0 + i)),
      );
      expect(allowedCount(results)).toBe(4);
      expect(results.filter((r) => !r.allowed).every((r) => r.used === 4)).toBe(true);
    });

    it("enforces one limit between two gateways sharing the Redis (two stores, two connections)", async () => {
      const [gatewayA, gatewayB] = [await openStore(), await openStore()];
      const key = freshKey();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 ? gatewayA : gatewayB).reserve(key, LIMIT, DAY, T0 + i)),
      );
      expect(allowedCount(results)).toBe(4);
    });
  });

  describe("replay protection", () => {
    it("reports a key as seen on the second call, and as new again after its time to live", async () => {
      const key = `signature-${freshKey()}`;
      expect(await store.checkAndRecord(key, 200)).toBe(false);
      expect(await store.checkAndRecord(key, 200)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await store.checkAndRecord(key, 200)).toBe(false);
    });

    it("keeps replay keys apart from window keys of the same name", async () => {
      const key = freshKey();
      await store.reserve(key, LIMIT, DAY, T0);
      expect(await store.checkAndRecord(key, 10_000)).toBe(false);
      expect(await store.reserve(key, LIMIT, DAY, T0 + 1)).toMatchObject({ allowed: true, used: 2 });
    });
  });

  describe("keys from attacker-influenced input", () => {
    const tricky = [
      "{",
      "}",
      "{}",
      "a{b}c",
      "a{b}c:",
      "a:{b}:c",
      "{a}",
      "a}",
      ":",
      "::w",
      "Überweisung-€-账户-🔑",
      "e\u0301", // e + combining accent: a different string from the precomposed é
      "\u00e9",
      "",
    ];

    it("gives every key its own window", async () => {
      const prefixed = await openStore("t-keys:");
      for (const key of tricky) {
        expect(await prefixed.reserve(key, 1, DAY, T0), JSON.stringify(key)).toMatchObject({ allowed: true });
      }
      for (const key of tricky) {
        expect((await prefixed.reserve(key, 1, DAY, T0 + 1)).allowed, JSON.stringify(key)).toBe(false);
      }
    });

    it("stores each under prefix, a brace-free hash tag and a suffix", async () => {
      const prefixed = await openStore("t-shape:");
      for (const key of tricky) {
        await prefixed.reserve(key, 1, DAY, T0);
        await prefixed.checkAndRecord(key, 60_000);
      }
      const stored = await rawClient().keys("t-shape:*");
      expect(stored).toHaveLength(tricky.length * 2);
      for (const name of stored) expect(name).toMatch(/^t-shape:\{[A-Za-z0-9_-]{43}\}:[wr]$/);
    });

    it("refuses a key prefix with braces, which would capture the hash tag", () => {
      expect(() => new RedisLimitStore({ client: rawClient(), keyPrefix: "gw{1}:" })).toThrow(/keyPrefix/);
    });
  });

  describe("an injected client", () => {
    it("is used as it is and left open by close()", async () => {
      const client = rawClient();
      const injected = new RedisLimitStore({ client });
      await eventually(() => injected.ready());
      expect((await injected.reserve(freshKey(), LIMIT, DAY, T0)).allowed).toBe(true);
      await injected.close();
      expect(await client.ping()).toBe("PONG");
    });
  });

  describe("Redis failing and coming back (runs last: it restarts the shared server)", () => {
    it("recovers when the script cache is flushed under a live connection (NOSCRIPT)", async () => {
      const key = freshKey();
      const admin = rawClient();
      expect((await store.reserve(key, LIMIT, DAY, T0)).allowed).toBe(true);
      await admin.script("FLUSH");
      const refusedBefore = await noScriptErrors(admin);
      expect(await store.reserve(key, LIMIT, DAY, T0 + 1)).toMatchObject({ allowed: true, used: 2 });
      // Proof that the EVALSHA really met the empty cache and the client fell back to EVAL.
      expect(await noScriptErrors(admin)).toBe(refusedBefore + 1);
    });

    it("times out against a Redis that does not answer, and takes back the slot it may have taken", async () => {
      const key = freshKey();
      const errorsBefore = store.stats.errors;
      server.freeze();
      try {
        const took = await elapsedMs(() =>
          expect(store.reserve(key, 1, DAY, T0)).rejects.toThrow(/reserve failed: Command timed out/),
        );
        expect(took).toBeLessThan(FAST_MS);
        expect(store.stats.errors).toBe(errorsBefore + 1);
        expect(await store.ready()).toBe(false);
      } finally {
        server.thaw();
      }
      // Redis ran the script once it woke, then the release sent after it: the slot is free.
      expect(await store.reserve(key, 1, DAY, T0 + 1)).toMatchObject({ allowed: true, used: 1 });
    });

    it("fails fast while Redis is down and recovers on its own when it returns", async () => {
      const key = freshKey();
      expect((await store.reserve(key, LIMIT, DAY, T0)).allowed).toBe(true);
      const errorsBefore = store.stats.errors;

      await server.kill();
      for (const operation of [
        () => store.reserve(key, LIMIT, DAY, T0 + 1),
        () => store.release(key, "any-slot"),
        () => store.checkAndRecord(`signature-${key}`, 60_000),
      ]) {
        const took = await elapsedMs(() => expect(operation()).rejects.toThrow(RedisStoreError));
        expect(took).toBeLessThan(FAST_MS);
      }
      expect(store.stats.errors).toBe(errorsBefore + 3);
      expect(store.stats.evictions).toBe(0);
      expect(await store.ready()).toBe(false);

      // Same port, empty data and empty script cache: the store reconnects and sends the Lua again.
      await server.start();
      await eventually(() => store.ready());
      expect(await store.reserve(key, LIMIT, DAY, T0 + 2)).toMatchObject({ allowed: true, used: 1 });
      expect(await store.checkAndRecord(`signature-${key}`, 60_000)).toBe(false);
      expect(store.stats.errors).toBe(errorsBefore + 3);
    });
  });
});
