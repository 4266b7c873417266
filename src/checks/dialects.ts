/**
 * The signing dialects a TPP request may use, and which one the chain verifies it by. Each dialect
 * has its own headers: draft-cavage (Berlin Group NextGenPSD2 1.3, STET) `Signature` with
 * `TPP-Signature-Certificate`; RFC 9421 (FAPI 2.0) `Signature-Input` with `Signature`; JAdES
 * (Berlin Group openFinance 2.x) and UK Open Banking, both a detached JWS in `x-jws-signature`,
 * told apart by the `crit` names of its protected header.
 *
 * A request is verified by the first dialect of the path's accepted list whose headers it carries:
 * the configured preference decides, never whichever signature is weaker. The steps of the other
 * dialects are skipped (runner.ts reads `Step.dialects`).
 */

import type { IncomingHttpHeaders } from "node:http";
import { type Rejection, reject } from "../errors.js";
import { DIALECT_UNITS } from "./dialects/index.js";
import { type Authenticates, DIALECTS, type Dialect } from "./dialects/names.js";
import { underPrefix } from "./routes.js";

export { type Authenticates, DIALECTS, type Dialect } from "./dialects/names.js";

/** What each dialect's signature authenticates (names.ts), as its unit states it. */
export const AUTHENTICATES: Readonly<Record<Dialect, Authenticates>> = Object.fromEntries(
  DIALECTS.map((d) => [d, DIALECT_UNITS[d].authenticates]),
) as Record<Dialect, Authenticates>;

/** Whether a request of `dialect` is read whole and verified before anything is forwarded. */
export const verifiedBeforeSending = (dialect: Dialect): boolean => AUTHENTICATES[dialect] === "body";

/** The dialects among `accepted` whose head is bound by mutual TLS rather than by their signature. */
export const headBoundByTls = (accepted: Iterable<Dialect>): Dialect[] =>
  [...accepted].filter((d) => AUTHENTICATES[d] === "body");

/** The dialects accepted under one path prefix, in order of preference. */
export interface DialectRoute {
  readonly prefix: string;
  readonly accept: readonly Dialect[];
}

export interface DialectPolicy {
  /** Accepted everywhere no route matches, in order of preference. */
  readonly accept: readonly Dialect[];
  /** Lower-case path prefixes with a list of their own (the longest matching prefix wins). */
  readonly routes?: readonly DialectRoute[];
}

/** Only draft-cavage: what a gateway configured before dialects accepted. */
export const CAVAGE_ONLY: DialectPolicy = { accept: ["cavage"] };

/**
 * Picks the dialect a request is verified by, from its headers and routing path, or refuses it
 * saying what the path accepts. Built once per chain.
 */
export function dialectChooser(
  policy: DialectPolicy,
): (headers: IncomingHttpHeaders, path: string) => Dialect | Rejection {
  const routes = [...(policy.routes ?? [])].sort((a, b) => b.prefix.length - a.prefix.length);
  const acceptedAt = (path: string): readonly Dialect[] => {
    for (const route of routes) if (underPrefix(path, route.prefix)) return route.accept;
    return policy.accept;
  };
  // The common case, one dialect everywhere: no lookup beyond its own header.
  if (routes.length === 0 && policy.accept.length === 1 && policy.accept[0] === "cavage") {
    return (headers) =>
      headers.signature !== undefined && headers["signature-input"] === undefined
        ? "cavage"
        : missing(["cavage"], headers);
  }
  return (headers, path) => {
    const accepted = acceptedAt(path);
    const present = dialectsPresent(headers);
    for (const dialect of accepted) if (present.includes(dialect)) return dialect;
    return missing(accepted, headers);
  };
}

/** The dialects whose signature a request carries (an `x-jws-signature` is one of its two). */
export function dialectsPresent(headers: IncomingHttpHeaders): Dialect[] {
  const present: Dialect[] = [];
  if (headers["signature-input"] !== undefined) present.push("rfc9421");
  else if (headers.signature !== undefined) present.push("cavage");
  const jws = headers["x-jws-signature"];
  if (typeof jws === "string") present.push(jwsDialect(jws));
  return present;
}

const UK_OB_CLAIM = "http://openbanking.org.uk/";

/**
 * JAdES or UK Open Banking, from the protected header's text: UK OB's `crit` names are URIs under
 * openbanking.org.uk. Only a guess at the family: the dialect's own parse step reads the header
 * strictly and refuses what does not belong to it, so a header disguised here fails there.
 */
function jwsDialect(value: string): Dialect {
  const dot = value.indexOf(".");
  const encoded = dot < 0 ? value : value.slice(0, dot);
  if (encoded.length > MAX_PROTECTED_HEADER_CHARS) return "jades";
  const text = Buffer.from(encoded, "base64url").toString("latin1");
  return text.replaceAll("\\/", "/").includes(UK_OB_CLAIM) ? "uk-ob" : "jades";
}

/** Long enough for a header with an x5c chain of a few certificates; the parse step bounds it too. */
const MAX_PROTECTED_HEADER_CHARS = 32 * 1024;

function missing(accepted: readonly Dialect[], headers: IncomingHttpHeaders): Rejection {
  const carried = dialectsPresent(headers);
  if (accepted.length === 1 && accepted[0] === "cavage" && carried.length === 0) {
    return reject(
      "SIGNATURE_MISSING",
      "Signature header is missing; every request must be signed with the eIDAS QSealC (SPEC 5.2)",
    );
  }
  const wanted = accepted.map((d) => DIALECT_UNITS[d].howToSign).join("; or ");
  if (carried.length === 0) {
    return reject(
      "SIGNATURE_MISSING",
      `the request is not signed; sign it with the eIDAS QSealC: send ${wanted}`,
    );
  }
  return reject(
    "SIGNATURE_MISSING",
    `the request is signed as ${carried.join(" and ")}, which this path does not accept; send ${wanted}`,
  );
}
