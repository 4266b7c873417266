/**
 * `npm run bench:tls` (issue 15, "behind TLS, as banks run it"): the gateway terminating TLS itself
 * against nginx terminating the same TLS as a pure pass-through and against bare undici behind
 * Node's TLS, all in one run, rounds interleaved (the order rotated each round), medians (as the
 * 2026-11-22 anchor measurements were made). Servers (backend and the server under test, separate
 * processes) pinned to core 0, the clients to core 1. Every request is bench/run.ts's signed GET by
 * TPP A (presigned, each with its own X-Request-ID).
 *
 * 1. Keep-alive: autocannon over https (the dev CA; it presents TPP A's QWAC to the mTLS gateway),
 *    50 connections, against nginx, bare undici and the gateway, each over plain HTTP and TLS, the
 *    gateway also with mTLS (`clientCertificate: request`), bare undici also with the gateway
 *    listener's 'data' listener, and the verifying pass-throughs of bench/run.ts (`undici-verify`, and
 *    `undici-verify-head`, which forwards the gateway's head) behind Node's TLS: the same-run ceiling
 *    of a proxy that verifies every request in Node. Goal (issue 42): gateway ÷ nginx TLS
 *    pass-through ≥ 0.35.
 * 2. A new TLS connection per request (bench/tls-handshake-client.ts, its own process), with TLS
 *    session resumption off (a full handshake each time) and on (session tickets reused), against
 *    nginx (and nginx asking for the client certificate), bare undici behind Node TLS and the gateway
 *    (mTLS off and on), so that a handshake's cost shows next to verification's.
 * The server's CPU per request is its process's CPU time (all threads; nginx: master and worker
 * from /proc). Results go to bench/RESULTS.md, section "Behind TLS (bench/tls.ts)".
 *
 * Environment: BENCH_SECONDS (default 5), BENCH_ROUNDS (default 3), BENCH_POOL (presigned GETs,
 * default 30000), BENCH_HANDSHAKE_CONCURRENCY (requests in flight in part 2, default 16).
 * Smoke: BENCH_SECONDS=1 BENCH_ROUNDS=1 BENCH_POOL=10000. BENCH_TLS_SERVERS and BENCH_JSON: see below.
 * Every measured run is judged (bench/validity.ts, issue 42): one with a non-2xx answer, a failed
 * request or, for the gateway, a wrapped pool is refused with its reasons on stderr; then nothing is
 * printed or written (RESULTS.md, BENCH_JSON) and the bench exits 1.
 */

import "reflect-metadata";
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { constants, createPrivateKey, randomBytes, randomUUID, sign } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { ConnectionOptions } from "node:tls";
import { generateDevPki } from "@psd2-gateway/dev-pki";
import {
  BENCH_DIR,
  type Child,
  type CpuSource,
  cpuOf,
  factsOf,
  Judged,
  type LoadTarget,
  load,
  median,
  pin,
  presign,
  type RunResult,
  startChild,
  stop,
  tppRequestHeaders,
} from "./harness.js";
import type { PresignedRequest } from "./presign.js";
import { machineLine, replaceSection } from "./results-file.js";
import { startNginx } from "./servers/nginx.js";
import { CAN_PIN } from "./taskset.js";
import type { HandshakePrepare, HandshakeRun, HandshakeStart } from "./tls-handshake-client.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POOL = Number(process.env.BENCH_POOL ?? 30_000);
const CONCURRENCY = Number(process.env.BENCH_HANDSHAKE_CONCURRENCY ?? 16);
const CONNECTIONS = 50;
/** The gateway's fresh replay store per run lets every run start from the pool's start. */
const HANDSHAKE_POOL = Math.min(POOL, 20_000);
/** A client core this busy means the client, not the server, set the pace. */
const CLIENT_BOUND = 0.9;
const GOAL_VS_NGINX = 0.35;

