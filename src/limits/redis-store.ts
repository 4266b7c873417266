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
 *
 * Where Redis runs: one URL, a Sentinel-managed primary (the client asks the Sentinels, follows a
 * failover and rejects while no primary is known), or a Cluster (every script has one key, every
 * key a hash tag). A slot whose reply was lost is given back once Redis answers again, so neither
 * a crash nor a failover burns quota; with `replicaAcks` a granted slot or a new replay record is
 * only acted on once that many replicas hold it (WAIT), so a failover cannot forget it.
 */

import { createHash, randomUUID } from "node:crypto";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { defineLimitScripts, type ReserveReply } from "./redis-scripts.js";
import type { LimitStore, Reservation, StoreReadiness, StoreStats } from "./store.js";

/** The write probe behind readiness runs at most this often; a failed call re-judges it at once. */
const PROBE_INTERVAL_MS = 1000;

interface CommonOptions {
  /** Namespace before every key, so gateways can share a Redis with other applications. */
  readonly keyPrefix?: string;
  /** How long one connection attempt may take. */
  readonly connectTimeoutMs?: number;
  /** How long one command may wait for its reply before it rejects; also bounds `ready()`. */
  readonly commandTimeoutMs?: number;
  /** Connection-level errors (refused, reset, TLS); operations still reject on their own. */
  readonly onConnectionError?: (error: Error) => void;
  /**
   * Replicas that must acknowledge a granted slot or a new replay record (Redis WAIT, sent in the
   * same round trip) before the store answers; fewer within the command timeout and the operation
   * fails (503). 0 skips WAIT. Default: 1 with Sentinel, 0 otherwise.
   */
  readonly replicaAcks?: number;
}

export interface RedisLimitStoreUrlOptions extends CommonOptions {
  /** redis://host:port/db, or rediss:// for TLS; credentials may sit in the URL. */
  readonly url: string;
}

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

export interface RedisLimitStoreSentinelOptions extends CommonOptions {
  /** Sentinels to ask where the primary is; the client follows a failover on its own. */
  readonly sentinels: readonly RedisNode[];
  /** The master group's name. */
  readonly name: string;
  readonly sentinelPassword?: string;
  /** The primary's (and replicas') password. */
  readonly password?: string;
}

export interface RedisLimitStoreClusterOptions extends CommonOptions {
  /** Startup nodes; the client learns the rest and the slot map from them. */
  readonly cluster: readonly RedisNode[];
  readonly password?: string;
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
  readonly replicaAcks?: number;
}

export type RedisLimitStoreOptions =
  | RedisLimitStoreUrlOptions
  | RedisLimitStoreSentinelOptions
  | RedisLimitStoreClusterOptions
  | RedisLimitStoreClientOptions;

