import { describe, expect, it } from "vitest";
import {
  runSteps,
  type Step,
  type StepCounts,
  type StepObserver,
  sumCounts,
} from "../../../src/checks/runner.js";
import { type Rejection, reject } from "../../../src/errors.js";

interface Context {
  failedStep: string | undefined;
  seen: string[];
}

const pass = (name: string): Step<Context> => ({
  name,
  run: (c) => {
    c.seen.push(name);
    return undefined;
  },
});
const passLater = (name: string): Step<Context> => ({
  name,
  run: async (c) => {
    c.seen.push(name);
    return undefined;
  },
});
const refuse = (name: string, code: Rejection["code"] = "FORMAT_ERROR"): Step<Context> => ({
  name,
  run: (c) => {
    c.seen.push(name);
    return reject(code, `${name} refused`);
  },
});
const refuseLater = (name: string): Step<Context> => ({
  name,
  run: async (c) => {
    c.seen.push(name);
    return reject("SIGNATURE_INVALID", `${name} refused`);
  },
});

const context = (): Context => ({ failedStep: undefined, seen: [] });

describe("the checks runner", () => {
  it.each([
    {
      case: "every step passes synchronously",
      steps: [pass("a"), pass("b")],
      sync: true,
      failed: undefined,
      seen: ["a", "b"],
    },
    {
      case: "a synchronous refusal stops the list",
      steps: [pass("a"), refuse("b"), pass("c")],
      sync: true,
      failed: "b",
      seen: ["a", "b"],
    },
    {
      case: "a promise makes the rest asynchronous",
      steps: [pass("a"), passLater("b"), pass("c")],
      sync: false,
      failed: undefined,
      seen: ["a", "b", "c"],
    },
    {
      case: "a step after a promise can still refuse",
      steps: [passLater("a"), refuse("b"), pass("c")],
      sync: false,
      failed: "b",
      seen: ["a", "b"],
    },
    {
      case: "an asynchronous refusal stops the list",
      steps: [pass("a"), refuseLater("b"), pass("c")],
      sync: false,
      failed: "b",
      seen: ["a", "b"],
    },
    { case: "an empty list passes", steps: [], sync: true, failed: undefined, seen: [] },
  ])("$case", async ({ steps, sync, failed, seen }) => {
    const c = context();
    const result = runSteps(steps, c);
    expect(result instanceof Promise).toBe(!sync);
    const settled = await result;
    expect(c.failedStep).toBe(failed);
    expect(c.seen).toEqual(seen);
    if (failed === undefined) expect(settled).toBeUndefined();
    else expect(settled?.text).toBe(`${failed} refused`);
  });

  it("tells an observer every step that ran, in order, with its outcome (explain mode)", async () => {
    const told: [string, string][] = [];
    const observer: StepObserver = (name, outcome) =>
      told.push([name, outcome === "passed" ? "passed" : outcome.code]);
    await runSteps([pass("a"), passLater("b"), refuse("c", "ROLE_INVALID"), pass("d")], context(), observer);
    expect(told).toEqual([
      ["a", "passed"],
      ["b", "passed"],
      ["c", "ROLE_INVALID"],
    ]);
  });

  it("passes a step's thrown error on to the caller (a bug, answered by the handler, never swallowed)", () => {
    const boom: Step<Context> = {
      name: "boom",
      run: () => {
        throw new Error("bug");
      },
    };
    expect(() => runSteps([pass("a"), boom], context())).toThrow("bug");
  });
});

describe("steps of one signing dialect", () => {
  it("run for requests of their dialect only, and count only when they run", async () => {
    const { Chain } = await import("../../../src/checks/runner.js");
    const only = (name: string, dialect: string): Step<Context & { dialect: string }> => ({
      ...pass(name),
      dialects: [dialect],
    });
    const chain = new Chain<Context & { dialect: string }>([
      pass("a"),
      only("b", "jades"),
      only("c", "cavage"),
    ]);
    for (const dialect of ["cavage", "jades", "cavage"]) {
      const c = { ...context(), dialect };
      expect(chain.runHead(c)).toBeUndefined();
      expect(c.seen).toEqual(dialect === "jades" ? ["a", "b"] : ["a", "c"]);
    }
    expect(chain.counts().passed).toEqual([3, 1, 2]);
  });
});

describe("sumCounts: a replaced chain's counts carried into the next one's", () => {
  const counts = (entries: [string, number, number][]): StepCounts => ({
    names: entries.map(([name]) => name),
    passed: entries.map(([, passed]) => passed),
    refused: entries.map(([, , refused]) => refused),
  });
  it.each([
    ["nothing before", counts([]), counts([["host", 2, 1]]), counts([["host", 2, 1]])],
    [
      "the same steps: added by name",
      counts([
        ["host", 5, 1],
        ["replay", 4, 1],
      ]),
      counts([
        ["replay", 3, 0],
        ["host", 3, 0],
      ]),
      counts([
        ["host", 8, 1],
        ["replay", 7, 1],
      ]),
    ],
    [
      "a step the new chain dropped stays, one it added joins at the end",
      counts([
        ["host", 5, 0],
        ["unattended", 2, 2],
      ]),
      counts([
        ["host", 1, 0],
        ["evidence", 1, 0],
      ]),
      counts([
        ["host", 6, 0],
        ["unattended", 2, 2],
        ["evidence", 1, 0],
      ]),
    ],
  ])("%s", (_title, before, now, expected) => {
    expect(sumCounts(before, now)).toEqual(expected);
  });
});
