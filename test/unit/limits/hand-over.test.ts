/**
 * A store replaced by a reload (src/limits/hand-over.ts), on two real memory stores and a manual
 * clock: nothing the old store holds is forgotten until its longest window has passed, then it is
 * closed; every write goes to the new store.
 */

import { describe, expect, it } from "vitest";
import { HandOverStore, WindowedStore } from "../../../src/limits/hand-over.js";
import { MemoryLimitStore, type Reservation } from "../../../src/limits/index.js";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const LIMIT = 4;

function setUp() {
  let t = Date.UTC(2026, 10, 28, 9);
  const now = () => t;
  const store = () => new MemoryLimitStore({ maxWindows: 100, maxReplayKeys: 100, now, purgeIntervalMs: 0 });
  const old = new WindowedStore(store());
  const next = store();
  let closed = false;
  const closeOld = old.close.bind(old);
  old.close = async () => {
    closed = true;
    await closeOld();
  };
  return {
    now,
    advance: (ms: number) => (t += ms),
    old,
    next,
    handOver: () => new HandOverStore(next, old, { untilMs: now() + old.longestMs, now }),
    closed: () => closed,
  };
}

const allowed = (r: Reservation) => r.allowed;

describe("a store handed over by a reload", () => {
  it("replay: a key the old store recorded is a replay after the swap; a new key is recorded in the new store", () => {
    const s = setUp();
    expect(s.old.checkAndRecord("rp|a", 5 * MINUTE)).toBe(false);
    const store = s.handOver();
    expect(store.checkAndRecord("rp|a", 5 * MINUTE)).toBe(true);
    expect(store.checkAndRecord("rp|b", 5 * MINUTE)).toBe(false);
    expect(s.next.checkAndRecord("rp|b", 5 * MINUTE)).toBe(true);
  });

  it("unattended: the old window's slots count against the limit; the new slots are the new store's", () => {
    const s = setUp();
    for (let i = 0; i < 3; i++)
      expect(allowed(s.old.reserve("w", LIMIT, DAY, s.now()) as Reservation)).toBe(true);
    const store = s.handOver();
    const fourth = store.reserve("w", LIMIT, DAY, s.now()) as Reservation;
    expect(fourth).toMatchObject({ allowed: true, used: 4 });
    expect(store.reserve("w", LIMIT, DAY, s.now())).toMatchObject({ allowed: false, used: 4 });
    // The old store's count is unchanged by the reads (a slot taken and given back).
    expect(s.old.reserve("w", LIMIT, DAY, s.now())).toMatchObject({ allowed: true, used: 4 });
    // A slot given back is given back wherever it was taken.
    if (!fourth.allowed) throw new Error("the fourth call was refused");
    store.release("w", fourth.slotId);
    expect(s.next.reserve("w", LIMIT, DAY, s.now())).toMatchObject({ allowed: true, used: 1 });
  });

  it("a remembered limit is recalled from the old store while the new one has none", () => {
    const s = setUp();
    // Kept for as long as the old store holds a record (a remembered limit alone is told again by the bank).
    s.old.checkAndRecord("rp|a", 5 * MINUTE);
    s.old.rememberLimit("consent", 2, DAY);
    const store = s.handOver();
    expect(store.recallLimit("consent")).toBe(2);
    store.rememberLimit("consent", 3, DAY);
    expect(store.recallLimit("consent")).toBe(3);
  });

  it("once the longest window the old store kept has passed, it is closed and no longer consulted", async () => {
    const s = setUp();
    s.old.checkAndRecord("rp|a", 5 * MINUTE);
    s.old.reserve("w", LIMIT, DAY, s.now());
    expect(s.old.longestMs).toBe(DAY);
    const store = s.handOver();
    s.advance(DAY - 1);
    expect(store.reserve("w", LIMIT, DAY, s.now())).toMatchObject({ allowed: true, used: 2 });
    expect(s.closed()).toBe(false);
    s.advance(1);
    expect(store.reserve("w", LIMIT, DAY, s.now())).toMatchObject({ allowed: true, used: 2 });
    await new Promise((r) => setImmediate(r));
    expect(s.closed()).toBe(true);
    await store.close();
  });
});

describe("a hand-over a failed reload built", () => {
  it("is abandoned without closing the old store, which still serves", async () => {
    const s = setUp();
    s.old.checkAndRecord("rp|a", 5 * MINUTE);
    const store = s.handOver();
    store.abandon();
    s.advance(10 * MINUTE);
    expect(store.handingOver).toBe(false);
    await new Promise((r) => setImmediate(r));
    expect(s.closed()).toBe(false);
    expect(s.old.checkAndRecord("rp|b", 5 * MINUTE)).toBe(false);
    expect(s.old.checkAndRecord("rp|b", 5 * MINUTE)).toBe(true);
  });
});
