import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterTrustReport } from "../../src/trust/source-status.js";
import { runCli } from "../helpers/cli.js";
import { tppFiles } from "../helpers/egress-profiles.js";
import { freeLoopbackPort } from "../helpers/free-port.js";
import { prepareSignedCall, send, type TestGateway, testPki } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../helpers/redis-server.js";

/** `psd2-gateway start` on `config` (YAML lines), its log lines collected, until `workers` say `listening`. */
async function startCluster(
  file: string,
  config: readonly string[],
  listening: string,
  workers = 2,
): Promise<{ child: ChildProcess; lines: string[] }> {
  writeFileSync(file, config.join("\n"));
  const lines: string[] = [];
  const child = spawn(
    process.execPath,
    ["--conditions=psd2-gateway-source", "--import", "tsx", "src/main.ts", "start", "--config", file],
    {
      cwd: new URL("../../", import.meta.url).pathname,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LOG_LEVEL: "info" },
    },
  );
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
    port = await freeLoopbackPort();
    adminPort = await freeLoopbackPort();
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

  it("the primary serves every worker's validation reports and judges an uploaded certificate", async () => {
    const access = lines
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => JSON.parse(l) as { pid: number; trustReport?: string });
    // Each worker judged TPP A's certificate once: two reports, one per worker, both served by the primary.
    const byWorker = new Map(access.map((l) => [l.pid, l.trustReport]));
    expect(byWorker.size).toBe(2);
    for (const id of byWorker.values()) {
      const response = await fetch(`http://127.0.0.1:${adminPort}/trust/reports/${id}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ id, indication: "TOTAL_PASSED" });
    }
    const pki = await testPki();
    const judge = async (pem: string) =>
      (await fetch(`http://127.0.0.1:${adminPort}/trust/certificate`, { method: "POST", body: pem })).json();
    expect(await judge(pki.tppA.qseal.pem)).toMatchObject({ indication: "TOTAL_PASSED", policy: "QSealC" });
    expect(await judge(pki.untrusted.pem)).toMatchObject({ subIndication: "NO_CERTIFICATE_CHAIN_FOUND" });
    expect((await fetch(`http://127.0.0.1:${adminPort}/trust/reports/unknown`)).status).toBe(404);
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
    port = await freeLoopbackPort();
    adminPort = await freeLoopbackPort();
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
    // Egress holds no trust sources: /trust is a 404 on its primary as on a single process.
    expect((await fetch(`http://127.0.0.1:${adminPort}/trust`)).status).toBe(404);
  });

  it("stops every worker and exits 0 on SIGTERM", async () => {
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});

/** Serves fixed documents with an ETag, counting every request per path (304s too). */
async function startDocumentServer(documents: Record<string, Buffer>): Promise<{
  url: string;
  asked: Map<string, number>;
  answered: { path: string; status: number }[];
  close(): Promise<void>;
}> {
  const asked = new Map<string, number>();
  const answered: { path: string; status: number }[] = [];
  const server: Server = createHttpServer((req, res) => {
    const path = req.url ?? "/";
    asked.set(path, (asked.get(path) ?? 0) + 1);
    const body = documents[path];
    const etag = body && `"${body.length}"`;
    const status = !body ? 404 : req.headers["if-none-match"] === etag ? 304 : 200;
    answered.push({ path, status });
    res.writeHead(status, etag ? { etag } : {}).end(status === 200 ? body : undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    asked,
    answered,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describeWithRedis("workers: 2 fetch every trust document once, through the primary (a real process)", () => {
  /** Long enough that both workers' first loads fall in one sharing window (0.9 of it) on a busy machine. */
  const POLL_SECONDS = 6;
  let redis: RedisServer;
  let backend: RecordingBackend;
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;
  let child: ChildProcess;
  let lines: string[] = [];
  let adminPort = 0;
  let configFile = "";

  beforeAll(async () => {
    redis = await startRedisServer();
    backend = await startRecordingBackend();
    const pki = await testPki();
    documents = await startDocumentServer({
      "/register.json": readFileSync(pki.paths.register),
      // Where a reload moves the register (the same TPPs).
      "/register-next.json": readFileSync(pki.paths.register),
      // The issuing CA's CRL, as a distribution point serves it: DER.
      "/issuing.crl": Buffer.from(
        readFileSync(pki.paths.crl, "utf8").replace(/-----[^-]+-----|\s/g, ""),
        "base64",
      ),
    });
    const port = await freeLoopbackPort();
    adminPort = await freeLoopbackPort();
    configFile = join(pki.dir, "workers-trust.yaml");
    ({ child, lines } = await startCluster(
      configFile,
      [
        "workers: 2",
        `listen: { host: 127.0.0.1, port: ${port}, tls: { cert: ${pki.paths.gatewayCert}, key: ${pki.paths.gatewayKey} } }`,
        `backend: { url: "${backend.url}" }`,
        `trust: { caDir: ${pki.paths.trustDir} }`,
        `register: { url: "${documents.url}/register.json", pollSeconds: ${POLL_SECONDS} }`,
        `revocation: { crl: { urls: ["${documents.url}/issuing.crl"], refreshSeconds: ${POLL_SECONDS} } }`,
        `store: { type: redis, url: "${redis.url}" }`,
        `admin: { host: 127.0.0.1, port: ${adminPort} }`,
      ],
      "ingress gateway listening",
    ));
  }, 60_000);

  afterAll(async () => {
    await stopCluster(child);
    await documents?.close();
    await backend?.close();
    await redis?.stop();
  });

  const trust = async (): Promise<ClusterTrustReport & { now: string }> => {
    const response = await fetch(`http://127.0.0.1:${adminPort}/trust`);
    expect(response.status).toBe(200);
    return (await response.json()) as ClusterTrustReport & { now: string };
  };
  /** Each worker's last success with the source served at `path`, in pid order. */
  const lastSuccesses = (report: ClusterTrustReport, path: string) =>
    [...report.workers]
      .sort((a, b) => (a.pid ?? 0) - (b.pid ?? 0))
      .map((w) =>
        "sources" in w
          ? w.sources.find((s) => s.source.endsWith(`${documents.url}${path}`))?.lastSuccess
          : undefined,
      );

  it("fetches the register and the CRL once at start for both workers, and once per poll after", async () => {
    const pids = lines
      .filter((l) => l.includes("ingress gateway listening"))
      .map((l) => (JSON.parse(l) as { pid: number }).pid);
    expect(pids, lines.join("\n")).toHaveLength(2);
    expect(Object.fromEntries(documents.asked)).toEqual({ "/register.json": 1, "/issuing.crl": 1 });

    // /trust on the primary: its fetch table and both workers' views.
    const first = await trust();
    expect(first.workers.map((w) => w.pid).sort()).toEqual([...pids].sort());
    for (const w of first.workers) {
      expect("sources" in w, JSON.stringify(w)).toBe(true);
      if (!("sources" in w)) continue;
      expect(w.sources.filter((s) => s.kind === "register" || s.kind === "crl").every((s) => !s.stale)).toBe(
        true,
      );
    }
    expect(first.primary.fetches.map((f) => f.url).sort()).toEqual([
      `${documents.url}/issuing.crl`,
      `${documents.url}/register.json`,
    ]);
    for (const f of first.primary.fetches) expect(f).toMatchObject({ asks: 2, upstreamFetches: 1 });

    // Once both workers have polled again (each saw a later success), the server was asked once more.
    const paths = ["/register.json", "/issuing.crl"];
    const before = paths.map((path) => lastSuccesses(first, path));
    const deadline = Date.now() + 4 * POLL_SECONDS * 1000;
    let polled = first;
    const pollsSeen = () =>
      paths.every((path, p) =>
        lastSuccesses(polled, path).every((at, i) => at !== undefined && at > (before[p]?.[i] ?? Infinity)),
      );
    while (!pollsSeen() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      polled = await trust();
    }
    expect(pollsSeen(), JSON.stringify(polled)).toBe(true);
    expect(Object.fromEntries(documents.asked)).toEqual({ "/register.json": 2, "/issuing.crl": 2 });

    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    // At start each document came whole; a poll later the server said 304 to the primary's validators.
    expect(metrics).toMatch(/^psd2_gateway_trust_fetches_total\{outcome="fetched"\} 2$/m);
    expect(metrics).toMatch(/^psd2_gateway_trust_fetches_total\{outcome="not_modified"\} 2$/m);
    expect(metrics).toMatch(/^psd2_gateway_trust_fetches_total\{outcome="shared"\} [1-9]/m);
  }, 60_000);

  it("trust status --config prints the primary's fetches and both workers' views", async () => {
    const pids = lines
      .filter((l) => l.includes("ingress gateway listening"))
      .map((l) => (JSON.parse(l) as { pid: number }).pid);
    const run = await runCli(["trust", "status", "--config", configFile]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/^primary: 2 documents fetched for the workers$/m);
    expect(run.stdout).toContain(`GET    ${documents.url}/register.json`);
    for (const pid of pids) expect(run.stdout).toContain(`worker ${pid}:`);
    expect(run.stdout.match(/^ {2}register\s+fresh\s+register: /gm)).toHaveLength(2);
  }, 30_000);

  it("SIGHUP on the primary drops its copies: the workers' refresh fetches the register whole", async () => {
    // Unchanged since the first fetch, it has been answered 304 to the primary's validators since.
    const whole = () =>
      documents.answered.filter((a) => a.path === "/register.json" && a.status === 200).length;
    expect(whole()).toBe(1);
    child.kill("SIGHUP");
    const deadline = Date.now() + 20_000;
    while (whole() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(whole(), JSON.stringify(documents.answered)).toBe(2);
  }, 30_000);

  it("a reload that moves the register: each worker swaps in its new source, fetched once for both through the primary", async () => {
    const config = readFileSync(configFile, "utf8");
    writeFileSync(configFile, config.replace("/register.json", "/register-next.json"));
    child.kill("SIGHUP");
    const registerUrls = (report: ClusterTrustReport) =>
      report.workers.map((w) =>
        "sources" in w ? w.sources.filter((s) => s.kind === "register").map((s) => s.source) : [],
      );
    const deadline = Date.now() + 20_000;
    let report = await trust();
    const moved = () =>
      registerUrls(report).every(
        (urls) => urls.length > 0 && urls.every((u) => u.includes("/register-next.json")),
      );
    while (!moved() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      report = await trust();
    }
    expect(moved(), JSON.stringify(registerUrls(report))).toBe(true);
    expect(report.workers).toHaveLength(2);
    expect(documents.asked.get("/register-next.json")).toBe(1);
  }, 30_000);
});
