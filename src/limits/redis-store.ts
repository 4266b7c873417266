/**
 * The limit store on Redis, for several gateways that must enforce one limit between them.
 *
 * Time: the gateway's clock is passed in as `now` (tests inject it); Redis TIME is not used. Gateways
 * sharing one Redis therefore need synchronised clocks (NTP gives milliseconds, far below a 24-hour
 * window); a gateway whose clock runs ahead sees slots leave the window early by its skew.
 *
 * Failure: an unreachable Redis makes every operation reject at once or after `commandTimeoutMs`,
 * never queue; the caller turns that into 503 (or lets the call through when configured to fail
 * open). The client reconnects on its own with a capped backoff, so the store recovers when Redis
 * returns, and the Lua is sent again on the new connection.
 */

import { createHash, randomUUID } from "node:crypto";
import { type Cluster, Redis } from "ioredis";
import { defineLimitScripts, type ReserveReply } from "./redis-scripts.js";
import type { LimitStore, Reservation, StoreStats } from "./store.js";

export interface RedisLimitStoreUrlOptions {
  /** redis://host:port/db, or rediss:// for TLS; credentials may sit in the URL. */
  readonly url: string;
  /** Namespace before every key, so gateways can share a Redis with other applications. */
  readonly keyPrefix?: string;
  /** How long one connection attempt may take. */
  readonly connectTimeoutMs?: number;
  /** How long one command may wait for its reply before it rejects; also bounds `ready()`. */
  readonly commandTimeoutMs?: number;
  /** Connection-level errors (refused, reset, TLS); operations still reject on their own. */
  readonly onConnectionError?: (error: Error) => void;
}

export interface RedisLimitStoreClientOptions {
  /**
   * A client the caller owns (tests, or a Cluster or Sentinel client built by the caller):
   * `close()` leaves it open.
   */
  readonly client: Redis | Cluster;
  readonly keyPrefix?: string;
  /** Bounds `ready()`; the client's own `commandTimeout` bounds the operations. */
  readonly commandTimeoutMs?: number;
}

export type RedisLimitStoreOptions = RedisLimitStoreUrlOptions | RedisLimitStoreClientOptions;

export const REDIS_STORE_DEFAULTS = {
  keyPrefix: "psd2gw:",
  connectTimeoutMs: 1_000,
  commandTimeoutMs: 500,
  /** Reconnect backoff: 100 ms doubling up to this cap, forever. */
  reconnectCapMs: 2_000,
} as const;

