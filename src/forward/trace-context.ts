/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) across the gateway: the caller's trace
 * goes on to the backend with the gateway as its next span (same trace id, a new parent id), or a
 * new trace starts when the caller sent none or a malformed one (its tracestate then dropped, as
 * section 3.3 says). The trace id is in every access line, so one payment can be followed from
 * the TPP through the gateway into the bank's systems.
 */

import { randomFillSync } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { PairSink } from "./headers.js";

export interface TraceContext {
  /** 32 lower-case hex digits. */
  readonly traceId: string;
  /** The header the backend gets: version 00, the trace id, the gateway's span id, the flags. */
  readonly traceparent: string;
  /** The caller's tracestate, passed on unchanged when its traceparent was valid. */
  readonly tracestate: string | undefined;
}

/**
 * version-traceid-parentid-flags; a future version may append fields after a '-' (section 3.2.4),
 * version ff is invalid, and an all-zero trace or parent id is invalid.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/** Random ids from a pooled buffer: one fill per 64 ids instead of an allocation per request. */
const pool = Buffer.alloc(16 * 64);
let used = pool.length;

function randomHex(bytes: 8 | 16): string {
  if (used + bytes > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const hex = pool.toString("hex", used, used + bytes);
  used += bytes;
  return hex;
}

function newSpanId(): string {
  let id = randomHex(8);
  while (id === ZERO_SPAN) id = randomHex(8);
  return id;
}

/** The trace the request belongs to, from its `traceparent`/`tracestate` or a new one. */
export function traceContextOf(headers: IncomingHttpHeaders): TraceContext {
  const incoming = headers.traceparent;
  const match = typeof incoming === "string" ? TRACEPARENT.exec(incoming) : null;
  if (match) {
    const [, version, traceId, parentId, flags, rest] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
      string | undefined,
    ];
    const valid =
      version !== "ff" &&
      (version !== "00" || rest === undefined) &&
      traceId !== ZERO_TRACE &&
      parentId !== ZERO_SPAN;
    if (valid) {
      const state = headers.tracestate;
      return {
        traceId,
        traceparent: `00-${traceId}-${newSpanId()}-${flags}`,
        tracestate: Array.isArray(state) ? state.join(",") : state,
      };
    }
  }
  let traceId = randomHex(16);
  while (traceId === ZERO_TRACE) traceId = randomHex(16);
  // Sampled: the gateway records the trace id in its access line.
  return { traceId, traceparent: `00-${traceId}-${newSpanId()}-01`, tracestate: undefined };
}

/** Writes the trace context into the headers going upstream (the caller's own replaced). */
export function writeTraceContext(out: Record<string, string | string[]>, trace: TraceContext): void {
  out.traceparent = trace.traceparent;
  if (trace.tracestate !== undefined) out.tracestate = trace.tracestate;
  else delete out.tracestate;
}

/** The same, appended to a head of name/value pairs whose client copies were stripped. */
export function pushTraceContext(out: PairSink, trace: TraceContext): void {
  out.push("traceparent", trace.traceparent);
  if (trace.tracestate !== undefined) out.push("tracestate", trace.tracestate);
}
