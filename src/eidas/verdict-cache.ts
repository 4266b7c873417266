/**
 * The certificate verdict cache: one entry per distinct certificate header value, keyed by the
 * SHA-256 of the raw value. Successes live for the TTL but never past the certificate's notAfter;
 * refusals live briefly, so a flood of one bad certificate costs one parse; concurrent misses
 * for the same key share one computation.
 *
 * Refusals have their own LRU: anyone can send endless distinct garbage, and in one shared LRU it
 * would push out the verdicts of real TPPs, who would then pay a full parse and chain check on
 * every request. Each store holds at most its `max` entries, and an entry never outlives its
 * expiry (stale ones are dropped when met, or pushed out by newer ones).
 */

import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { isRejection, type Rejection } from "../errors.js";
import { Kept } from "../kept.js";

export interface Verdict<T> {
  readonly value: T | Rejection;
  /** Epoch ms after which the verdict must be computed again. */
  readonly expiresAt: number;
  /** False for refusals that depend on passing conditions (a stale register): never cached. */
  readonly cacheable: boolean;
}

export interface VerdictCacheOptions {
  /** Accepted verdicts kept. */
  readonly maxEntries: number;
  /** Refusals kept; defaults to `maxEntries`. */
  readonly maxRefusals?: number;
  readonly now?: () => number;
}

export interface VerdictCacheStats {
  readonly hits: number;
  readonly misses: number;
  /** Entries held, accepted and refused together. */
  readonly size: number;
  readonly evictions: number;
  /** Refusals held (part of `size`). */
  readonly refusals: number;
}

const KNOWN_KEPT = 256;
const MAX_KNOWN_LENGTH = 8192;

export class VerdictCache<T extends object> {
  private readonly accepted: LRUCache<string, Verdict<T>>;
  private readonly refused: LRUCache<string, Verdict<T>>;
  private readonly inFlight = new Map<string, Promise<T | Rejection>>();
  /** Per kind: certificate header → its key, for accepted certificates (see remember). */
  private readonly knownKeys = new Map<string, Kept<string, string>>();
  private readonly now: () => number;
  private hits = 0;
  private misses = 0;
  private evictions = 0;
  /** Bumped by clear(). */
  private epoch = 0;

  constructor(options: VerdictCacheOptions) {
    this.now = options.now ?? Date.now;
    const dispose = (_v: Verdict<T>, _k: string, reason: LRUCache.DisposeReason) => {
      if (reason === "evict") this.evictions++;
    };
    this.accepted = new LRUCache<string, Verdict<T>>({ max: options.maxEntries, dispose });
    this.refused = new LRUCache<string, Verdict<T>>({
      max: options.maxRefusals ?? options.maxEntries,
      dispose,
    });
  }

  /** `kind` keeps verdicts of the same bytes checked for different uses apart (a QWAC, a QSealC). */
  static keyOf(raw: string, kind = ""): string {
    return createHash("sha256").update(kind).update(raw).digest("base64");
  }

  /**
   * The cached verdict for `raw`, or the result of `compute` (run once however many callers
   * ask at the same time). Returns synchronously on a hit so the hot path awaits nothing.
   * `compute` is called with `raw` and `arg`, so a caller can pass one function made once rather
   * than a closure per call (issue 42).
   */
  get<A = undefined>(
    raw: string,
    compute: (raw: string, arg: A) => Verdict<T> | Promise<Verdict<T>>,
    kind = "",
    arg?: A,
  ): T | Rejection | Promise<T | Rejection> {
    const known = raw.length <= MAX_KNOWN_LENGTH ? this.knownKeys.get(kind)?.get(raw) : undefined;
    const key = known ?? VerdictCache.keyOf(raw, kind);
    const cached = this.accepted.get(key) ?? this.refused.get(key);
    if (cached && cached.expiresAt > this.now()) {
      this.hits++;
      if (known === undefined && !isRejection(cached.value)) this.remember(kind, raw, key);
      return cached.value;
    }
    const pending = this.inFlight.get(key);
    if (pending) {
      this.hits++;
      return pending;
    }
    this.misses++;
    const result = compute(raw, arg as A);
    if (!(result instanceof Promise)) return this.store(key, result);
    const epoch = this.epoch;
    const promise = result.then(
      (verdict) => {
        if (this.inFlight.get(key) === promise) this.inFlight.delete(key);
        // Judged against what a clear() since then replaced: answered, never kept.
        return epoch === this.epoch ? this.store(key, verdict) : verdict.value;
      },
      (error: unknown) => {
        if (this.inFlight.get(key) === promise) this.inFlight.delete(key);
        throw error;
      },
    );
    this.inFlight.set(key, promise);
    return promise;
  }

  /**
   * A trusted certificate's header comes back on every request of its TPP: its key is kept with
   * the header itself, so a hit costs a string lookup instead of a SHA-256 of about 1.5 KB. Only
   * accepted ones, at most KNOWN_KEPT per kind of at most MAX_KNOWN_LENGTH characters (all
   * forgotten at once when full): garbage never gets in, and the memory stays bounded.
   */
  private remember(kind: string, raw: string, key: string): void {
    if (raw.length > MAX_KNOWN_LENGTH) return;
    let known = this.knownKeys.get(kind);
    if (!known) {
      known = new Kept(KNOWN_KEPT);
      this.knownKeys.set(kind, known);
    }
    known.keep(raw, key);
  }

  private store(key: string, verdict: Verdict<T>): T | Rejection {
    // One key lives in one store: a verdict replaces whatever the other store held for it.
    const [into, other] = isRejection(verdict.value)
      ? [this.refused, this.accepted]
      : [this.accepted, this.refused];
    other.delete(key);
    if (verdict.cacheable && verdict.expiresAt > this.now()) into.set(key, verdict);
    else into.delete(key);
    return verdict.value;
  }

  /** Forgets every verdict; a computation under way then answers its callers but is not kept. */
  clear(): void {
    this.epoch++;
    this.inFlight.clear();
    this.accepted.clear();
    this.refused.clear();
    this.knownKeys.clear();
  }

  get stats(): VerdictCacheStats {
    return {
      hits: this.hits,
      misses: this.misses,
      size: this.accepted.size + this.refused.size,
      evictions: this.evictions,
      refusals: this.refused.size,
    };
  }
}
