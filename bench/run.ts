/**
 * `npm run bench`: gateway throughput against its baselines, all in one run (as the 2026-11-22
 * anchor measurements were made): the servers (backend and proxy, separate processes) pinned to
 * core 0, autocannon on core 1, 50 connections, realistic signed requests with about 2.9 KB of
 * headers and unique X-Request-IDs (so replay protection stays on), GET and a 1 KiB POST, plus a
 * run where every request carries a certificate the gateway has never seen. Results go to
 * bench/RESULTS.md.
 *
 * Environment: BENCH_SECONDS (default 5), BENCH_WARMUP (seconds of load first, default 1),
 * BENCH_ROUNDS (default 1; the anchors used 3),
 * BENCH_POOL (presigned requests per method, default 50000), BENCH_NEW_CERTS (default 2000).
 * Last comes the memory soak (bench/soak.ts, its SOAK_* variables; SOAK_COUNT=0 skips it).
 * BENCH_LIMITS_ONLY=1 runs the limit-store routes alone (memory, Redis, Redis Cluster) and prints them.
 * BENCH_CONFIGS=undici,gateway (and BENCH_METHODS=GET) runs only those, interleaved, and prints
 * them with their ratios: the quick loop while working on the hot path; RESULTS.md is left as it is
 * (BENCH_JSON=<file> also writes the runs there, for bench/runtimes.ts).
 * Every measured run is judged (bench/validity.ts, issue 42): one with a non-2xx answer, a failed
 * request or, for the gateway (whose replay store refuses a request sent twice), a wrapped pool is
 * refused with its reasons on stderr; then no figure is printed, the section of RESULTS.md stays as
 * it was, no BENCH_JSON is written, and the bench exits 1.
 */

import "reflect-metadata";
import { execFileSync } from "node:child_process";
import { createPublicKey, type KeyObject, randomUUID, sign, verify } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateDevPki } from "@psd2-gateway/dev-pki";
import { freshCertificates } from "./fresh-certificates.js";
import {
  factsOf,
  Judged,
  load,
  median,
  PAYMENT_BODY,
  pin,
  presign,
  type RunResult,
  startChild,
  stop,
  tppRequestHeaders,
} from "./harness.js";
import { measure, WARMUP_SECONDS } from "./micro.js";
import type { PresignJob } from "./presign.js";
import { machineLine, replaceSection } from "./results-file.js";
import { CAN_PIN } from "./taskset.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/**
 * Load before each measured run. One second leaves the gateway's larger body of code still being
 * compiled (perf showed 10 % of its CPU in V8's optimizing compiler 8–14 s into a run, under 0.1 %
 * after 30 s); BENCH_WARMUP=15 measures the steady state a long-running gateway is in (the
 * same-run ratios barely moved with it: RESULTS.md, "One house: the steady state").
 */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const POOL = Number(process.env.BENCH_POOL ?? 50_000);
const NEW_CERTS = Number(process.env.BENCH_NEW_CERTS ?? 2000);
const CONNECTIONS = 50;
/** The limit routes warm up for a fixed second: only the run's length shortens what they take of the pool. */
const LIMITS_KNOBS = { pool: "BENCH_POOL", shorten: ["BENCH_SECONDS"] };
/**
 * Issue 5: the unattended-limited route (no PSU-IP-Address, one account per request so each call
 * reserves a slot) beside the unlimited route, with the memory store, with one Redis (which also
 * holds the replay keys then) and with a Redis Cluster of three primaries (issue 15: the keys
 * spread over the three, one connection per primary). Every Redis runs on the servers' core.
 */
