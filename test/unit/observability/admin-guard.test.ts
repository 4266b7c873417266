/**
 * Who the admin listener answers (observability/admin-guard.ts), on a real loopback listener:
 * Host names (IP literals always, DNS names only from the list), Origin same-origin only,
 * Sec-Fetch-Site, the bearer token of admin.tokenFile, refusals counted per reason.
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdminServer, startAdminServer } from "../../../src/observability/admin.js";
import { Scrape } from "../../helpers/prometheus-text.js";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A request with exactly these headers (Host included), to the listener's loopback address. */
function send(
  server: AdminServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port: Number(port), method, path, headers, setHost: !("Host" in headers) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on("error", reject);
    req.end(method === "POST" ? "x" : undefined);
  });
}

const TOKEN = "0123456789abcdef0123456789abcdef";
const dir = mkdtempSync(join(tmpdir(), "admin-guard-"));
const tokenFile = join(dir, "token");
writeFileSync(tokenFile, `${TOKEN}\n`);

const base = {
  port: 0,
  metrics: { metrics: async () => "", contentType: "text/plain; version=0.0.4" },
  readiness: async () => ({ ready: true, checks: {} }),
};

describe("the admin listener's guard", () => {
  let resets = 0;
  let loopback: AdminServer;
  let withToken: AdminServer;

  beforeAll(async () => {
    const sandboxReset = () => () => {
      resets++;
    };
    loopback = await startAdminServer({ ...base, host: "127.0.0.1", sandboxReset });
    withToken = await startAdminServer({
      ...base,
      host: "127.0.0.1",
      sandboxReset,
      access: { tokenFile, hostNames: ["gw1.internal.example"] },
    });
  });
  afterAll(async () => {
    await loopback?.close();
    await withToken?.close();
  });

  it("refuses the forged cross-site POST of the issue (Origin and Host evil.example) with 403 SERVICE_BLOCKED", async () => {
    const before = resets;
    const r = await send(loopback, "POST", "/sandbox/reset", {
      Host: "evil.example:9090",
      Origin: "http://evil.example",
      "Content-Type": "text/plain",
    });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.text)).toEqual({
      tppMessages: [
        { category: "ERROR", code: "SERVICE_BLOCKED", text: expect.stringContaining("admin.hostNames") },
      ],
    });
    expect(resets).toBe(before);
  });

  it.each([
    ["localhost:9090", 200],
    ["LOCALHOST", 200],
    ["localhost.", 200],
    ["127.0.0.1:9090", 200],
    ["[::1]:9090", 200],
    // kubelet probes and Prometheus address a pod by IP: no DNS name, nothing to rebind.
    ["10.1.2.3:9090", 200],
    ["[fd00::1]", 200],
    ["evil.example", 403],
    ["localhost.evil.example:9090", 403],
    ["127.0.0.1.nip.io", 403],
    ["gw1.internal.example:9090", 403],
    ["", 403],
  ])("GET /healthz with Host %s → %i", async (host, status) => {
    expect((await send(loopback, "GET", "/healthz", { Host: host })).status).toBe(status);
  });

  it("answers the names of admin.hostNames", async () => {
    expect((await send(withToken, "GET", "/healthz", { Host: "gw1.internal.example:9090" })).status).toBe(
      200,
    );
    expect((await send(withToken, "GET", "/healthz", { Host: "gw2.internal.example:9090" })).status).toBe(
      403,
    );
  });

  it("a DNS-rebinding read of /trust or /metrics: refused by Host even with no Origin", async () => {
    for (const path of ["/metrics", "/trust"]) {
      const r = await send(loopback, "GET", path, { Host: "rebind.evil.example:9090" });
      expect(r.status, path).toBe(403);
    }
  });

  it.each([
    ["http://localhost:9090", "localhost:9090", 200],
    ["http://127.0.0.1:9090", "127.0.0.1:9090", 200],
    ["http://localhost:9091", "localhost:9090", 403],
    ["https://localhost:9090", "localhost:9090", 403],
    ["http://127.0.0.1:3000", "127.0.0.1:9090", 403],
    ["null", "127.0.0.1:9090", 403],
  ])("Origin %s to Host %s → %i", async (origin, host, status) => {
    expect((await send(loopback, "GET", "/healthz", { Host: host, Origin: origin })).status).toBe(status);
  });

  it("Sec-Fetch-Site: cross-site refused on every method, same-site on a POST; same-origin and none pass", async () => {
    const host = { Host: "127.0.0.1:9090" };
    const site = async (method: string, value: string) =>
      (
        await send(loopback, method, method === "POST" ? "/sandbox/reset" : "/healthz", {
          ...host,
          "Sec-Fetch-Site": value,
        })
      ).status;
    expect(await site("GET", "cross-site")).toBe(403);
    expect(await site("POST", "cross-site")).toBe(403);
    expect(await site("GET", "same-site")).toBe(200);
    expect(await site("POST", "same-site")).toBe(403);
    expect(await site("GET", "none")).toBe(200);
    expect(await site("POST", "same-origin")).toBe(200);
  });

  it("with admin.tokenFile, a POST needs its bearer token: 401 with WWW-Authenticate when missing or wrong", async () => {
    const before = resets;
    const missing = await send(withToken, "POST", "/sandbox/reset");
    expect(missing.status).toBe(401);
    expect(missing.headers["www-authenticate"]).toMatch(/^Bearer\b/);
    expect(JSON.parse(missing.text).tppMessages[0]).toMatchObject({
      code: "TOKEN_INVALID",
      text: expect.stringContaining("Authorization: Bearer"),
    });
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Basic ${TOKEN}`, TOKEN]) {
      const wrong = await send(withToken, "POST", "/sandbox/reset", { Authorization: authorization });
      expect(wrong.status, authorization).toBe(401);
      expect(wrong.headers["www-authenticate"]).toMatch(/^Bearer\b/);
    }
    expect(resets).toBe(before);
    const right = await send(withToken, "POST", "/sandbox/reset", { Authorization: `bearer ${TOKEN}` });
    expect(right.status).toBe(200);
    expect(resets).toBe(before + 1);
    // GET needs none: probes and scrapes carry no token.
    expect((await send(withToken, "GET", "/healthz")).status).toBe(200);
  });

  it("reads the token file at each use: a rotated token takes effect without a restart", async () => {
    const next = "fedcba9876543210fedcba9876543210";
    writeFileSync(tokenFile, next);
    try {
      expect(
        (await send(withToken, "POST", "/sandbox/reset", { Authorization: `Bearer ${TOKEN}` })).status,
      ).toBe(401);
      expect(
        (await send(withToken, "POST", "/sandbox/reset", { Authorization: `Bearer ${next}` })).status,
      ).toBe(200);
    } finally {
      writeFileSync(tokenFile, TOKEN);
    }
  });

  it("counts refusals by reason in <prefix>admin_refusals_total", async () => {
    const scrape = new Scrape((await send(loopback, "GET", "/metrics")).text);
    expect(scrape.value("psd2_gateway_admin_refusals_total", { reason: "host" })).toBeGreaterThanOrEqual(1);
    expect(scrape.value("psd2_gateway_admin_refusals_total", { reason: "origin" })).toBeGreaterThanOrEqual(1);
    expect(
      scrape.value("psd2_gateway_admin_refusals_total", { reason: "sec-fetch-site" }),
    ).toBeGreaterThanOrEqual(1);
    const tokens = new Scrape((await send(withToken, "GET", "/metrics")).text);
    // No Bearer at all (none, Basic, a bare token): missing; a Bearer of another token: wrong
    // (two above and the old one after the rotation).
    expect(tokens.value("psd2_gateway_admin_refusals_total", { reason: "token-missing" })).toBe(3);
    expect(tokens.value("psd2_gateway_admin_refusals_total", { reason: "token-wrong" })).toBe(3);
  });
});

describe("starting the admin listener", () => {
  it("refuses a host beyond loopback without admin.tokenFile, before binding", async () => {
    await expect(startAdminServer({ ...base, host: "0.0.0.0" })).rejects.toThrow(/admin\.tokenFile/);
  });

  it("binds 127.0.0.2 (loopback) without a token", async () => {
    const admin = await startAdminServer({ ...base, host: "127.0.0.2" });
    try {
      expect(admin.url).toMatch(/^http:\/\/127\.0\.0\.2:/);
    } finally {
      await admin.close();
    }
  });

  it("refuses a token file holding too short a token", async () => {
    const short = join(dir, "short");
    writeFileSync(short, "abc\n");
    await expect(
      startAdminServer({ ...base, host: "127.0.0.1", access: { tokenFile: short } }),
    ).rejects.toThrow(/at least 16/);
  });
});
