/**
 * Egress mode's access line and metrics for one request: a real pino logger writing JSON lines,
 * a real registry read back as Prometheus text. Who answered (bank or gateway), signing and bank
 * time, and a failed response signature at warn, counted under the profile's mode.
 */

import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { EgressEvent } from "../../../src/events.js";
import { EgressMetrics, recordEgressRequest } from "../../../src/observability/egress-metrics.js";
import { createLogger, hashPsuId } from "../../../src/observability/logger.js";
import { Scrape } from "../../helpers/prometheus-text.js";

const PSU_ID = "PSU-4711-kari.nordmann";

const ANSWERED: EgressEvent = {
  mode: "egress",
  requestId: "r-1",
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  method: "GET",
  routeClass: "nordbank",
  status: 200,
  totalMs: 40.126,
  signingMs: 1.234,
  upstreamMs: 35.5,
  bytesOut: 2048,
  psuId: PSU_ID,
  responseSignature: "verified",
};

function setUp() {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      raw.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger("info", { destination });
  const metrics = new EgressMetrics(undefined, Date.now, { defaultMetrics: false });
  const modes: Record<string, string> = { nordbank: "enforce", sydbank: "advisory" };
  return {
    raw,
    lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>),
    record: (event: EgressEvent) =>
      recordEgressRequest(event, logger, metrics, (bank) => modes[bank] ?? "off"),
    scrape: async () => new Scrape(await metrics.registry.metrics()),
  };
}

describe("recordEgressRequest", () => {
  it("writes one info line naming the bank, the times rounded, the PSU-ID hashed", () => {
    const { raw, lines, record } = setUp();
    record(ANSWERED);
    expect(raw).toHaveLength(1);
    expect(lines()[0]).toMatchObject({
      level: 30,
      msg: "request",
      requestId: "r-1",
      traceId: ANSWERED.traceId,
      bank: "nordbank",
      method: "GET",
      status: 200,
      origin: "bank",
      responseSignature: "verified",
      totalMs: 40.13,
      signingMs: 1.23,
      upstreamMs: 35.5,
      bytes: 2048,
      psu: hashPsuId(PSU_ID),
    });
    expect(raw[0]).not.toContain(PSU_ID);
  });

  it("hashes a PSU-ID a refusal's text quotes, as ingress's line does (one access line builder)", () => {
    const { raw, lines, record } = setUp();
    record({
      ...ANSWERED,
      status: 400,
      code: "FORMAT_ERROR",
      step: "bank-profile",
      text: `no bank profile for PSU ${PSU_ID}`,
      responseSignature: undefined,
    });
    expect(lines()[0]?.["text"]).toBe(`no bank profile for PSU psu:${hashPsuId(PSU_ID)}`);
    expect(raw[0]).not.toContain(PSU_ID);
  });

  it.each([
    {
      what: "the bank's answer",
      event: ANSWERED,
      origin: "bank",
      level: 30,
      failures: undefined,
    },
    {
      what: "the gateway's own refusal",
      event: {
        ...ANSWERED,
        status: 502,
        code: "BAD_GATEWAY",
        step: "upstream",
        responseSignature: undefined,
      },
      origin: "gateway",
      level: 30,
      failures: undefined,
    },
    {
      what: "a step without a code (the application gone before the request was sent)",
      event: { ...ANSWERED, status: 499, step: "application-gone", responseSignature: undefined },
      origin: "gateway",
      level: 30,
      failures: undefined,
    },
    {
      what: "a bank response whose signature failed, enforce",
      event: {
        ...ANSWERED,
        status: 502,
        code: "BAD_GATEWAY",
        step: "response-signature",
        responseSignature: "invalid" as const,
      },
      origin: "gateway",
      level: 40,
      failures: { bank: "nordbank", mode: "enforce" },
    },
    {
      what: "a bank response whose signature failed, advisory",
      event: {
        ...ANSWERED,
        routeClass: "sydbank",
        responseSignature: "invalid" as const,
        responseProblem: "Digest mismatch",
      },
      origin: "bank",
      level: 40,
      failures: { bank: "sydbank", mode: "advisory" },
    },
  ])("$what: origin $origin", async (row) => {
    const { lines, record, scrape } = setUp();
    record(row.event);
    const [line] = lines();
    expect(line).toMatchObject({ origin: row.origin, level: row.level, status: row.event.status });
    if (row.level === 40) expect(line!.msg).toBe("request: the bank's response signature failed");
    const s = await scrape();
    expect(
      s.only("psd2_gateway_egress_requests_total", {
        bank: row.event.routeClass,
        status: String(row.event.status),
        origin: row.origin,
      }),
    ).toBe(1);
    const failed = s.value("psd2_gateway_egress_response_verification_failures_total");
    expect(failed).toBe(row.failures ? 1 : 0);
    if (row.failures)
      expect(s.only("psd2_gateway_egress_response_verification_failures_total", row.failures)).toBe(1);
  });

  it("observes signing and bank time per bank, and nothing for what did not happen", async () => {
    const { record, scrape } = setUp();
    record(ANSWERED);
    record({ ...ANSWERED, signingMs: undefined, upstreamMs: undefined, status: 400, code: "FORMAT_ERROR" });
    const s = await scrape();
    const bank = { bank: "nordbank" };
    expect(s.only("psd2_gateway_egress_signing_seconds_count", bank)).toBe(1);
    expect(s.only("psd2_gateway_egress_signing_seconds_sum", bank)).toBeCloseTo(0.001234, 9);
    expect(s.only("psd2_gateway_egress_upstream_duration_seconds_count", bank)).toBe(1);
    expect(s.only("psd2_gateway_egress_upstream_duration_seconds_sum", bank)).toBeCloseTo(0.0355, 9);
  });
});