async function benchLimits(
  pkiDir: string,
  base: Omit<PresignJob, "count" | "method" | "target">,
  judged: Judged,
): Promise<string> {
  const { startRedisServer } = await import("../test/helpers/redis-server.js");
  const { startRedisCluster } = await import("../test/helpers/redis-cluster.js");
  const { Redis } = await import("ioredis");
  const redis = await startRedisServer();
  const cluster = await startRedisCluster(3);
  if (CAN_PIN) {
    for (const port of [redis.port, ...cluster.nodes.map((n) => n.port)]) {
      // redis-server names itself "redis-server 127.0.0.1:<port>" (with " [cluster]" in a cluster).
      const pid = execFileSync("pgrep", ["-f", `redis-server [0-9.]+:${port}( |$)`])
        .toString()
        .trim()
        .split("\n")[0];
      if (pid) pin(Number(pid), 0);
    }
  }
  const flush = async () => {
    for (const port of [redis.port, ...cluster.nodes.map((n) => n.port)]) {
      const client = new Redis(port, "127.0.0.1");
      await client.flushall();
      client.disconnect();
    }
  };
  const clusterNodes = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(",");
  const { "PSU-IP-Address": _present, ...withoutPsu } = base.extraHeaders;
  console.error(`bench: presigning ${POOL} unattended requests …`);
  const pools = {
    unlimited: await presign({
      ...base,
      count: POOL,
      method: "GET",
      target: "/v1/accounts/acc-0001/balances",
    }),
    limited: await presign({
      ...base,
      extraHeaders: withoutPsu,
      count: POOL,
      method: "GET",
      target: "/v1/accounts/acc-{i}/balances",
    }),
  };
  const runs: Record<string, RunResult[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ["gateway", "gateway-redis", "gateway-redis-cluster"] as const) {
      for (const route of ["unlimited", "limited"] as const) {
        await flush();
        const backend = await startChild("servers/backend.ts", []);
        const proxy = await startChild("servers/proxy.ts", [
          mode,
          `http://127.0.0.1:${backend.port}`,
          pkiDir,
          mode === "gateway-redis-cluster" ? clusterNodes : redis.url,
        ]);
        const cursor = { next: 0 };
        await load(proxy.port, pools[route], cursor, 1);
        const r = await load(proxy.port, pools[route], cursor, SECONDS, proxy);
        const key = `${mode} ${route}`;
        // One account per limited call: no call is refused, so no non-2xx is asked for here.
        if (judged.ok(`limits ${key}, round ${round + 1}`, factsOf(r, { knobs: LIMITS_KNOBS }))) {
          console.error(
            `${mode.padEnd(22)} ${route.padEnd(10)} ${Math.round(r.rps)} req/s cpu ${r.cpuUsPerRequest?.toFixed(0)} µs/req non2xx ${r.non2xx}`,
          );
          runs[key] = [...(runs[key] ?? []), r];
        }
        await stop(proxy);
        await stop(backend);
      }
    }
  }
  await redis.stop();
  await cluster.stop();
  const m = (key: string, f: (r: RunResult) => number) => median((runs[key] ?? []).map(f));
  const row = (mode: string, store: string, route: string) => {
    const key = `${mode} ${route}`;
    return `| ${store} | ${route === "limited" ? "limited (no PSU-IP-Address, one slot reserved per call)" : "unlimited (PSU present)"} | ${Math.round(m(key, (r) => r.rps))} | ${m(key, (r) => r.p50)} | ${m(key, (r) => r.p99)} | ${m(key, (r) => r.cpuUsPerRequest ?? 0).toFixed(0)} | ${m(key, (r) => r.non2xx + r.errors)} |`;
  };
  const ratio = (a: string, b: string) => (m(a, (r) => r.rps) / m(b, (r) => r.rps)).toFixed(2);
  return `
### Unattended-access limit (issues 5 and 15)

GET balances, every request for another account so that every limited call reserves a slot (and no call is refused); replay keys live in the same store. Redis Cluster: three primaries on the servers' core, store.cluster.

| store | route | req/s | p50 ms | p99 ms | gateway CPU µs/request | non-2xx + errors |
|---|---|---:|---:|---:|---:|---:|
${row("gateway", "memory", "unlimited")}
${row("gateway", "memory", "limited")}
${row("gateway-redis", "redis", "unlimited")}
${row("gateway-redis", "redis", "limited")}
${row("gateway-redis-cluster", "redis cluster (3 primaries)", "unlimited")}
${row("gateway-redis-cluster", "redis cluster (3 primaries)", "limited")}

Limited ÷ unlimited: memory ${ratio("gateway limited", "gateway unlimited")}, redis ${ratio("gateway-redis limited", "gateway-redis unlimited")}, cluster ${ratio("gateway-redis-cluster limited", "gateway-redis-cluster unlimited")}; redis ÷ memory on the limited route: ${ratio("gateway-redis limited", "gateway limited")}; cluster ÷ single Redis: ${ratio("gateway-redis-cluster limited", "gateway-redis limited")} limited, ${ratio("gateway-redis-cluster unlimited", "gateway-redis unlimited")} unlimited.
`;
}

