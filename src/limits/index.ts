/**
 * Limits and replay state: the store interface, the memory store, the unattended-access policy
 * (SPEC 8) and replay protection. The Redis store is loaded only when configured
 * (`loadRedisStore`), so the memory default never loads a Redis client.
 */

export {
  type AgreedLimit,
  type ClassLimits,
  LIMIT_SOURCES,
  type LimitAgreement,
  type LimitSource,
} from "./agreements.js";
export { type HandOverOptions, HandOverStore, WindowedStore } from "./hand-over.js";
export { MemoryLimitStore, type MemoryStoreOptions } from "./memory-store.js";
export type { RedisLimitStoreOptions } from "./redis-store.js";
export { checkReplay, type ReplayOptions, type ReplayStore, replayKeyFor } from "./replay.js";
export type { LimitStore, MaybePromise, Reservation, StoreReadiness, StoreStats } from "./store.js";
export { STORE_RETRY_AFTER_SECONDS, storeReadinessOf } from "./store.js";
export {
  checkDateFrom,
  checkTransactionDetails,
  DEFAULT_CONSENT_FREQUENCY_TTL_MS,
  DEFAULT_UNATTENDED_ROUTES,
  defaultPeriodRule,
  earliestReadableDay,
  type HeldSlot,
  type LimitClass,
  MAX_TRANSACTION_DETAILS_BYTES,
  type PeriodRule,
  UnattendedAccessPolicy,
  type UnattendedOptions,
  type UnattendedRequest,
  type UnattendedRoute,
} from "./unattended.js";

export async function loadRedisStore() {
  return (await import("./redis-store.js")).RedisLimitStore;
}
