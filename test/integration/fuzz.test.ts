/**
 * A short `npm run fuzz` inside `npm test`: every family, a fixed seed, a few thousand hostile
 * requests against the real gateway processes — ingress over TLS with response signing on, and
 * egress over plain HTTP for the `egress-*` families — with their recording backends (ingress's
 * answering a tenth of the requests on their head, before the body; then every one), and not one
 * invariant broken (test/fuzz/exchange-check.ts, ingress.ts, egress.ts and harness.ts list them). A failure prints the
 * report with a reproduction line per violation (FUZZ_FAMILIES=… FUZZ_SEED=… FUZZ_CASE=… npm run fuzz).
 */

import { describe, expect, it } from "vitest";
import { ALL_FAMILIES } from "../fuzz/families/index.js";
import { type FuzzOptions, runFuzz } from "../fuzz/harness.js";
import { formatReport } from "../fuzz/report.js";

const SEED = 20261123;
const COUNT = 3_500;
const RELOADS = 50;

/** A run at the bounds every short run shares, and its report as text (a failure prints it). */
async function fuzzed(options: Omit<FuzzOptions, "rssLimitMb" | "concurrency">) {
  const report = await runFuzz({ rssLimitMb: 400, concurrency: 16, ...options });
  const text = formatReport(
    report,
    options.families.map((f) => f.name),
  );
  return { report, text };
}

describe("fuzz (short run)", () => {
  it(`${COUNT} hostile requests from every family, ingress and egress, with ${RELOADS} configuration reloads, break no invariant`, async () => {
    const { report, text } = await fuzzed({
      count: COUNT,
      seed: SEED,
      families: ALL_FAMILIES,
      // Issue 38: a reload under load loses and mis-judges nothing, and every one applies.
      reloads: RELOADS,
    });
    expect(report.sent).toBeGreaterThanOrEqual(COUNT);
    for (const family of ALL_FAMILIES)
      expect(report.families[family.name]?.sent, family.name).toBeGreaterThan(0);
    expect(Object.keys(report.rssSamplesMb).sort()).toEqual(["egress", "ingress"]);
    expect(report.failed, text).toBe(0);
    expect(report.passed).toBeGreaterThan(COUNT);
  }, 120_000);

  // Issue 40: evidence kept under reloads: each flips evidence.bodies, one swaps the store (a second
  // chain), and still every request the backend executed has exactly one record, no refused one any.
  it("with evidence on, through reloads that swap its store, every executed request has one record", async () => {
    const { report, text } = await fuzzed({
      count: 1_500,
      seed: SEED + 40,
      families: ALL_FAMILIES,
      reloads: 10,
      evidence: true,
    });
    expect(report.failed, text).toBe(0);
    expect(report.evidence?.chains, text).toBe(2);
    expect(report.evidence?.records, text).toBeGreaterThan(0);
  }, 120_000);

  // Issue 37: a backend that acts on the head at once, for every request of every dialect.
  const DIALECT_FAMILIES = ["cavage-12", "rfc9421", "jades", "uk-ob", "forged", "slow", "replay"];
  it(`the dialect families against a backend that answers every request on its head`, async () => {
    const families = ALL_FAMILIES.filter((f) => DIALECT_FAMILIES.includes(f.name));
    const { report, text } = await fuzzed({
      count: 1_500,
      seed: SEED + 37,
      families,
      eagerPerMille: 1000,
    });
    expect(families.map((f) => f.name).sort()).toEqual([...DIALECT_FAMILIES].sort());
    for (const name of DIALECT_FAMILIES) expect(report.families[name]?.sent, name).toBeGreaterThan(0);
    expect(report.families["forged"]?.refused, text).toBeGreaterThan(0);
    expect(report.failed, text).toBe(0);
  }, 120_000);
});
