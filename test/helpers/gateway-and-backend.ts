/**
 * The usual integration set-up in one call: a recording backend and a gateway in front of it,
 * started once for the enclosing `describe` (or file), the backend's record and behaviour reset
 * before each test, both closed afterwards.
 *
 *     const env = useGatewayAndBackend({ config: { verification: { maxBodyBytes: 1024 } } });
 *     it("…", async () => {
 *       const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
 *       expect(env.backend.requests).toHaveLength(1);
 *     });
 */

import type { DevPki } from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { type GatewayOptions, startTestGateway, type TestGateway, testPki } from "./gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "./recording-backend.js";
import { type RedisServer, startRedisServer } from "./redis-server.js";

export interface GatewayAndBackendOptions extends Omit<GatewayOptions, "backendUrl"> {
  /**
   * Starts a redis-server of its own (before the gateway, stopped after it) and makes it the
   * gateway's limit store, with these store settings. Use inside `describeWithRedis`.
   */
  readonly redis?: { readonly failOpen?: boolean };
}

export interface GatewayAndBackend {
  /** The gateway (readable from `beforeAll` on). */
  readonly gw: TestGateway;
  /** The backend behind it; empty and answering 200 at the start of each test. */
  readonly backend: RecordingBackend;
  /** The gateway's redis-server, with the `redis` option. */
  readonly redis: RedisServer;
}

interface Running {
  readonly gw: TestGateway;
  readonly backend: RecordingBackend;
  readonly redis: RedisServer | undefined;
}

/**
 * Nothing should still be in flight when a suite ends; a connection left half-sent by a test is
 * cut after this long instead of the configured shutdown grace (25 s).
 */
const CLOSE_GRACE_MS = 1_000;

/**
 * Registers the hooks and returns a handle whose `gw` and `backend` are set once `beforeAll` ran.
 * `options` may be a function of the test PKI, for set-ups that write files first (a register).
 */
export function useGatewayAndBackend(
  options:
    | GatewayAndBackendOptions
    | ((pki: DevPki) => GatewayAndBackendOptions | Promise<GatewayAndBackendOptions>) = {},
): GatewayAndBackend {
  let started: Running | undefined;

  beforeAll(async () => {
    const { redis: redisStore, ...resolved } =
      typeof options === "function" ? await options(await testPki()) : options;
    const redis = redisStore ? await startRedisServer() : undefined;
    const backend = await startRecordingBackend();
    try {
      const config = redis
        ? { ...resolved.config, store: { type: "redis" as const, url: redis.url, ...redisStore } }
        : resolved.config;
      const gw = await startTestGateway({ ...resolved, config, backendUrl: backend.url });
      started = { gw, backend, redis };
    } catch (error) {
      await backend.close();
      await redis?.stop();
      throw error;
    }
  });
  afterAll(async () => {
    const running = started;
    started = undefined;
    await running?.gw.close(CLOSE_GRACE_MS);
    await running?.backend.close();
    await running?.redis?.stop();
  });
  beforeEach(() => started?.backend.reset());

  const get = (): Running => {
    if (!started)
      throw new Error("useGatewayAndBackend: the gateway is not running (read it inside a test or hook)");
    return started;
  };
  return {
    get gw() {
      return get().gw;
    },
    get backend() {
      return get().backend;
    },
    get redis() {
      const { redis } = get();
      if (!redis) throw new Error("useGatewayAndBackend: no redis-server without the `redis` option");
      return redis;
    },
  };
}
