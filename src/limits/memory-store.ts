/**
 * The embedded store: bounded in-process maps (lru-cache for the limit windows, a ring of
 * fixed-size keys for the replay records, which expire by time). An evicted window could let a
 * TPP exceed its limit, and an evicted replay record a replay, so evictions are counted and
 * reported. On close the windows and replay keys
 * are written to a snapshot file, and loaded at start, so a restart does not hand every TPP a
 * fresh quota.
 */

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { LRUCache } from "lru-cache";
import type { LimitStore, Reservation, StoreStats } from "./store.js";

/**
 * A window's slots, flat: [at, id, at, id, …], the time each was taken and its id (a number from
 * the store's counter). Kept as doubles in an array of exactly their length, since a default
 * `store.maxWindows` (500,000) of windows is held at once: slot objects with string ids and the
 * slack `push` leaves made that 1.3 GB at 4 slots a window, this about a tenth
 * (test/unit/limits/memory-store.test.ts measures it).
 */
type Slots = number[];

export interface MemoryStoreOptions {
  /** Distinct limit windows kept (TPP × account × class). */
  readonly maxWindows: number;
  /** Replay records kept at most (one per signed request inside the replay window). */
  readonly maxReplayKeys: number;
  /** Where the snapshot lives; none when omitted. */
  readonly snapshotFile?: string;
  readonly now?: () => number;
  /** Told about each eviction of a window that still held slots, or of a replay record before its time. */
  readonly onEvict?: (what: "window" | "replay", key: string) => void;
  /**
   * How often expired replay records are dropped when no request arrives to drop them (every new
   * record drops the expired ones first); 0 turns the timer off. Default 30 s. The timer does not
   * keep the process alive and stops on close().
   */
  readonly purgeIntervalMs?: number;
}

const DEFAULT_PURGE_INTERVAL_MS = 30_000;

interface Snapshot {
  readonly version: 1;
  readonly savedAt: number;
  readonly windows: [string, [number, string][], number][];
  readonly replay: [string, number][];
  /** Remembered limits: key, number, expiry (epoch ms). Absent in snapshots written before them. */
  readonly limits?: [string, number, number][];
}

export class MemoryLimitStore implements LimitStore {
  private readonly windows: LRUCache<string, Slots>;
  /** The next slot id (unique in this store: a release names the slot it gives back). */
  private nextSlotId = 1;
  private readonly replay: ReplayRecords;
  /** Remembered limits (a consent's frequencyPerDay), bounded like the windows. */
  private readonly limits: LRUCache<string, number>;
  private readonly now: () => number;
  private readonly purgeTimer: NodeJS.Timeout | undefined;
  private evicted = 0;

  constructor(private readonly options: MemoryStoreOptions) {
    this.now = options.now ?? Date.now;
    this.windows = new LRUCache<string, Slots>({
      max: options.maxWindows,
      ttlAutopurge: false,
      perf: { now: this.now },
      // Read the clock on every check: an injected clock must not be cached for a millisecond.
      ttlResolution: 0,
      dispose: (slots, key, reason) => {
        if (reason === "evict" && slots.length > 0) {
          this.evicted++;
          options.onEvict?.("window", key);
        }
      },
    });
    this.limits = new LRUCache<string, number>({
      max: options.maxWindows,
      ttlAutopurge: false,
      perf: { now: this.now },
      ttlResolution: 0,
    });
    this.replay = new ReplayRecords(options.maxReplayKeys, (key) => {
      this.evicted++;
      options.onEvict?.("replay", key);
    });
    if (options.snapshotFile) this.load(options.snapshotFile);
    const every = options.purgeIntervalMs ?? DEFAULT_PURGE_INTERVAL_MS;
    if (every > 0) {
      this.purgeTimer = setInterval(() => this.purgeExpired(), every);
      this.purgeTimer.unref();
    }
  }

