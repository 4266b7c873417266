/**
 * The certificate verdict cache: one entry per distinct certificate header value, keyed by the
 * SHA-256 of the raw value. Successes live for the TTL but never past the certificate's notAfter;
 * refusals live briefly, so a flood of one bad certificate costs one parse; concurrent misses
 * for the same key share one computation.
 */

import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Rejection } from "../errors.js";

export interface Verdict<T> {
  readonly value: T | Rejection;
  /** Epoch ms after which the verdict must be computed again. */
  readonly expiresAt: number;
  /** False for refusals that depend on passing conditions (a stale register): never cached. */
  readonly cacheable: boolean;
}

export interface VerdictCacheOptions {
  readonly maxEntries: number;
  readonly now?: () => number;
}

export interface VerdictCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly size: number;
  readonly evictions: number;
}

export class VerdictCache<T extends object> {
  private readonly cache: LRUCache<string, Verdict<T>>;
  private readonly inFlight = new Map<string, Promise<T | Rejection>>();
  private readonly now: () => number;
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  constructor(options: VerdictCacheOptions) {
    this.now = options.now ?? Date.now;
    this.cache = new LRUCache<string, Verdict<T>>({
      max: options.maxEntries,
      dispose: (_v, _k, reason) => {
        if (reason === "evict") this.evictions++;
      },
    });
  }

  static keyOf(raw: string): string {
    return createHash("sha256").update(raw).digest("base64");
  }

  /**
   * The cached verdict for `raw`, or the result of `compute` (run once however many callers
   * ask at the same time). Returns synchronously on a hit so the hot path awaits nothing.
   */
  get(raw: string, compute: () => Verdict<T> | Promise<Verdict<T>>): T | Rejection | Promise<T | Rejection> {
    const key = VerdictCache.keyOf(raw);
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > this.now()) {
      this.hits++;
      return cached.value;
    }
    const pending = this.inFlight.get(key);
    if (pending) {
      this.hits++;
      return pending;
    }
    this.misses++;
    const result = compute();
    if (!(result instanceof Promise)) return this.store(key, result);
    const promise = result.then(
      (verdict) => {
        this.inFlight.delete(key);
        return this.store(key, verdict);
      },
      (error: unknown) => {
        this.inFlight.delete(key);
        throw error;
      },
    );
    this.inFlight.set(key, promise);
    return promise;
  }

  private store(key: string, verdict: Verdict<T>): T | Rejection {
    if (verdict.cacheable && verdict.expiresAt > this.now()) this.cache.set(key, verdict);
    else this.cache.delete(key);
    return verdict.value;
  }

  clear(): void {
    this.cache.clear();
  }

  get stats(): VerdictCacheStats {
    return { hits: this.hits, misses: this.misses, size: this.cache.size, evictions: this.evictions };
  }
}
