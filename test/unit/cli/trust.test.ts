/**
 * `trust status`'s reading of the admin listener's /trust: when it says not-ok (a stale source, in
 * any worker, or a worker without an answer) and how a cluster's answer prints; a register source
 * given by the EBA's metadata URL names the file it holds.
 */

import { describe, expect, it } from "vitest";
import { renderClusterTrustStatus, renderTrustStatus, trustStatusOk } from "../../../src/cli/trust.js";
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

const METADATA_NOW = Date.parse("2026-11-27T04:00:00Z");
const METADATA = "https://euclid.eba.europa.eu/register/api/filemetadata";
const FILE =
  "https://euclid.eba.europa.eu/register/downloads/PSDMD/20261127/download-PSDMD-202611270000.zip of Fri Nov 27 00:00:16 UTC 2026";

describe("trust status", () => {
  it.each([
    { name: "a metadata source: the file held under its URL", held: FILE, line: `holds ${FILE}` },
    { name: "a source with nothing to add: no such line", held: undefined, line: undefined },
  ])("$name", ({ held, line }) => {
    const text = renderTrustStatus(
      {
        sources: [
          {
            kind: "register",
            source: `eba: ${METADATA}`,
            ...(held ? { held } : {}),
            lastSuccess: METADATA_NOW - 2000,
            failures: 0,
            size: 1234,
            stale: false,
            failsReadiness: true,
          },
        ],
      },
      METADATA_NOW,
    ).split("\n");
    expect(text[0]).toMatch(new RegExp(`^register\\s+fresh\\s+eba: ${METADATA}$`));
    // Right under the source's line, before the figures.
    expect(text.findIndex((l) => l.trim().startsWith("holds "))).toBe(line === undefined ? -1 : 1);
    expect(text.find((l) => l.trim().startsWith("holds "))?.trim()).toBe(line);
  });
});
