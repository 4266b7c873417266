/**
 * /readyz's evidence check (src/app/evidence.ts evidenceReadiness): a store that cannot take
 * records makes the instance not ready only where a route class refuses without one.
 */

import { describe, expect, it } from "vitest";
import { evidenceReadiness } from "../../../src/app/evidence.js";

const failing = { reason: "disk-full", message: "no space left on device", since: 0 };
const refuse = { payments: "refuse", others: "continue" } as const;
const continueAll = { payments: "continue", others: "continue" } as const;

describe("evidenceReadiness", () => {
  it.each([
    ["writing", { queued: 0, queueLength: 10, failing: undefined }, refuse, true, undefined],
    ["failing, payments refuse", { queued: 0, queueLength: 10, failing }, refuse, false, "disk-full"],
    [
      "queue full, payments refuse",
      { queued: 10, queueLength: 10, failing: undefined },
      refuse,
      false,
      "queue-full",
    ],
    [
      "failing, every class continues",
      { queued: 0, queueLength: 10, failing },
      continueAll,
      true,
      "disk-full",
    ],
  ] as const)("%s", (_name, status, onFailure, ok, reason) => {
    const check = evidenceReadiness(status, onFailure);
    expect(check.ok).toBe(ok);
    expect(check.reason).toBe(reason);
  });

  it("says what fails and since when", () => {
    expect(evidenceReadiness({ queued: 0, queueLength: 10, failing }, refuse).detail).toBe(
      "failing since 1970-01-01T00:00:00.000Z: disk-full",
    );
    expect(evidenceReadiness({ queued: 0, queueLength: 10, failing }, continueAll).detail).toContain(
      "onFailure continue",
    );
  });
});
