/**
 * Issue 27, point 3: `verify --config <file>` runs the chain a gateway started with that file
 * runs (the one builder, src/app/request-path.ts), so it cannot disagree with the gateway. Every
 * refusal of the ingress-rejection cases is sent to a real gateway over TLS and explained from the
 * same file: the same step refuses it with the same code; a good request passes both. And the
 * names verify can print are exactly the steps the gateway can refuse at.
 */

import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type IngressGateway, startGateway } from "../../src/app.js";
import { explainWithConfig, parseRequestDump, withFraming } from "../../src/cli/verify.js";
import { loadConfigFile } from "../../src/config/load.js";
import type { GatewayConfig } from "../../src/config/schema.js";
import type { RequestEvent } from "../../src/events.js";
import { createLogger } from "../../src/observability/logger.js";
import { UkObRequestSigner } from "../../src/signature/jws/ukob-request-signer.js";
import { type PreparedCall, send, type TestGateway, testPki } from "../helpers/gateway-fixture.js";
import { REPO_ROOT } from "../helpers/gateway-process.js";
import { ACCOUNTS, PAYMENT, REFUSALS, type Refusal, refusalRequest } from "../helpers/ingress-refusals.js";
import { named } from "../helpers/named-rows.js";
import { Scrape } from "../helpers/prometheus-text.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

let pki: DevPki;
let client: Agent;
let backend: RecordingBackend;
let gateway: IngressGateway;
let config: GatewayConfig;
let configFile: string;
const events: RequestEvent[] = [];

beforeAll(async () => {
  pki = await testPki();
  backend = await startRecordingBackend();
  configFile = join(mkdtempSync(join(tmpdir(), "verify-config-")), "gateway.yaml");
  writeFileSync(
    configFile,
    stringify({
      mode: "ingress",
      listen: { host: "127.0.0.1", port: 0, tls: { cert: pki.paths.gatewayCert, key: pki.paths.gatewayKey } },
      backend: { url: backend.url },
      trust: { caDir: pki.paths.trustDir },
      register: { file: pki.paths.register },
      log: { level: "silent" },
      admin: { enabled: false },
    }),
  );
  config = loadConfigFile(configFile) as GatewayConfig;
  gateway = await startGateway(config, { logger: createLogger("silent"), onRequest: (e) => events.push(e) });
  client = new Agent({ connect: { ca: pki.root.pem } });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await gateway?.close(0);
  await backend?.close();
});

/** The raw HTTP a gateway received for `sent` (what a `curl -v` dump or a capture gives verify). */
function rawOf(sent: PreparedCall): Buffer {
  const headers = { Host: "localhost", ...sent.headers };
  if (sent.body !== undefined)
    (headers as Record<string, string>)["Content-Length"] = String(Buffer.byteLength(sent.body));
  const head = `${sent.method} ${sent.target} HTTP/1.1\r\n${Object.entries(headers)
    .map(([n, v]) => `${n}: ${v}`)
    .join("\r\n")}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), Buffer.from(sent.body ?? "")]);
}

async function verdicts(row: Refusal) {
  const sent = await refusalRequest(pki, row);
  const before = events.length;
  const r = await send(
    { url: gateway.url, client } as TestGateway,
    sent.method,
    sent.target,
    sent.headers,
    sent.body,
  );
  const event = events.slice(before).at(-1)!;
  const dumped = parseRequestDump(rawOf(sent));
  if (typeof dumped === "string") throw new Error(dumped);
  const explained = await explainWithConfig(withFraming(dumped), config, Date.now());
  const failed = explained.steps.find((s) => s.outcome === "failed");
  return {
    gateway: { status: r.status, code: r.json.tppMessages?.[0]?.code, step: event.step },
    verify: { passed: explained.passed, code: failed?.code, step: failed?.step },
  };
}

describe("verify --config judges as the gateway started with the same file", () => {
  it.each(named(REFUSALS))("%s", async (_name, row) => {
    const { gateway: g, verify: v } = await verdicts(row);
    expect(g.code).toBe(row.code);
    expect(v.passed).toBe(false);
    expect({ code: v.code, step: v.step }).toEqual({ code: g.code, step: g.step });
  });

  it.each([
    ["a well-signed GET", { name: "get" }],
    ["a well-signed payment", { name: "post", ...PAYMENT }],
  ])("%s passes both", async (_what, row) => {
    const { gateway: g, verify: v } = await verdicts({ ...row, code: "", text: [] } as Refusal);
    expect(g.status).toBe(200);
    expect(v.passed).toBe(true);
  });

  it("prints exactly the steps the gateway can refuse at", async () => {
    const sent = await refusalRequest(pki, { name: "get", target: ACCOUNTS, code: "", text: [] });
    const dumped = parseRequestDump(rawOf(sent));
    if (typeof dumped === "string") throw new Error(dumped);
    const explained = await explainWithConfig(withFraming(dumped), config, Date.now());
    const printable = new Set(explained.steps.map((s) => s.step));
    const steps = new Scrape(await gateway.metrics.registry.metrics()).series("psd2_gateway_steps_total");
    const refusable = new Set(steps.map((s) => s.labels.step));
    expect(refusable.size).toBeGreaterThan(15);
    expect(printable).toEqual(refusable);
  });

  it("explains a UK OB request from a config that requires mutual TLS, the QWAC named as not checked", async () => {
    const ukOb = { ...config, listen: { ...config.listen, clientCertificate: "require" as const } };
    const { target, body } = PAYMENT;
    const signer = new UkObRequestSigner({
      privateKey: pki.tppA.qseal.privateKey,
      certificate: pki.tppA.qseal.der,
      kid: "key-1",
      iss: "PSDNO-FSA-DEMO0001",
      tan: "openbanking.org.uk",
    });
    const signed = await signer.sign({ method: "POST", target, body });
    const headers = {
      ...signed,
      "TPP-Redirect-URI": "https://tpp.example/cb",
      "Content-Type": "application/json",
    };
    const dumped = parseRequestDump(rawOf({ method: "POST", target, headers, body } as PreparedCall));
    if (typeof dumped === "string") throw new Error(dumped);
    const explained = await explainWithConfig(
      withFraming(dumped),
      {
        ...ukOb,
        verification: {
          ...ukOb.verification,
          dialects: { ...ukOb.verification.dialects, accept: ["uk-ob"] },
        },
      },
      Date.now(),
    );
    expect(explained.steps.filter((s) => s.outcome === "failed")).toEqual([]);
    expect(explained.passed).toBe(true);
    expect(explained.steps.map((s) => s.step)).not.toContain("client-certificate");
    expect(explained.notChecked.join(" ")).toContain("mutual TLS");
  });

  it("runs as the command: exit 1 and the gateway's step and code in --json", async () => {
    const row = REFUSALS.find((r) => r.code === "ROLE_INVALID")!;
    const dir = mkdtempSync(join(tmpdir(), "verify-config-cli-"));
    const file = join(dir, "request.http");
    writeFileSync(file, rawOf(await refusalRequest(pki, row)));
    const run = spawnSync(
      process.execPath,
      ["--import", "tsx", "src/main.ts", "verify", file, "--config", configFile, "--json"],
      { cwd: REPO_ROOT, encoding: "utf8" },
    );
    expect(run.status, run.stderr).toBe(1);
    const explained = JSON.parse(run.stdout);
    expect(explained.steps.find((s: { outcome: string }) => s.outcome === "failed")).toMatchObject({
      step: "role",
      code: "ROLE_INVALID",
    });
  });
});
