/**
 * The forwarding headers the backend gets: the gateway's own view of the connection, the client's
 * claims ignored unless the peer is a trusted proxy, whose chain is extended (RFC 7239 for
 * Forwarded, the de-facto rules for X-Forwarded-*).
 */

import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_FORWARDED_HEADER_NAMES,
  type ForwardedHeaderNames,
  ForwardedHeaders,
} from "../../../src/ingress/forwarded.js";

/** What the writer reads of a socket: its peer, its local port, whether it is TLS. */
const socket = (remoteAddress: string, encrypted = true) =>
  ({ remoteAddress, localPort: 8443, encrypted }) as unknown as Socket;

const CLAIMS = {
  host: "gateway.bank:8443",
  "x-forwarded-for": "203.0.113.7, 10.0.0.1",
  "x-real-ip": "203.0.113.9",
  "x-forwarded-proto": "http",
  "x-forwarded-host": "public.bank",
  "x-forwarded-port": "443",
  "x-forwarded-prefix": "/api",
  forwarded: "for=203.0.113.7;proto=https",
};

function written(
  peer: string,
  trusted: string[],
  names: ForwardedHeaderNames = DEFAULT_FORWARDED_HEADER_NAMES,
  encrypted = true,
) {
  const list: string[] = [];
  new ForwardedHeaders(names, new Set(trusted)).write(list, CLAIMS, socket(peer, encrypted));
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  // Name/value pairs, each name once: what a record of them would have said.
  expect(Object.keys(out).length * 2).toBe(list.length);
  return out;
}

describe("ForwardedHeaders", () => {
  it("writes only what the gateway saw when the peer is not a trusted proxy", () => {
    expect(written("198.51.100.4", [])).toEqual({
      "x-forwarded-for": "198.51.100.4",
      "x-real-ip": "198.51.100.4",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "gateway.bank:8443",
      "x-forwarded-port": "8443",
      forwarded: 'for=198.51.100.4;host="gateway.bank:8443";proto=https',
    });
  });

  it("extends a trusted proxy's chain and takes its scheme, host, port and prefix", () => {
    expect(written("10.1.1.1", ["10.1.1.1"])).toEqual({
      "x-forwarded-for": "203.0.113.7, 10.0.0.1, 10.1.1.1",
      "x-real-ip": "203.0.113.9",
      "x-forwarded-proto": "http",
      "x-forwarded-host": "public.bank",
      "x-forwarded-port": "443",
      "x-forwarded-prefix": "/api",
      forwarded: 'for=203.0.113.7;proto=https, for=10.1.1.1;host="gateway.bank:8443";proto=https',
    });
  });

  it("brackets and quotes an IPv6 peer in Forwarded, and says http on a plain listener", () => {
    expect(written("2001:db8::1", [], DEFAULT_FORWARDED_HEADER_NAMES, false).forwarded).toBe(
      'for="[2001:db8::1]";host="gateway.bank:8443";proto=http',
    );
  });

  it("writes configured names, none for a switched-off one, and strips the well-known names besides", () => {
    const names = { ...DEFAULT_FORWARDED_HEADER_NAMES, for: "x-client-address", forwarded: undefined };
    const headers = new ForwardedHeaders(names, new Set());
    expect(headers.strip).toEqual(
      expect.arrayContaining([
        "x-client-address",
        "x-forwarded-for",
        "forwarded",
        "true-client-ip",
        "x-real-ip",
      ]),
    );
    const out = written("198.51.100.4", [], names);
    expect(out["x-client-address"]).toBe("198.51.100.4");
    expect(out["x-forwarded-for"]).toBeUndefined();
    expect(out.forwarded).toBeUndefined();
  });
});
