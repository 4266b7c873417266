import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  type PreparedCall,
  prepareSignedCall,
  send,
  signedCall,
  startTestGateway,
  type TestGateway,
} from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../helpers/redis-server.js";
import {
  expectLimitOfFiftyAcross,
  expectReplayRefusedAcross,
  UNATTENDED,
} from "../helpers/shared-store-gateways.js";

describeWithRedis("two gateways sharing one Redis", () => {
  let redis: RedisServer;
  let backend: RecordingBackend;
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    redis = await startRedisServer();
    backend = await startRecordingBackend();
    const config = { store: { type: "redis" as const, url: redis.url } };
    a = await startTestGateway({ backendUrl: backend.url, config });
    b = await startTestGateway({ backendUrl: backend.url, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await backend?.close();
    await redis?.stop();
  });
  beforeEach(() => backend.reset());

  it("enforce 4 in total: 50 concurrent unattended calls split between them let exactly 4 through", () =>
    expectLimitOfFiftyAcross(a, b, backend, "shared"));

  it("refuse a replay across gateways", () => expectReplayRefusedAcross(a, b));

  it("give the slot back after a backend 500, across gateways", async () => {
    backend.behave((_req, res) => res.writeHead(500).end());
    expect(
      (await signedCall(a, { signer: a.pki.tppA.qseal, target: "/v1/accounts/s500/balances", ...UNATTENDED }))
        .status,
    ).toBe(500);
    backend.reset();
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      const gw = i % 2 === 0 ? b : a;
      statuses.push(
        (
          await signedCall(gw, {
            signer: gw.pki.tppA.qseal,
            target: "/v1/accounts/s500/balances",
            ...UNATTENDED,
          })
        ).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });

  it("answer 503 while Redis is down (fail closed) and recover on their own when it returns", async () => {
    await redis.kill();
    const down = await signedCall(a, {
      signer: a.pki.tppA.qseal,
      target: "/v1/accounts/down/balances",
      ...UNATTENDED,
    });
    expect(down.status).toBe(503);
    expect(down.json.tppMessages?.[0]?.code).toBe("SERVICE_UNAVAILABLE");
    expect(backend.requests).toHaveLength(0);
    await redis.start();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (
        await signedCall(a, { signer: a.pki.tppA.qseal, target: "/v1/accounts/down/balances", ...UNATTENDED })
      ).status;
    }
    expect(status).toBe(200);
  });
});

describeWithRedis("failing open when configured", () => {
  const env = useGatewayAndBackend({ redis: { failOpen: true } });

  it("lets limited calls through while Redis is down", async () => {
    const { gw, redis } = env;
    await redis.kill();
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts/open/balances",
      ...UNATTENDED,
    });
    expect(r.status).toBe(200);
    await redis.start();
  });
});

describeWithRedis("a reload that moves the limit store from memory to Redis", () => {
  it("hands the memory store over: its unattended calls still count and its replay records still refuse", async () => {
    const redis = await startRedisServer();
    const backend = await startRecordingBackend();
    const gw = await startTestGateway({ backendUrl: backend.url });
    try {
      const call = () =>
        prepareSignedCall({
          signer: gw.pki.tppA.qseal,
          target: "/v1/accounts/acc-7/balances",
          ...UNATTENDED,
        });
      const before = await call();
      const sendIt = (p: PreparedCall) => send(gw, p.method, p.target, p.headers);
      expect((await sendIt(before)).status).toBe(200);
      expect((await sendIt(await call())).status).toBe(200);
      expect((await sendIt(await call())).status).toBe(200);
      const memory = gw.gateway.store;
      const needsRestart = await gw.gateway.reconfigure({
        ...gw.config,
        store: { ...gw.config.store, type: "redis", url: redis.url },
      });
      expect(needsRestart).toEqual([]);
      expect(gw.gateway.store).not.toBe(memory);
      // Recorded in memory before the reload: a replay.
      expect(await sendIt(before)).toMatchObject({ status: 400 });
      // Three of four counted in memory: one more passes (taken in Redis), the next is refused.
      expect((await sendIt(await call())).status).toBe(200);
      const fifth = await sendIt(await call());
      expect(fifth.status).toBe(429);
      expect(fifth.json.tppMessages?.[0]?.code).toBe("ACCESS_EXCEEDED");
      expect(backend.requests).toHaveLength(4);
    } finally {
      await gw.close();
      await backend.close();
      await redis.stop();
    }
  });
  it("refuses to move the store of several workers to memory, where each would count on its own", async () => {
    const redis = await startRedisServer();
    const backend = await startRecordingBackend();
    const gw = await startTestGateway({
      backendUrl: backend.url,
      config: { workers: 2, store: { type: "redis", url: redis.url } },
    });
    try {
      const shared = gw.gateway.store;
      await expect(
        gw.gateway.reconfigure({ ...gw.config, store: { ...gw.config.store, type: "memory" } }),
      ).rejects.toThrow(/2 workers run, and with the memory store each would count limits on its own/);
      expect(gw.gateway.store).toBe(shared);
    } finally {
      await gw.close();
      await backend.close();
      await redis.stop();
    }
  });
});
