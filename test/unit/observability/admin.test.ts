/**
 * The admin listener on a real loopback port (port 0): what each path answers, GET and HEAD only,
 * readiness and metrics failures as answers rather than hangs, and close() not waiting for a
 * client that never finishes its request.
 */

import { once } from "node:events";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Counter, Registry } from "prom-client";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdminServer, type ReadinessCheck, startAdminServer } from "../../../src/observability/admin.js";
import type { TrustReport } from "../../../src/trust/source-status.js";
import { Scrape } from "../../helpers/prometheus-text.js";

const TRUST: TrustReport = {
  sources: [
    {
      kind: "register",
      source: "overrides",
      lastSuccess: 1_700_000_000_000,
      failures: 0,
      size: 3,
      stale: false,
      failsReadiness: true,
    },
  ],
};

describe("the admin listener", () => {
  const registry = new Registry();
  const served = new Counter({
    name: "admin_test_total",
    help: "A counter the test scrapes",
    registers: [registry],
  });
  /** What /readyz and /metrics answer next; the tests set them. */
  let readiness: () => Promise<ReadinessCheck>;
  let metricsFail = false;
  let withTrust: AdminServer;
  let withoutTrust: AdminServer;
  /** How often the demo bank's every-room reset ran (only `withTrust` has a demo bank). */
  let sandboxResets = 0;

  beforeAll(async () => {
    const options = {
      host: "127.0.0.1",
      port: 0,
      metrics: {
        metrics: () => (metricsFail ? Promise.reject(new Error("aggregation failed")) : registry.metrics()),
        contentType: registry.contentType,
      },
      readiness: () => readiness(),
    };
    withTrust = await startAdminServer({
      ...options,
      trust: () => TRUST,
      sandboxReset: () => () => {
        sandboxResets++;
      },
    });
    withoutTrust = await startAdminServer(options);
  });

  afterAll(async () => {
    await withTrust?.close();
    await withoutTrust?.close();
  });

  async function get(server: AdminServer, path: string, method: "GET" | "HEAD" | "POST" = "GET") {
    const response = await request(`${server.url}${path}`, { method });
    const text = await response.body.text();
    return {
      status: response.statusCode,
      type: String(response.headers["content-type"]),
      cacheControl: response.headers["cache-control"],
      text,
      json: () => JSON.parse(text) as Record<string, unknown>,
    };
  }

  it("listens where it says, on the port the system chose", () => {
    expect(withTrust.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(withTrust.url).not.toMatch(/:0$/);
    expect(withTrust.url).not.toBe(withoutTrust.url);
  });

  it.each([
    { path: "/healthz", status: 200, body: { status: "alive" } },
    { path: "/healthz?probe=kubelet", status: 200, body: { status: "alive" } },
    {
      path: "/",
      status: 404,
      body: {
        error: "not found: /metrics, /healthz, /readyz, /trust, /trust/reports/<id>, POST /trust/certificate",
      },
    },
    {
      path: "/metricsz",
      status: 404,
      body: {
        error: "not found: /metrics, /healthz, /readyz, /trust, /trust/reports/<id>, POST /trust/certificate",
      },
    },
  ])("GET $path → $status", async ({ path, status, body }) => {
    const r = await get(withTrust, path);
    expect(r.status).toBe(status);
    expect(r.type).toBe("application/json");
    expect(r.cacheControl).toBe("no-store");
    expect(r.json()).toEqual(body);
  });

  it.each([
    {
      what: "ready",
      check: async () => ({ ready: true, checks: { register: { ok: true } } }),
      status: 200,
      body: { status: "ready", checks: { register: { ok: true } } },
    },
    {
      what: "not ready, saying which check failed",
      check: async () => ({
        ready: false,
        checks: { register: { ok: true }, store: { ok: false, detail: "redis: connection refused" } },
      }),
      status: 503,
      body: {
        status: "not ready",
        checks: { register: { ok: true }, store: { ok: false, detail: "redis: connection refused" } },
      },
    },
    {
      what: "the readiness check throwing",
      check: () => Promise.reject(new Error("store probe timed out")),
      status: 503,
      body: { status: "not ready", error: "store probe timed out" },
    },
  ])("/readyz: $what → $status", async ({ check, status, body }) => {
    readiness = check;
    const r = await get(withTrust, "/readyz");
    expect(r.status).toBe(status);
    expect(r.json()).toEqual(body);
  });

  it("/trust: the trust sources with the time it answered, or 404 where the process holds none", async () => {
    const before = Date.now();
    const r = await get(withTrust, "/trust");
    expect(r.status).toBe(200);
    const body = r.json();
    expect(body).toEqual({ now: expect.any(String), ...TRUST });
    expect(Date.parse(body.now as string)).toBeGreaterThanOrEqual(before - 1000);

    const none = await get(withoutTrust, "/trust");
    expect(none.status).toBe(404);
    expect(none.json().error).toContain("holds no trust sources");
  });

  it("/metrics: the registry's text in its content type, scraped anew each time", async () => {
    metricsFail = false;
    served.inc(3);
    let r = await get(withTrust, "/metrics");
    expect(r.status).toBe(200);
    expect(r.type).toBe(registry.contentType);
    expect(new Scrape(r.text).only("admin_test_total")).toBe(3);
    served.inc();
    r = await get(withTrust, "/metrics");
    expect(new Scrape(r.text).only("admin_test_total")).toBe(4);
  });

  it("/metrics: a failing source answers 500 with the reason", async () => {
    metricsFail = true;
    try {
      const r = await get(withTrust, "/metrics");
      expect(r.status).toBe(500);
      expect(r.json()).toEqual({ error: "aggregation failed" });
    } finally {
      metricsFail = false;
    }
  });

  it("answers HEAD like GET without a body, and refuses other methods with 405", async () => {
    const head = await get(withTrust, "/healthz", "HEAD");
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    const post = await get(withTrust, "/healthz", "POST");
    expect(post.status).toBe(405);
    expect(post.json()).toEqual({ error: "GET only" });
  });

  it("resets every sandbox room on POST /sandbox/reset (the operator's), 404 where no demo bank runs", async () => {
    expect((await get(withTrust, "/sandbox/reset", "GET")).status).toBe(404);
    expect(sandboxResets).toBe(0);
    const reset = await get(withTrust, "/sandbox/reset", "POST");
    expect(reset.status).toBe(200);
    expect(sandboxResets).toBe(1);
    const none = await get(withoutTrust, "/sandbox/reset", "POST");
    expect(none.status).toBe(404);
    expect(none.json().error).toContain("no demo bank");
  });
});

describe("closing the admin listener", () => {
  it("does not wait for a client stuck halfway through its request, and stops listening", async () => {
    const admin = await startAdminServer({
      host: "127.0.0.1",
      port: 0,
      metrics: { metrics: async () => "", contentType: "text/plain" },
      readiness: async () => ({ ready: true, checks: {} }),
    });
    const { port } = new URL(admin.url);
    const socket = connect(Number(port), "127.0.0.1");
    const socketClosed = once(socket, "close");
    await once(socket, "connect");
    // Headers never finished: not idle, so Server.close alone would wait for the headers timeout.
    socket.write("GET /healthz HTTP/1.1\r\nHost: admin\r\n");
    await sleep(100);
    const closed = await Promise.race([
      admin.close().then(() => "closed"),
      sleep(2000).then(() => "waiting"),
    ]);
    socket.destroy();
    expect(closed).toBe("closed");
    await socketClosed;
    expect(admin.server.listening).toBe(false);
    await expect(request(`${admin.url}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  });

  it("refuses to start on a port in use, with the listen error", async () => {
    const first = await startAdminServer({
      host: "127.0.0.1",
      port: 0,
      metrics: { metrics: async () => "", contentType: "text/plain" },
      readiness: async () => ({ ready: true, checks: {} }),
    });
    try {
      const port = Number(new URL(first.url).port);
      await expect(
        startAdminServer({
          host: "127.0.0.1",
          port,
          metrics: { metrics: async () => "", contentType: "text/plain" },
          readiness: async () => ({ ready: true, checks: {} }),
        }),
      ).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await first.close();
    }
  });
});