/**
 * Issue 15's yardstick, measured in this run: one bare `crypto.verify` RSA-2048/SHA-256 with the
 * KeyObject cached, µs each, over about a second (in this process, between the load runs).
 */
async function bareVerifyMicros(privateKey: KeyObject): Promise<number> {
  const publicKey = createPublicKey(privateKey);
  const data = Buffer.alloc(300, 0x61);
  const signature = sign("sha256", data, privateKey);
  const bare = { name: "bare verify", run: () => verify("sha256", data, publicKey, signature) };
  if (!bare.run()) throw new Error("bench: bare verify failed");
  await measure(bare, WARMUP_SECONDS);
  return 1e6 / (await measure(bare, 1)).opsPerSecond;
}

async function main() {
  if (CAN_PIN) pin(process.pid, 1);
  const pkiDir = mkdtempSync(join(tmpdir(), "psd2-bench-"));
  // Issue 42: every measured run is judged (bench/validity.ts); a refused one is no result.
  const judged = new Judged();
  if (process.env.BENCH_LIMITS_ONLY === "1") {
    // The limit-store routes alone, printed; RESULTS.md is left as it is.
    const pki = await generateDevPki(pkiDir);
    const extraHeaders = tppRequestHeaders(randomUUID());
    const limits = await benchLimits(
      pkiDir,
      { keyPem: pki.tppA.qseal.keyPem, certificatePems: [pki.tppA.qseal.pem], extraHeaders },
      judged,
    );
    if (!judged.anyRefused) console.log(limits);
    process.exit(judged.finish("the limit routes' figures"));
  }
  console.error(`bench: PKI in ${pkiDir}; ${SECONDS}s per run, ${ROUNDS} round(s), pinned: ${CAN_PIN}`);
  const pki = await generateDevPki(pkiDir);
  const extraHeaders = tppRequestHeaders(randomUUID());
  const body = PAYMENT_BODY;
  const base = { keyPem: pki.tppA.qseal.keyPem, certificatePems: [pki.tppA.qseal.pem], extraHeaders };
  console.error(`bench: presigning ${2 * POOL} requests …`);
  const pools = {
    GET: await presign({ ...base, count: POOL, method: "GET", target: "/v1/accounts/acc-0001/balances" }),
    POST: await presign({
      ...base,
      count: POOL,
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      body,
    }),
  };
  const headerBytes = Object.entries(pools.GET[0]!.headers).reduce(
    (n, [k, v]) => n + k.length + v.length + 4,
    0,
  );
  console.error(`bench: ${headerBytes} bytes of headers per GET`);

  const allConfigs = [
    "direct",
    "http-proxy",
    "http-proxy-keepalive",
    "undici",
    "undici-verify",
    // The same forwarding the head the gateway forwards (its identity, forwarding and trace
    // headers): what undici and Node allocate for those headers alone (issue 42's floor).
    "undici-verify-head",
    "gateway",
    // The gateway keeping an evidence record of every accepted request (issue 40: ≤ 10 % more CPU).
    "gateway-evidence",
  ] as const;
  const only = process.env.BENCH_CONFIGS?.split(",");
  const configs = only ? allConfigs.filter((c) => only.includes(c)) : allConfigs;
  const methods = (["GET", "POST"] as const).filter(
    (m) => !process.env.BENCH_METHODS || process.env.BENCH_METHODS.split(",").includes(m),
  );
  const results: Record<string, RunResult[]> = {};
  const verifyMicros: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    verifyMicros.push(await bareVerifyMicros(pki.tppA.qseal.privateKey));
    console.error(`bare crypto.verify: ${verifyMicros.at(-1)!.toFixed(1)} µs`);
    for (const method of methods) {
      for (const config of configs) {
        const backend = await startChild("servers/backend.ts", []);
        const backendUrl = `http://127.0.0.1:${backend.port}`;
        const proxy =
          config === "direct"
            ? undefined
            : await startChild("servers/proxy.ts", [config, backendUrl, pkiDir]);
        const port = proxy?.port ?? backend.port;
        const cursor = { next: 0 };
        await load(port, pools[method], cursor, WARMUP); // warm up (JIT, pools, the gateway's verdict cache)
        const r = await load(port, pools[method], cursor, SECONDS, proxy);
        const key = `${config} ${method}`;
        // Only the gateway keeps replay records: a pass-through may be sent a request again.
        const singleUse = config.startsWith("gateway");
        if (judged.ok(`${key}, round ${round + 1}`, factsOf(r, { singleUse }))) {
          console.error(
            `${config.padEnd(20)} ${method.padEnd(4)} ${Math.round(r.rps)} req/s p50 ${r.p50} ms p99 ${r.p99} ms cpu ${r.cpuUsPerRequest?.toFixed(0) ?? "-"} µs/req (event loop ${r.loopCpuUsPerRequest?.toFixed(0) ?? "-"}) heap ${r.heapBytesPerRequest?.toFixed(0) ?? "-"} B/req non2xx ${r.non2xx} errors ${r.errors}`,
          );
          results[key] = [...(results[key] ?? []), r];
        }
        await stop(proxy);
        await stop(backend);
      }
    }
  }

  const m = (key: string, f: (r: RunResult) => number) => median((results[key] ?? []).map(f));
  const ratio = (a: string, b: string) => (m(a, (r) => r.rps) / m(b, (r) => r.rps)).toFixed(2);
  const cpuOver = (method: string, config = "gateway") =>
    m(`${config} ${method}`, (r) => r.cpuUsPerRequest ?? 0) -
    m(`undici ${method}`, (r) => r.cpuUsPerRequest ?? 0);
  const cpuDelta = (method: string, config = "gateway") => cpuOver(method, config).toFixed(0);
  const verifyUs = median(verifyMicros);
  const overVerify = (method: string, config = "gateway") => (cpuOver(method, config) / verifyUs).toFixed(1);
  const heap = (key: string) => {
    const bytes = m(key, (r) => r.heapBytesPerRequest ?? Number.NaN);
    return Number.isNaN(bytes) ? "–" : bytes.toFixed(0);
  };
  // Issue 42's goals, against undici-verify: the median of each round's ratio (the runs of a round
  // are minutes apart at most), for the floor (undici-verify-head) and the gateway.
  const issue42Ratios = (config: string, method: string) => {
    const runs = results[`${config} ${method}`] ?? [];
    const reference = results[`undici-verify ${method}`] ?? [];
    const perRound = (f: (r: RunResult) => number | undefined) =>
      runs.length === 0 || runs.length !== reference.length
        ? "–"
        : median(runs.map((r, i) => (f(r) ?? Number.NaN) / (f(reference[i]!) ?? Number.NaN))).toFixed(2);
    return `median of the rounds' ratios: heap ×${perRound((r) => r.heapBytesPerRequest)} (issue 42: ≤ 1.1), CPU ×${perRound((r) => r.cpuUsPerRequest)} (≤ 1.15; event loop ×${perRound((r) => r.loopCpuUsPerRequest)}), req/s ×${perRound((r) => r.rps)} (≥ 0.9)`;
  };
  if (only && judged.anyRefused) process.exit(judged.finish("every figure (and BENCH_JSON)"));
  if (only) {
    for (const key of Object.keys(results))
      console.log(
        `${key.padEnd(24)} median ${Math.round(m(key, (r) => r.rps))} req/s, ${m(key, (r) => r.cpuUsPerRequest ?? 0).toFixed(0)} µs CPU/req (event loop ${m(key, (r) => r.loopCpuUsPerRequest ?? Number.NaN).toFixed(0)}), ${heap(key)} heap B/req`,
      );
    for (const method of methods)
      for (const config of ["undici-verify", "gateway"])
        if (results[`${config} ${method}`] && results[`undici ${method}`])
          console.log(
            `${config} ÷ undici ${method}: ${ratio(`${config} ${method}`, `undici ${method}`)}, CPU over undici ${cpuDelta(method, config)} µs = ${overVerify(method, config)}× a bare verify (${verifyUs.toFixed(1)} µs)`,
          );
    for (const method of methods)
      for (const config of ["undici-verify-head", "gateway"])
        if (results[`${config} ${method}`])
          console.log(`${config} ÷ undici-verify ${method}, ${issue42Ratios(config, method)}`);
    for (const method of methods)
      if (results[`gateway-evidence ${method}`] && results[`gateway ${method}`]) {
        const cpu = (config: string) => m(`${config} ${method}`, (r) => r.cpuUsPerRequest ?? 0);
        const loop = (config: string) => m(`${config} ${method}`, (r) => r.loopCpuUsPerRequest ?? Number.NaN);
        console.log(
          `gateway-evidence ÷ gateway ${method}: CPU per request ×${(cpu("gateway-evidence") / cpu("gateway")).toFixed(3)} (issue 40: ≤ 1.10; the event loop thread's ×${(loop("gateway-evidence") / loop("gateway")).toFixed(3)}), req/s ${ratio(`gateway-evidence ${method}`, `gateway ${method}`)}`,
        );
      }
    // bench/runtimes.ts reads what this run measured.
    if (process.env.BENCH_JSON)
      writeFileSync(process.env.BENCH_JSON, JSON.stringify({ results, verifyMicros }, null, 2));
    process.exit(0);
  }

  const limits = await benchLimits(pkiDir, base, judged);

  console.error(`bench: issuing ${NEW_CERTS} never-seen certificates …`);
  const fresh = (await freshCertificates(pkiDir, NEW_CERTS, "5a")).map((c) => c.toString("pem"));
  const freshPool = await presign({
    ...base,
    certificatePems: fresh,
    count: NEW_CERTS,
    method: "GET",
    target: "/v1/accounts/acc-0001/balances",
  });
  const backend = await startChild("servers/backend.ts", []);
  const proxy = await startChild("servers/proxy.ts", ["gateway", `http://127.0.0.1:${backend.port}`, pkiDir]);
  await load(proxy.port, pools.GET, { next: 0 }, 1);
  const unseen = await load(proxy.port, freshPool, { next: 0 }, 0, proxy, NEW_CERTS);
  if (
    judged.ok(
      "gateway GET never-seen certificate",
      factsOf(unseen, { knobs: { pool: "BENCH_NEW_CERTS", shorten: [] } }),
    )
  )
    console.error(
      `gateway GET never-seen certificate: ${Math.round(unseen.rps)} req/s cpu ${unseen.cpuUsPerRequest?.toFixed(0)} µs/req non2xx ${unseen.non2xx}`,
    );
  await stop(proxy);
  await stop(backend);

  // A refused run leaves the whole section as it was (its tables would mix results and refusals),
  // and no figure of this run is printed.
  const throughputExit = judged.finish('the section "Gateway throughput (bench/run.ts)" of RESULTS.md');
  if (throughputExit !== 0) return soakAndExit(throughputExit);
  const rows = configs.flatMap((c) =>
    (["GET", "POST"] as const).map((method) => {
      const key = `${c} ${method}`;
      const cpu = c === "direct" ? "–" : m(key, (r) => r.cpuUsPerRequest ?? 0).toFixed(0);
      return `| ${c} | ${method} | ${Math.round(m(key, (r) => r.rps))} | ${m(key, (r) => r.p50)} | ${m(key, (r) => r.p99)} | ${cpu} | ${heap(key)} | ${m(key, (r) => r.non2xx + r.errors)} |`;
    }),
  );
  const unseenExtra = (
    (unseen.cpuUsPerRequest ?? 0) - m("gateway GET", (r) => r.cpuUsPerRequest ?? 0)
  ).toFixed(0);
  const report = `
${machineLine()}. ${CAN_PIN ? "Servers (backend and proxy, separate processes) pinned to core 0, autocannon to core 1" : "taskset unavailable: nothing pinned"}; ${CONNECTIONS} connections, ${SECONDS} s per configuration after ${WARMUP} s of warm-up, ${ROUNDS} round(s), medians. Each request carries ${headerBytes} bytes of headers (TPP-Signature-Certificate, Signature, Digest, X-Request-ID, PSU headers); POST bodies are ${Buffer.byteLength(body)} bytes; the backend answers 313 bytes of JSON. Every request is signed once, with its own X-Request-ID, so replay protection refuses nothing and stays on. Run with \`npm run bench\`.

| configuration | method | req/s | p50 ms | p99 ms | proxy CPU µs/request | proxy V8 heap bytes allocated/request | non-2xx + errors |
|---|---|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

| target | GET | POST | goal |
|---|---:|---:|---|
| gateway ÷ bare undici pass-through | ${ratio("gateway GET", "undici GET")} | ${ratio("gateway POST", "undici POST")} | ≥ 0.65 (issue 15) |
| gateway ÷ bare http-proxy pass-through | ${ratio("gateway GET", "http-proxy GET")} | ${ratio("gateway POST", "http-proxy POST")} | ≥ 1.5 |
| verification CPU over bare undici (µs/request) | ${cpuDelta("GET")} | ${cpuDelta("POST")} | – |
| the same ÷ a bare \`crypto.verify\` of this run (${verifyUs.toFixed(1)} µs, RSA-2048) | ${overVerify("GET")} | ${overVerify("POST")} | ≤ 2 (issue 15) |
| reference: undici + the least verification (\`undici-verify\`) ÷ bare undici | ${ratio("undici-verify GET", "undici GET")} | ${ratio("undici-verify POST", "undici POST")} | the ceiling of the first row |
| reference: its CPU over bare undici ÷ the bare verify | ${overVerify("GET", "undici-verify")} | ${overVerify("POST", "undici-verify")} | the floor of the fourth row |
| gateway ÷ the reference | ${ratio("gateway GET", "undici-verify GET")} | ${ratio("gateway POST", "undici-verify POST")} | – |
| gateway ÷ the reference, issue 42 | ${issue42Ratios("gateway", "GET")} | ${issue42Ratios("gateway", "POST")} | – |
| the floor (\`undici-verify-head\`: the gateway's head, no more checks) ÷ the reference | ${issue42Ratios("undici-verify-head", "GET")} | ${issue42Ratios("undici-verify-head", "POST")} | the ceiling of the row above |

Never-seen certificate on every request (GET, ${NEW_CERTS} certificates each used once, ${CONNECTIONS} connections): ${Math.round(unseen.rps)} req/s, ${unseen.cpuUsPerRequest?.toFixed(0)} µs CPU per request, that is ${unseenExtra} µs on top of a cached certificate (goal ≤ 1000 µs); non-2xx ${unseen.non2xx}.
`;
  replaceSection("Gateway throughput (bench/run.ts)", report + limits);
  writeFileSync(join(pkiDir, "results.json"), JSON.stringify({ results, unseen }, null, 2));
  console.log(report);
  return soakAndExit(0);
}

/**
 * The soak (bench/soak.ts): memory under worst-case Signature headers, its own section of
 * RESULTS.md and its own verdict. SOAK_COUNT=0 leaves it out. Exits with `code` unless the soak fails.
 */
async function soakAndExit(code: number): Promise<never> {
  if (Number(process.env.SOAK_COUNT ?? 1) > 0) {
    const { runSoak } = await import("./soak.js");
    const soak = await runSoak();
    console.log(soak.markdown);
    process.exit(soak.pass ? code : 1);
  }
  process.exit(code);
}

void main();
