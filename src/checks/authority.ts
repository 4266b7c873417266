/**
 * The Host header as an authority (RFC 9110 7.2: `uri-host [ ":" port ]`, RFC 3986 3.2.2 and
 * 3.2.3): a reg-name, an IPv4 address or a bracketed IP literal, and digits for the port. Nothing
 * else, so no path, query, userinfo or second authority can hide in it and reach what is built
 * from it (RFC 9421's @target-uri and @authority, the backend's Forwarded host).
 */

import { isIPv6 } from "node:net";
import { type Rejection, reject } from "../errors.js";

export interface Authority {
  /** As sent (its case kept: @target-uri is the URI the client used). */
  readonly host: string;
  readonly port: string | undefined;
}

/** unreserved / pct-encoded / sub-delims (RFC 3986 3.2.2), at least one character. */
const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;
const PORT = /^[0-9]{1,5}$/;
/** Longer than any DNS name (253) with a port; the header bound is Node's. */
const MAX_AUTHORITY = 300;

export function parseAuthority(value: string): Authority | Rejection {
  if (value.length === 0 || value.length > MAX_AUTHORITY) return invalid(value, "it is empty or too long");
  let host: string;
  let rest: string;
  if (value.startsWith("[")) {
    const close = value.indexOf("]");
    if (close < 0) return invalid(value, "an IP literal must end with ']'");
    host = value.slice(0, close + 1);
    if (!isIPv6(host.slice(1, -1))) return invalid(value, "the IP literal is not an IPv6 address");
    rest = value.slice(close + 1);
  } else {
    const colon = value.indexOf(":");
    host = colon < 0 ? value : value.slice(0, colon);
    rest = colon < 0 ? "" : value.slice(colon);
    if (!REG_NAME.test(host)) return invalid(value, "a host name has letters, digits and - . _ ~ only");
  }
  if (rest === "") return { host, port: undefined };
  const port = rest.slice(1);
  if (!rest.startsWith(":") || !PORT.test(port) || Number(port) > 65535)
    return invalid(value, "the port after ':' must be a number up to 65535");
  return { host, port };
}

/**
 * Whether `authority` names one of `names` (lower-case host names, each optionally with a port):
 * the host compared without case, the port when the name has one.
 */
export function servedAuthority(authority: Authority, names: readonly string[]): boolean {
  const host = authority.host.toLowerCase();
  const withPort = authority.port === undefined ? host : `${host}:${authority.port}`;
  return names.some((name) => name === host || name === withPort);
}

function invalid(value: string, why: string): Rejection {
  return reject(
    "FORMAT_ERROR",
    `Host '${value.slice(0, 100)}' is not a host[:port] (RFC 9110 7.2): ${why}; send the API's host name and port only, e.g. Host: api.bank.example`,
  );
}