  reserve(key: string, limit: number, windowMs: number, now: number): Reservation {
    const held = this.windows.get(key);
    const live = held ? liveSlots(held, now - windowMs) : 0;
    if (live >= limit) {
      const slots = held!.length === live * 2 ? held! : keepLive(held!, live, now - windowMs, 0);
      this.windows.set(key, slots, { ttl: windowMs });
      let oldest = slots[0]!;
      for (let i = 2; i < slots.length; i += 2) oldest = Math.min(oldest, slots[i]!);
      return { allowed: false, retryAfterMs: Math.max(1, oldest + windowMs - now), used: live };
    }
    const id = this.nextSlotId++;
    const slots = held ? keepLive(held, live, now - windowMs, 2) : new Array<number>(2);
    slots[slots.length - 2] = now;
    slots[slots.length - 1] = id;
    this.windows.set(key, slots, { ttl: windowMs });
    return { allowed: true, slotId: String(id), used: live + 1 };
  }

  release(key: string, slotId: string): void {
    const slots = this.windows.get(key);
    if (!slots) return;
    const id = Number(slotId);
    for (let i = 1; i < slots.length; i += 2)
      if (slots[i] === id) {
        slots.splice(i - 1, 2);
        return;
      }
  }

  rememberLimit(key: string, limit: number, ttlMs: number): void {
    this.limits.set(key, limit, { ttl: ttlMs });
  }

  recallLimit(key: string): number | undefined {
    return this.limits.get(key);
  }

  checkAndRecord(key: string, ttlMs: number): boolean {
    return this.replay.checkAndRecord(key, this.now(), ttlMs);
  }

  /** Replay records held now (expired ones are dropped as new ones arrive, and by the purge timer). */
  get replayRecords(): number {
    return this.replay.size;
  }

  /** Drops the replay records whose time is up; returns how many. */
  purgeExpired(): number {
    return this.replay.purge(this.now());
  }

  ready(): boolean {
    return true;
  }

  get stats(): StoreStats {
    return { evictions: this.evicted, errors: 0 };
  }

  /** Slots used in the window now (for tests and diagnostics). */
  used(key: string, windowMs: number): number {
    const now = this.now();
    const slots = this.windows.get(key);
    return slots ? liveSlots(slots, now - windowMs) : 0;
  }

  async close(): Promise<void> {
    clearInterval(this.purgeTimer);
    if (this.options.snapshotFile) this.save(this.options.snapshotFile);
  }

  /** Writes the snapshot atomically (temporary file, then rename). */
  save(file: string): void {
    const now = this.now();
    const snapshot: Snapshot = {
      version: 1,
      savedAt: now,
      windows: [...this.windows.entries()]
        .filter(([, slots]) => slots.length > 0)
        .map(([key, slots]) => {
          const pairs: [number, string][] = [];
          for (let i = 0; i < slots.length; i += 2) pairs.push([slots[i]!, String(slots[i + 1])]);
          return [key, pairs, this.windows.getRemainingTTL(key)];
        }),
      replay: this.replay.live(now),
      limits: [...this.limits.entries()].map(([key, limit]) => [
        key,
        limit,
        now + this.limits.getRemainingTTL(key),
      ]),
    };
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(snapshot), { mode: 0o600 });
    renameSync(tmp, file);
  }

  private load(file: string): void {
    if (!existsSync(file)) return;
    const snapshot = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
    if (snapshot.version !== 1)
      throw new Error(`snapshot ${file} has unknown version ${String(snapshot.version)}`);
    const now = this.now();
    for (const [key, slots, ttl] of snapshot.windows) {
      // The remaining TTL counted from when it was saved; slots older than the window drop out on use.
      const remaining = ttl - (now - snapshot.savedAt);
      // Fresh ids: a slot id only matters to a call still under way, and none survived the restart.
      if (remaining > 0)
        this.windows.set(
          key,
          slots.flatMap(([at]) => [at, this.nextSlotId++]),
          { ttl: remaining },
        );
    }
    for (const [key, expiresAt] of snapshot.replay) {
      if (expiresAt > now) this.replay.restore(key, expiresAt);
    }
    for (const [key, limit, expiresAt] of snapshot.limits ?? []) {
      if (expiresAt > now) this.limits.set(key, limit, { ttl: expiresAt - now });
    }
  }
}

/** How many of `slots` were taken after `since`. */
function liveSlots(slots: Slots, since: number): number {
  let live = 0;
  for (let i = 0; i < slots.length; i += 2) if (slots[i]! > since) live++;
  return live;
}

