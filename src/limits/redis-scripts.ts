/**
 * The Lua behind the Redis limit store. Each decision is one script so that it runs atomically on
 * the server: concurrent gateways never read the same count and both take the last slot.
 * Registered with ioredis `defineCommand`, which sends the body once per connection and falls back
 * from EVALSHA to EVAL on NOSCRIPT (a restarted Redis has an empty script cache).
 */

import type { Cluster, Redis, Result } from "ioredis";

/**
 * KEYS[1] the window's sorted set (score = the gateway's clock in ms, member = slot id).
 * ARGV: now, windowMs, limit, slotId.
 * Returns { 1, used } when the slot was taken, { 0, used, oldestScore } when the window is full.
 * Entries at or before now − window are gone first, so the window is (now − window, now].
 * Idempotent per slot id: run again with the same id (a resend after a lost reply), it finds its
 * slot and answers taken without taking a second one.
 * One key only, so the script runs on that key's Cluster slot; its caller hash-tags the key.
 * The oldest score comes back as the string Redis stores, not a Lua number, which Redis would
 * truncate to an integer on the way out.
 */
const RESERVE_LUA = `
if redis.call('ZSCORE', KEYS[1], ARGV[4]) then
  return { 1, redis.call('ZCARD', KEYS[1]) }
end
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
if used < limit then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return { 1, used + 1 }
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { 0, used, oldest[2] }
`;

/** [taken (1|0), used, oldest score when refused (absent when the limit is 0 and the set empty)] */
export type ReserveReply = [number, number, string?];

const RESERVE_COMMAND = "psd2gwReserve";

declare module "ioredis" {
  interface RedisCommander<Context> {
    psd2gwReserve(
      windowKey: string,
      now: number,
      windowMs: number,
      limit: number,
      slotId: string,
    ): Result<ReserveReply, Context>;
  }
}

/** Idempotent: defining again on a shared client only replaces the same script. */
export function defineLimitScripts(client: Redis | Cluster): void {
  client.defineCommand(RESERVE_COMMAND, { numberOfKeys: 1, lua: RESERVE_LUA });
}
