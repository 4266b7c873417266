/**
 * The LimitStore contract (src/limits/store.ts), run against both stores: the memory store on an
 * injected clock and the Redis store on a real redis-server (test/helpers/redis-server.ts: skipped
 * with the reason on a machine without one, failing in CI). Then what only one of them does: the
 * memory store's size bound and snapshot, the Redis store's key layout, shared state, client
 * handling and failures.
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LimitStore, MemoryLimitStore, type Reservation } from "../../../src/limits/index.js";
import { RedisLimitStore, RedisStoreError } from "../../../src/limits/redis-store.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../../helpers/redis-server.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const LIMIT = 4;

/** The `now` handed to reserve(): an arbitrary instant, far from the real time (Redis TIME is not used). */
const T0 = Date.UTC(2026, 2, 14, 9, 30);

function manualClock(start = Date.UTC(2026, 10, 22, 8)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

function allowedCount(reservations: readonly Reservation[]): number {
  return reservations.filter((r) => r.allowed).length;
}

// ---------------------------------------------------------------------------------------------
// One redis-server for the whole file, started when a test first needs it.

let redisServer: Promise<RedisServer> | undefined;
const redis = () => (redisServer ??= startRedisServer());
const openedRedisStores: RedisLimitStore[] = [];
const rawClients: Redis[] = [];

async function openRedisStore(options: { keyPrefix?: string } = {}): Promise<RedisLimitStore> {
  const created = new RedisLimitStore({ url: (await redis()).url, ...options });
  openedRedisStores.push(created);
  await eventually(() => created.ready());
  return created;
}

async function rawClient(): Promise<Redis> {
  const client = new Redis((await redis()).url);
  rawClients.push(client);
  return client;
}

afterAll(async () => {
  await Promise.all(openedRedisStores.map((s) => s.close()));
  await Promise.all(rawClients.map((c) => c.quit().catch(() => c.disconnect())));
  await (await redisServer)?.stop();
});

// ---------------------------------------------------------------------------------------------
// The contract.

interface OpenedStore {
  readonly store: LimitStore;
  /** Lets `ms` pass on the clock its expiry runs on (memory: the injected clock; Redis: real time). */
  elapse(ms: number): Promise<void>;
}

interface StoreKind {
  /** `describe`, or `describeWithRedis` for a store that needs redis-server. */
  readonly suite: (name: string, body: () => void) => void;
  /** A new, empty store. */
  open(): Promise<OpenedStore>;
}

let prefixes = 0;
const STORES: [string, StoreKind][] = [
  [
    "memory",
    {
      suite: describe,
      async open() {
        const clock = manualClock();
        const store = new MemoryLimitStore({ maxWindows: 1000, maxReplayKeys: 1000, now: clock.now });
        return { store, elapse: async (ms) => void clock.advance(ms) };
      },
    },
  ],
  [
    "Redis",
    {
      suite: describeWithRedis,
      async open() {
        // Its own key prefix: empty, although the server is shared by the file.
        const store = await openRedisStore({ keyPrefix: `contract-${++prefixes}:` });
        // Redis expires keys on its own clock, to the millisecond; the margin covers the round trips.
        return { store, elapse: (ms) => sleep(ms + 100) };
      },
    },
  ],
];

describe.each(STORES)("%s store", (_kind, kind) => {
  kind.suite("keeps the LimitStore contract", () => {
    const KEY = "PSDDE-BAFIN-123456|account-1|balances";

    it("starts ready, having counted nothing", async () => {
      const { store } = await kind.open();
      expect(await store.ready()).toBe(true);
      expect(store.stats).toEqual({ evictions: 0, errors: 0 });
    });

    it("allows 4, refuses the 5th until the oldest slot leaves, then exactly one more", async () => {
      const { store } = await kind.open();
      for (const [i, at] of [0, 1 * HOUR, 2 * HOUR, 3 * HOUR].entries()) {
        expect(await store.reserve(KEY, LIMIT, DAY, T0 + at)).toMatchObject({ allowed: true, used: i + 1 });
      }

      // The slot taken at T0 leaves the window (now − 24 h, now] at T0 + 24 h exactly.
      expect(await store.reserve(KEY, LIMIT, DAY, T0 + 23 * HOUR + 59 * MINUTE)).toEqual({
        allowed: false,
        retryAfterMs: MINUTE,
        used: 4,
      });
      expect(await store.reserve(KEY, LIMIT, DAY, T0 + DAY - 1)).toEqual({
        allowed: false,
        retryAfterMs: 1,
        used: 4,
      });
      expect(await store.reserve(KEY, LIMIT, DAY, T0 + DAY)).toMatchObject({ allowed: true, used: 4 });

      // Only that one slot was freed: the next waits for the slot taken at T0 + 1 h.
      expect(await store.reserve(KEY, LIMIT, DAY, T0 + DAY + 1)).toEqual({
        allowed: false,
        retryAfterMs: HOUR - 1,
        used: 4,
      });
    });

    it("keeps a rolling 24 h window, exact to the millisecond", async () => {
      const { store } = await kind.open();
      // Four calls at 0 h, 1 h, 2 h, 3 h.
      for (let i = 0; i < 4; i++)
        expect((await store.reserve(KEY, 4, DAY, T0 + i * HOUR)).allowed).toBe(true);
      // At 23:59 the window still holds all four: refused, and told when the 0 h call leaves it.
      expect(await store.reserve(KEY, 4, DAY, T0 + DAY - MINUTE)).toEqual({
        allowed: false,
        retryAfterMs: MINUTE,
        used: 4,
      });
      // 1 ms before 24 h the 0 h call is still inside the window (now − 24 h, now]: no.
      expect((await store.reserve(KEY, 4, DAY, T0 + DAY - 1)).allowed).toBe(false);
      // Past 24 h it has left: exactly one more call.
      expect((await store.reserve(KEY, 4, DAY, T0 + DAY + 1)).allowed).toBe(true);
      expect((await store.reserve(KEY, 4, DAY, T0 + DAY + 2)).allowed).toBe(false);
      // The 1 h call leaves at 25 h, not before.
      expect((await store.reserve(KEY, 4, DAY, T0 + DAY + HOUR - 1)).allowed).toBe(false);
      expect((await store.reserve(KEY, 4, DAY, T0 + DAY + HOUR + 1)).allowed).toBe(true);
    });

    it("is not a calendar day: 4 calls late on one day still count early the next", async () => {
      const { store } = await kind.open();
      const lateEvening = Date.UTC(2026, 2, 14, 23, 0);
      for (let i = 0; i < LIMIT; i++) {
        expect((await store.reserve(KEY, LIMIT, DAY, lateEvening + i * MINUTE)).allowed).toBe(true);
      }
      const afterMidnight = Date.UTC(2026, 2, 15, 0, 1);
      expect(await store.reserve(KEY, LIMIT, DAY, afterMidnight)).toEqual({
        allowed: false,
        retryAfterMs: lateEvening + DAY - afterMidnight,
        used: 4,
      });
    });

    it("gives a released slot back: exactly one more call, whatever unknown ids are released too", async () => {
      const { store } = await kind.open();
      const slots: Reservation[] = [];
      for (let i = 0; i < LIMIT; i++) slots.push(await store.reserve(KEY, LIMIT, DAY, T0 + i));
      expect((await store.reserve(KEY, LIMIT, DAY, T0 + 10)).allowed).toBe(false);

      const second = slots[1];
      if (!second?.allowed) throw new Error("the second slot should have been allowed");
      await store.release(KEY, second.slotId);
      await store.release(KEY, "no-such-slot");
      await store.release("other", "x");

      expect(await store.reserve(KEY, LIMIT, DAY, T0 + 11)).toMatchObject({ allowed: true, used: 4 });
      expect((await store.reserve(KEY, LIMIT, DAY, T0 + 12)).allowed).toBe(false);
    });

    it("ignores an unknown slot id and a key never used", async () => {
      const { store } = await kind.open();
      await store.reserve(KEY, LIMIT, DAY, T0);
      await expect(Promise.resolve(store.release(KEY, "no-such-slot"))).resolves.toBeUndefined();
      await expect(Promise.resolve(store.release("never-used", "no-such-slot"))).resolves.toBeUndefined();
      expect(await store.reserve(KEY, LIMIT, DAY, T0 + 1)).toMatchObject({ allowed: true, used: 2 });
    });

    it("lets exactly 4 of 50 parallel reservations on one key through", async () => {
      const { store } = await kind.open();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => store.reserve(KEY, LIMIT, DAY, T0 + i)),
      );
      expect(allowedCount(results)).toBe(4);
      expect(results.filter((r) => !r.allowed).every((r) => r.used === 4)).toBe(true);
    });

    it("reports a replay key as seen on the second call, and as new again after its time to live", async () => {
      const { store, elapse } = await kind.open();
      expect(await store.checkAndRecord("signature", 200)).toBe(false);
      expect(await store.checkAndRecord("signature", 200)).toBe(true);
      await elapse(201);
      expect(await store.checkAndRecord("signature", 200)).toBe(false);
    });

    it("keeps replay keys apart from window keys of the same name", async () => {
      const { store } = await kind.open();
      await store.reserve(KEY, LIMIT, DAY, T0);
      expect(await store.checkAndRecord(KEY, 10_000)).toBe(false);
      expect(await store.reserve(KEY, LIMIT, DAY, T0 + 1)).toMatchObject({ allowed: true, used: 2 });
    });

    it("gives every key from attacker-influenced input its own window", async () => {
      const { store } = await kind.open();
      for (const key of TRICKY_KEYS) {
        expect(await store.reserve(key, 1, DAY, T0), JSON.stringify(key)).toMatchObject({ allowed: true });
      }
      for (const key of TRICKY_KEYS) {
        expect((await store.reserve(key, 1, DAY, T0 + 1)).allowed, JSON.stringify(key)).toBe(false);
      }
    });
  });
});

