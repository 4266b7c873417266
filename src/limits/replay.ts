/**
 * Replay protection: a signature seen again inside the window is refused. The store is an
 * interface so that several gateways can share one (Redis, in the limits issue); the memory
 * store is the embedded default.
 */

import { LRUCache } from "lru-cache";
import { type Rejection, reject } from "../errors.js";

export interface ReplayStore {
  /** Records the key; true when it was already recorded inside its time to live. */
  checkAndRecord(key: string, ttlMs: number): boolean | Promise<boolean>;
  readonly evictions: number;
}

export class MemoryReplayStore implements ReplayStore {
  private readonly seen: LRUCache<string, true>;
  private evicted = 0;

  constructor(
    maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {
    this.seen = new LRUCache<string, true>({
      max: maxEntries,
      ttlAutopurge: false,
      perf: { now: this.now },
      // An entry pushed out before its window ends could be replayed: count it so operators see it.
      dispose: (_v, _k, reason) => {
        if (reason === "evict") this.evicted++;
      },
    });
  }

  checkAndRecord(key: string, ttlMs: number): boolean {
    if (this.seen.has(key)) return true;
    this.seen.set(key, true, { ttl: ttlMs });
    return false;
  }

  get evictions(): number {
    return this.evicted;
  }

  get size(): number {
    return this.seen.size;
  }
}

/**
 * RSA and ECDSA signature bytes are indistinguishable from random, so a 32-byte prefix of the
 * base64 text identifies a signature as well as a hash of it would, without hashing.
 */
export function replayKey(signatureBase64: string): string {
  return signatureBase64.length > 44 ? signatureBase64.slice(0, 44) : signatureBase64;
}

function replayVerdict(seen: boolean, windowMs: number): true | Rejection {
  if (seen) {
    return reject(
      "SIGNATURE_INVALID",
      `this signature was already used within the last ${Math.round(windowMs / 1000)} s; sign every request anew with a fresh X-Request-ID and Date`,
    );
  }
  return true;
}

/** Synchronous for a store that answers at once (memory), a promise for one that must ask (Redis). */
export function checkReplay(
  store: ReplayStore,
  signatureBase64: string,
  windowMs: number,
): true | Rejection | Promise<true | Rejection> {
  const seen = store.checkAndRecord(replayKey(signatureBase64), windowMs);
  return seen instanceof Promise
    ? seen.then((s) => replayVerdict(s, windowMs))
    : replayVerdict(seen, windowMs);
}
