/** W3C Trace Context (https://www.w3.org/TR/trace-context/ sections 3.2 and 3.3) as the gateway passes it on. */

import { describe, expect, it } from "vitest";
import { traceContextOf, writeTraceContext } from "../../../src/forward/trace-context.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

describe("traceContextOf", () => {
  it("continues a valid trace: same trace id and flags, the gateway's own span as parent, tracestate kept", () => {
    const t = traceContextOf({ traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: "congo=t61rcWkgMzE" });
    expect(t.traceId).toBe(TRACE);
    const [, trace, parent, flags] = TRACEPARENT.exec(t.traceparent)!;
    expect([trace, flags]).toEqual([TRACE, "01"]);
    expect(parent).not.toBe(PARENT);
    expect(t.tracestate).toBe("congo=t61rcWkgMzE");
  });

  it("takes a future version's fields it knows and answers with version 00", () => {
    const t = traceContextOf({ traceparent: `cc-${TRACE}-${PARENT}-00-what-comes-next` });
    expect(t.traceId).toBe(TRACE);
    expect(t.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-00$`));
  });

  it.each([
    ["absent", undefined],
    ["upper case", `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ["version ff", `ff-${TRACE}-${PARENT}-01`],
    ["version 00 with more fields", `00-${TRACE}-${PARENT}-01-x`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["an all-zero parent id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["a short trace id", `00-${TRACE.slice(2)}-${PARENT}-01`],
    ["garbage", "hello"],
  ])("starts a new trace when the traceparent is %s, dropping tracestate", (_what, traceparent) => {
    const t = traceContextOf({ ...(traceparent !== undefined ? { traceparent } : {}), tracestate: "a=b" });
    expect(t.traceId).not.toBe(TRACE);
    expect(t.traceparent).toMatch(TRACEPARENT);
    expect(t.traceparent.startsWith(`00-${t.traceId}-`)).toBe(true);
    expect(t.traceparent.endsWith("-01")).toBe(true);
    expect(t.tracestate).toBeUndefined();
  });

  it("gives every request its own span and every new trace its own id", () => {
    const ids = new Set(Array.from({ length: 500 }, () => traceContextOf({}).traceparent));
    expect(ids.size).toBe(500);
  });

  it("writes both headers, and removes a tracestate that belongs to no valid trace", () => {
    const out: Record<string, string | string[]> = { tracestate: "stale=1" };
    writeTraceContext(out, traceContextOf({ traceparent: "bad", tracestate: "stale=1" }));
    expect(out.traceparent).toMatch(TRACEPARENT);
    expect(out.tracestate).toBeUndefined();
  });
});
