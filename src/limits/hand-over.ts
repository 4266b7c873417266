/**
 * A store replaced by a configuration reload, handed over without forgetting: the new store takes
 * every write, and the old one is still consulted until no record or slot it holds can matter (the
 * longest window it was asked to keep, from the swap on). Fail closed: a replay key either store
 * has seen is a replay; a window's slots are the old store's count plus the new one's, the old
 * count read (a slot taken and given back at once) and the new store asked for what is left. A
 * store that cannot be reached fails the call as it would alone.
 */

import {
  type LimitStore,
  type MaybePromise,
  type Reservation,
  type StoreReadiness,
  type StoreStats,
  storeReadinessOf,
} from "./store.js";

/** setTimeout's longest delay (2^31 − 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** `f` of `value`, at once when the value is there, after it when it is a promise. */
function then<T, U>(value: MaybePromise<T>, f: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(f) : f(value);
}

/**
 * A store that remembers the longest time it was asked to keep anything for (a replay record's
 * life, a window's length): how long a store that replaces it must still consult it.
 */
export class WindowedStore implements LimitStore {
  /** The longest replay record life or window asked for, in ms. */
  longestMs = 0;

  constructor(readonly inner: LimitStore) {}

  reserve(key: string, limit: number, windowMs: number, now: number): MaybePromise<Reservation> {
    if (windowMs > this.longestMs) this.longestMs = windowMs;
    return this.inner.reserve(key, limit, windowMs, now);
  }
  release(key: string, slotId: string): MaybePromise<void> {
    return this.inner.release(key, slotId);
  }
  rememberLimit(key: string, limit: number, ttlMs: number): MaybePromise<void> {
    return this.inner.rememberLimit(key, limit, ttlMs);
  }
  recallLimit(key: string): MaybePromise<number | undefined> {
    return this.inner.recallLimit(key);
  }
  checkAndRecord(key: string, ttlMs: number): MaybePromise<boolean> {
    if (ttlMs > this.longestMs) this.longestMs = ttlMs;
    return this.inner.checkAndRecord(key, ttlMs);
  }
  ready(): MaybePromise<boolean> {
    return this.inner.ready();
  }
  readiness(): Promise<StoreReadiness> {
    return storeReadinessOf(this.inner);
  }
  get stats(): StoreStats {
    return this.inner.stats;
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export interface HandOverOptions {
  /** When the old store's last record or slot has expired: it is closed then. */
  readonly untilMs: number;
  readonly now: () => number;
  /** The old store was closed (logged by the caller). */
  readonly onHandedOver?: () => void;
}

export class HandOverStore implements LimitStore {
  private previous: LimitStore | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly next: LimitStore,
    previous: LimitStore,
    private readonly options: HandOverOptions,
  ) {
    this.previous = previous;
    this.wake();
  }

  /** Closes the old store at `untilMs`, in steps of at most MAX_TIMER_MS (a longer timer fires at once). */
  private wake(): void {
    const left = this.options.untilMs - this.options.now();
    if (left <= 0) {
      void this.handedOver();
      return;
    }
    this.timer = setTimeout(() => this.wake(), Math.min(left, MAX_TIMER_MS));
    this.timer.unref();
  }

  /** A reload that failed after building this: stops without closing the old store, which still serves. */
  abandon(): void {
    clearTimeout(this.timer);
    this.previous = undefined;
  }

  /** Whether the old store is still consulted. */
  get handingOver(): boolean {
    return this.old !== undefined;
  }

  /** When the old store is closed. */
  get untilMs(): number {
    return this.options.untilMs;
  }

  /** The old store while it must still be consulted. */
  private get old(): LimitStore | undefined {
    if (this.previous && this.options.now() >= this.options.untilMs) void this.handedOver();
    return this.previous;
  }

  private async handedOver(): Promise<void> {
    const old = this.previous;
    if (!old) return;
    this.previous = undefined;
    clearTimeout(this.timer);
    await old.close().catch(() => {});
    this.options.onHandedOver?.();
  }

  reserve(key: string, limit: number, windowMs: number, now: number): MaybePromise<Reservation> {
    const old = this.old;
    if (!old) return this.next.reserve(key, limit, windowMs, now);
    return then(old.reserve(key, limit, windowMs, now), (counted) => {
      if (!counted.allowed) return counted;
      const oldCount = counted.used - 1;
      return then(old.release(key, counted.slotId), () =>
        then(
          this.next.reserve(key, limit - oldCount, windowMs, now),
          (r): Reservation => ({ ...r, used: r.used + oldCount }),
        ),
      );
    });
  }

  release(key: string, slotId: string): MaybePromise<void> {
    // A slot taken before the swap is the old store's: each ignores an id it does not know.
    const old = this.old;
    const released = this.next.release(key, slotId);
    return old ? then(released, () => old.release(key, slotId)) : released;
  }

  rememberLimit(key: string, limit: number, ttlMs: number): MaybePromise<void> {
    return this.next.rememberLimit(key, limit, ttlMs);
  }

  recallLimit(key: string): MaybePromise<number | undefined> {
    const old = this.old;
    return then(this.next.recallLimit(key), (limit) =>
      limit !== undefined || !old ? limit : old.recallLimit(key),
    );
  }

  checkAndRecord(key: string, ttlMs: number): MaybePromise<boolean> {
    const old = this.old;
    const seen = this.next.checkAndRecord(key, ttlMs);
    if (!old) return seen;
    return then(seen, (inNext) => then(old.checkAndRecord(key, ttlMs), (inOld) => inNext || inOld));
  }

  ready(): MaybePromise<boolean> {
    const old = this.old;
    return then(this.next.ready(), (ok) => (ok && old ? old.ready() : ok));
  }

  async readiness(): Promise<StoreReadiness> {
    const old = this.old;
    const next = await storeReadinessOf(this.next);
    if (!next.ok || !old) return next;
    const before = await storeReadinessOf(old);
    return before.ok ? next : { ...before, detail: `the replaced store: ${before.detail ?? "not ready"}` };
  }

  get stats(): StoreStats {
    const a = this.next.stats;
    const b = this.previous?.stats ?? { evictions: 0, errors: 0 };
    return { evictions: a.evictions + b.evictions, errors: a.errors + b.errors };
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    const old = this.previous;
    this.previous = undefined;
    await Promise.all([this.next.close(), old?.close()]);
  }
}