/** The `live` slots taken after `since`, in an array of exactly their length plus `room` places. */
function keepLive(slots: Slots, live: number, since: number, room: number): Slots {
  const kept = new Array<number>(live * 2 + room);
  let at = 0;
  for (let i = 0; i < slots.length; i += 2)
    if (slots[i]! > since) {
      kept[at++] = slots[i]!;
      kept[at++] = slots[i + 1]!;
    }
  return kept;
}

/**
 * The replay records, in arrival order in a ring (keys and expiries), with a Map from key to its
 * place in the ring. Records of one window all live equally long, so arrival order is expiry order:
 * dropping the expired ones is popping from the front, O(1) per record. (A Map alone, walked from
 * its front, would not do: V8 leaves deleted entries as holes there until it rehashes, and every
 * walk steps over them again, about 130 µs per request at 120,000 records.) The ring grows by
 * doubling up to `max`; a full ring drops its oldest record, counted as an eviction since it could
 * then be replayed. A key recorded anew after its expiry leaves a stale copy behind in the ring,
 * which is skipped when its turn comes.
 */
class ReplayRecords {
  private static readonly INITIAL_CAPACITY = 1024;
  /** key → its index in the ring. */
  private readonly index = new Map<string, number>();
  private keys: (string | undefined)[];
  private expiries: Float64Array;
  /** Index of the oldest record, and how many ring places are in use from there. */
  private head = 0;
  private used = 0;

  constructor(
    private readonly max: number,
    private readonly onEvict: (key: string) => void,
  ) {
    const capacity = Math.max(1, Math.min(max, ReplayRecords.INITIAL_CAPACITY));
    this.keys = new Array<string | undefined>(capacity).fill(undefined);
    this.expiries = new Float64Array(capacity);
  }

  get size(): number {
    return this.index.size;
  }

  checkAndRecord(key: string, now: number, ttlMs: number): boolean {
    this.purge(now);
    const at = this.index.get(key);
    // Expired but not yet dropped: only when an older record with a longer window is in front.
    if (at !== undefined && this.expiries[at]! > now) return true;
    this.add(key, now + ttlMs);
    return false;
  }

  restore(key: string, expiresAt: number): void {
    this.add(key, expiresAt);
  }

  live(now: number): [string, number][] {
    const out: [string, number][] = [];
    const capacity = this.keys.length;
    for (let n = 0; n < this.used; n++) {
      const i = (this.head + n) % capacity;
      const key = this.keys[i];
      if (key !== undefined && this.index.get(key) === i && this.expiries[i]! > now)
        out.push([key, this.expiries[i]!]);
    }
    return out;
  }

  /** Drops the records whose time is up from the front; returns how many. */
  purge(now: number): number {
    let dropped = 0;
    while (this.used > 0 && this.expiries[this.head]! <= now) {
      if (this.dropOldest()) dropped++;
    }
    return dropped;
  }

  /** Removes the front of the ring; true when it was a live record (not a stale copy). */
  private dropOldest(): boolean {
    const at = this.head;
    const key = this.keys[at]!;
    this.keys[at] = undefined;
    this.head = (at + 1) % this.keys.length;
    this.used--;
    if (this.index.get(key) !== at) return false;
    this.index.delete(key);
    return true;
  }

  private add(key: string, expiresAt: number): void {
    if (this.used === this.keys.length) {
      if (this.keys.length < this.max) this.grow();
      else {
        const oldest = this.keys[this.head]!;
        if (this.dropOldest()) this.onEvict(oldest);
      }
    }
    const at = (this.head + this.used) % this.keys.length;
    this.keys[at] = key;
    this.expiries[at] = expiresAt;
    this.used++;
    this.index.set(key, at);
  }

  /** Doubles the ring (up to max), oldest record first at index 0. */
  private grow(): void {
    const capacity = this.keys.length;
    const next = Math.min(this.max, capacity * 2);
    const keys = new Array<string | undefined>(next).fill(undefined);
    const expiries = new Float64Array(next);
    for (let n = 0; n < this.used; n++) {
      const from = (this.head + n) % capacity;
      const key = this.keys[from]!;
      keys[n] = key;
      expiries[n] = this.expiries[from]!;
      if (this.index.get(key) === from) this.index.set(key, n);
    }
    this.keys = keys;
    this.expiries = expiries;
    this.head = 0;
  }
}
