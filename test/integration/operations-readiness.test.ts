/**
 * Issue 6, proof 2: /healthz answers 200 whatever happens; /readyz goes unready (503, a JSON body
 * naming the failing check) when the TPP register is stale or Redis is gone, and ready again
 * after. Real gateways, a real register file, a real redis-server; the only thing bent is the
 * gateway's clock, to age the register without waiting a day.
 */

import { copyFileSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall, type TestGateway } from "../helpers/gateway-fixture.js";
import { scrape } from "../helpers/prometheus-text.js";
import { describeWithRedis } from "../helpers/redis-server.js";

interface Readiness {
  readonly status: number;
  readonly body: {
    status: string;
    checks: Record<string, { ok: boolean; detail?: string }>;
  };
}

async function get(url: string): Promise<{ status: number; text: string; type: string }> {
  const response = await request(url);
  return {
    status: response.statusCode,
    text: await response.body.text(),
    type: String(response.headers["content-type"]),
  };
}

async function readyz(gw: TestGateway): Promise<Readiness> {
  const r = await get(`${gw.gateway.adminUrl}/readyz`);
  expect(r.type).toMatch(/^application\/json/);
  return { status: r.status, body: JSON.parse(r.text) };
}

async function expectAlive(gw: TestGateway): Promise<void> {
  const r = await get(`${gw.gateway.adminUrl}/healthz`);
  expect(r.status).toBe(200);
  expect(JSON.parse(r.text)).toEqual({ status: "alive" });
}

/** Polls /readyz until it answers `status` (or the time is up) and returns the last answer. */
async function readyzUntil(gw: TestGateway, status: number, timeoutMs: number): Promise<Readiness> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await readyz(gw);
    if (r.status === status || Date.now() > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("/readyz and a stale TPP register", () => {
  let registerFile: string;
  let offsetMs = 0;

  const env = useGatewayAndBackend((pki) => {
    // This gateway's own copy of the register file, so it can go missing without touching the PKI's.
    registerFile = join(mkdtempSync(join(tmpdir(), "psd2-readyz-")), "register.json");
    copyFileSync(pki.paths.register, registerFile);
    return {
      now: () => Date.now() + offsetMs,
      // Looked at every second; stale after 60 s of the gateway's clock.
      config: { register: { file: registerFile, pollSeconds: 1, maxAgeSeconds: 60 } },
    };
  });

  it("ready with a fresh register: 200 and every check ok", async () => {
    const { gw } = env;
    await expectAlive(gw);
    const r = await readyz(gw);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("ready");
    expect(r.body.checks).toEqual({
      listener: { ok: true },
      register: { ok: true, detail: expect.stringMatching(/^\d+ s old, 2 TPPs$/) },
      store: { ok: true, detail: "memory" },
      trust: { ok: true, detail: expect.stringMatching(/^\d+ sources fresh$/) },
    });
  });

  it("503 naming `register` when it is older than maxAgeSeconds; 200 again once it is refreshed", async () => {
    const { gw } = env;
    // The file goes away: each refresh now fails and the last good copy (and its age) is kept.
    const aside = `${registerFile}.aside`;
    renameSync(registerFile, aside);
    const failuresBefore = (await scrape(gw.gateway.adminUrl!)).value(
      "psd2_gateway_register_refresh_failures_total",
    );
    await waitFor(
      "a failed register refresh",
      async () =>
        (await scrape(gw.gateway.adminUrl!)).value("psd2_gateway_register_refresh_failures_total") >
        failuresBefore,
      5_000,
    );
    // Two minutes pass on the gateway's clock.
    offsetMs += 120_000;

    const stale = await readyz(gw);
    expect(stale.status).toBe(503);
    expect(stale.body.status).toBe("not ready");
    expect(stale.body.checks["register"]).toEqual({
      ok: false,
      reason: "stale",
      detail: expect.stringMatching(/^1[23]\d s old, 2 TPPs$/),
    });
    expect(stale.body.checks["listener"]).toEqual({ ok: true });
    expect(stale.body.checks["store"]).toEqual({ ok: true, detail: "memory" });
    await expectAlive(gw);
    const metrics = await scrape(gw.gateway.adminUrl!);
    expect(metrics.only("psd2_gateway_register_age_seconds")).toBeGreaterThanOrEqual(120);

    // The file is back: the next look confirms the copy and the gateway is ready again.
    renameSync(aside, registerFile);
    const again = await readyzUntil(gw, 200, 5_000);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.checks["register"]).toEqual({
      ok: true,
      detail: expect.stringMatching(/^\d s old, 2 TPPs$/),
    });
    expect((await scrape(gw.gateway.adminUrl!)).only("psd2_gateway_register_age_seconds")).toBeLessThan(5);
  });
});

