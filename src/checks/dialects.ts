/**
 * The signing dialects a TPP request may use, and which one the chain verifies it by. Each dialect's
 * unit says whether a request carries its signature (`detect`): draft-cavage (Berlin Group
 * NextGenPSD2 1.3, STET) `Signature` with `TPP-Signature-Certificate`; RFC 9421 (FAPI 2.0)
 * `Signature-Input` with `Signature`; JAdES (Berlin Group openFinance 2.x) and UK Open Banking,
 * both a detached JWS in `x-jws-signature`, told apart by the `crit` names of its protected header.
 *
 * A request is verified by the first dialect of the path's accepted list whose headers it carries:
 * the configured preference decides, never whichever signature is weaker. The steps of the other
 * dialects are skipped (runner.ts reads `Step.dialects`).
 */

import type { IncomingHttpHeaders } from "node:http";
import { type Rejection, reject } from "../errors.js";
import type { Dialect } from "./dialect-names.js";
import { dialectUnit, dialectUnits } from "./dialects/index.js";
import type { DialectUnit } from "./dialects/unit.js";
import { underPrefix } from "./routes.js";

export type { Authenticates, Dialect } from "./dialect-names.js";

/** The unit of a dialect the table holds; a name from outside it is a configuration error. */
function unitOf(dialect: Dialect): DialectUnit {
  const unit = dialectUnit(dialect);
  if (!unit) throw new Error(`the signing dialect '${dialect}' is accepted but the chain cannot verify it`);
  return unit;
}

/** Whether a request of `dialect` is read whole and verified before anything is forwarded. */
export const verifiedBeforeSending = (dialect: Dialect): boolean =>
  dialectUnit(dialect)?.authenticates === "body";

/** The dialects among `accepted` whose head is bound by mutual TLS rather than by their signature. */
export const headBoundByTls = (accepted: Iterable<Dialect>): Dialect[] =>
  [...accepted].filter((d) => dialectUnit(d)?.authenticates === "body");

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
 * saying what the path accepts. Built once per chain: each list's units are looked up here.
 */
export function dialectChooser(
  policy: DialectPolicy,
): (headers: IncomingHttpHeaders, path: string) => Dialect | Rejection {
  const routes = [...(policy.routes ?? [])]
    .sort((a, b) => b.prefix.length - a.prefix.length)
    .map((route) => ({ prefix: route.prefix, accept: route.accept.map(unitOf) }));
  const everywhere = policy.accept.map(unitOf);
  const acceptedAt = (path: string): readonly DialectUnit[] => {
    for (const route of routes) if (underPrefix(path, route.prefix)) return route.accept;
    return everywhere;
  };
  // The common case, one dialect everywhere: no lookup beyond its own header.
  if (routes.length === 0 && everywhere.length === 1) {
    const only = everywhere[0]!;
    return (headers) => (only.detect(headers) ? only.name : missing(everywhere, headers));
  }
  return (headers, path) => {
    const accepted = acceptedAt(path);
    for (const unit of accepted) if (unit.detect(headers)) return unit.name;
    return missing(accepted, headers);
  };
}

/** The dialects whose signature a request carries, in the table's order. */
export function dialectsPresent(headers: IncomingHttpHeaders): Dialect[] {
  const present: Dialect[] = [];
  for (const unit of dialectUnits()) if (unit.detect(headers)) present.push(unit.name);
  return present;
}

function missing(accepted: readonly DialectUnit[], headers: IncomingHttpHeaders): Rejection {
  const carried = dialectsPresent(headers);
  if (accepted.length === 1 && accepted[0]!.name === "cavage" && carried.length === 0) {
    return reject(
      "SIGNATURE_MISSING",
      "Signature header is missing; every request must be signed with the eIDAS QSealC (SPEC 5.2)",
    );
  }
  const wanted = accepted.map((d) => d.howToSign).join("; or ");
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
