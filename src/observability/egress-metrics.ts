/**
 * Egress mode's metrics: per bank profile, the requests and their status, the time spent signing
 * (the most expensive thing egress does), the bank's answer time and response-signature failures.
 * The bank label is a configured profile name, so its values are bounded.
 */

import { Counter, Histogram } from "prom-client";
import type { StepCounts } from "../checks/index.js";
import type { EgressEvent } from "../events.js";
import { EvidenceMetrics } from "./evidence-metrics.js";
import type { Logger } from "./logger.js";
import { type CertificateExpiries, ModeMetrics, stepCounter } from "./mode-metrics.js";
import { accessLine } from "./request-log.js";

const SIGNING_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class EgressMetrics extends ModeMetrics {
  /** The evidence store of checked bank answers (`evidence:`), as ingress's. */
  readonly evidence = new EvidenceMetrics(this.registry);
  readonly requests = new Counter({
    name: "psd2_gateway_egress_requests_total",
    help: "Requests sent on by egress mode, by bank profile, status and who answered (bank or gateway)",
    labelNames: ["bank", "status", "origin"] as const,
    registers: [this.registry],
  });
  readonly signing = new Histogram({
    name: "psd2_gateway_egress_signing_seconds",
    help: "Time to sign one outbound request (digest and RSA/ECDSA signature on the thread pool)",
    labelNames: ["bank"] as const,
    buckets: SIGNING_BUCKETS,
    registers: [this.registry],
  });
  readonly upstream = new Histogram({
    name: "psd2_gateway_egress_upstream_duration_seconds",
    help: "Time from sending a request to the bank's response headers",
    labelNames: ["bank"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly responseFailures = new Counter({
    name: "psd2_gateway_egress_response_verification_failures_total",
    help: "Bank responses whose signature failed verification (advisory: passed on; enforce: replaced by 502)",
    labelNames: ["bank", "mode"] as const,
    registers: [this.registry],
  });

  constructor(
    certificates: CertificateExpiries | undefined,
    now: () => number = Date.now,
    options: { defaultMetrics?: boolean } = {},
  ) {
    super({
      prefix: "psd2_gateway_egress_",
      stepsHelp:
        "Verdicts of each named step of an application's request (expect, bank-profile, body, sign), by outcome",
      certificates,
      now,
      ...options,
    });
    stepCounter(
      this.registry,
      "psd2_gateway_egress_response_steps_total",
      "Verdicts of each named check of a bank's response signature, per bank profile, by outcome (since the profile was loaded)",
      ["bank"],
      () => this.responseSteps().map(([bank, counts]) => [{ bank }, counts] as const),
    );
  }

  private responseSteps: () => readonly (readonly [string, StepCounts])[] = () => [];

  /** The bank profiles' response checks (their long-lived chains), read at scrape time. */
  watchResponseSteps(read: () => readonly (readonly [string, StepCounts])[]): void {
    this.responseSteps = read;
  }
}

/** One access line and the metrics for one egress request; the PSU-ID is hashed, no header is logged. */
export function recordEgressRequest(
  event: EgressEvent,
  logger: Logger,
  metrics: EgressMetrics,
  responseMode: (bank: string) => string,
): void {
  const bank = event.routeClass;
  const origin = event.code === undefined && event.step === undefined ? "bank" : "gateway";
  metrics.requests.inc({ bank, status: String(event.status), origin });
  if (event.signingMs !== undefined) metrics.signing.observe({ bank }, event.signingMs / 1000);
  if (event.upstreamMs !== undefined) metrics.upstream.observe({ bank }, event.upstreamMs / 1000);
  if (event.responseSignature === "invalid") metrics.responseFailures.inc({ bank, mode: responseMode(bank) });
  const invalid = event.responseSignature === "invalid";
  if (!logger.isLevelEnabled(invalid ? "warn" : "info")) return;
  const line = {
    ...accessLine(event, { bank }),
    origin,
    responseSignature: event.responseSignature,
    responseProblem: event.responseProblem,
    signingMs: event.signingMs === undefined ? undefined : Math.round(event.signingMs * 100) / 100,
  };
  if (invalid) logger.warn(line, "request: the bank's response signature failed");
  else logger.info(line, "request");
}
