/**
 * Builds the configured LimitStore: memory (the embedded default) or Redis (shared by several
 * gateways): one URL, a Sentinel-managed primary or a Cluster.
 */

import type { GatewayConfig } from "../config/schema.js";
import type { LimitStore } from "../limits/index.js";
import { loadRedisStore, MemoryLimitStore } from "../limits/index.js";

export interface StoreEvents {
  /** The shared store's connection failed (logged by the caller, throttled). */
  readonly onConnectionError?: (error: Error) => void;
  readonly now?: () => number;
  /** A memory window or replay key pushed out before its time: a TPP could exceed its limit. */
  readonly onEvict?: (what: "window" | "replay", key: string) => void;
  /** The snapshot could not be read: the store starts empty. */
  readonly onSnapshotProblem?: (message: string) => void;
}

export async function createLimitStore(
  config: GatewayConfig["store"],
  maxReplayKeys: number,
  events: StoreEvents = {},
): Promise<LimitStore> {
  if (config.type === "redis") {
    // Loaded only when configured, so the memory default needs no Redis client at all.
    const RedisLimitStore = await loadRedisStore();
    const common = {
      ...(events.onConnectionError ? { onConnectionError: events.onConnectionError } : {}),
      ...(config.replicaAcks !== undefined ? { replicaAcks: config.replicaAcks } : {}),
    };
    const password = config.password !== undefined ? { password: config.password } : {};
    // The schema guarantees exactly one of url, sentinels (with name) and cluster.
    const store = config.sentinels
      ? new RedisLimitStore({
          ...common,
          ...password,
          sentinels: config.sentinels,
          name: config.name!,
          ...(config.sentinelPassword !== undefined ? { sentinelPassword: config.sentinelPassword } : {}),
        })
      : config.cluster
        ? new RedisLimitStore({ ...common, ...password, cluster: config.cluster })
        : new RedisLimitStore({ ...common, url: config.url! });
    // Give the first connection a moment; without it limited calls answer 503 until Redis is up.
    await waitUntilReady(store, 2_000);
    return store;
  }
  const options = {
    maxWindows: config.maxWindows,
    maxReplayKeys: maxReplayKeys,
    ...(events.now ? { now: events.now } : {}),
    ...(events.onEvict ? { onEvict: events.onEvict } : {}),
  };
  try {
    return new MemoryLimitStore({
      ...options,
      ...(config.snapshotFile ? { snapshotFile: config.snapshotFile } : {}),
    });
  } catch (error) {
    events.onSnapshotProblem?.(
      `cannot read the limit snapshot ${config.snapshotFile}: ${(error as Error).message}; starting with empty counters`,
    );
    const store = new MemoryLimitStore(options);
    // Still write the snapshot on shutdown, over the unreadable one.
    return Object.assign(store, { close: async () => store.save(config.snapshotFile!) });
  }
}

async function waitUntilReady(store: LimitStore, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await Promise.resolve(store.ready()).catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
