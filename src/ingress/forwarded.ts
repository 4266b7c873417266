/**
 * The forwarding headers the backend gets (RFC 7239 Forwarded, X-Forwarded-*, X-Real-IP): written
 * by the gateway from what it saw on the connection, never copied from a client, which could name
 * any address, host or scheme the backend trusts. Only a peer in `trustedProxies` (a TLS-terminating
 * proxy in front of the gateway) is believed: its values are extended, as a proxy chain does.
 */

import type { IncomingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";

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

  /** Adds the forwarding headers to `out` (the upstream headers, the client's already stripped). */
  write(out: Record<string, string | string[]>, incoming: IncomingHttpHeaders, socket: Socket): void {
    const names = this.names;
    const peer = socket.remoteAddress ?? "";
    const ownProto = (socket as Partial<TLSSocket>).encrypted ? "https" : "http";
    const host = single(incoming.host);
    // From a trusted proxy, its values stand for the client; anyone else's are ignored.
    const proxied = this.trustedProxies.has(peer);
    const from = (name: string | undefined) => (proxied && name ? single(incoming[name]) : undefined);

    const proto = from(names.proto) ?? ownProto;
    if (names.for) {
      const chain = from(names.for);
      out[names.for] = chain ? `${chain}, ${peer}` : peer;
    }
    if (names.realIp) {
      const chain = from(names.for);
      out[names.realIp] = from(names.realIp) ?? chain?.split(",")[0]?.trim() ?? peer;
    }
    if (names.proto) out[names.proto] = proto;
    if (names.host) {
      const forwardedHost = from(names.host) ?? host;
      if (forwardedHost !== undefined) out[names.host] = forwardedHost;
    }
    if (names.port) out[names.port] = from(names.port) ?? String(socket.localPort ?? "");
    if (names.prefix) {
      const prefix = from(names.prefix);
      if (prefix !== undefined) out[names.prefix] = prefix;
    }
    if (names.forwarded) {
      let element = `for=${forwardedNode(peer)}`;
      if (host !== undefined) element += `;host=${forwardedValue(host)}`;
      element += `;proto=${ownProto}`;
      const chain = from(names.forwarded);
      out[names.forwarded] = chain ? `${chain}, ${element}` : element;
    }
  }
}
