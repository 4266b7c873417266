import { describe, expect, it } from "vitest";
import { isRejection, type Rejection } from "../../../src/errors.js";
import { checkDate, formatHttpDate, parseHttpDate } from "../../../src/signature/index.js";

const EPOCH_1994 = Date.UTC(1994, 10, 6, 8, 49, 37);

describe("HTTP-date parsing (RFC 7231 7.1.1.1)", () => {
  it("reads IMF-fixdate and both obsolete forms to the same instant", () => {
    expect(parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT")).toBe(EPOCH_1994);
    expect(parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", Date.UTC(2026, 0, 1))).toBe(EPOCH_1994);
    expect(parseHttpDate("Sun Nov  6 08:49:37 1994")).toBe(EPOCH_1994);
  });

  // The last IMF-fixdate read is kept (every request of a second carries the same one).
  it("reads the same IMF-fixdate the same way again, valid or not", () => {
    for (let i = 0; i < 2; i++) {
      expect(parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT")).toBe(EPOCH_1994);
      expect(parseHttpDate("Sat, 31 Feb 2026 08:49:37 GMT")).toBeUndefined();
      expect(parseHttpDate("Sun, 06 Nov 1994 08:49:38 GMT")).toBe(EPOCH_1994 + 1000);
    }
  });

  it("reads a two-digit year as the most recent matching year not more than 50 years ahead", () => {
    expect(parseHttpDate("Monday, 06-Nov-72 08:49:37 GMT", Date.UTC(2026, 0, 1))).toBe(
      Date.UTC(2072, 10, 6, 8, 49, 37),
    );
    expect(parseHttpDate("Monday, 06-Nov-77 08:49:37 GMT", Date.UTC(2026, 0, 1))).toBe(
      Date.UTC(1977, 10, 6, 8, 49, 37),
    );
  });

  it("refuses what is not an HTTP-date", () => {
    for (const bad of [
      "2026-11-22T10:00:00Z",
      "Sun, 6 Nov 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 08:49:37 UTC",
      "Sun, 31 Feb 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 25:49:37 GMT",
      "Xyz, 06 Nov 1994 08:49:37 GMT",
      "",
    ]) {
      expect(parseHttpDate(bad), bad).toBeUndefined();
    }
  });

  it("formats IMF-fixdate", () => {
    expect(formatHttpDate(EPOCH_1994)).toBe("Sun, 06 Nov 1994 08:49:37 GMT");
  });

  it("formats each instant right though the last second's text is kept", () => {
    // In order: the same second twice, the next, back in time, mid-second, not a time at all.
    const instants = [
      EPOCH_1994,
      EPOCH_1994 + 999,
      EPOCH_1994 + 1000,
      EPOCH_1994 - 1,
      EPOCH_1994 + 500,
      Number.NaN,
    ];
    for (const ms of instants) expect(formatHttpDate(ms), String(ms)).toBe(new Date(ms).toUTCString());
  });
});

describe("Date skew check (SPEC 5.8: at most 60 s)", () => {
  const now = Date.UTC(2026, 10, 22, 12, 0, 0);
  const at = (offsetSeconds: number) => formatHttpDate(now + offsetSeconds * 1000);
  const refused = (value: string | undefined, toleranceMs?: number): Rejection => {
    const r = checkDate(value, now, toleranceMs === undefined ? {} : { toleranceMs });
    if (!isRejection(r)) throw new Error("expected a rejection");
    return r;
  };

  it("accepts a date up to 60 s off either way", () => {
    expect(checkDate(at(60), now)).toBe(now + 60_000);
    expect(checkDate(at(-60), now)).toBe(now - 60_000);
  });

  it("refuses 61 s behind or ahead, saying by how much", () => {
    const behind = refused(at(-61));
    expect(behind.code).toBe("TIMESTAMP_INVALID");
    expect(behind.text).toContain("61 s behind");
    expect(refused(at(95)).text).toContain("95 s ahead of");
  });

  it("takes the tolerance from the caller", () => {
    expect(checkDate(at(100), now, { toleranceMs: 120_000 })).toBe(now + 100_000);
    expect(refused(at(31), 30_000).text).toContain("at most 30 s");
  });

  it("answers a missing or malformed Date with FORMAT_ERROR and an example", () => {
    expect(refused(undefined).code).toBe("FORMAT_ERROR");
    const r = refused("yesterday");
    expect(r.code).toBe("FORMAT_ERROR");
    expect(r.text).toContain("Sun, 22 Nov 2026 12:00:00 GMT");
  });
});
