/**
 * The memory store's replay records (issue 11, defect 5): they expire by time and are freed then,
 * also when no request arrives; they stay within maxReplayKeys; they never make a fresh request a
 * replay; and a record costs a fixed, small amount of memory whatever the request carried.
 */

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";
import { replayKeyFor } from "../../../src/limits/replay.js";

const WINDOW = 120_000;

function storeOn(clock: { now: number }, options: { max?: number; purgeIntervalMs?: number } = {}) {
  const evicted: string[] = [];
  const store = new MemoryLimitStore({
    maxWindows: 10,
    maxReplayKeys: options.max ?? 1_000_000,
    now: () => clock.now,
    purgeIntervalMs: options.purgeIntervalMs ?? 0,
    onEvict: (what, key) => evicted.push(`${what}:${key}`),
  });
  return { store, evicted };
}

describe("expiry", () => {
  it("purgeExpired frees every record whose window has passed, without any new request", () => {
    const clock = { now: 0 };
    const { store } = storeOn(clock);
    for (let i = 0; i < 5_000; i++) {
      clock.now = i;
      store.checkAndRecord(`rp|${i}`, WINDOW);
    }
    clock.now = WINDOW + 2_499; // the first 2,500 are due
    expect(store.purgeExpired()).toBe(2_500);
    expect(store.replayRecords).toBe(2_500);
    clock.now = WINDOW + 5_000;
    expect(store.purgeExpired()).toBe(2_500);
    expect(store.replayRecords).toBe(0);
  });

  it("the purge timer frees them while no request arrives, and stops on close()", async () => {
    const clock = { now: 0 };
    const { store } = storeOn(clock, { purgeIntervalMs: 5 });
    for (let i = 0; i < 100; i++) store.checkAndRecord(`rp|${i}`, WINDOW);
    clock.now = WINDOW;
    const deadline = Date.now() + 2_000;
    while (store.replayRecords > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(store.replayRecords).toBe(0);
    await store.close();
    store.checkAndRecord("rp|after-close", 1);
    clock.now = WINDOW + 10;
    await new Promise((r) => setTimeout(r, 30));
    expect(store.replayRecords).toBe(1);
  });

  it.each([
    ["refused up to the last millisecond of its window", WINDOW - 1, true],
    ["accepted again when its window has passed", WINDOW, false],
  ])("a record is %s", (_what, at, seen) => {
    const clock = { now: 0 };
    const { store } = storeOn(clock);
    store.checkAndRecord("rp|k", WINDOW);
    clock.now = at;
    expect(store.checkAndRecord("rp|k", WINDOW)).toBe(seen);
  });

  it("a short window behind a longer one (the window changed) ends on time, and its stale place is skipped", () => {
    const clock = { now: 0 };
    const { store } = storeOn(clock);
    store.checkAndRecord("rp|long", 10_000);
    store.checkAndRecord("rp|short", 100);
    clock.now = 100;
    expect(store.checkAndRecord("rp|short", 100)).toBe(false); // recorded anew, at the back
    expect(store.checkAndRecord("rp|short", 100)).toBe(true);
    clock.now = 10_000; // the long one and the stale copy of the short one go; the new short one too
    expect(store.purgeExpired()).toBe(2);
    expect(store.replayRecords).toBe(0);
  });
});

describe("the bound", () => {
  it("never holds more than maxReplayKeys; the oldest live record goes first and is reported", () => {
    const clock = { now: 0 };
    const { store, evicted } = storeOn(clock, { max: 3 });
    for (const key of ["rp|1", "rp|2", "rp|3", "rp|4", "rp|5"]) store.checkAndRecord(key, WINDOW);
    expect(store.replayRecords).toBe(3);
    expect(evicted).toEqual(["replay:rp|1", "replay:rp|2"]);
    expect(store.stats.evictions).toBe(2);
    expect(store.checkAndRecord("rp|5", WINDOW)).toBe(true);
    expect(store.checkAndRecord("rp|1", WINDOW)).toBe(false); // evicted: it could be replayed
  });

  it("an expired record is dropped, not counted as an eviction", () => {
    const clock = { now: 0 };
    const { store, evicted } = storeOn(clock, { max: 2 });
    store.checkAndRecord("rp|a", 100);
    store.checkAndRecord("rp|b", 100);
    clock.now = 100;
    store.checkAndRecord("rp|c", 100);
    store.checkAndRecord("rp|d", 100);
    expect(evicted).toEqual([]);
    expect(store.replayRecords).toBe(2);
  });

  it("keeps every record as it grows past its first allocation (1,024) up to the bound", () => {
    const clock = { now: 0 };
    const { store } = storeOn(clock, { max: 5_000 });
    for (let i = 0; i < 5_000; i++) {
      clock.now = i;
      expect(store.checkAndRecord(`rp|${i}`, WINDOW)).toBe(false);
      // Interleaved look-ups of older keys see them across the growth steps.
      if (i % 997 === 0) expect(store.checkAndRecord(`rp|${i >> 1}`, WINDOW)).toBe(true);
    }
    for (let i = 0; i < 5_000; i++) expect(store.checkAndRecord(`rp|${i}`, WINDOW)).toBe(true);
    expect(store.stats.evictions).toBe(0);
  });
});

describe("against a model (fast-check)", () => {
  type Op =
    | { kind: "record"; key: number; ttl: number }
    | { kind: "advance"; ms: number }
    | { kind: "purge" };
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant("record" as const),
        key: fc.nat({ max: 12 }),
        ttl: fc.constantFrom(50, 100, 1_000),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.nat({ max: 400 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("purge" as const) }) },
  );

  it("with room enough it answers exactly as a map of key → expiry; with less it never calls a fresh request a replay", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), fc.constantFrom(3, 5, 1_000), (ops, max) => {
        const clock = { now: 0 };
        const { store } = storeOn(clock, { max });
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === "advance") clock.now += o.ms;
          else if (o.kind === "purge") store.purgeExpired();
          else {
            const expected = (model.get(o.key) ?? Number.NEGATIVE_INFINITY) > clock.now;
            if (!expected) model.set(o.key, clock.now + o.ttl);
            const seen = store.checkAndRecord(`rp|${o.key}`, o.ttl);
            if (max >= 1_000) expect(seen).toBe(expected);
            else if (!expected) expect(seen).toBe(false);
            else if (!seen) model.set(o.key, clock.now + o.ttl); // forgotten by the bound, recorded anew
          }
          expect(store.replayRecords).toBeLessThanOrEqual(max);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("memory", () => {
  /** Heap in use after two full collections (gc exposed at run time), so what is measured is what stays. */
  let gc: (() => void) | undefined;
  const heap = () => {
    if (gc === undefined) {
      setFlagsFromString("--expose-gc");
      gc = runInNewContext("gc") as () => void;
    }
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };

  it("a record does not keep the request alive: 2,000 records from 13 KB keyIds add well under 1 KB each", () => {
    const clock = { now: 0 };
    const { store } = storeOn(clock);
    const huge = "k".repeat(13_000);
    const before = heap();
    for (let i = 0; i < 2_000; i++) {
      // A fresh 13 KB string per request, as a worst-case Signature header would bring.
      const keyId = `SN=${i},CA=CN=${huge}${i}`;
      store.checkAndRecord(replayKeyFor(keyId, "rsa-sha256", Buffer.from(`x-request-id: ${i}`)), WINDOW);
    }
    const perRecord = (heap() - before) / 2_000;
    expect(perRecord).toBeLessThan(1_000);
    expect(store.replayRecords).toBe(2_000);
  });

  it("a limit window of 4 slots costs a few hundred bytes, not kilobytes: 20,000 windows under 400 B each", () => {
    // Measured at the default bound (store.maxWindows 500,000, 4 slots each): 1.3 GB with slot
    // objects and string ids, 125 MB with flat numbers (docs/operations.md, memory).
    const store = new MemoryLimitStore({
      maxWindows: 20_000,
      maxReplayKeys: 10,
      purgeIntervalMs: 0,
      now: () => 2_000,
    });
    const keys = Array.from(
      { length: 20_000 },
      (_, i) => `unattended|PSDNO-FSA-${i % 300}|${"p".repeat(43)}${i}|balances`,
    );
    const before = heap();
    for (const key of keys)
      for (let slot = 0; slot < 4; slot++) store.reserve(key, 4, 86_400_000, 1_000 + slot);
    const perWindow = (heap() - before) / keys.length;
    expect(perWindow).toBeLessThan(400);
    expect(store.used(keys[0]!, 86_400_000)).toBe(4);
    expect(store.stats.evictions).toBe(0);
  });
});
