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
 * bounded, so each combination's child is looked up once and kept, by its four labels in turn
 * (no key string built per request).
 */
const children = new WeakMap<GatewayMetrics, Map<string, Map<string, Map<string, Map<number, ChildSet>>>>>();

/** The value under `key`, made and set on first sight (a Map, or the WeakMap keyed by registry). */
function within<K, V>(
  map: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  make: () => V,
): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

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
  status: number,
): ChildSet {
  const found = children.get(metrics)?.get(mode)?.get(routeClass)?.get(outcome)?.get(status);
  if (found) return found;
  // First sight of this combination: made once (no closures on the lookup above).
  const byMode = within(children, metrics, () => new Map());
  const byOutcome = within(
    within(byMode, mode, () => new Map()),
    routeClass,
    () => new Map(),
  );
  return within(
    within(byOutcome, outcome, () => new Map()),
    status,
    () => ({
      requests: metrics.requests.labels(mode, routeClass, outcome, String(status)),
      duration: metrics.requestDuration.labels(mode, routeClass),
      own: metrics.gatewayDuration.labels(mode, routeClass),
      upstream: metrics.upstreamDuration.labels(mode, routeClass),
    }),
  );
}

/** Long enough for every refusal the gateway writes; a PSU-ID a text quotes is hashed as the psu field is. */
const MAX_LOGGED_TEXT = 1000;

function refusalText(text: string, psuId: string | undefined): string {
  const clipped = text.length > MAX_LOGGED_TEXT ? `${text.slice(0, MAX_LOGGED_TEXT)}…` : text;
  return psuId && psuId.length > 0 ? clipped.replaceAll(psuId, `psu:${hashPsuId(psuId)}`) : clipped;
}

/** What an access line says of any request, either mode's: the shared fields, in one place. */
export interface AccessFacts {
  readonly requestId?: string | undefined;
  readonly traceId?: string | undefined;
  readonly method: string;
  readonly status: number;
  readonly code?: string | undefined;
  readonly step?: string | undefined;
  readonly text?: string | undefined;
  readonly totalMs: number;
  readonly upstreamMs?: number | undefined;
  readonly bytesOut?: number | undefined;
  readonly psuId?: string | undefined;
}

const ms = (value: number | undefined) => (value === undefined ? undefined : Math.round(value * 100) / 100);

/**
 * The access line's fields both modes write, `own` (the mode's: tpp and route, or bank and origin)
 * placed after the ids; no headers, no bodies: identifiers only, the PSU-ID salted and hashed, also
 * where a refusal's text quotes it.
 */
export function accessLine(event: AccessFacts, own: Record<string, unknown>): Record<string, unknown> {
  return {
    requestId: event.requestId,
    traceId: event.traceId,
    ...own,
    method: event.method,
    status: event.status,
    code: event.code,
    step: event.step,
    text: event.text === undefined ? undefined : refusalText(event.text, event.psuId),
    totalMs: ms(event.totalMs),
    upstreamMs: ms(event.upstreamMs),
    bytes: event.bytesOut,
    psu: event.psuId === undefined ? undefined : hashPsuId(event.psuId),
  };
}

export function recordRequest(event: RequestEvent, logger: Logger, metrics: GatewayMetrics): void {
  const outcome = outcomeOf(event);
  const m = childrenFor(metrics, event.mode, event.routeClass, outcome, event.status);
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
    accessLine(event, {
      tpp: event.organizationId,
      trustReport: event.trustReport,
      unattendedLimit: event.unattendedLimit,
      limitSource: event.limitSource,
      routeClass: event.routeClass,
      route: event.route,
    }),
    "request",
  );
}
