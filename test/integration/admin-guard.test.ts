/**
 * Issue 37 point 6 on a real ingress gateway with the demo bank: its admin listener refuses the
 * forged cross-site POST /sandbox/reset (Host and Origin evil.example), a DNS-rebinding Host and a
 * browser's cross-site fetch; bound beyond loopback (0.0.0.0, reached only on 127.0.0.1 here) its
 * POSTs need admin.tokenFile's token and the config refuses it without one; with admin.tls it
 * answers only clients with a certificate from admin.tls.clientCa.
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type EgressGateway, startGateway } from "../../src/app.js";
import { startDemoBank } from "../../src/cli/start.js";
import { validateConfig, validateEgressConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";
import { tppFiles } from "../helpers/egress-profiles.js";
import {
  type GatewayOptions,
  startTestGateway,
  type TestGateway,
  testPki,
} from "../helpers/gateway-fixture.js";
import { Scrape } from "../helpers/prometheus-text.js";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: () => { tppMessages?: { code: string; text: string }[] } & Record<string, unknown>;
  text: string;
}

/** Always to 127.0.0.1, whatever the listener is bound to, with exactly these headers. */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  tls?: { ca: string; cert?: string; key?: string },
): Promise<Answer> {
  const request = tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers,
        setHost: !("Host" in headers),
        ...(tls ? { ...tls, servername: "localhost", agent: false } : {}),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

let pki: DevPki;
const running: TestGateway[] = [];
const dir = mkdtempSync(join(tmpdir(), "admin-guard-it-"));
const TOKEN = "a-very-secret-admin-token-of-32c";
const tokenFile = join(dir, "token");
writeFileSync(tokenFile, `${TOKEN}\n`);

beforeAll(async () => {
  pki = await testPki();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.close(0)));
});

const required = () => ({
  backend: { url: "sandbox" },
  trust: { caDir: pki.paths.trustDir },
  register: { file: pki.paths.register },
});

async function start(admin: NonNullable<GatewayOptions["config"]>["admin"] = {}) {
  const gw = await startTestGateway({
    backendUrl: "sandbox",
    pki,
    startDemoBank,
    config: { admin, sandbox: { port: 0 } },
  });
  running.push(gw);
  return { gw, port: Number(new URL(gw.gateway.adminUrl!).port) };
}

