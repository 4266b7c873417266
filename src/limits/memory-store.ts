/**
 * The embedded store: bounded in-process maps (lru-cache). An evicted window could let a TPP
 * exceed its limit, so evictions are counted and reported. On close the windows and replay keys
 * are written to a snapshot file, and loaded at start, so a restart does not hand every TPP a
 * fresh quota.
 */

import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { LRUCache } from "lru-cache";
import type { LimitStore, Reservation, StoreStats } from "./store.js";

interface Slot {
  readonly at: number;
  readonly id: string;
}

export interface MemoryStoreOptions {
  /** Distinct limit windows kept (TPP × account × class). */
  readonly maxWindows: number;
  /** Replay records kept at most (one per signed request inside the replay window). */
  readonly maxReplayKeys: number;
  /** Where the snapshot lives; none when omitted. */
  readonly snapshotFile?: string;
  readonly now?: () => number;
  /** Told about each eviction of a window that still held slots. */
  readonly onEvict?: (what: "window" | "replay", key: string) => void;
}

interface Snapshot {
  readonly version: 1;
  readonly savedAt: number;
  readonly windows: [string, [number, string][], number][];
  readonly replay: [string, number][];
}

export class MemoryLimitStore implements LimitStore {
  private readonly windows: LRUCache<string, Slot[]>;
  private readonly replay: ReplayRecords;
  private readonly now: () => number;
  private evicted = 0;

  constructor(private readonly options: MemoryStoreOptions) {
    this.now = options.now ?? Date.now;
    this.windows = new LRUCache<string, Slot[]>({
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
    this.replay = new ReplayRecords(options.maxReplayKeys, (key) => {
      this.evicted++;
      options.onEvict?.("replay", key);
    });
    if (options.snapshotFile) this.load(options.snapshotFile);
  }

  reserve(key: string, limit: number, windowMs: number, now: number): Reservation {
    const slots = (this.windows.get(key) ?? []).filter((s) => s.at > now - windowMs);
    if (slots.length >= limit) {
      this.windows.set(key, slots, { ttl: windowMs });
      const oldest = slots.reduce((a, b) => (a.at <= b.at ? a : b));
      return { allowed: false, retryAfterMs: Math.max(1, oldest.at + windowMs - now), used: slots.length };
    }
    const id = `${now}-${randomUUID()}`;
    slots.push({ at: now, id });
    this.windows.set(key, slots, { ttl: windowMs });
    return { allowed: true, slotId: id, used: slots.length };
  }

  release(key: string, slotId: string): void {
    const slots = this.windows.get(key);
    if (!slots) return;
    const i = slots.findIndex((s) => s.id === slotId);
    if (i >= 0) slots.splice(i, 1);
  }

  checkAndRecord(key: string, ttlMs: number): boolean {
    return this.replay.checkAndRecord(key, this.now(), ttlMs);
  }

  /** Replay records held now (expired ones are dropped as new ones arrive). */
  get replayRecords(): number {
    return this.replay.size;
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
    return (this.windows.get(key) ?? []).filter((s) => s.at > now - windowMs).length;
  }

  async close(): Promise<void> {
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
        .map(([key, slots]) => [
          key,
          slots.map((s) => [s.at, s.id] as [number, string]),
          this.windows.getRemainingTTL(key),
        ]),
      replay: this.replay.live(now),
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
      if (remaining > 0)
        this.windows.set(
          key,
          slots.map(([at, id]) => ({ at, id })),
          { ttl: remaining },
        );
    }
    for (const [key, expiresAt] of snapshot.replay) {
      if (expiresAt > now) this.replay.restore(key, expiresAt);
    }
  }
}

/**
 * The replay records: key → expiry, in arrival order. Every record lives for the same window, so
 * arrival order is expiry order: each new record first drops the expired ones at the front, which
 * keeps the memory to what arrived within one window, and never more than `max` records (the
 * oldest goes first, counted as an eviction: it could then be replayed).
 */
class ReplayRecords {
  private readonly records = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly onEvict: (key: string) => void,
  ) {}

  get size(): number {
    return this.records.size;
  }

  checkAndRecord(key: string, now: number, ttlMs: number): boolean {
    const expiresAt = this.records.get(key);
    if (expiresAt !== undefined && expiresAt > now) return true;
    this.dropExpired(now);
    if (expiresAt !== undefined) this.records.delete(key); // expired: recorded anew at the back
    if (this.records.size >= this.max) this.evictOldest();
    this.records.set(key, now + ttlMs);
    return false;
  }

  restore(key: string, expiresAt: number): void {
    if (this.records.size >= this.max) this.evictOldest();
    this.records.set(key, expiresAt);
  }

  live(now: number): [string, number][] {
    return [...this.records].filter(([, expiresAt]) => expiresAt > now);
  }

  private dropExpired(now: number): void {
    for (const [key, expiresAt] of this.records) {
      if (expiresAt > now) return;
      this.records.delete(key);
    }
  }

  private evictOldest(): void {
    const oldest = this.records.keys().next();
    if (oldest.done) return;
    this.records.delete(oldest.value);
    this.onEvict(oldest.value);
  }
}
