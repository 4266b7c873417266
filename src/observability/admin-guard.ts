/**
 * Who the admin listener answers (issue 37 point 6): not a page in the operator's browser. A Host
 * must be an IP literal or a name on the allow-list (DNS rebinding needs a name the attacker
 * controls); an Origin must be the request's own; `Sec-Fetch-Site: cross-site` is refused, and
 * `same-site` for what changes state; with `admin.tokenFile`, every method but GET and HEAD needs
 * its bearer token, compared in constant time.
 */

import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { isIPv4, isIPv6 } from "node:net";
import { type Rejection, reject } from "../errors.js";
import { isWildcardHost } from "../loopback.js";

/** The metric label and log field of a refusal: bounded. */
export const ADMIN_REFUSAL_REASONS = [
  "host",
  "origin",
  "sec-fetch-site",
  "token-missing",
  "token-wrong",
  "tls-handshake",
] as const;
export type AdminRefusalReason = (typeof ADMIN_REFUSAL_REASONS)[number];

export interface AdminRefusal {
  readonly reason: AdminRefusalReason;
  readonly rejection: Rejection;
  /** What the log line shows of the request (clipped). */
  readonly detail?: string;
}

/** The names a Host may carry besides IP literals: the loopback names. */
export const LOOPBACK_HOST_NAMES = ["localhost", "127.0.0.1", "[::1]"] as const;

export interface AdminGuardOptions {
  /** The listen host: a non-wildcard one joins the allowed names. */
  readonly listenHost: string;
  /** More names the admin listener is reached by (admin.hostNames), e.g. a Prometheus target's. */
  readonly hostNames?: readonly string[];
  /** admin.tokenFile: when set, every method but GET and HEAD needs `Authorization: Bearer <its content>`. */
  readonly tokenFile?: string;
  /** https with admin.tls. */
  readonly scheme: "http" | "https";
}

/** `localhost.` is `localhost`; names compare case-insensitively; brackets kept for IPv6. */
function canonicalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** The name of a Host value without its port, or undefined when it is no host[:port]. */
function hostName(value: string): string | undefined {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(value);
  if (bracketed) return isIPv6(bracketed[1]!) ? `[${bracketed[1]!.toLowerCase()}]` : undefined;
  const plain = /^([A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(value);
  return plain ? canonicalName(plain[1]!) : undefined;
}

const isIpLiteral = (name: string) => isIPv4(name) || (name.startsWith("[") && isIPv6(name.slice(1, -1)));

const clip = (s: string) => (s.length > 128 ? `${s.slice(0, 128)}…` : s);

/** A token file's content: one line, surrounding whitespace (the file's newline) ignored. */
export function readToken(file: string): string {
  const token = readFileSync(file, "utf8").trim();
  if (token.length < 16)
    throw new Error(`admin.tokenFile ${file} holds ${token.length} characters; a token needs at least 16`);
  if (/\s/.test(token)) throw new Error(`admin.tokenFile ${file} holds whitespace inside the token`);
  return token;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

export function adminGuard(options: AdminGuardOptions): (req: IncomingMessage) => AdminRefusal | undefined {
  const names = new Set<string>(
    [
      ...LOOPBACK_HOST_NAMES,
      ...(isWildcardHost(options.listenHost) ? [] : [options.listenHost]),
      ...(options.hostNames ?? []),
    ].map((n) => hostName(n.includes(":") && !n.startsWith("[") ? `[${n}]` : n) ?? canonicalName(n)),
  );
  const allowed = (name: string) => isIpLiteral(name) || names.has(name);
  const listed = [...names].join(", ");
  if (options.tokenFile !== undefined) readToken(options.tokenFile); // refused at start when unusable

  return (req) => {
    const host = req.headers.host;
    // HTTP/1.0 without Host: no browser sends that.
    if (host !== undefined) {
      const name = hostName(host);
      if (name === undefined || !allowed(name))
        return {
          reason: "host",
          detail: clip(host),
          rejection: reject(
            "SERVICE_BLOCKED",
            `the admin listener does not answer Host ${clip(host)}: address it by IP or by a name in admin.hostNames (now ${listed})`,
          ),
        };
    }
    const origin = req.headers.origin;
    if (origin !== undefined) {
      let own: string | undefined;
      try {
        own = host === undefined ? undefined : new URL(`${options.scheme}://${host}`).origin;
      } catch {
        own = undefined;
      }
      if (own === undefined || origin.toLowerCase() !== own)
        return {
          reason: "origin",
          detail: clip(origin),
          rejection: reject(
            "SERVICE_BLOCKED",
            `the admin listener does not answer pages of another origin (Origin ${clip(origin)}): call it from a command line or a monitoring system, not a browser page`,
          ),
        };
    }
    const site = req.headers["sec-fetch-site"];
    const changes = req.method !== "GET" && req.method !== "HEAD";
    if (site === "cross-site" || (site === "same-site" && changes))
      return {
        reason: "sec-fetch-site",
        detail: site,
        rejection: reject(
          "SERVICE_BLOCKED",
          `the admin listener does not answer a browser's ${site} requests${changes ? " that change state" : ""}: call it from a command line, not a web page`,
        ),
      };
    if (changes && options.tokenFile !== undefined) {
      const given = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? "")?.[1];
      if (given === undefined)
        return {
          reason: "token-missing",
          rejection: reject(
            "TOKEN_INVALID",
            `${req.method} on the admin listener needs Authorization: Bearer <the token in admin.tokenFile>`,
          ),
        };
      // Read at each use: a rotated Secret takes effect without a restart. Digests of equal length
      // compared in constant time: neither the token nor its length leaks through timing.
      const expected = readToken(options.tokenFile);
      if (!timingSafeEqual(digest(given), digest(expected)))
        return {
          reason: "token-wrong",
          rejection: reject(
            "TOKEN_INVALID",
            "the bearer token is not the one in admin.tokenFile: send that file's content as Authorization: Bearer <token>",
          ),
        };
    }
    return undefined;
  };
}