const SERVERS = {
  nginx: "nginx pass-through, plain HTTP",
  "nginx-tls": "nginx pass-through, TLS",
  "nginx-mtls": "nginx pass-through, TLS, client certificate asked for and its chain checked",
  undici: "bare undici pass-through, plain HTTP",
  "undici-tls": "bare undici behind Node TLS",
  "undici-tls-data": "bare undici behind Node TLS + the gateway listener's 'data' listener",
  "undici-verify-tls": "`undici-verify` behind Node TLS",
  "undici-verify-head-tls": "`undici-verify-head` (the gateway's head) behind Node TLS",
  gateway: "gateway, plain HTTP",
  "gateway-tls": "gateway, TLS, mTLS off (`none`)",
  "gateway-mtls": "gateway, TLS, mTLS on (`request`, TPP A's QWAC)",
} as const;
type ServerName = keyof typeof SERVERS;

const KEEP_ALIVE: readonly ServerName[] = [
  "nginx",
  "nginx-tls",
  "undici",
  "undici-tls",
  "undici-tls-data",
  "undici-verify-tls",
  "undici-verify-head-tls",
  "gateway",
  "gateway-tls",
  "gateway-mtls",
];
const NEW_CONNECTION: readonly ServerName[] = [
  "nginx-tls",
  "nginx-mtls",
  "undici-tls",
  "gateway-tls",
  "gateway-mtls",
];
/** BENCH_TLS_SERVERS=nginx-tls,gateway-tls,…: only those (bench/runtimes.ts); RESULTS.md is then left as it is. */
const ONLY = process.env.BENCH_TLS_SERVERS?.split(",");
const chosen = (servers: readonly ServerName[]) => (ONLY ? servers.filter((s) => ONLY.includes(s)) : servers);

const isTls = (s: ServerName) => s.includes("tls");
/** Only the gateway keeps replay records: nginx and bare undici may be sent a request again. */
const isGateway = (s: ServerName) => s.startsWith("gateway");
/** What sets the pool and the run's length here (the warm-up is a fixed second). */
const KNOBS = { pool: "BENCH_POOL", shorten: ["BENCH_SECONDS"] };
/** Part 2's pool is the first min(BENCH_POOL, 20000) of part 1's: only a shorter run helps past 20000. */
const HANDSHAKE_KNOBS =
  HANDSHAKE_POOL < POOL ? { pool: "BENCH_POOL (at most 20000 here)", shorten: ["BENCH_SECONDS"] } : KNOBS;
const isMtls = (s: ServerName) => s.endsWith("mtls");

interface Running {
  readonly port: number;
  readonly cpu: CpuSource;
  stop(): Promise<void>;
}

interface Pki {
  readonly dir: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Root and issuing CA: what clients trust and what nginx checks client certificates against. */
  readonly caPem: string;
  readonly caFile: string;
  /** TPP A's QWAC with its issuing CA, and its key. */
  readonly qwacChain: string;
  readonly qwacKey: string;
}

async function startServer(name: ServerName, backendPort: number, pki: Pki): Promise<Running> {
  if (name.startsWith("nginx")) {
    const nginx = await startNginx({
      backendPort,
      cores: 0,
      ...(isTls(name)
        ? {
            tls: {
              certFile: pki.certFile,
              keyFile: pki.keyFile,
              ...(isMtls(name) ? { clientCaFile: pki.caFile } : {}),
            },
          }
        : {}),
    });
    return { port: nginx.port, cpu: () => nginx.cpu(), stop: () => nginx.stop() };
  }
  const child = await startChild("servers/proxy.ts", [name, `http://127.0.0.1:${backendPort}`, pki.dir]);
  return { port: child.port, cpu: child, stop: () => stop(child) };
}

/** What a client presents: the dev CA always, TPP A's QWAC to servers that ask for one. */
function clientTls(name: ServerName, pki: Pki): ConnectionOptions {
  return { ca: pki.caPem, ...(isMtls(name) ? { cert: pki.qwacChain, key: pki.qwacKey } : {}) };
}

interface KeepAliveRun extends RunResult {
  /** The backend's CPU per request (µs): it shares core 0 with the server under test. */
  readonly backendCpuUs: number;
  /** The client core's busy share (autocannon, in this process). */
  readonly clientBusy: number;
}

