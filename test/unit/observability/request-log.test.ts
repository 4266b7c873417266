/**
 * One request, one access line and its metrics: a real pino logger writing JSON lines, a real
 * prom-client registry read back as Prometheus text. The PSU-ID is only ever its salted hash.
 */

import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { RequestEvent } from "../../../src/events.js";
import { createLogger, hashPsuId } from "../../../src/observability/logger.js";
import { GatewayMetrics } from "../../../src/observability/metrics.js";
import { recordRequest } from "../../../src/observability/request-log.js";
import { Scrape } from "../../helpers/prometheus-text.js";

const PSU_ID = "PSU-4711-kari.nordmann";

const FORWARDED: RequestEvent = {
  mode: "ingress",
  requestId: "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  method: "POST",
  routeClass: "payments",
  status: 201,
  organizationId: "PSDNO-FSA-ABC123",
  totalMs: 12.345678,
  upstreamMs: 10.004,
  bytesOut: 512,
  psuId: PSU_ID,
};

function setUp(level = "info") {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      raw.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger(level, { destination });
  const metrics = new GatewayMetrics({}, { defaultMetrics: false });
  return {
    raw,
    lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>),
    record: (event: RequestEvent) => recordRequest(event, logger, metrics),
    scrape: async () => new Scrape(await metrics.registry.metrics()),
  };
}

describe("recordRequest: the access line", () => {
  it("writes one line per event, identifiers only, the PSU-ID hashed", () => {
    const { raw, lines, record } = setUp();
    record(FORWARDED);
    record({ ...FORWARDED, requestId: "second", psuId: undefined });
    expect(raw).toHaveLength(2);
    const [first, second] = lines();
    expect(first).toMatchObject({
      level: 30,
      msg: "request",
      requestId: FORWARDED.requestId,
      traceId: FORWARDED.traceId,
      tpp: "PSDNO-FSA-ABC123",
      routeClass: "payments",
      method: "POST",
      status: 201,
      totalMs: 12.35,
      upstreamMs: 10,
      bytes: 512,
      psu: hashPsuId(PSU_ID),
    });
    expect(first!.psu).toMatch(/^[0-9a-f]{16}$/);
    expect(raw[0]).not.toContain(PSU_ID);
    // No code or step on a forwarded request (pino leaves undefined out).
    expect(first).not.toHaveProperty("code");
    expect(first).not.toHaveProperty("step");
    expect(second).toMatchObject({ requestId: "second" });
    expect(second).not.toHaveProperty("psu");
  });

  it("gives the same PSU the same hash within a run, and another PSU another", () => {
    const { lines, record } = setUp();
    record(FORWARDED);
    record(FORWARDED);
    record({ ...FORWARDED, psuId: "PSU-4712" });
    const hashes = lines().map((l) => l.psu);
    expect(hashes[0]).toBe(hashes[1]);
    expect(hashes[2]).not.toBe(hashes[0]);
  });

  it("names the code and the step of a refusal, and the traceId it was refused under", () => {
    const { lines, record } = setUp();
    record({
      ...FORWARDED,
      status: 400,
      code: "SIGNATURE_INVALID",
      step: "body-digest",
      upstreamMs: undefined,
    });
    const [line] = lines();
    expect(line).toMatchObject({
      status: 400,
      code: "SIGNATURE_INVALID",
      step: "body-digest",
      traceId: FORWARDED.traceId,
    });
    expect(line).not.toHaveProperty("upstreamMs");
  });

  it("writes no line below info, and still counts", async () => {
    const { raw, record, scrape } = setUp("warn");
    record(FORWARDED);
    expect(raw).toEqual([]);
    expect((await scrape()).value("psd2_gateway_requests_total")).toBe(1);
  });
});

