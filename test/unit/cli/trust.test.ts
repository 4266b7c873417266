/**
 * `trust status`'s reading of the admin listener's /trust: when it says not-ok (a stale source, in
 * any worker, or a worker without an answer) and how a cluster's answer prints.
 */

import { describe, expect, it } from "vitest";
import { renderClusterTrustStatus, trustStatusOk } from "../../../src/cli/trust.js";
import type { ClusterTrustReport, TrustReport, TrustSourceStatus } from "../../../src/trust/source-status.js";

const NOW = Date.parse("2026-11-27T03:20:05Z");

const register = (stale: boolean): TrustSourceStatus => ({
  kind: "register",
  source: "register: http://127.0.0.1:8099/register.json",
  lastSuccess: NOW - 4_000,
  failures: 0,
  size: 2,
  stale,
  failsReadiness: true,
});

const single = (stale: boolean): TrustReport => ({ sources: [register(stale)] });
const cluster = (...workers: ClusterTrustReport["workers"]): ClusterTrustReport => ({
  primary: {
    fetches: [
      {
        url: "http://127.0.0.1:8099/register.json",
        method: "GET",
        fetchedAt: NOW - 4_000,
        bytes: 423,
        asks: 2,
        upstreamFetches: 1,
      },
    ],
  },
  workers,
});

describe("trustStatusOk: the exit code's rule, per worker with workers > 1", () => {
  it.each([
    { name: "one process, fresh", answer: single(false), ok: true },
    { name: "one process, a stale source", answer: single(true), ok: false },
    {
      name: "two workers, fresh",
      answer: cluster({ pid: 1, ...single(false) }, { pid: 2, ...single(false) }),
      ok: true,
    },
    {
      name: "one worker stale",
      answer: cluster({ pid: 1, ...single(false) }, { pid: 2, ...single(true) }),
      ok: false,
    },
    {
      name: "one worker without an answer",
      answer: cluster({ pid: 1, ...single(false) }, { pid: 2, error: "no answer within 2 s" }),
      ok: false,
    },
  ])("$name: $ok", ({ answer, ok }) => {
    expect(trustStatusOk(answer)).toBe(ok);
  });
});

describe("renderClusterTrustStatus", () => {
  it("prints the primary's fetches, then each worker's blocks indented, or why it gave none", () => {
    const text = renderClusterTrustStatus(
      cluster({ pid: 101, ...single(false) }, { pid: 102, error: "no answer within 2 s" }),
      NOW,
    );
    expect(text.split("\n")).toEqual([
      "primary: 1 document fetched for the workers",
      "fetch        GET    http://127.0.0.1:8099/register.json",
      "             fetched 2026-11-27T03:20:01.000Z (4 s ago), 423 bytes; 2 asks, 1 upstream fetches",
      "",
      "worker 101:",
      "  register     fresh  register: http://127.0.0.1:8099/register.json",
      "               last success 2026-11-27T03:20:01.000Z (4 s ago); next update none given; 2 entries; 0 failures",
      "",
      "worker 102:",
      "  no answer: no answer within 2 s",
    ]);
  });
});