async function keepAliveRun(
  name: ServerName,
  backend: Child,
  pki: Pki,
  pool: readonly PresignedRequest[],
): Promise<KeepAliveRun> {
  const server = await startServer(name, backend.port, pki);
  try {
    const target: number | LoadTarget = isTls(name)
      ? { url: `https://127.0.0.1:${server.port}`, tlsOptions: clientTls(name, pki) }
      : server.port;
    const cursor = { next: 0 };
    const warm = await load(target, pool, cursor, 1); // JIT, connections, the verdict cache
    if (warm.non2xx + warm.errors > 0)
      throw new Error(`${name}: warm-up answers ${JSON.stringify(warm.statuses)}, ${warm.errors} errors`);
    const backend0 = await cpuOf(backend);
    const client0 = process.cpuUsage();
    const r = await load(target, pool, cursor, SECONDS, server.cpu);
    const client = process.cpuUsage(client0);
    const backendCpuUs = ((await cpuOf(backend)) - backend0) / r.total;
    return { ...r, backendCpuUs, clientBusy: (client.user + client.system) / (SECONDS * 1e6) };
  } finally {
    await server.stop();
  }
}

/** The handshake client: a process of its own on the client core, driven over IPC. */
class HandshakeClient {
  private constructor(private readonly process: ChildProcess) {}

  static async start(poolFile: string): Promise<HandshakeClient> {
    const child = fork(join(BENCH_DIR, "tls-handshake-client.ts"), [poolFile], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    pin(child.pid!, 1);
    const client = new HandshakeClient(child);
    await client.ask<{ ready: boolean }>(undefined, "ready");
    return client;
  }

  /** Sends `message` (if any) and waits for the answer that carries `key`. */
  private ask<T>(message: HandshakePrepare | HandshakeStart | undefined, key: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`handshake client exited with ${code}`));
      const onMessage = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        this.process.off("message", onMessage);
        this.process.off("exit", onExit);
        resolve(m as T);
      };
      this.process.on("message", onMessage);
      this.process.once("exit", onExit);
      if (message) this.process.send(message);
    });
  }

  async prepare(message: Omit<HandshakePrepare, "type">): Promise<void> {
    await this.ask({ type: "prepare", ...message }, "prepared");
  }

  async run(seconds: number): Promise<HandshakeRun> {
    return (await this.ask<{ result: HandshakeRun }>({ type: "run", seconds }, "result")).result;
  }

  stop(): void {
    this.process.disconnect();
  }
}

interface NewConnectionRun extends HandshakeRun {
  readonly cpuUsPerRequest: number;
  readonly backendCpuUs: number;
}

async function newConnectionRun(
  name: ServerName,
  resume: boolean,
  backend: Child,
  pki: Pki,
  client: HandshakeClient,
): Promise<NewConnectionRun> {
  const server = await startServer(name, backend.port, pki);
  try {
    const tls = clientTls(name, pki);
    await client.prepare({
      port: server.port,
      resume,
      concurrency: CONCURRENCY,
      ca: pki.caPem,
      ...(tls.cert ? { cert: pki.qwacChain, key: pki.qwacKey } : {}),
    });
    const warm = await client.run(1); // JIT, the verdict cache, the first session tickets
    if (warm.errors > 0 || Object.keys(warm.statuses).some((code) => code !== "200"))
      throw new Error(`${name}: warm-up answers ${JSON.stringify(warm.statuses)}, ${warm.errors} errors`);
    const [server0, backend0] = [await cpuOf(server.cpu), await cpuOf(backend)];
    const r = await client.run(SECONDS);
    const [server1, backend1] = [await cpuOf(server.cpu), await cpuOf(backend)];
    return {
      ...r,
      cpuUsPerRequest: (server1 - server0) / r.requests,
      backendCpuUs: (backend1 - backend0) / r.requests,
    };
  } finally {
    await server.stop();
  }
}

// ---- the report --------------------------------------------------------------------------------------------

const fixed = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const percent = (n: number) => `${Math.round(n * 100)} %`;
/** The median of per-round differences: runs of one round ran minutes apart at most, on a machine whose load drifts. */
const pairedDelta = (a: readonly number[], b: readonly number[]) =>
  median(a.slice(0, b.length).map((x, i) => x - b[i]!));

