/**
 * Replay protection: the same signed content seen again inside the window is refused. The record
 * lives in the shared LimitStore, so several gateways behind one Redis refuse a replay between them.
 */

import { hash } from "node:crypto";
import { type Rejection, reject } from "../errors.js";
import { Kept } from "../kept.js";
import { type LimitStore, type MaybePromise, STORE_RETRY_AFTER_SECONDS } from "./store.js";

export type ReplayStore = Pick<LimitStore, "checkAndRecord">;

export interface ReplayOptions {
  /** When the store cannot be reached: refuse (false, the default) or let the request through. */
  readonly failOpen: boolean;
  readonly onStoreError?: (error: unknown) => void;
}

/**
 * The record's key: a digest of what was signed (keyId, algorithm and the signing-string bytes),
 * never of the signature. An ECDSA signature can be re-encoded (DER or IEEE P1363, s or n−s) and
 * RSA-PSS re-made over the same string, and each still verifies; the signed content cannot change
 * without breaking the signature.
 *
 * Pass the key's identity, not the spelling sent: the certificate's own keyId (signature/
 * expectedKeyId) and the algorithm it denotes (signature/canonicalAlgorithm). keyId and the
 * algorithm name are not signed, and a keyId written `sn=…` or with spaces, or `SHA256withRSA` for
 * `rsa-sha256`, verifies all the same: keyed on the text sent, each spelling would be a new record.
 *
 * 16 bytes of SHA-256 as base64url behind `rp|`: 25 characters in one flat string of its own, so
 * no record keeps a request's headers alive (a slice or a concatenation would point into them).
 */
export function replayKeyFor(keyId: string, algorithm: string, signingString: Uint8Array): string {
  const prefix = prefixOf(keyId, algorithm);
  // One-shot hash of one buffer: no Hash object per request.
  const input = Buffer.allocUnsafe(prefix.length + signingString.length);
  input.set(prefix, 0);
  input.set(signingString, prefix.length);
  const digest = hash("sha256", input, "buffer") as unknown as Buffer;
  const key = Buffer.allocUnsafe(KEY_LENGTH);
  key.write("rp|", 0, "latin1");
  key.write(digest.toString("base64url", 0, 16), 3, "latin1");
  return key.toString("latin1");
}

const KEY_LENGTH = 3 + 22;

/**
 * The hashed input's start: the byte lengths of keyId and algorithm, then both, so that no two
 * (keyId, algorithm, string) triples hash the same input. The same few per TPP: kept; a keyId
 * longer than MAX_KEPT_KEY_ID is not (the memory held stays small whatever keyIds arrive).
 */
function prefixOf(keyId: string, algorithm: string): Buffer {
  const byKeyId = prefixes.get(keyId);
  const kept = byKeyId?.get(algorithm);
  if (kept) return kept;
  const id = Buffer.from(keyId, "utf8");
  const alg = Buffer.from(algorithm, "utf8");
  const prefix = Buffer.alloc(8 + id.length + alg.length);
  prefix.writeUInt32BE(id.length, 0);
  prefix.writeUInt32BE(alg.length, 4);
  id.copy(prefix, 8);
  alg.copy(prefix, 8 + id.length);
  if (keyId.length > MAX_KEPT_KEY_ID) return prefix;
  return (byKeyId ?? prefixes.keep(keyId, new Kept(8))).keep(algorithm, prefix);
}

/** keyId → algorithm → prefix: at most 256 keyIds, 8 algorithms each. */
const prefixes = new Kept<string, Kept<string, Buffer>>(256);
const MAX_KEPT_KEY_ID = 1024;

function verdict(seen: boolean): true | Rejection {
  if (!seen) return true;
  return reject(
    "SIGNATURE_INVALID",
    "this signed request (the same keyId, algorithm and signed content) was already used, and its signature is still within its time window; sign every request anew with a fresh X-Request-ID and time",
  );
}

function unreachable(error: unknown, options: ReplayOptions): true | Rejection {
  options.onStoreError?.(error);
  if (options.failOpen) return true;
  return reject(
    "SERVICE_UNAVAILABLE",
    `the replay store is unavailable, so the gateway cannot tell a replayed request from a new one and no signed request is let through; try again in ${STORE_RETRY_AFTER_SECONDS} s, signed anew`,
    STORE_RETRY_AFTER_SECONDS,
  );
}

/** Synchronous for a store that answers at once (memory), a promise for one that must ask (Redis). */
export function checkReplay(
  store: ReplayStore,
  key: string,
  /** How long the record is kept: until the request could no longer pass its time checks. */
  windowMs: number,
  options: ReplayOptions,
): MaybePromise<true | Rejection> {
  let seen: MaybePromise<boolean>;
  try {
    seen = store.checkAndRecord(key, windowMs);
  } catch (error) {
    return unreachable(error, options);
  }
  if (seen instanceof Promise) {
    return seen.then(
      (s) => verdict(s),
      (e: unknown) => unreachable(e, options),
    );
  }
  return verdict(seen);
}
