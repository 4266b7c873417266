/**
 * Replay protection: a signature seen again inside the window is refused. The record lives in the
 * shared LimitStore, so several gateways behind one Redis refuse a replay between them.
 */

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
 * RSA and ECDSA signature bytes are indistinguishable from random, so a 32-byte prefix of the
 * base64 text identifies a signature as well as a hash of it would, without hashing.
 */
export function replayKey(signatureBase64: string): string {
  return `rp|${signatureBase64.length > 44 ? signatureBase64.slice(0, 44) : signatureBase64}`;
}

function verdict(seen: boolean, windowMs: number): true | Rejection {
  if (!seen) return true;
  return reject(
    "SIGNATURE_INVALID",
    `this signature was already used within the last ${Math.round(windowMs / 1000)} s; sign every request anew with a fresh X-Request-ID and Date`,
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
  signatureBase64: string,
  options: ReplayOptions,
): MaybePromise<true | Rejection> {
  let seen: MaybePromise<boolean>;
  try {
    seen = store.checkAndRecord(replayKey(signatureBase64), options.windowMs);
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