function keepAliveReport(runs: Record<string, KeepAliveRun[]>): { table: string; ratios: string } {
  const m = (s: ServerName, f: (r: KeepAliveRun) => number) => median((runs[s] ?? []).map(f));
  const rps = (s: ServerName) => m(s, (r) => r.rps);
  const cpu = (s: ServerName) => m(s, (r) => r.cpuUsPerRequest ?? 0);
  /** µs of core 0 per request: the server under test and the backend it shares the core with. */
  const core0 = (s: ServerName) => m(s, (r) => (r.cpuUsPerRequest ?? 0) + r.backendCpuUs);
  const bound = (s: ServerName) => m(s, (r) => r.clientBusy) >= CLIENT_BOUND;
  const rows = KEEP_ALIVE.map(
    (s) =>
      `| ${SERVERS[s]} | ${(runs[s] ?? []).map((r) => fixed(r.rps)).join(" · ")} | ${fixed(rps(s))} | ${m(s, (r) => r.p50)} | ${m(s, (r) => r.p99)} | ${fixed(cpu(s))} | ${fixed(m(s, (r) => r.backendCpuUs))} | ${percent(m(s, (r) => (((r.cpuUsPerRequest ?? 0) + r.backendCpuUs) * r.rps) / 1e6))} | ${percent(m(s, (r) => r.clientBusy))}${bound(s) ? " (client-bound)" : ""} | ${m(s, (r) => r.non2xx + r.errors)} |`,
  );
  const table = `| server | req/s per round | req/s | p50 ms | p99 ms | server CPU µs/request | backend CPU µs/request | core 0 busy | client core busy | non-2xx + errors |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}`;

  const goalRow = (gateway: ServerName) => {
    const measured = rps(gateway) / rps("nginx-tls");
    const byCpu = core0("nginx-tls") / core0(gateway);
    const verdict =
      Math.min(measured, byCpu) >= GOAL_VS_NGINX
        ? "**met**"
        : Math.max(measured, byCpu) < GOAL_VS_NGINX
          ? "**missed**"
          : measured >= GOAL_VS_NGINX
            ? "**met as measured, missed by core-0 CPU** (the nginx run was client-bound)"
            : "**missed as measured, met by core-0 CPU**";
    return `| ${SERVERS[gateway]} ÷ nginx TLS pass-through | ${measured.toFixed(2)} | ${byCpu.toFixed(2)} | ≥ ${GOAL_VS_NGINX} | ${verdict} |`;
  };
  const plainRow = (a: ServerName, b: ServerName) =>
    `| ${SERVERS[a]} ÷ ${SERVERS[b]} | ${(rps(a) / rps(b)).toFixed(2)} | ${(core0(b) / core0(a)).toFixed(2)} | – | |`;
  const cpus = (s: ServerName) => (runs[s] ?? []).map((r) => r.cpuUsPerRequest ?? 0);
  // The least a verifying proxy does (Date, Digest, the Signature header, one RSA verify), behind
  // the same Node TLS: no gateway can verify every request and pass nginx by more than it does.
  const ceiling = () => {
    const best = Math.max(rps("undici-verify-tls"), rps("undici-verify-head-tls")) / rps("nginx-tls");
    return `**The ceiling in this run:** the verifying pass-throughs behind Node TLS reach at most ${best.toFixed(2)} of nginx's TLS pass-through (req/s, medians), with no trust chain, register, roles, replay, character policy, metrics or log; the goal of ${GOAL_VS_NGINX} is ${best < GOAL_VS_NGINX ? "**above that ceiling**: no gateway verifying every request in Node can meet it on this machine" : "below it"}.`;
  };
  const delta = (a: ServerName, b: ServerName) => fixed(pairedDelta(cpus(a), cpus(b)));
  const ratios = `| ratio | req/s, as measured | by core-0 CPU per request (server + backend) | goal | |
|---|---:|---:|---|---|
${goalRow("gateway-tls")}
${goalRow("gateway-mtls")}
${plainRow("gateway-tls", "undici-tls")}
${plainRow("gateway-mtls", "undici-tls")}
${plainRow("undici-tls", "nginx-tls")}
${plainRow("undici-verify-tls", "nginx-tls")}
${plainRow("undici-verify-head-tls", "nginx-tls")}
${plainRow("gateway-tls", "undici-verify-head-tls")}
${plainRow("gateway-tls", "gateway")}

Server CPU per request, µs (the median of each round's difference): TLS on a kept-alive connection costs nginx ${delta("nginx-tls", "nginx")}, bare undici ${delta("undici-tls", "undici")}, the gateway ${delta("gateway-tls", "gateway")}; the gateway listener's 'data' listener costs bare undici ${delta("undici-tls-data", "undici-tls")}; verification over bare undici, both behind TLS: ${delta("gateway-tls", "undici-tls")} (plain HTTP: ${delta("gateway", "undici")}); mTLS on over off: ${delta("gateway-mtls", "gateway-tls")}.

${ceiling()}`;
  return { table, ratios };
}

