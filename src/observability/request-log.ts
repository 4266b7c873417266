/** What happens once per request: one access log line and the request metrics. */

import type { RequestEvent } from "../ingress/handler.js";
import type { Logger } from "./logger.js";
import type { GatewayMetrics } from "./metrics.js";

function outcomeOf(event: RequestEvent): "forwarded" | "rejected" | "upstream_error" {
  if (event.code === "BAD_GATEWAY" || event.code === "GATEWAY_TIMEOUT") return "upstream_error";
  return event.code === undefined ? "forwarded" : "rejected";
}

export function recordRequest(event: RequestEvent, logger: Logger, metrics: GatewayMetrics): void {
  const labels = { mode: "ingress", route_class: event.routeClass };
  const outcome = outcomeOf(event);
  metrics.requests.inc({ ...labels, outcome, status: String(event.status) });
  if (event.code !== undefined) metrics.rejections.inc({ code: event.code });
  if (event.code === "BAD_GATEWAY") metrics.upstreamErrors.inc({ kind: "bad_gateway" });
  if (event.code === "GATEWAY_TIMEOUT") metrics.upstreamErrors.inc({ kind: "timeout" });
  metrics.requestDuration.observe(labels, event.totalMs / 1000);
  if (event.upstreamMs !== undefined) {
    metrics.upstreamDuration.observe(labels, event.upstreamMs / 1000);
    metrics.gatewayDuration.observe(labels, Math.max(0, event.totalMs - event.upstreamMs) / 1000);
  } else {
    metrics.gatewayDuration.observe(labels, event.totalMs / 1000);
  }
  // One line per request; no headers, no bodies: identifiers only, PSU-ID salted and hashed.
  logger.info(
    {
      requestId: event.requestId,
      tpp: event.organizationId,
      routeClass: event.routeClass,
      method: event.method,
      status: event.status,
      code: event.code,
      totalMs: Math.round(event.totalMs * 100) / 100,
      upstreamMs: event.upstreamMs === undefined ? undefined : Math.round(event.upstreamMs * 100) / 100,
      bytes: event.bytesOut,
      psu: event.psuHash,
    },
    "request",
  );
}
