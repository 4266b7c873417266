/**
 * A JWS that names its signing certificate instead of carrying it (`kid`, `x5t#S256`, no `x5c`):
 * the dialect's parse step asks a KeyResolver for the certificate, which then goes through the
 * `certificate` step like any other. The resolver lives at the edge (trust/key-resolver.ts); the
 * chain (checks/) sees only this interface, which both import from here.
 */

import { Rejection, reject } from "../errors.js";

export interface KeyReference {
  /** The dialect naming it ("jades", "uk-ob"), for texts and logs. */
  readonly dialect: string;
  readonly kid?: string;
  /** base64url SHA-256 of the certificate's DER, as the JWS named it. */
  readonly x5tS256?: string;
  /** UK OB's `http://openbanking.org.uk/iss`: `<org-id>/<software-statement-id>` for a TPP. */
  readonly iss?: string;
}

/** The certificate a reference resolved to. */
export interface ResolvedKey {
  /** Standard base64 of the DER, as x5c[0] would carry it. */
  readonly base64: string;
  readonly der: Buffer;
  /** base64url SHA-256 of the DER. */
  readonly sha256: string;
}

export interface KeyResolver {
  /** At once from what is held, a promise when a directory must be asked (bounded in time). */
  resolve(reference: KeyReference): ResolvedKey | Rejection | Promise<ResolvedKey | Rejection>;
}

/** What to tell a TPP whose key is named and no resolver is configured. */
export function noKeyResolver(reference: KeyReference): Rejection {
  return missingKey(reference, "this bank resolves no keys by reference");
}

/**
 * A named key not found: CERTIFICATE_MISSING, saying why and what to send instead (x5c, or
 * `orSend`, e.g. a kid the directory lists).
 */
export function missingKey(reference: KeyReference, why: string, orSend?: string): Rejection {
  const named = [
    reference.kid !== undefined ? `kid '${reference.kid.slice(0, 80)}'` : undefined,
    reference.x5tS256 !== undefined ? `x5t#S256 '${reference.x5tS256.slice(0, 43)}'` : undefined,
  ]
    .filter(Boolean)
    .join(" and ");
  return reject(
    "CERTIFICATE_MISSING",
    `the JWS names its key by ${named || "nothing"} only and ${why}; send the QSealC (base64 DER) first in x5c${orSend ? `, or ${orSend}` : ""}`,
  );
}

/** Goes on with the key found, at once or when the directory answered; a refusal goes through. */
export function onResolved<T>(
  found: ResolvedKey | Rejection | Promise<ResolvedKey | Rejection>,
  then: (key: ResolvedKey) => T,
): T | Rejection | Promise<T | Rejection> {
  const go = (key: ResolvedKey | Rejection) => (key instanceof Rejection ? key : then(key));
  return found instanceof Promise ? found.then(go) : go(found);
}