function newConnectionReport(
  runs: Record<string, NewConnectionRun[]>,
  keepAlive: Record<string, KeepAliveRun[]>,
  rsaSignUs: number,
): string {
  const key = (s: ServerName, resume: boolean) => `${s} ${resume ? "resumed" : "full"}`;
  const m = (s: ServerName, resume: boolean, f: (r: NewConnectionRun) => number) =>
    median((runs[key(s, resume)] ?? []).map(f));
  const cpu = (s: ServerName, resume: boolean) => m(s, resume, (r) => r.cpuUsPerRequest);
  /** What core 0 could serve if this were all it did: 1 s over the server's and backend's CPU per request. */
  const capacity = (s: ServerName, resume: boolean) =>
    1e6 / m(s, resume, (r) => r.cpuUsPerRequest + r.backendCpuUs);
  const rows = NEW_CONNECTION.flatMap((s) =>
    [false, true].map((resume) => {
      const list = runs[key(s, resume)] ?? [];
      const rps = m(s, resume, (r) => r.requests / r.seconds);
      const core0 = m(
        s,
        resume,
        (r) => ((r.cpuUsPerRequest + r.backendCpuUs) * r.requests) / (r.seconds * 1e6),
      );
      const client = m(s, resume, (r) => r.clientCpuUs / (r.seconds * 1e6));
      const cells = [
        SERVERS[s],
        resume ? "on" : "off",
        list.map((r) => fixed(r.requests / r.seconds)).join(" · "),
        fixed(rps),
        m(s, resume, (r) => r.p50).toFixed(1),
        m(s, resume, (r) => r.p99).toFixed(1),
        fixed(cpu(s, resume)),
        fixed(m(s, resume, (r) => r.backendCpuUs)),
        percent(core0),
        fixed(capacity(s, resume)),
        `${fixed(m(s, resume, (r) => r.clientCpuUs / r.requests))} (${percent(client)}${client >= CLIENT_BOUND ? ", client-bound" : ""})`,
        percent(m(s, resume, (r) => r.resumed / r.connections)),
        String(m(s, resume, (r) => r.errors + r.requests - (r.statuses["200"] ?? 0))),
      ];
      return `| ${cells.join(" | ")} |`;
    }),
  );
  const all = Object.values(runs).flat();
  const negotiated = [...new Set(all.map((r) => r.negotiated))].join("; ");
  const perRequest = all.map((r) => r.connections / r.requests);
  const keptCpus = (s: ServerName) => (keepAlive[s] ?? []).map((r) => r.cpuUsPerRequest ?? 0);
  const kept = (s: ServerName) => median(keptCpus(s));
  const cpus = (s: ServerName, resume: boolean) => (runs[key(s, resume)] ?? []).map((r) => r.cpuUsPerRequest);
  // nginx asking for the client certificate has no keep-alive run: on a kept connection it costs what nginx TLS does.
  const keptBase = (s: ServerName): ServerName => (s === "nginx-mtls" ? "nginx-tls" : s);
  const fullAdds = (s: ServerName) => pairedDelta(cpus(s, false), keptCpus(keptBase(s)));
  const costRows = NEW_CONNECTION.map((s) => {
    const base = keptBase(s);
    const cells = [
      SERVERS[s],
      `${fixed(kept(base))}${base !== s ? " (nginx TLS)" : ""}`,
      fixed(fullAdds(s)),
      fixed(pairedDelta(cpus(s, true), keptCpus(base))),
      fixed(pairedDelta(cpus(s, false), cpus(s, true))),
    ];
    return `| ${cells.join(" | ")} |`;
  });
  /** Part 1's runs opened their connections in the measured window: those handshakes' share per request. */
  const handshakeShare = (s: ServerName) =>
    fixed((CONNECTIONS * fullAdds(s)) / median((keepAlive[s] ?? []).map((r) => r.total)));
  const ratio = (a: ServerName, b: ServerName, resume: boolean) =>
    `${(capacity(a, resume) / capacity(b, resume)).toFixed(2)} (as measured ${(m(a, resume, (r) => r.requests / r.seconds) / m(b, resume, (r) => r.requests / r.seconds)).toFixed(2)})`;
  return `Negotiated on every server: ${negotiated}. Connections per request: ${Math.min(...perRequest).toFixed(2)}–${Math.max(...perRequest).toFixed(2)} (every request its own connection). "Core 0 busy": the server's and backend's CPU over the run's wall time; "core-0 capacity": 1 s over their CPU per request, what core 0 could serve were it saturated (the client, on one core, mostly is not fast enough to saturate it: a Node TLS client spends more per handshake than the servers do).

| server | resumption | req/s per round | req/s | p50 ms | p99 ms | server CPU µs/request | backend CPU µs/request | core 0 busy | core-0 capacity req/s | client CPU µs/request (client core busy) | connections resumed | non-200 + errors |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

| ratio, new connection per request | full handshake | resumed |
|---|---:|---:|
| gateway, mTLS off ÷ nginx TLS (core-0 capacity) | ${ratio("gateway-tls", "nginx-tls", false)} | ${ratio("gateway-tls", "nginx-tls", true)} |
| gateway, mTLS on ÷ nginx asking for the client certificate | ${ratio("gateway-mtls", "nginx-mtls", false)} | ${ratio("gateway-mtls", "nginx-mtls", true)} |
| gateway, mTLS off ÷ bare undici behind Node TLS | ${ratio("gateway-tls", "undici-tls", false)} | ${ratio("gateway-tls", "undici-tls", true)} |

What a new connection adds to a request's server CPU (µs, the median of each round's difference: the new-connection run less the same server's keep-alive run in part 1; it includes TCP accept and close as well as the handshake), and what a full handshake costs over a resumed one:

| server | keep-alive request | + new connection, full handshake | + new connection, resumed | full − resumed |
|---|---:|---:|---:|---:|
${costRows.join("\n")}

Part 1's keep-alive runs each opened their ${CONNECTIONS} connections (full handshakes) in the measured window: by the table above that is about ${handshakeShare("gateway-tls")} µs of the gateway's CPU per request with mTLS off, ${handshakeShare("gateway-mtls")} with mTLS on, ${handshakeShare("nginx-tls")} of nginx's, ${handshakeShare("undici-tls")} of bare undici's.

For scale: the gateway's verification costs ${fixed(pairedDelta(keptCpus("gateway-tls"), keptCpus("undici-tls")))} µs of CPU per request over bare undici behind TLS (keep-alive, part 1), and one RSA-2048 signature (what a full handshake asks of the server on top of a resumed one, with the certificate's key; \`crypto.sign\` PSS in the bench process, median over rounds) ${fixed(rsaSignUs)} µs on this machine.`;
}