describe("recordRequest: the metrics", () => {
  it.each([
    {
      what: "a forwarded request",
      event: FORWARDED,
      outcome: "forwarded",
      rejection: undefined,
      upstreamError: undefined,
    },
    {
      what: "a refusal by a check",
      event: {
        ...FORWARDED,
        status: 400,
        code: "SIGNATURE_INVALID",
        step: "signature",
        upstreamMs: undefined,
      },
      outcome: "rejected",
      rejection: { code: "SIGNATURE_INVALID", step: "signature" },
      upstreamError: undefined,
    },
    {
      what: "a body refused on its way upstream",
      event: { ...FORWARDED, status: 413, code: "PAYLOAD_TOO_LARGE", step: "body-size" },
      outcome: "rejected",
      rejection: { code: "PAYLOAD_TOO_LARGE", step: "body-size" },
      upstreamError: undefined,
    },
    {
      what: "a refusal without a step",
      event: { ...FORWARDED, status: 503, code: "SERVICE_UNAVAILABLE", upstreamMs: undefined },
      outcome: "rejected",
      rejection: { code: "SERVICE_UNAVAILABLE", step: "" },
      upstreamError: undefined,
    },
    {
      what: "an unreachable backend",
      event: { ...FORWARDED, status: 502, code: "BAD_GATEWAY", step: "upstream" },
      outcome: "upstream_error",
      rejection: { code: "BAD_GATEWAY", step: "upstream" },
      upstreamError: "bad_gateway",
    },
    {
      what: "a slow backend",
      event: { ...FORWARDED, status: 504, code: "GATEWAY_TIMEOUT", step: "upstream" },
      outcome: "upstream_error",
      rejection: { code: "GATEWAY_TIMEOUT", step: "upstream" },
      upstreamError: "timeout",
    },
  ])("$what: counted by outcome and status, the rejection by code and step", async (row) => {
    const { record, scrape } = setUp();
    record(row.event);
    record(row.event);
    const s = await scrape();
    expect(
      s.only("psd2_gateway_requests_total", {
        mode: "ingress",
        route_class: "payments",
        outcome: row.outcome,
        status: String(row.event.status),
      }),
    ).toBe(2);
    expect(s.value("psd2_gateway_requests_total")).toBe(2);
    if (row.rejection) expect(s.only("psd2_gateway_rejections_total", row.rejection)).toBe(2);
    expect(s.value("psd2_gateway_rejections_total")).toBe(row.rejection ? 2 : 0);
    if (row.upstreamError)
      expect(s.only("psd2_gateway_upstream_errors_total", { kind: row.upstreamError })).toBe(2);
    expect(s.value("psd2_gateway_upstream_errors_total")).toBe(row.upstreamError ? 2 : 0);
  });

  it("splits the time into the backend's share and the gateway's own", async () => {
    const { record, scrape } = setUp();
    record({ ...FORWARDED, totalMs: 30, upstreamMs: 20 });
    record({ ...FORWARDED, totalMs: 5, upstreamMs: undefined });
    const s = await scrape();
    const labels = { mode: "ingress", route_class: "payments" };
    expect(s.only("psd2_gateway_request_duration_seconds_sum", labels)).toBeCloseTo(0.035, 9);
    expect(s.only("psd2_gateway_upstream_duration_seconds_sum", labels)).toBeCloseTo(0.02, 9);
    expect(s.only("psd2_gateway_upstream_duration_seconds_count", labels)).toBe(1);
    expect(s.only("psd2_gateway_own_duration_seconds_sum", labels)).toBeCloseTo(0.015, 9);
    expect(s.only("psd2_gateway_own_duration_seconds_count", labels)).toBe(2);
  });

  it("keeps each registry's counts to itself (the label cache is per metrics object)", async () => {
    const a = setUp();
    const b = setUp();
    a.record(FORWARDED);
    a.record(FORWARDED);
    b.record(FORWARDED);
    expect((await a.scrape()).value("psd2_gateway_requests_total")).toBe(2);
    expect((await b.scrape()).value("psd2_gateway_requests_total")).toBe(1);
  });
});