/** Keys built from what a TPP sends (account ids, organisation ids): braces, separators, Unicode. */
const TRICKY_KEYS = [
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

// ---------------------------------------------------------------------------------------------
// Only the memory store.

describe("memory store only", () => {
  it("counts and reports evictions of windows that still held slots", () => {
    const evicted: string[] = [];
    const store = new MemoryLimitStore({
      maxWindows: 2,
      maxReplayKeys: 2,
      onEvict: (what, key) => evicted.push(`${what}:${key}`),
    });
    const now = Date.now();
    for (const key of ["a", "b", "c"]) store.reserve(key, 4, DAY, now);
    expect(store.stats.evictions).toBe(1);
    expect(evicted).toEqual(["window:a"]);
  });

  it("survives a restart through its snapshot, dropping what has expired meanwhile", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "psd2-snap-")), "limits.json");
    const c = manualClock();
    const first = new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: 10, snapshotFile: file, now: c.now });
    for (let i = 0; i < 4; i++) first.reserve("k", 4, DAY, c.now());
    first.checkAndRecord("sig", 120_000);
    await first.close();

    c.advance(60_000);
    const second = new MemoryLimitStore({
      maxWindows: 10,
      maxReplayKeys: 10,
      snapshotFile: file,
      now: c.now,
    });
    expect(second.reserve("k", 4, DAY, c.now()).allowed).toBe(false);
    expect(second.checkAndRecord("sig", 120_000)).toBe(true);

    c.advance(DAY);
    const third = new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: 10, snapshotFile: file, now: c.now });
    expect(third.reserve("k", 4, DAY, c.now()).allowed).toBe(true);
    expect(third.checkAndRecord("sig", 120_000)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Only the Redis store.

let keyCounter = 0;
/** A fresh logical key per test: the store below is shared by these tests. */
function freshKey(kind = "balances"): string {
  keyCounter++;
  return `PSDDE-BAFIN-123456|account-${keyCounter}|${kind}`;
}

async function noScriptErrors(admin: Redis): Promise<number> {
  const errorStats = await admin.info("errorstats");
  return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(errorStats)?.[1] ?? 0);
}

