/**
 * The forwarding headers the backend gets (RFC 7239 Forwarded, X-Forwarded-*, X-Real-IP): written
 * by the gateway from what it saw on the connection, never copied from a client, which could name
 * any address, host or scheme the backend trusts. Only a peer in `trustedProxies` (a TLS-terminating
 * proxy in front of the gateway) is believed: its values are extended, as a proxy chain does.
 */

import type { IncomingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import type { PairSink } from "../forward/headers.js";

/** The header written for each fact, or undefined not to write it. */
export interface ForwardedHeaderNames {
  /** RFC 7239: `for=<peer>;host=<host>;proto=<scheme>`. */
  readonly forwarded?: string | undefined;
  readonly for?: string | undefined;
  readonly proto?: string | undefined;
  readonly host?: string | undefined;
  readonly port?: string | undefined;
  /** Only ever passed on from a trusted proxy: the gateway itself adds no path prefix. */
  readonly prefix?: string | undefined;
  readonly realIp?: string | undefined;
}

export const DEFAULT_FORWARDED_HEADER_NAMES: Required<ForwardedHeaderNames> = {
  forwarded: "forwarded",
  for: "x-forwarded-for",
  proto: "x-forwarded-proto",
  host: "x-forwarded-host",
  port: "x-forwarded-port",
  prefix: "x-forwarded-prefix",
  realIp: "x-real-ip",
};

/**
 * Client-address and scheme headers backends and frameworks read, whatever is configured: always
 * removed from what a client sends (their '_'/'.' look-alikes with them).
 */
const KNOWN_FORWARDING_HEADERS = [
  ...Object.values(DEFAULT_FORWARDED_HEADER_NAMES),
  "x-forwarded-server",
  "x-forwarded-ssl",
  "x-forwarded-scheme",
  "x-url-scheme",
  "front-end-https",
  "x-client-ip",
  "true-client-ip",
  "x-cluster-client-ip",
  "cf-connecting-ip",
  "fastly-client-ip",
  "x-originating-ip",
  "client-ip",
];

/** A Forwarded parameter value: a token as it is, anything else quoted (RFC 7239 section 4). */
function forwardedValue(value: string): string {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(value) ? value : `"${value.replace(/["\\]/g, "\\$&")}"`;
}

/** An IPv6 node in Forwarded is bracketed and quoted (RFC 7239 section 6). */
function forwardedNode(address: string): string {
  return address.includes(":") ? `"[${address}]"` : address;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}

/** A trusted proxy's value of `name` (a function, not a closure per request). */
function claimed(incoming: IncomingHttpHeaders, name: string | undefined): string | undefined {
  return name ? single(incoming[name]) : undefined;
}

export class ForwardedHeaders {
  private readonly names: ForwardedHeaderNames;
  /** Every forwarding header a client's request loses before forwarding. */
  readonly strip: readonly string[];

  constructor(
    names: ForwardedHeaderNames,
    private readonly trustedProxies: ReadonlySet<string>,
  ) {
    this.names = names;
    const configured = Object.values(names).filter((n): n is string => typeof n === "string");
    this.strip = [...new Set([...KNOWN_FORWARDING_HEADERS, ...configured])];
  }

  /**
   * Appends the forwarding headers to `out`, the upstream head as name/value pairs (the client's
   * copies already stripped): a flat list, as an object of this many keys turns into a dictionary
   * that grows per request (issue 42).
   */
  write(out: PairSink, incoming: IncomingHttpHeaders, socket: Socket): void {
    const names = this.names;
    const peer = socket.remoteAddress ?? "";
    const ownProto = (socket as Partial<TLSSocket>).encrypted ? "https" : "http";
    const host = single(incoming.host);
    // From a trusted proxy, its values stand for the client; anyone else's are ignored.
    const proxied = this.trustedProxies.has(peer);

    const proto = (proxied ? claimed(incoming, names.proto) : undefined) ?? ownProto;
    if (names.for) {
      const chain = proxied ? claimed(incoming, names.for) : undefined;
      out.push(names.for, chain ? `${chain}, ${peer}` : peer);
    }
    if (names.realIp) {
      const chain = proxied ? claimed(incoming, names.for) : undefined;
      out.push(
        names.realIp,
        (proxied ? claimed(incoming, names.realIp) : undefined) ?? chain?.split(",")[0]?.trim() ?? peer,
      );
    }
    if (names.proto) out.push(names.proto, proto);
    if (names.host) {
      const forwardedHost = (proxied ? claimed(incoming, names.host) : undefined) ?? host;
      if (forwardedHost !== undefined) out.push(names.host, forwardedHost);
    }
    if (names.port)
      out.push(
        names.port,
        (proxied ? claimed(incoming, names.port) : undefined) ?? String(socket.localPort ?? ""),
      );
    if (names.prefix) {
      const prefix = proxied ? claimed(incoming, names.prefix) : undefined;
      if (prefix !== undefined) out.push(names.prefix, prefix);
    }
    if (names.forwarded) {
      let element = `for=${forwardedNode(peer)}`;
      if (host !== undefined) element += `;host=${forwardedValue(host)}`;
      element += `;proto=${ownProto}`;
      const chain = proxied ? claimed(incoming, names.forwarded) : undefined;
      out.push(names.forwarded, chain ? `${chain}, ${element}` : element);
    }
  }
}