export const REDIS_STORE_DEFAULTS = {
  keyPrefix: "psd2gw:",
  connectTimeoutMs: 1_000,
  commandTimeoutMs: 500,
  /** Reconnect backoff: 100 ms doubling up to this cap, forever. */
  reconnectCapMs: 2_000,
  /** Slots whose give-back could not reach Redis, kept to retry once it answers again. */
  maxPendingReleases: 10_000,
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
  private readonly replicaAcks: number;
  /**
   * WAIT's own timeout: half the command timeout, since Redis fires a blocked client's timeout on
   * its next cron tick (up to 100 ms late at hz 10) and WAIT should answer (with a count) first.
   */
  private readonly waitMs: number;
  /** slot id → window key: slots that may be held although their call was refused (503). */
  private readonly pendingReleases = new Map<string, string>();
  private failures = 0;
  private readonly onReady = () => void this.retryReleases();
  /** The last readiness judged (a write probe, or a call that failed), and the probe under way. */
  private judged: { readonly at: number; readonly readiness: StoreReadiness } | undefined;
  private probing: Promise<StoreReadiness> | undefined;
  /** This process's own probe key (in one Cluster slot through its hash tag), expiring by itself. */
  private readonly probeKey: string;

  constructor(options: RedisLimitStoreOptions) {
    this.keyPrefix = validKeyPrefix(options.keyPrefix ?? REDIS_STORE_DEFAULTS.keyPrefix);
    const commandTimeoutMs = options.commandTimeoutMs ?? REDIS_STORE_DEFAULTS.commandTimeoutMs;
    this.readyTimeoutMs = commandTimeoutMs;
    this.waitMs = Math.max(1, Math.floor(commandTimeoutMs / 2));
    this.replicaAcks = options.replicaAcks ?? ("sentinels" in options ? 1 : 0);
    if (!Number.isSafeInteger(this.replicaAcks) || this.replicaAcks < 0) {
      throw new RangeError(`replicaAcks must be a whole number, got ${options.replicaAcks}`);
    }
    if ("client" in options) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      this.client = createFailFastClient(options);
      this.ownsClient = true;
    }
    this.probeKey = `${this.keyPrefix}{probe}:${randomUUID()}`;
    defineLimitScripts(this.client);
    // A new primary (failover) or a reconnect: give back what could not be given back before.
    this.client.on("ready", this.onReady);
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
      if (this.replicaAcks === 0) {
        reply = await this.client.psd2gwReserve(windowKey, now, windowMs, limit, slotId);
      } else {
        // One round trip: the script, then WAIT for the replicas to hold what it wrote.
        const [reserved, waited] = await pipelineReplies(
          this.client
            .pipeline()
            .psd2gwReserve(windowKey, now, windowMs, limit, slotId)
            .wait(this.replicaAcks, this.waitMs),
        );
        reply = reserved as ReserveReply;
        if (reply[0] === 1 && (waited as number) < this.replicaAcks) {
          throw new Error(
            `the slot reached ${waited} of ${this.replicaAcks} replicas within ${this.waitMs} ms`,
          );
        }
      }
    } catch (error) {
      // The script may have run although its reply never came (or no replica holds it yet): give
      // the slot back, now or once Redis answers again, so a Redis hiccup or a failover does not
      // burn the TPP's quota. Removing a slot that was never taken is harmless.
      this.releaseLater(windowKey, slotId);
      throw this.failed("reserve", error);
    }
    if (this.pendingReleases.size > 0) void this.retryReleases();
    const [taken, used, oldest] = reply;
    if (taken === 1) return { allowed: true, slotId, used };
    // No oldest slot only happens with a limit of 0: nothing will ever leave, say one window.
    const retryAfterMs = oldest === undefined ? windowMs : Math.ceil(Number(oldest) + windowMs - now);
    return { allowed: false, retryAfterMs: Math.max(1, retryAfterMs), used };
  }

  async release(key: string, slotId: string): Promise<void> {
    const windowKey = this.windowKey(key);
    try {
      await this.client.zrem(windowKey, slotId);
    } catch (error) {
      this.keepForLater(windowKey, slotId);
      throw this.failed("release", error);
    }
  }

  async rememberLimit(key: string, limit: number, ttlMs: number): Promise<void> {
    try {
      await this.client.set(this.limitKey(key), String(limit), "PX", Math.max(1, Math.ceil(ttlMs)));
    } catch (error) {
      throw this.failed("remember a limit", error);
    }
  }

  async recallLimit(key: string): Promise<number | undefined> {
    let value: string | null;
    try {
      value = await this.client.get(this.limitKey(key));
    } catch (error) {
      throw this.failed("recall a limit", error);
    }
    const limit = value === null ? Number.NaN : Number(value);
    return Number.isSafeInteger(limit) && limit >= 0 ? limit : undefined;
  }

  async checkAndRecord(key: string, ttlMs: number): Promise<boolean> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    const replayKey = this.replayKey(key);
    try {
      // NX: only the first caller sets it (reply "OK"); everyone after gets null until it expires.
      if (this.replicaAcks === 0) return (await this.client.set(replayKey, "1", "PX", ttl, "NX")) === null;
      const [set, waited] = await pipelineReplies(
        this.client.pipeline().set(replayKey, "1", "PX", ttl, "NX").wait(this.replicaAcks, this.waitMs),
      );
      if (set === null) return true;
      if ((waited as number) < this.replicaAcks) {
        // Recorded on the primary only: a failover now could forget it, so the call is not let through.
        throw new Error(
          `the record reached ${waited} of ${this.replicaAcks} replicas within ${this.waitMs} ms`,
        );
      }
      return false;
    } catch (error) {
      throw this.failed("replay check", error);
    }
  }

  async ready(): Promise<boolean> {
    return (await this.readiness()).ok;
  }

  /**
   * Whether a call would be served now: a write with the calls' own acknowledgements (SET, then
   * WAIT for `replicaAcks`), not merely a primary that answers PING. After a failover the new
   * primary answers at once, but with one replica and `replicaAcks: 1` it cannot grant anything
   * until a replica has synced to it. Probed at most once a second; a call that failed counts as
   * a failed probe until the next one.
   */
  async readiness(): Promise<StoreReadiness> {
    if (this.client.status !== "ready") {
      return { ok: false, reason: "disconnected", detail: `not connected to Redis (${this.client.status})` };
    }
    const judged = this.judged;
    if (judged && Date.now() - judged.at < PROBE_INTERVAL_MS) return judged.readiness;
    this.probing ??= this.probe().then((readiness) => {
      this.judged = { at: Date.now(), readiness };
      this.probing = undefined;
      return readiness;
    });
    return this.probing;
  }

  private async probe(): Promise<StoreReadiness> {
    try {
      const set = this.client.pipeline().set(this.probeKey, "1", "PX", 60_000);
      const replies = await withTimeout(
        pipelineReplies(this.replicaAcks === 0 ? set : set.wait(this.replicaAcks, this.waitMs)),
        this.readyTimeoutMs,
      );
      const waited = this.replicaAcks === 0 ? 0 : (replies[1] as number);
      if (waited < this.replicaAcks) {
        return {
          ok: false,
          reason: "replicas-behind",
          detail: `a write reached ${waited} of the ${this.replicaAcks} replicas replicaAcks asks for within ${this.waitMs} ms, so no call can be granted`,
        };
      }
      return {
        ok: true,
        detail: this.replicaAcks === 0 ? "writes" : `writes reach ${this.replicaAcks} replicas`,
      };
    } catch (error) {
      return { ok: false, reason: "write-failed", detail: `a write failed: ${(error as Error).message}` };
    }
  }

  get stats(): StoreStats {
    // Redis evicts nothing of ours before its expiry unless its maxmemory policy says so, which is
    // the operator's to configure (noeviction or volatile-ttl), not something this client sees.
    return { evictions: 0, errors: this.failures };
  }

  /** Slots whose give-back is still owed to Redis (for tests and diagnostics). */
  get pendingReleaseCount(): number {
    return this.pendingReleases.size;
  }

  async close(): Promise<void> {
    this.client.off("ready", this.onReady);
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

  /** Hash tags keep every script's keys in one Cluster slot; the hash keeps `{`/`}` out of them. */
  windowKey(key: string): string {
    return `${this.keyPrefix}{${hashKey(key)}}:w`;
  }

  replayKey(key: string): string {
    return `${this.keyPrefix}{${hashKey(key)}}:r`;
  }

  limitKey(key: string): string {
    return `${this.keyPrefix}{${hashKey(key)}}:l`;
  }

  private releaseLater(windowKey: string, slotId: string): void {
    this.keepForLater(windowKey, slotId);
    void this.retryReleases();
  }

  private keepForLater(windowKey: string, slotId: string): void {
    // Bounded: past the bound the oldest owed give-back is dropped (that slot stays burnt).
    if (this.pendingReleases.size >= REDIS_STORE_DEFAULTS.maxPendingReleases) {
      const oldest = this.pendingReleases.keys().next().value;
      if (oldest !== undefined) this.pendingReleases.delete(oldest);
    }
    this.pendingReleases.set(slotId, windowKey);
  }

  private retrying = false;

  /** ZREM is idempotent: a give-back sent twice, or for a slot never taken, changes nothing. */
  private async retryReleases(): Promise<void> {
    if (this.retrying) return;
    this.retrying = true;
    try {
      for (const [slotId, windowKey] of [...this.pendingReleases]) {
        try {
          await this.client.zrem(windowKey, slotId);
          this.pendingReleases.delete(slotId);
        } catch {
          return; // still unreachable: the next "ready" or successful reserve tries again
        }
      }
    } finally {
      this.retrying = false;
    }
  }

  private failed(operation: string, error: unknown): RedisStoreError {
    this.failures++;
    const failure = new RedisStoreError(operation, error);
    // Not ready until a probe says otherwise: a balancer stops sending calls that would fail.
    this.judged = {
      at: Date.now(),
      readiness: { ok: false, reason: "write-failed", detail: failure.message },
    };
    return failure;
  }
}

