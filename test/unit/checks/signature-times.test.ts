/**
 * draft-cavage-12's `created` and `expires` (the `signature-times` step) and, where configured
 * (`verification.dialects.cavage.createdForDate`), a signed `(created)` standing for the Date
 * header (the `date` step lets such a request on; `signature-times` holds it to the clock).
 */

import type { IncomingHttpHeaders } from "node:http";
import { describe, expect, it } from "vitest";
import { CheckContext, type CheckOptions, requestChecks, routingPath } from "../../../src/checks/index.js";
import { formatHttpDate } from "../../../src/signature/index.js";
import { BASE_CHECK_OPTIONS } from "../../helpers/body-steps.js";

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const SECONDS = NOW / 1000;

function run(headers: IncomingHttpHeaders, createdForDate: boolean) {
  const options: CheckOptions = {
    ...BASE_CHECK_OPTIONS,
    now: () => NOW,
    ownOptions: { cavage: { createdForDate } },
  };
  const steps = requestChecks(options).filter((s) =>
    ["date", "signature-header", "signature-times"].includes(s.name),
  );
  const context = new CheckContext(
    "GET",
    "/v1/accounts",
    headers,
    { path: routingPath("/v1/accounts"), role: undefined },
    undefined,
  );
  for (const step of steps) {
    const result = step.run!(context);
    if (result instanceof Promise) throw new Error(`${step.name} is synchronous`);
    if (result !== undefined) return { step: step.name, code: result.code, text: result.text };
  }
  return undefined;
}

const signature = (signed: string, params = "") =>
  `keyId="SN=1,CA=CN=x",algorithm="hs2019",headers="${signed}"${params},signature="AA=="`;

describe("signature-times: created and expires against the clock", () => {
  it.each([
    ["created now", signature("(request-target) (created) x-request-id", `,created=${SECONDS}`), undefined],
    ["created 30 s ago", signature("(created)", `,created=${SECONDS - 30}`), undefined],
    ["created 5 minutes ago", signature("(created)", `,created=${SECONDS - 300}`), "signature-times"],
    ["created 5 minutes ahead", signature("(created)", `,created=${SECONDS + 300}`), "signature-times"],
    [
      "expires in a minute",
      signature("(created) (expires)", `,created=${SECONDS},expires=${SECONDS + 60}`),
      undefined,
    ],
    [
      "expired 5 minutes ago",
      signature("(created) (expires)", `,created=${SECONDS - 30},expires=${SECONDS - 300}`),
      "signature-times",
    ],
    [
      "expires before created",
      signature("(created) (expires)", `,created=${SECONDS},expires=${SECONDS - 10}`),
      "signature-times",
    ],
  ] as const)("%s, with Date", (_what, value, refusedAt) => {
    const r = run({ date: formatHttpDate(NOW), signature: value }, false);
    expect(r?.step).toBe(refusedAt);
    if (refusedAt) expect(r?.code).toBe("TIMESTAMP_INVALID");
  });
});

describe("a signed (created) for Date, only where configured", () => {
  const withCreated = {
    signature: signature("(request-target) (created) x-request-id", `,created=${SECONDS}`),
  };

  it("passes without Date when configured", () => {
    expect(run(withCreated, true)).toBeUndefined();
  });

  it("refuses without Date when not configured (the default), at the date step", () => {
    expect(run(withCreated, false)).toMatchObject({ step: "date", code: "FORMAT_ERROR" });
  });

  it.each([
    [
      "(created) named only in keyId, not signed",
      {
        signature: `keyId="(created)",algorithm="hs2019",headers="x-request-id",created=${SECONDS},signature="AA=="`,
      },
    ],
    ["(created) signed without a created parameter", { signature: signature("(created)") }],
  ])("refuses %s when configured", (_what, headers) => {
    const r = run(headers, true);
    expect(r?.code).toMatch(/FORMAT_ERROR|SIGNATURE_INVALID/);
  });

  it("holds a (created) standing for Date to the clock", () => {
    const r = run({ signature: signature("(created)", `,created=${SECONDS - 600}`) }, true);
    expect(r).toMatchObject({ step: "signature-times", code: "TIMESTAMP_INVALID" });
  });
});
