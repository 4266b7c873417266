/**
 * bench/validity.ts (issue 42): a run is a throughput result only when every answer was 2xx (or
 * non-2xx were asked for), no request failed, and its single-use pool did not wrap round; otherwise
 * the verdict says what happened and what to set.
 */

import { describe, expect, it } from "vitest";
import { judgeRun, poolToSet, type RunFacts } from "../../../bench/validity.js";

const clean: RunFacts = {
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  sent: 45_230,
  completed: 45_180,
  statuses: { "200": 45_180 },
  pool: { size: 50_000, consumed: 47_000 },
};

interface Case {
  readonly name: string;
  readonly facts: RunFacts;
  readonly valid: boolean;
  /** Every one of these appears in some reason. */
  readonly mentions?: readonly string[];
  readonly reasons?: number;
}

const cases: readonly Case[] = [
  { name: "a clean run", facts: clean, valid: true },
  {
    name: "a pool used exactly to its end",
    facts: { ...clean, pool: { size: 50_000, consumed: 50_000 } },
    valid: true,
  },
  {
    name: "non-2xx not asked for",
    facts: { ...clean, non2xx: 45_180, statuses: { "401": 45_180 } },
    valid: false,
    mentions: ["45180 of 45180", "non-2xx", "401 × 45180"],
    reasons: 1,
  },
  {
    name: "a single non-2xx",
    facts: { ...clean, non2xx: 1, statuses: { "200": 45_179, "500": 1 } },
    valid: false,
    mentions: ["1 of 45180", "500 × 1"],
    reasons: 1,
  },
  {
    name: "transport errors",
    facts: { ...clean, errors: 7 },
    valid: false,
    mentions: ["7 requests failed"],
    reasons: 1,
  },
  {
    name: "timeouts (counted among the errors)",
    facts: { ...clean, errors: 3, timeouts: 3 },
    valid: false,
    mentions: ["3 requests failed", "3 of them timed out"],
    reasons: 1,
  },
  {
    name: "timeouts reported apart from the errors",
    facts: { ...clean, errors: 0, timeouts: 2 },
    valid: false,
    mentions: ["2 of them timed out"],
    reasons: 1,
  },
  {
    name: "nothing answered",
    facts: { ...clean, sent: 0, completed: 0, statuses: {} },
    valid: false,
    mentions: ["no request was answered"],
    reasons: 1,
  },
  {
    name: "a wrapped pool",
    facts: { ...clean, pool: { size: 50_000, consumed: 61_234 } },
    valid: false,
    mentions: [
      "pool of 50000 wrapped",
      "sent 61234 requests",
      "11234 of them repeats",
      "BENCH_POOL ≥ 70000",
      "BENCH_WARMUP/BENCH_SECONDS",
    ],
    reasons: 1,
  },
  {
    name: "a wrapped pool whose repeats were refused: both reasons",
    facts: {
      ...clean,
      non2xx: 45_180,
      statuses: { "400": 45_180 },
      pool: { size: 50_000, consumed: 95_180 },
    },
    valid: false,
    mentions: ["45180 of 45180", "400 × 45180", "BENCH_POOL ≥ 200000"],
    reasons: 2,
  },
  {
    name: "a wrapped pool named by the bench's own variables",
    facts: {
      ...clean,
      pool: { size: 500, consumed: 1_234 },
      knobs: { pool: "SOME_POOL", shorten: ["SOME_SECONDS"] },
    },
    valid: false,
    mentions: ["set SOME_POOL ≥ 2000 or lower SOME_SECONDS"],
    reasons: 1,
  },
  {
    name: "no pool given (requests that may be sent again)",
    facts: { non2xx: 0, errors: 0, sent: 1000, completed: 1000 },
    valid: true,
  },
  {
    name: "non-2xx asked for",
    facts: { ...clean, non2xx: 20_000, statuses: { "200": 25_180, "429": 20_000 }, non2xxAskedFor: true },
    valid: true,
  },
  {
    name: "non-2xx asked for, but errors too",
    facts: { ...clean, non2xx: 20_000, errors: 4, non2xxAskedFor: true },
    valid: false,
    mentions: ["4 requests failed"],
    reasons: 1,
  },
  {
    name: "non-2xx asked for, but the pool wrapped",
    facts: { ...clean, non2xx: 20_000, non2xxAskedFor: true, pool: { size: 1000, consumed: 1001 } },
    valid: false,
    mentions: ["pool of 1000 wrapped"],
    reasons: 1,
  },
];

describe("judgeRun", () => {
  it.each(cases)("$name", ({ facts, valid, mentions = [], reasons }) => {
    const verdict = judgeRun(facts);
    expect(verdict.valid).toBe(valid);
    const given = verdict.valid ? [] : verdict.reasons;
    expect(given.length).toBe(reasons ?? 0);
    for (const text of mentions) expect(given.join("\n")).toContain(text);
  });

  it("is pure: the same facts give the same verdict and are left as they were", () => {
    const facts = { ...clean, non2xx: 5, pool: { size: 10, consumed: 20 } };
    const copy = structuredClone(facts);
    expect(judgeRun(facts)).toEqual(judgeRun(facts));
    expect(facts).toEqual(copy);
  });
});

describe("poolToSet", () => {
  it.each([
    [61_234, 70_000],
    [45_180, 50_000],
    [95_180, 200_000],
    [550, 700],
    [9, 10],
  ])("%i consumed → at least %i", (consumed, wanted) => {
    expect(poolToSet(consumed)).toBe(wanted);
  });
});
