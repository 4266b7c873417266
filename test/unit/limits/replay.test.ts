/**
 * Replay records: keyed on what was signed (never on the signature bytes), fixed size, expired by
 * time, and bounded.
 */

import { describe, expect, it } from "vitest";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";
import { replayKeyFor } from "../../../src/limits/replay.js";

const SIGNED = Buffer.from("(request-target): get /v1/accounts\ndate: Mon, 23 Nov 2026 08:00:00 GMT");

describe("the replay key", () => {
  it("is a fixed-size string whatever the size of what was signed", () => {
    const small = replayKeyFor("SN=1,CA=CN=x", "rsa-sha256", SIGNED);
    const large = replayKeyFor(`SN=1,CA=CN=${"x".repeat(13_000)}`, "rsa-sha256", Buffer.alloc(50_000, 0x61));
    expect(small).toMatch(/^rp\|[A-Za-z0-9_-]{22}$/);
    expect(large).toHaveLength(small.length);
  });

  it.each([
    ["another keyId", "SN=2,CA=CN=x", "rsa-sha256", SIGNED],
    ["another algorithm", "SN=1,CA=CN=x", "rsa-sha512", SIGNED],
    ["another signing string", "SN=1,CA=CN=x", "rsa-sha256", Buffer.concat([SIGNED, Buffer.from("x")])],
    // The length prefix keeps the boundary between keyId and algorithm from shifting.
    ["the same characters split differently", "SN=1,CA=CN=xr", "sa-sha256", SIGNED],
  ])("differs for %s", (_what, keyId, algorithm, signed) => {
    expect(replayKeyFor(keyId, algorithm, signed)).not.toBe(
      replayKeyFor("SN=1,CA=CN=x", "rsa-sha256", SIGNED),
    );
  });

  it("is the same for the same signed content, however the signature was encoded", () => {
    expect(replayKeyFor("SN=1,CA=CN=x", "ecdsa-sha256", SIGNED)).toBe(
      replayKeyFor("SN=1,CA=CN=x", "ecdsa-sha256", Buffer.from(SIGNED)),
    );
  });
});

describe("the memory store's replay records", () => {
  const WINDOW = 120_000;
  const store = (max = 1_000, clock = { now: 0 }) =>
    ({
      clock,
      store: new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: max, now: () => clock.now }),
    }) as const;

  it("refuses the same key inside the window and accepts it again after", () => {
    const { clock, store: s } = store();
    expect(s.checkAndRecord("rp|a", WINDOW)).toBe(false);
    clock.now = WINDOW - 1;
    expect(s.checkAndRecord("rp|a", WINDOW)).toBe(true);
    clock.now = WINDOW;
    expect(s.checkAndRecord("rp|a", WINDOW)).toBe(false);
  });

  it("drops expired records as new ones arrive: it holds one window's worth, not everything ever seen", () => {
    const { clock, store: s } = store(1_000_000);
    for (let i = 0; i < 50_000; i++) {
      clock.now = i * 10; // 100 requests a second for 500 s
      s.checkAndRecord(`rp|${i}`, WINDOW);
    }
    // Only what arrived in the last 120 s is kept: 12,000 records, not 50,000.
    expect(s.replayRecords).toBe(WINDOW / 10);
    expect(s.stats.evictions).toBe(0);
  });

  it("never holds more than its bound; the oldest goes first and is counted", () => {
    const evicted: string[] = [];
    const clock = { now: 0 };
    const s = new MemoryLimitStore({
      maxWindows: 10,
      maxReplayKeys: 3,
      now: () => clock.now,
      onEvict: (_what, key) => evicted.push(key),
    });
    for (const key of ["rp|1", "rp|2", "rp|3", "rp|4"]) s.checkAndRecord(key, WINDOW);
    expect(s.replayRecords).toBe(3);
    expect(evicted).toEqual(["rp|1"]);
    expect(s.stats.evictions).toBe(1);
    expect(s.checkAndRecord("rp|4", WINDOW)).toBe(true);
  });
});