/** One RSA-2048 PSS signature with the gateway's TLS key, µs (the median of 200): the machine's speed at what a full handshake costs. */
function rsaSignUs(keyPem: string): number {
  const key = createPrivateKey(keyPem);
  const data = randomBytes(32);
  const times: number[] = [];
  for (let i = 0; i < 220; i++) {
    const t = performance.now();
    sign("sha256", data, { key, padding: constants.RSA_PKCS1_PSS_PADDING });
    if (i >= 20) times.push((performance.now() - t) * 1000);
  }
  return median(times);
}

async function main() {
  if (CAN_PIN) pin(process.pid, 1);
  const started = Date.now();
  const nginx = nginxVersion(); // fails early without nginx
  const loadBefore = loadavg().map((n) => n.toFixed(2));
  const dir = mkdtempSync(join(tmpdir(), "psd2-bench-tls-"));
  console.error(`bench:tls: PKI in ${dir}; ${SECONDS}s per run, ${ROUNDS} round(s), pinned: ${CAN_PIN}`);
  const devPki = await generateDevPki(dir);
  const caPem = devPki.root.pem + devPki.issuingCa.pem;
  const caFile = join(dir, "client-ca.pem");
  writeFileSync(caFile, caPem);
  const pki: Pki = {
    dir,
    certFile: devPki.paths.gatewayCert,
    keyFile: devPki.paths.gatewayKey,
    caPem,
    caFile,
    qwacChain: devPki.tppA.qwac.pem + devPki.issuingCa.pem,
    qwacKey: devPki.tppA.qwac.keyPem,
  };
  console.error(`bench:tls: presigning ${POOL} GETs …`);
  const pool = await presign({
    keyPem: devPki.tppA.qseal.keyPem,
    certificatePems: [devPki.tppA.qseal.pem],
    extraHeaders: tppRequestHeaders(randomUUID()),
    count: POOL,
    method: "GET",
    target: "/v1/accounts/acc-0001/balances",
  });
  const poolFile = join(dir, "handshake-pool.json");
  writeFileSync(poolFile, JSON.stringify(pool.slice(0, HANDSHAKE_POOL)));
  const client = await HandshakeClient.start(poolFile);

  const keepAlive: Record<string, KeepAliveRun[]> = {};
  const rsa: number[] = [];
  const newConnection: Record<string, NewConnectionRun[]> = {};
  // Issue 42: every measured run is judged (bench/validity.ts); a refused one is no result.
  const judged = new Judged();
  const cases = chosen(NEW_CONNECTION).flatMap((s) => [false, true].map((resume) => ({ s, resume })));
  const elapsed = () => `[${Math.round((Date.now() - started) / 1000)} s]`;
  const rotate = <T>(xs: readonly T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length]!);
  for (let round = 0; round < ROUNDS; round++) {
    // One backend per round, shared by the round's servers (each run starts its own server).
    const backend = await startChild("servers/backend.ts", []);
    rsa.push(rsaSignUs(devPki.gatewayTls.keyPem));
    for (const s of rotate(chosen(KEEP_ALIVE), round)) {
      const r = await keepAliveRun(s, backend, pki, pool);
      const label = `keep-alive ${s}, round ${round + 1}`;
      if (!judged.ok(label, factsOf(r, { singleUse: isGateway(s), knobs: KNOBS }))) continue;
      console.error(
        `${elapsed()} round ${round + 1} keep-alive ${s.padEnd(16)} ${fixed(r.rps)} req/s p50 ${r.p50} ms p99 ${r.p99} ms cpu ${fixed(r.cpuUsPerRequest ?? 0)} µs/req backend ${fixed(r.backendCpuUs)} client ${percent(r.clientBusy)} non2xx ${r.non2xx} errors ${r.errors}`,
      );
      keepAlive[s] = [...(keepAlive[s] ?? []), r];
    }
    for (const { s, resume } of rotate(cases, round)) {
      const r = await newConnectionRun(s, resume, backend, pki, client);
      const label = `new connection ${resume ? "resumed" : "full"} ${s}, round ${round + 1}`;
      const non2xx = Object.entries(r.statuses)
        .filter(([code]) => !code.startsWith("2"))
        .reduce((n, [, count]) => n + count, 0);
      const facts = {
        non2xx,
        errors: r.errors,
        completed: r.requests,
        statuses: r.statuses,
        ...(isGateway(s) ? { pool: { size: r.poolSize, consumed: r.poolConsumed } } : {}),
        knobs: HANDSHAKE_KNOBS,
      };
      if (!judged.ok(label, facts)) continue;
      console.error(
        `${elapsed()} round ${round + 1} new-conn ${resume ? "resumed" : "full   "} ${s.padEnd(12)} ${fixed(r.requests / r.seconds)} req/s p50 ${r.p50.toFixed(1)} ms cpu ${fixed(r.cpuUsPerRequest)} µs/req backend ${fixed(r.backendCpuUs)} client ${fixed(r.clientCpuUs / r.requests)} µs/req ${percent(r.clientCpuUs / (r.seconds * 1e6))} resumed ${r.resumed}/${r.connections} statuses ${JSON.stringify(r.statuses)} errors ${r.errors}${r.wrapped ? ` wrapped ${r.wrapped}` : ""} ${r.negotiated}`,
      );
      const k = `${s} ${resume ? "resumed" : "full"}`;
      newConnection[k] = [...(newConnection[k] ?? []), r];
    }
    await stop(backend);
  }
  client.stop();
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const loadAfter = loadavg().map((n) => n.toFixed(2));

  // A refused run: no figure printed, no BENCH_JSON, the section of RESULTS.md left as it was.
  if (judged.anyRefused)
    process.exit(
      judged.finish('every figure, BENCH_JSON and the section "Behind TLS (bench/tls.ts)" of RESULTS.md'),
    );
  if (process.env.BENCH_JSON)
    writeFileSync(process.env.BENCH_JSON, JSON.stringify({ keepAlive, newConnection, rsa }));
  if (ONLY) process.exit(0);
  const ka = keepAliveReport(keepAlive);
  const report = `
${machineLine()}, nginx ${nginx}. The machine is shared (load average ${loadBefore.join(", ")} before the run, ${loadAfter.join(", ")} after); the run took ${minutes} min. ${CAN_PIN ? "Servers (the backend and the server under test, separate processes; nginx with one worker) pinned to core 0 (`taskset`), the clients (autocannon; the handshake client) to core 1" : "taskset unavailable: nothing pinned"}. ${SECONDS} s per run after 1 s of warm-up (whose answers must all be 200), ${ROUNDS} round(s), the runs interleaved and their order rotated each round, medians (ratios are of medians); every run starts a fresh server, every round a fresh backend. Requests: bench/run.ts's signed GET /v1/accounts/acc-0001/balances by TPP A (${Object.entries(pool[0]!.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0)} bytes of headers, each with its own X-Request-ID, so replay protection stays on); the backend (bench/servers/backend.ts, plain HTTP) answers 313 bytes of JSON. TLS everywhere is the dev gateway certificate (RSA-2048, with its issuing CA) and key, TLS 1.2–1.3 on both servers, each with its defaults otherwise (what they negotiated is in part 2); nginx 1 worker, \`ssl_session_tickets on\`, upstream \`keepalive 128\`; the gateway is bench/servers/gateway-config.ts's with \`listen.tls\`. "Server CPU": the server process's CPU time per request, all threads (nginx: master and worker, /proc); "backend CPU": the backend's, on the same core; "client core busy": the client process's CPU time over the run's wall time (near 100 %: the client set the pace, not the server). Run with \`npm run bench:tls\`.

### 1. Keep-alive TLS clients

autocannon over https, ${CONNECTIONS} connections, in the bench process; it is given the dev CA (autocannon itself does not check the server's chain; the part 2 client does) and presents TPP A's QWAC (with its issuing CA) where the server asks for a client certificate. Each run opens its connections afresh: their ${CONNECTIONS} full handshakes are in the measured CPU (their share per request is estimated in part 2). "Core 0 busy": the server's and backend's CPU over the run; near 100 %, the server set the pace.

${ka.table}

${ka.ratios}

### 2. A new TLS connection per request

bench/tls-handshake-client.ts, a process of its own: node:https with an Agent without keep-alive (\`Connection: close\`), so every request opens a TCP connection and does a TLS handshake, ${CONCURRENCY} requests in flight; resumption off: \`maxCachedSessions: 0\`, a full handshake (ECDHE, the server's RSA-2048 signature, the chain checked against the dev CA) every time; on: the Agent offers the last session ticket (TLS 1.3 PSK with (EC)DHE, no certificates). With mTLS the client presents TPP A's QWAC (its RSA-2048 signature on every full handshake); nginx asking for a client certificate checks its chain against the dev CA (\`ssl_verify_client optional\`) and hands it on URL-encoded (\`$ssl_client_escaped_cert\`).

${newConnectionReport(newConnection, keepAlive, median(rsa))}
`;
  replaceSection("Behind TLS (bench/tls.ts)", report);
  writeFileSync(join(dir, "results.json"), JSON.stringify({ keepAlive, newConnection }, null, 2));
  console.log(report);
  process.exit(0);
}

/** nginx prints its version on stderr. */
function nginxVersion(): string {
  const run = spawnSync("nginx", ["-v"]);
  if (run.error) throw new Error("bench:tls needs nginx on the PATH (Debian: apt-get install -y nginx)");
  return /nginx\/(\S+)/.exec(run.stderr.toString())?.[1] ?? "?";
}

void main();