/** The replies of a pipeline, or the first error in it. */
async function pipelineReplies(pipeline: ReturnType<Redis["pipeline"]>): Promise<unknown[]> {
  const results = await pipeline.exec();
  if (!results) throw new Error("the pipeline was discarded");
  return results.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}

function createFailFastClient(
  options: RedisLimitStoreUrlOptions | RedisLimitStoreSentinelOptions | RedisLimitStoreClusterOptions,
): Redis | Cluster {
  const retryStrategy = (attempt: number) => Math.min(50 * 2 ** attempt, REDIS_STORE_DEFAULTS.reconnectCapMs);
  const common: RedisOptions = {
    connectTimeout: options.connectTimeoutMs ?? REDIS_STORE_DEFAULTS.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs ?? REDIS_STORE_DEFAULTS.commandTimeoutMs,
    // While disconnected (or no primary is known), reject at once instead of holding the request.
    enableOfflineQueue: false,
    // Commands in flight when the connection drops reject instead of being sent again: a resent
    // reserve whose first run did reach Redis would take two slots.
    maxRetriesPerRequest: 0,
    retryStrategy,
  };
  let client: Redis | Cluster;
  if ("url" in options) {
    client = new Redis(options.url, common);
  } else if ("sentinels" in options) {
    client = new Redis({
      ...common,
      sentinels: options.sentinels.map(({ host, port }) => ({ host, port })),
      name: options.name,
      role: "master",
      ...(options.password !== undefined ? { password: options.password } : {}),
      ...(options.sentinelPassword !== undefined ? { sentinelPassword: options.sentinelPassword } : {}),
      // Keep asking the Sentinels while none names a reachable primary (the failover window).
      sentinelRetryStrategy: retryStrategy,
      // Sentinels announce +switch-master: drop the old primary at once, not at its first error.
      failoverDetector: true,
      // A demoted primary answers writes with READONLY: reconnect (asking the Sentinels), never resend.
      reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 1 : false),
    });
  } else {
    client = new Cluster(
      options.cluster.map(({ host, port }) => ({ host, port })),
      {
        // While the slot map is unknown (no node reachable), reject at once.
        enableOfflineQueue: false,
        // ioredis sends a command again after "Connection is closed" (retryDelayOnFailover, 100 ms),
        // which it also says while a node's connection is still opening. Safe for the slot: the
        // reserve script is idempotent per slot id, so a resend never takes a second one; a resent
        // replay record can only make a request look replayed (400), never let one through.
        clusterRetryStrategy: retryStrategy,
        // Only primaries: a replica's copy may lag behind the last granted slot.
        scaleReads: "master",
        redisOptions: {
          connectTimeout: common.connectTimeout!,
          commandTimeout: common.commandTimeout!,
          maxRetriesPerRequest: 0,
          ...(options.password !== undefined ? { password: options.password } : {}),
        },
      },
    );
  }
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