describe("the admin listener of a running gateway", () => {
  it("refuses the issue's forged POST /sandbox/reset (Host and Origin evil.example) with 403, and says why", async () => {
    const { port } = await start();
    const forged = await send(port, "POST", "/sandbox/reset", {
      Origin: "http://evil.example",
      Host: "evil.example:9090",
      "Content-Type": "text/plain",
    });
    expect(forged.status).toBe(403);
    expect(forged.json().tppMessages).toEqual([
      { category: "ERROR", code: "SERVICE_BLOCKED", text: expect.stringContaining("Host evil.example:9090") },
    ]);
    // The same POST from the Host alone but another page's Origin: still refused.
    const origin = await send(port, "POST", "/sandbox/reset", {
      Origin: "http://evil.example",
      "Content-Type": "text/plain",
    });
    expect(origin.status).toBe(403);
    expect(origin.json().tppMessages?.[0]?.text).toContain("another origin");
    // The operator's own call from a shell still resets.
    expect((await send(port, "POST", "/sandbox/reset")).status).toBe(200);
  });

  it("refuses a DNS-rebinding read of /trust and /metrics, and a browser's cross-site fetch", async () => {
    const { port } = await start();
    for (const path of ["/trust", "/metrics"]) {
      const rebound = await send(port, "GET", path, { Host: `rebind.evil.example:${port}` });
      expect(rebound.status, path).toBe(403);
      expect(rebound.text).not.toContain("psd2_gateway_requests_total");
    }
    const crossSite = await send(port, "GET", "/trust", { "Sec-Fetch-Site": "cross-site" });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json().tppMessages?.[0]?.code).toBe("SERVICE_BLOCKED");
    // A probe addressing the pod by IP, and the operator's curl, still work.
    expect((await send(port, "GET", "/healthz", { Host: `10.244.1.7:${port}` })).status).toBe(200);
    expect((await send(port, "GET", "/trust")).status).toBe(200);
    const scrape = new Scrape((await send(port, "GET", "/metrics")).text);
    expect(scrape.value("psd2_gateway_admin_refusals_total", { reason: "host" })).toBe(2);
    expect(scrape.value("psd2_gateway_admin_refusals_total", { reason: "sec-fetch-site" })).toBe(1);
  });

  it("bound beyond loopback (0.0.0.0): the config needs admin.tokenFile, and POSTs need its token", async () => {
    expect(() => validateConfig({ ...required(), admin: { host: "0.0.0.0" } })).toThrow(/admin\.tokenFile/);
    // 127.0.0.2 is loopback: no token needed.
    expect(validateConfig({ ...required(), admin: { host: "127.0.0.2" } }).admin.host).toBe("127.0.0.2");

    const { port } = await start({ host: "0.0.0.0", tokenFile });
    const none = await send(port, "POST", "/sandbox/reset");
    expect(none.status).toBe(401);
    expect(none.headers["www-authenticate"]).toMatch(/^Bearer/);
    expect(none.json().tppMessages?.[0]?.code).toBe("TOKEN_INVALID");
    const wrong = await send(port, "POST", "/sandbox/reset", {
      Authorization: "Bearer not-the-token-at-all-0000",
    });
    expect(wrong.status).toBe(401);
    expect((await send(port, "POST", "/sandbox/reset", { Authorization: `Bearer ${TOKEN}` })).status).toBe(
      200,
    );
    // Probes carry no token.
    expect((await send(port, "GET", "/readyz")).status).not.toBe(401);
    expect((await send(port, "GET", "/healthz")).status).toBe(200);
  });

  it("with admin.tls, HTTPS for clients with a certificate from clientCa only", async () => {
    const clientCa = join(dir, "client-ca.pem");
    // Node (OpenSSL) verifies up to a self-signed root: the issuing CA and its root.
    writeFileSync(clientCa, `${pki.issuingCa.pem}${pki.root.pem}`);
    const { gw, port } = await start({
      tls: { cert: pki.paths.gatewayCert, key: pki.paths.gatewayKey, clientCa },
    });
    expect(gw.gateway.adminUrl).toMatch(/^https:/);
    const ca = pki.root.pem;
    await expect(send(port, "GET", "/healthz", {}, { ca })).rejects.toThrow();
    const client = { ca, cert: `${pki.tppA.qwac.pem}${pki.issuingCa.pem}`, key: pki.tppA.qwac.keyPem };
    const served = await send(port, "GET", "/healthz", {}, client);
    expect(served.status).toBe(200);
    // Plain HTTP gets no answer from it.
    await expect(send(port, "GET", "/healthz")).rejects.toThrow();
    const scrape = new Scrape((await send(port, "GET", "/metrics", {}, client)).text);
    expect(
      scrape.value("psd2_gateway_admin_refusals_total", { reason: "tls-handshake" }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("egress's admin listener: the same Host check, and beyond loopback a token for what is not GET", async () => {
    expect(() =>
      validateEgressConfig({
        mode: "egress",
        admin: { host: "0.0.0.0" },
        banks: [{ name: "bank", prefix: "/bank", url: "https://127.0.0.1:1", qseal: tppFiles(pki).qseal }],
      }),
    ).toThrow(/admin\.tokenFile/);
    let egress: EgressGateway | undefined;
    try {
      egress = await startGateway(
        validateEgressConfig({
          mode: "egress",
          listen: { port: 0 },
          admin: { host: "0.0.0.0", port: 0, tokenFile },
          log: { level: "silent" },
          banks: [{ name: "bank", prefix: "/bank", url: "https://127.0.0.1:1", qseal: tppFiles(pki).qseal }],
        }),
        { logger: createLogger("silent") },
      );
      const port = Number(new URL(egress.adminUrl!).port);
      expect((await send(port, "GET", "/healthz", { Host: `evil.example:${port}` })).status).toBe(403);
      expect((await send(port, "POST", "/healthz")).status).toBe(401);
      // With the token the request reaches the listener, which serves GET only there.
      expect((await send(port, "POST", "/healthz", { Authorization: `Bearer ${TOKEN}` })).status).toBe(405);
      const scrape = new Scrape((await send(port, "GET", "/metrics")).text);
      expect(scrape.value("psd2_gateway_egress_admin_refusals_total", { reason: "host" })).toBe(1);
      expect(scrape.value("psd2_gateway_egress_admin_refusals_total", { reason: "token-missing" })).toBe(1);
    } finally {
      await egress?.close(0);
    }
  });
});
