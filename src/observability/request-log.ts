/** What happens once per request: one access log line and the request metrics. */

import type { RequestEvent } from "../events.js";
import { hashPsuId, type Logger } from "./logger.js";
import type { GatewayMetrics } from "./metrics.js";

function outcomeOf(event: RequestEvent): "forwarded" | "rejected" | "upstream_error" {
  if (event.code === "BAD_GATEWAY" || event.code === "GATEWAY_TIMEOUT") return "upstream_error";
  return event.code === undefined ? "forwarded" : "rejected";
}

/**
 * prom-client validates label values on every inc/observe; the label combinations are few and
 * bounded, so each combination's child is looked up once and kept.
 */
const children = new WeakMap<GatewayMetrics, Map<string, ChildSet>>();

interface ChildSet {
  readonly requests: { inc(): void };
  readonly duration: { observe(v: number): void };
  readonly own: { observe(v: number): void };
  readonly upstream: { observe(v: number): void };
}

function childrenFor(
  metrics: GatewayMetrics,
  mode: string,
  routeClass: string,
  outcome: string,
  status: string,
): ChildSet {
  let byKey = children.get(metrics);
  if (!byKey) {
    byKey = new Map();
    children.set(metrics, byKey);
  }
  const key = `${mode}|${routeClass}|${outcome}|${status}`;
  let set = byKey.get(key);
  if (!set) {
    set = {
      requests: metrics.requests.labels(mode, routeClass, outcome, status),
      duration: metrics.requestDuration.labels(mode, routeClass),
      own: metrics.gatewayDuration.labels(mode, routeClass),
      upstream: metrics.upstreamDuration.labels(mode, routeClass),
    };
    byKey.set(key, set);
  }
  return set;
}

export function recordRequest(event: RequestEvent, logger: Logger, metrics: GatewayMetrics): void {
  const outcome = outcomeOf(event);
  const m = childrenFor(metrics, event.mode, event.routeClass, outcome, String(event.status));
  m.requests.inc();
  if (event.code !== undefined) metrics.rejections.inc({ code: event.code, step: event.step ?? "" });
  if (event.code === "BAD_GATEWAY") metrics.upstreamErrors.inc({ kind: "bad_gateway" });
  if (event.code === "GATEWAY_TIMEOUT") metrics.upstreamErrors.inc({ kind: "timeout" });
  m.duration.observe(event.totalMs / 1000);
  if (event.upstreamMs !== undefined) {
    m.upstream.observe(event.upstreamMs / 1000);
    m.own.observe(Math.max(0, event.totalMs - event.upstreamMs) / 1000);
  } else {
    m.own.observe(event.totalMs / 1000);
  }
  // One line per request; no headers, no bodies: identifiers only, PSU-ID salted and hashed.
  // Built only when it is written (the PSU-ID's hash is a SHA-256).
  if (!logger.isLevelEnabled("info")) return;
  logger.info(
    {
      requestId: event.requestId,
      tpp: event.organizationId,
      routeClass: event.routeClass,
      method: event.method,
      status: event.status,
      code: event.code,
      step: event.step,
      totalMs: Math.round(event.totalMs * 100) / 100,
      upstreamMs: event.upstreamMs === undefined ? undefined : Math.round(event.upstreamMs * 100) / 100,
      bytes: event.bytesOut,
      psu: event.psuId === undefined ? undefined : hashPsuId(event.psuId),
    },
    "request",
  );
}
