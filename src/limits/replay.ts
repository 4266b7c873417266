/**
 * Replay protection: the same signed content seen again inside the window is refused. The record
 * lives in the shared LimitStore, so several gateways behind one Redis refuse a replay between them.
 */

import { createHash } from "node:crypto";
import { type Rejection, reject } from "../errors.js";
import type { LimitStore, MaybePromise } from "./store.js";

export type ReplayStore = Pick<LimitStore, "checkAndRecord">;

export interface ReplayOptions {
  readonly windowMs: number;
  /** When the store cannot be reached: refuse (false, the default) or let the request through. */
  readonly failOpen: boolean;
  readonly onStoreError?: (error: unknown) => void;
}

/**
 * The record's key: a digest of what was signed (keyId, algorithm and the signing-string bytes),
 * never of the signature. An ECDSA signature can be re-encoded (DER or IEEE P1363, s or n−s) and
 * RSA-PSS re-made over the same string, and each still verifies; the signed content cannot change
 * without breaking the signature. 16 bytes of SHA-256 as base64url: a fixed 25-character string
 * of its own, so no record keeps a request's headers alive.
 */
export function replayKeyFor(keyId: string, algorithm: string, signingString: Uint8Array): string {
  const hash = createHash("sha256");
  // Lengths first, so that no two (keyId, algorithm, string) triples hash the same input.
  hash.update(`${keyId.length}:${algorithm.length}:`);
  hash.update(keyId);
  hash.update(algorithm);
  hash.update(signingString);
  return `rp|${hash.digest().subarray(0, 16).toString("base64url")}`;
}

function verdict(seen: boolean, windowMs: number): true | Rejection {
  if (!seen) return true;
  return reject(
    "SIGNATURE_INVALID",
    `this signed request (the same keyId, algorithm and signed headers) was already used within the last ${Math.round(windowMs / 1000)} s; sign every request anew with a fresh X-Request-ID and Date`,
  );
}

function unreachable(error: unknown, options: ReplayOptions): true | Rejection {
  options.onStoreError?.(error);
  if (options.failOpen) return true;
  return reject(
    "SERVICE_UNAVAILABLE",
    "the replay store cannot be reached, so the gateway cannot tell a replayed request from a new one; try again shortly",
  );
}

/** Synchronous for a store that answers at once (memory), a promise for one that must ask (Redis). */
export function checkReplay(
  store: ReplayStore,
  key: string,
  options: ReplayOptions,
): MaybePromise<true | Rejection> {
  let seen: MaybePromise<boolean>;
  try {
    seen = store.checkAndRecord(key, options.windowMs);
  } catch (error) {
    return unreachable(error, options);
  }
  if (seen instanceof Promise) {
    return seen.then(
      (s) => verdict(s, options.windowMs),
      (e: unknown) => unreachable(e, options),
    );
  }
  return verdict(seen, options.windowMs);
}