describeWithRedis("Redis store only (a real redis-server)", () => {
  let server: RedisServer;
  let store: RedisLimitStore;

  beforeAll(async () => {
    server = await redis();
    store = await openRedisStore();
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

  it("enforces one limit between two gateways sharing the Redis (two stores, two connections)", async () => {
    const [gatewayA, gatewayB] = [await openRedisStore(), await openRedisStore()];
    const key = freshKey();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 ? gatewayA : gatewayB).reserve(key, LIMIT, DAY, T0 + i)),
    );
    expect(allowedCount(results)).toBe(4);
  });

  it("stores each key under prefix, a brace-free hash tag and a suffix", async () => {
    const prefixed = await openRedisStore({ keyPrefix: "t-shape:" });
    for (const key of TRICKY_KEYS) {
      await prefixed.reserve(key, 1, DAY, T0);
      await prefixed.checkAndRecord(key, 60_000);
    }
    const all = await (await rawClient()).keys("t-shape:*");
    // Readiness writes one probe key of its own, which expires by itself.
    const probes = all.filter((name) => name.startsWith("t-shape:{probe}:"));
    const stored = all.filter((name) => !probes.includes(name));
    expect(probes.length).toBeLessThanOrEqual(1);
    for (const name of probes) expect(name).toMatch(/^t-shape:\{probe\}:[0-9a-f-]{36}$/);
    expect(stored).toHaveLength(TRICKY_KEYS.length * 2);
    for (const name of stored) expect(name).toMatch(/^t-shape:\{[A-Za-z0-9_-]{43}\}:[wr]$/);
  });

  it("refuses a key prefix with braces, which would capture the hash tag", async () => {
    const client = await rawClient();
    expect(() => new RedisLimitStore({ client, keyPrefix: "gw{1}:" })).toThrow(/keyPrefix/);
  });

  it("uses an injected client as it is and leaves it open on close()", async () => {
    const client = await rawClient();
    const injected = new RedisLimitStore({ client });
    await eventually(() => injected.ready());
    expect((await injected.reserve(freshKey(), LIMIT, DAY, T0)).allowed).toBe(true);
    await injected.close();
    expect(await client.ping()).toBe("PONG");
  });

  describe("Redis failing and coming back (runs last: it restarts the shared server)", () => {
    it("recovers when the script cache is flushed under a live connection (NOSCRIPT)", async () => {
      const key = freshKey();
      const admin = await rawClient();
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
        // The client's own command timeout ended it (not the test's): the store does not hang.
        await expect(store.reserve(key, 1, DAY, T0)).rejects.toThrow(/reserve failed: Command timed out/);
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
        // Refused at once, not held until Redis returns: the offline queue is off.
        const error = await operation().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(RedisStoreError);
        expect((error as Error).message).toMatch(/enableOfflineQueue/);
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
