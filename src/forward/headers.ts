/** Header handling a proxy must do: hop-by-hop headers never cross it (RFC 9110 section 7.6.1). */

import type { IncomingHttpHeaders } from "node:http";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  // undici sets these itself from the body and the origin.
  "host",
  "expect",
]);

const NONE: readonly string[] = Object.freeze([]);
/** Separators a backend may read as '-' in a header name. */
const LOOK_ALIKE = /[_.]/g;

/** Names listed in a Connection header are hop-by-hop too. */
function connectionListed(value: string | string[] | undefined): readonly string[] {
  if (value === undefined) return NONE;
  // The usual `keep-alive` (Node sends it on every answer) names a header dropped anyway.
  if (typeof value === "string" && !value.includes(",") && HOP_BY_HOP.has(value.trim().toLowerCase()))
    return NONE;
  const text = Array.isArray(value) ? value.join(",") : value;
  return text
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s.length > 0);
}

/** Whether the client's header `name` goes upstream (`extra`: the names its Connection lists). */
function passes(name: string, strip: ReadonlySet<string>, extra: readonly string[]): boolean {
  if (HOP_BY_HOP.has(name) || strip.has(name)) return false;
  // CGI-style backends read x_tpp_roles (and some x.tpp.roles) as x-tpp-roles: look-alikes are
  // stripped too.
  if ((name.includes("_") || name.includes(".")) && strip.has(name.replace(LOOK_ALIKE, "-"))) return false;
  return !(extra.length > 0 && extra.includes(name));
}

/**
 * The headers to send upstream: everything but hop-by-hop headers and the names in `strip`
 * (identity headers a client must not be able to forge). Repeated headers stay arrays.
 */
export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  strip: ReadonlySet<string>,
): Record<string, string | string[]> {
  const extra = connectionListed(incoming.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) {
    if (!passes(name, strip, extra)) continue;
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Where a head's name/value pairs are appended: a plain array, or a HeadPairs. */
export interface PairSink {
  push(name: string, value: string): unknown;
}

/**
 * An upstream head as name/value pairs, written by index into one array sized once and trimmed to
 * what was written: pushing into an array that starts empty allocated its backing store three or
 * four times per request as it grew (issue 42). undici takes the flat list as it is, where an
 * object of this many keys would be a dictionary grown per request.
 */
export class HeadPairs implements PairSink {
  private readonly items: string[];
  private length = 0;

  /** `capacity`: at most how many names and values will be written (more still works, growing). */
  constructor(capacity: number) {
    this.items = new Array(capacity);
  }

  push(name: string, value: string): void {
    const items = this.items;
    items[this.length++] = name;
    items[this.length++] = value;
  }

  /** The pairs written, as one array (the same array: write nothing after). */
  list(): string[] {
    this.items.length = this.length;
    return this.items;
  }
}

/**
 * Appends the headers to send upstream to `out` as name/value pairs (a repeated header once per
 * value): everything but hop-by-hop headers and the names in `strip`.
 */
export function appendUpstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  strip: ReadonlySet<string>,
  out: PairSink,
): void {
  const extra = connectionListed(incoming.connection);
  for (const name in incoming) {
    if (!passes(name, strip, extra)) continue;
    const value = incoming[name];
    if (typeof value === "string") out.push(name, value);
    else if (value !== undefined) for (const one of value) out.push(name, one);
  }
}

/** Response headers to pass back to the client, without hop-by-hop ones. */
export function downstreamResponseHeaders(
  upstream: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const extra = connectionListed(upstream.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in upstream) {
    if ((HOP_BY_HOP.has(name) && name !== "host") || extra.includes(name)) continue;
    const value = upstream[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** One string per header, repeated values joined with `, ` (RFC 9110 5.3): what a signer reads. */
export function joinedHeaders(headers: Readonly<Record<string, string | string[]>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    out[name] = Array.isArray(value) ? value.join(", ") : value;
  return out;
}
