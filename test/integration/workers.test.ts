import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tppFiles } from "../helpers/egress-profiles.js";
import { prepareSignedCall, send, type TestGateway, testPki } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../helpers/redis-server.js";

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** `psd2-gateway start` on `config` (YAML lines), its log lines collected, until `workers` say `listening`. */
async function startCluster(
  file: string,
  config: readonly string[],
  listening: string,
  workers = 2,
): Promise<{ child: ChildProcess; lines: string[] }> {
  writeFileSync(file, config.join("\n"));
  const lines: string[] = [];
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "start", "--config", file], {
    cwd: new URL("../../", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, LOG_LEVEL: "info" },
  });
  const collect = (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean));
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const deadline = Date.now() + 30_000;
  while (lines.filter((l) => l.includes(listening)).length < workers && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, lines };
}

/** SIGTERM, unless it has exited already; resolves once it has. */
async function stopCluster(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

describeWithRedis("workers: 2 with the redis store (a real process)", () => {
  let redis: RedisServer;
  let backend: RecordingBackend;
  let child: ChildProcess;
  let lines: string[] = [];
  let port = 0;
  let adminPort = 0;

  beforeAll(async () => {
    redis = await startRedisServer();
    backend = await startRecordingBackend();
    const pki = await testPki();
    port = await freePort();
    adminPort = await freePort();
    ({ child, lines } = await startCluster(
      join(pki.dir, "workers.yaml"),
      [
        "workers: 2",
        `listen: { host: 127.0.0.1, port: ${port}, tls: { cert: ${pki.paths.gatewayCert}, key: ${pki.paths.gatewayKey} } }`,
        `backend: { url: "${backend.url}" }`,
        `trust: { caDir: ${pki.paths.trustDir} }`,
        `register: { file: ${pki.paths.register} }`,
        `store: { type: redis, url: "${redis.url}" }`,
        `admin: { host: 127.0.0.1, port: ${adminPort} }`,
      ],
      "ingress gateway listening",
    ));
  }, 60_000);

  afterAll(async () => {
    await stopCluster(child);
    await backend?.close();
    await redis?.stop();
  });

  it("runs two worker processes on one port that enforce one limit between them", async () => {
    const listening = lines
      .filter((l) => l.includes("ingress gateway listening"))
      .map((l) => JSON.parse(l) as { pid: number });
    expect(listening).toHaveLength(2);
    expect(new Set(listening.map((l) => l.pid)).size).toBe(2);

    const pki = await testPki();
    const gw = { url: `https://localhost:${port}`, client: undefined } as unknown as TestGateway;
    const { Agent } = await import("undici");
    // Two pools, so the requests spread over several connections and both workers.
    const clients = [
      new Agent({ connect: { ca: pki.root.pem } }),
      new Agent({ connect: { ca: pki.root.pem } }),
    ];
    const prepared = await Promise.all(
      Array.from({ length: 30 }, () =>
        prepareSignedCall({
          signer: pki.tppA.qseal,
          target: "/v1/accounts/w/balances",
          omitHeaders: ["PSU-IP-Address"],
        }),
      ),
    );
    const results = await Promise.all(
      prepared.map((p, i) => send(gw, p.method, p.target, p.headers, undefined, clients[i % 2])),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    expect(results.filter((r) => r.status === 429)).toHaveLength(26);
    await Promise.all(clients.map((c) => c.close()));

    // The primary's admin listener sums both workers' counters and asks both for readiness.
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const requests = metrics
      .split("\n")
      .filter((l) => l.startsWith("psd2_gateway_requests_total{"))
      .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
    expect(requests).toBe(30);
    const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
    const body = (await ready.json()) as { checks: Record<string, { ok: boolean; detail?: string }> };
    expect(ready.status, JSON.stringify(body)).toBe(200);
    expect(body.checks.workers).toEqual({ ok: true, detail: "2 of 2 running" });
  });

  it("stops every worker and exits 0 on SIGTERM", async () => {
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(lines.filter((l) => l.includes("gateway stopped"))).toHaveLength(2);
  });
});

describe("egress with workers: 2 (a real process)", () => {
  let backend: RecordingBackend;
  let child: ChildProcess;
  let lines: string[] = [];
  let port = 0;
  let adminPort = 0;

  beforeAll(async () => {
    backend = await startRecordingBackend();
    const pki = await testPki();
    const { qseal } = tppFiles(pki);
    port = await freePort();
    adminPort = await freePort();
    ({ child, lines } = await startCluster(
      join(pki.dir, "egress-workers.yaml"),
      [
        "mode: egress",
        "workers: 2",
        `listen: { host: 127.0.0.1, port: ${port} }`,
        `admin: { host: 127.0.0.1, port: ${adminPort} }`,
        "banks:",
        `  - { name: bank, prefix: /bank, url: "${backend.url}", qseal: { cert: ${qseal.cert}, key: ${qseal.key} } }`,
      ],
      "egress gateway listening",
    ));
  }, 60_000);

  afterAll(async () => {
    await stopCluster(child);
    await backend?.close();
  });

  it("signs on two worker processes behind one port; the primary's admin listener counts both", async () => {
    const listening = lines
      .filter((l) => l.includes("egress gateway listening"))
      .map((l) => JSON.parse(l) as { pid: number });
    expect(listening, lines.join("\n")).toHaveLength(2);
    expect(new Set(listening.map((l) => l.pid)).size).toBe(2);

    const { Agent, request } = await import("undici");
    // Several pools, so the requests spread over connections and both workers.
    const clients = Array.from({ length: 4 }, () => new Agent());
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(`http://127.0.0.1:${port}/bank/v1/accounts?n=${i}`, {
          headers: { "PSU-ID": "PSU-1" },
          dispatcher: clients[i % clients.length]!,
        }).then(async (r) => {
          await r.body.dump();
          return r.statusCode;
        }),
      ),
    );
    expect(results.every((status) => status === 200)).toBe(true);
    expect(backend.requests).toHaveLength(20);
    expect(backend.requests.every((r) => typeof r.headers.signature === "string")).toBe(true);
    await Promise.all(clients.map((c) => c.close()));

    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const counted = metrics
      .split("\n")
      .filter((l) => l.startsWith("psd2_gateway_egress_requests_total{"))
      .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
    expect(counted).toBe(20);
    const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
    expect(ready.status).toBe(200);
  });

  it("stops every worker and exits 0 on SIGTERM", async () => {
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
