/**
 * What the egress families share: an application request (method, path, headers, body) aimed at
 * one of the fuzz egress gateway's bank profiles, with the target and body the bank must get, and
 * the expectation of sending it as it is.
 */

import { randomUUID } from "node:crypto";
import type { Rng } from "../prng.js";
import { type HeaderLine, type RawRequest, serialize, withTag } from "../request.js";
import type { EgressCaseContext, ExpectedRequest } from "../types.js";
import { sha256Base64 } from "../verdicts.js";

export type Profile = "bank" | "alt";

export interface AppRequest {
  readonly request: RawRequest;
  /** The Host header written first (`null`: none). */
  readonly host: string | null;
  readonly tag: string;
  readonly profile: Profile;
  /** The target the bank must receive: the profile's base path and the path below the prefix. */
  readonly backendTarget: string;
  readonly describe: string;
}

export interface AppRequestSpec {
  readonly profile?: Profile;
  readonly method?: string;
  /** The path below the profile's prefix (or the whole path for the Host-routed profile), without the tag. */
  readonly path?: string;
  readonly headers?: readonly HeaderLine[];
  readonly body?: Buffer;
  /** The Host header (default: the profile's, or `localhost` for the prefix-routed one). */
  readonly host?: string | null;
  /** Ask the backend for this answer shape. */
  readonly answer?: string;
}

const PATHS = [
  "/v1/accounts",
  "/v1/accounts/acc-1/balances",
  "/v1/accounts?withBalance=true",
  "/v1/consents",
  "/v1/payments/sepa-credit-transfers",
  "/v1/payments/sepa-credit-transfers/p-1/status",
  "/v1/funds-confirmations",
];

export function jsonBody(rng: Rng): Buffer {
  return Buffer.from(
    JSON.stringify({
      instructedAmount: {
        currency: rng.pick(["EUR", "NOK"]),
        amount: `${rng.range(1, 9999)}.${rng.range(10, 99)}`,
      },
      creditorName: rng.pick(["Fuzz Creditor", "Blåbær AS", "Ødegård & Sønn"]),
    }),
  );
}

/** A plain request from the application: PSU-ID, perhaps its own X-Request-ID, JSON for a body. */
export function appRequest(ctx: EgressCaseContext, spec: AppRequestSpec = {}): AppRequest {
  const { rng, banks } = ctx;
  const profile = spec.profile ?? (rng.chance(0.6) ? "bank" : "alt");
  const body = spec.body;
  const method =
    spec.method ?? (body !== undefined ? rng.pick(["POST", "PUT"]) : rng.pick(["GET", "GET", "DELETE"]));
  const tag = ctx.tag();
  const below = withTag(spec.path ?? rng.pick(PATHS), tag);
  const target = profile === "bank" ? `${banks.prefix}${below}` : below;
  const headers: HeaderLine[] = [["PSU-ID", rng.pick(["PSU-1001", "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a"])]];
  if (body !== undefined) headers.push(["Content-Type", "application/json"]);
  if (spec.answer !== undefined) headers.push(["X-Fuzz-Answer", spec.answer]);
  headers.push(...(spec.headers ?? []));
  const host = spec.host !== undefined ? spec.host : profile === "alt" ? banks.altHost : "localhost";
  return {
    request: { method, target, headers, ...(body !== undefined ? { body } : {}) },
    host,
    tag,
    profile,
    backendTarget: `${profile === "bank" ? banks.bankBase : banks.altBase}${below}`,
    describe: `${method} ${target.replace(/[?&]fz=[^#]*/, "")} (${profile})`,
  };
}

/** An X-Request-ID the application chose: the gateway keeps it. */
export function appRequestId(): string {
  return randomUUID();
}

export function bytesOf(app: AppRequest): Buffer {
  return serialize(app.request, { host: app.host });
}

/** The expectation of an application request sent as it is: the bank gets it, signed, and answers. */
export function forwardOf(app: AppRequest, label = "valid"): ExpectedRequest {
  return {
    tag: app.tag,
    label: `${label}: ${app.describe}`,
    expect: "forward",
    backendTarget: app.backendTarget,
    backendBodySha256: sha256Base64(app.request.body ?? Buffer.alloc(0)),
  };
}
