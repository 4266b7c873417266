/**
 * The one store interface behind the unattended-access limit (SPEC 8) and replay protection.
 * The memory store is the embedded default; the Redis store lets several gateways share state.
 * Every method may answer at once (memory) or with a promise (Redis); a promise that rejects
 * means the store is unreachable, which the caller turns into 503 (or lets through when
 * configured to fail open).
 */

export type MaybePromise<T> = T | Promise<T>;

export type Reservation =
  /** A slot is held; give it back with `release(key, slotId)` when the call did not count. */
  | { readonly allowed: true; readonly slotId: string; readonly used: number }
  /** The window is full; the oldest slot leaves it in `retryAfterMs`. */
  | { readonly allowed: false; readonly retryAfterMs: number; readonly used: number };

export interface StoreStats {
  /** Entries pushed out by the size bound before their time (memory store): a TPP could exceed its limit. */
  readonly evictions: number;
  /** Operations that failed because the store could not be reached. */
  readonly errors: number;
}

/** Why a store can or cannot serve now: `reason` a bounded code (a metric label), `detail` the words. */
export interface StoreReadiness {
  readonly ok: boolean;
  readonly reason?: "disconnected" | "replicas-behind" | "write-failed";
  readonly detail?: string;
}

/**
 * What a client refused because the store is unavailable is told to wait (Retry-After): about as
 * long as a Redis Sentinel failover takes to promote a replica and the gateway to see it.
 */
export const STORE_RETRY_AFTER_SECONDS = 5;

export interface LimitStore {
  /**
   * Rolling window: when fewer than `limit` slots of `key` lie in (now − windowMs, now], takes one
   * stamped `now` and returns its id; otherwise says when the oldest leaves the window. Atomic:
   * concurrent callers never get more than `limit` slots between them.
   */
  reserve(key: string, limit: number, windowMs: number, now: number): MaybePromise<Reservation>;
  /** Gives a reserved slot back (the backend did not answer 2xx). Unknown ids are ignored. */
  release(key: string, slotId: string): MaybePromise<void>;
  /**
   * Remembers a number for `key` for `ttlMs` (a consent's frequencyPerDay the bank's backend told,
   * agreements.ts), shared by every gateway on the store.
   */
  rememberLimit(key: string, limit: number, ttlMs: number): MaybePromise<void>;
  /** The number remembered for `key`, if its time is not up. */
  recallLimit(key: string): MaybePromise<number | undefined>;
  /** Replay protection: records `key` for `ttlMs`; true when it was already recorded. */
  checkAndRecord(key: string, ttlMs: number): MaybePromise<boolean>;
  /** True when the store can be used now: a write as the calls make it would succeed. */
  ready(): MaybePromise<boolean>;
  /** ready() with its reason, where the store can say more than yes or no (/readyz, the metric). */
  readiness?(): Promise<StoreReadiness>;
  readonly stats: StoreStats;
  /** Flushes what must survive (the memory store's snapshot) and releases connections. */
  close(): Promise<void>;
}

/** The store's readiness with its reason (a store that says only yes or no: its word; one that throws: not ready). */
export async function storeReadinessOf(store: LimitStore): Promise<StoreReadiness> {
  try {
    if (store.readiness) return await store.readiness();
    return (await store.ready()) ? { ok: true } : { ok: false, reason: "disconnected", detail: "not ready" };
  } catch (error) {
    return { ok: false, reason: "write-failed", detail: (error as Error).message };
  }
}
