import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";

const H = 3600 * 1000;
const DAY = 24 * H;

function clock(start = Date.UTC(2026, 10, 22, 8)) {
  let t = start;
  return { now: () => t, set: (v: number) => (t = v), advance: (ms: number) => (t += ms) };
}

describe("memory limit store", () => {
  it("keeps a rolling 24 h window, exact to the millisecond", () => {
    const c = clock();
    const store = new MemoryLimitStore({ maxWindows: 100, maxReplayKeys: 100, now: c.now });
    const t0 = c.now();
    // Four calls at 0 h, 1 h, 2 h, 3 h.
    for (let i = 0; i < 4; i++) expect(store.reserve("k", 4, DAY, t0 + i * H).allowed).toBe(true);
    // At 23:59 the window still holds all four: refused, and told when the 0 h call leaves it.
    const late = store.reserve("k", 4, DAY, t0 + DAY - 60_000);
    expect(late).toEqual({ allowed: false, retryAfterMs: 60_000, used: 4 });
    // Exactly at 24 h the 0 h call is still inside (the window is (now − 24 h, now]): no.
    expect(store.reserve("k", 4, DAY, t0 + DAY - 1).allowed).toBe(false);
    // 1 ms later it has left: exactly one more call.
    expect(store.reserve("k", 4, DAY, t0 + DAY + 1).allowed).toBe(true);
    expect(store.reserve("k", 4, DAY, t0 + DAY + 2).allowed).toBe(false);
    // Not a calendar-day bucket: midnight changes nothing.
    expect(store.reserve("k", 4, DAY, t0 + DAY + H - 1).allowed).toBe(false);
    expect(store.reserve("k", 4, DAY, t0 + DAY + H + 1).allowed).toBe(true);
  });

  it("gives a released slot back and ignores unknown ids", () => {
    const store = new MemoryLimitStore({ maxWindows: 100, maxReplayKeys: 100 });
    const now = Date.now();
    const slots = [1, 2, 3, 4].map(() => store.reserve("k", 4, DAY, now));
    expect(store.reserve("k", 4, DAY, now).allowed).toBe(false);
    const first = slots[0]!;
    if (!first.allowed) throw new Error("expected a slot");
    store.release("k", first.slotId);
    store.release("k", "no-such-slot");
    store.release("other", "x");
    expect(store.reserve("k", 4, DAY, now).allowed).toBe(true);
    expect(store.reserve("k", 4, DAY, now).allowed).toBe(false);
  });

  it("records replay keys for their time to live", () => {
    const c = clock();
    const store = new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: 10, now: c.now });
    expect(store.checkAndRecord("sig", 120_000)).toBe(false);
    expect(store.checkAndRecord("sig", 120_000)).toBe(true);
    c.advance(120_001);
    expect(store.checkAndRecord("sig", 120_000)).toBe(false);
  });

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
    const c = clock();
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