describe("a stale register fails requests closed", () => {
  let registerFile: string;
  let offsetMs = 0;
  const env = useGatewayAndBackend((pki) => {
    registerFile = join(mkdtempSync(join(tmpdir(), "psd2-stale-")), "register.json");
    copyFileSync(pki.paths.register, registerFile);
    return {
      now: () => Date.now() + offsetMs,
      config: { register: { file: registerFile, maxAgeSeconds: 60 } },
    };
  });

  // WAS A BUG, kept as a regression test: a cached successful verdict was returned without asking
  // whether the register was still fresh. Once the copy was older than register.maxAgeSeconds,
  // /readyz said "not ready" and a TPP whose verdict was not cached got 503 SERVICE_UNAVAILABLE, but
  // one that had called within cache.ttlSeconds was still forwarded (200), although maxAgeSeconds
  // is documented as "older than this, the copy is stale and requests fail closed". Now both: 503.
  it("a TPP whose verdict is cached is refused too once the register is stale", async () => {
    const { gw } = env;
    // Loaded; then the file goes away, so no refresh can make the copy fresh again.
    rmSync(registerFile);
    const before = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(before.status, before.text).toBe(200);
    offsetMs = 120_000;
    expect((await readyz(gw)).status).toBe(503);
    const uncached = await signedCall(gw, {
      signer: gw.pki.tppB.qseal,
      target: "/v1/accounts",
      now: Date.now() + offsetMs,
    });
    expect(uncached.json.tppMessages?.[0]?.code).toBe("SERVICE_UNAVAILABLE");
    const cached = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      now: Date.now() + offsetMs,
    });
    expect(cached.status, cached.text).toBe(503);
  });
});

describeWithRedis("/readyz and the Redis limit store", () => {
  const env = useGatewayAndBackend({ redis: {} });

  it("200 while Redis answers; 503 naming `store` when it is gone; 200 again within seconds of its return", async () => {
    const { gw, redis } = env;
    const up = await readyz(gw);
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.checks["store"]).toEqual({ ok: true, detail: "redis: writes" });

    // Gone. (kill, not stop: the helper's stop() is final, it removes the server's folder.)
    await redis.kill();
    const down = await readyzUntil(gw, 503, 5_000);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe("not ready");
    expect(down.body.checks["store"]).toMatchObject({ ok: false, reason: "disconnected" });
    const scraped = (await get(`${gw.gateway.adminUrl}/metrics`)).text;
    expect(scraped).toContain('psd2_gateway_ready{check="store",reason="disconnected"} 0');
    expect(scraped).toContain('psd2_gateway_ready{check="register",reason=""} 1');
    expect(down.body.checks["register"]?.ok).toBe(true);
    expect(down.body.checks["listener"]).toEqual({ ok: true });
    await expectAlive(gw);

    await redis.start();
    const back = await readyzUntil(gw, 200, 8_000);
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.checks["store"]).toEqual({ ok: true, detail: "redis: writes" });
  });

  it("a Redis that stops answering (frozen, connection still open) is not ready either", async () => {
    const { gw, redis } = env;
    redis.freeze();
    try {
      // The write probe is bounded (commandTimeoutMs), so /readyz answers instead of hanging; it
      // runs at most once a second, so the answer turns once the last probe's has aged.
      const frozen = await readyzUntil(gw, 503, 8_000);
      expect(frozen.status).toBe(503);
      expect(frozen.body.checks["store"]).toMatchObject({ ok: false, reason: "write-failed" });
      expect(frozen.body.checks["store"]!.detail).toMatch(/^redis: a write failed: /);
    } finally {
      redis.thaw();
    }
    const back = await readyzUntil(gw, 200, 8_000);
    expect(back.status, JSON.stringify(back.body)).toBe(200);
  });
});