/** An operation failed because Redis could not be reached or did not answer in time. */
export class RedisStoreError extends Error {
  override readonly name = "RedisStoreError";
  constructor(operation: string, cause: unknown) {
    super(
      `Redis limit store: ${operation} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
  }
}

export class RedisLimitStore implements LimitStore {
  private readonly client: Redis | Cluster;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;
  private readonly readyTimeoutMs: number;
  private failures = 0;

  constructor(options: RedisLimitStoreOptions) {
    this.keyPrefix = validKeyPrefix(options.keyPrefix ?? REDIS_STORE_DEFAULTS.keyPrefix);
    this.readyTimeoutMs = options.commandTimeoutMs ?? REDIS_STORE_DEFAULTS.commandTimeoutMs;
    if ("client" in options) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      this.client = createFailFastClient(options);
      this.ownsClient = true;
    }
    defineLimitScripts(this.client);
  }

  async reserve(key: string, limit: number, windowMs: number, now: number): Promise<Reservation> {
    // Caller mistakes, not an unreachable Redis: thrown before Redis is asked, not counted as errors.
    if (!Number.isSafeInteger(windowMs) || windowMs <= 0) {
      throw new RangeError(`windowMs must be a positive integer of milliseconds, got ${windowMs}`);
    }
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw new RangeError(`limit must be a whole number of calls, got ${limit}`);
    }
    if (!Number.isFinite(now)) throw new RangeError(`now must be a time in milliseconds, got ${now}`);
    const windowKey = this.windowKey(key);
    // Made here, not in Redis, so that a reply lost to a timeout can still be taken back below.
    const slotId = `${now}-${randomUUID()}`;
    let reply: ReserveReply;
    try {
      reply = await this.client.psd2gwReserve(windowKey, now, windowMs, limit, slotId);
    } catch (error) {
      // The script may have run although its reply never came: give the slot back, best effort,
      // so a Redis hiccup does not burn the TPP's quota. Same connection, so it runs after the script.
      this.client.zrem(windowKey, slotId).catch(() => {});
      throw this.failed("reserve", error);
    }
    const [taken, used, oldest] = reply;
    if (taken === 1) return { allowed: true, slotId, used };
    // No oldest slot only happens with a limit of 0: nothing will ever leave, say one window.
    const retryAfterMs = oldest === undefined ? windowMs : Math.ceil(Number(oldest) + windowMs - now);
    return { allowed: false, retryAfterMs: Math.max(1, retryAfterMs), used };
  }

  async release(key: string, slotId: string): Promise<void> {
    try {
      await this.client.zrem(this.windowKey(key), slotId);
    } catch (error) {
      throw this.failed("release", error);
    }
  }

  async checkAndRecord(key: string, ttlMs: number): Promise<boolean> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    try {
      // NX: only the first caller sets it (reply "OK"); everyone after gets null until it expires.
      const set = await this.client.set(this.replayKey(key), "1", "PX", ttl, "NX");
      return set === null;
    } catch (error) {
      throw this.failed("replay check", error);
    }
  }

  async ready(): Promise<boolean> {
    if (this.client.status !== "ready") return false;
    try {
      return (await withTimeout(this.client.ping(), this.readyTimeoutMs)) === "PONG";
    } catch {
      return false;
    }
  }

  get stats(): StoreStats {
    // Redis evicts nothing of ours before its expiry unless its maxmemory policy says so, which is
    // the operator's to configure (noeviction or volatile-ttl), not something this client sees.
    return { evictions: 0, errors: this.failures };
  }

  async close(): Promise<void> {
    if (!this.ownsClient || this.client.status === "end") return;
    if (this.client.status === "ready") {
      try {
        await withTimeout(this.client.quit(), this.readyTimeoutMs);
        return;
      } catch {
        // Fall through: cut the connection rather than hang shutdown.
      }
    }
    this.client.disconnect();
  }

  /** Hash tags keep a future multi-key script in one Cluster slot; the hash keeps `{`/`}` out of them. */
  private windowKey(key: string): string {
    return `${this.keyPrefix}{${hashKey(key)}}:w`;
  }

  private replayKey(key: string): string {
    return `${this.keyPrefix}{${hashKey(key)}}:r`;
  }

  private failed(operation: string, error: unknown): RedisStoreError {
    this.failures++;
    return new RedisStoreError(operation, error);
  }
}

function createFailFastClient(options: RedisLimitStoreUrlOptions): Redis {
  const client = new Redis(options.url, {
    connectTimeout: options.connectTimeoutMs ?? REDIS_STORE_DEFAULTS.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs ?? REDIS_STORE_DEFAULTS.commandTimeoutMs,
    // While disconnected, reject at once instead of holding the request until Redis returns.
    enableOfflineQueue: false,
    // Commands in flight when the connection drops reject instead of being sent again: a resent
    // reserve whose first run did reach Redis would take two slots.
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(50 * 2 ** attempt, REDIS_STORE_DEFAULTS.reconnectCapMs),
  });
  // Without a listener ioredis prints every failed reconnect attempt to the console.
  client.on("error", options.onConnectionError ?? (() => {}));
  return client;
}

function validKeyPrefix(prefix: string): string {
  // A brace in the prefix would become the hash tag and put every key in one Cluster slot.
  if (/[{}]/.test(prefix)) throw new RangeError(`keyPrefix must not contain "{" or "}", got ${prefix}`);
  return prefix;
}

/**
 * Keys carry attacker-influenced parts (account ids from the path): SHA-256 in base64url has no
 * braces, bounds the key's length and keeps account ids out of Redis in clear.
 */
function hashKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("base64url");
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
