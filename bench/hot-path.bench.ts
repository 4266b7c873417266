/**
 * `npx tsx bench/hot-path.bench.ts [--write]`: the gateway's own work per request, apart from
 * Node's HTTP server and undici (issue 15), in one process against a bare `crypto.verify` of the
 * same run: the whole list of named checks as the ingress gateway builds it (cached certificate
 * verdict, memory replay store, the unattended-access classification), the upstream request
 * headers, and the access line with the request metrics. Each case also reports the V8 heap bytes
 * it allocates per request (bench/micro.ts).
 *
 * Requests: signed GETs as bench/run.ts sends them (about 2.6 KB of headers), from a pool of
 * POOL distinct requests, each with its own X-Request-ID, so that replay protection records every
 * one; the replay store's clock moves on by a window each time the pool comes round again, so no
 * request is refused as a replay and expired records are dropped as they are in a long run.
 */

import "reflect-metadata";
import { createPrivateKey, verify as cryptoVerify, randomUUID, X509Certificate } from "node:crypto";
import { chainOf } from "../src/app/request-path.js";
import { type CheckContext, CheckContext as Context, RoleTable } from "../src/checks/index.js";
import { validateConfig } from "../src/config/load.js";
import { isRejection } from "../src/errors.js";
import type { RequestEvent } from "../src/events.js";
import { upstreamRequestHeaders } from "../src/forward/headers.js";
import { MemoryLimitStore } from "../src/limits/index.js";
import { createLogger } from "../src/observability/logger.js";
import { GatewayMetrics } from "../src/observability/metrics.js";
import { recordRequest } from "../src/observability/request-log.js";
import type { SignatureParams } from "../src/signature/index.js";
import { RequestSigner } from "../src/signature/index.js";
import { devVerifiers } from "./dev-verifier.js";
import { tppRequestHeaders } from "./harness.js";
import {
  type Case,
  formatMicros,
  formatOps,
  measure,
  median,
  ROUNDS,
  runAll,
  SECONDS,
  sinkValue,
  WARMUP_SECONDS,
} from "./micro.js";
import { machineLine, replaceSection } from "./results-file.js";

const SECTION = "The gateway's own work per request (bench/hot-path.bench.ts)";
const POOL = Number(process.env.BENCH_POOL ?? 4096);
const TARGET = "/v1/accounts/acc-0001/balances";

// ---------------------------------------------------------------------------------------------
// Material: the development PKI and the gateway's defaults, as bench/run.ts's gateway has them.

const { pki, pkiDir, verifierWith } = await devVerifiers("psd2-hot-path-");
const config = validateConfig({
  listen: { host: "127.0.0.1", port: 0 },
  backend: { url: "http://127.0.0.1:1" },
  trust: { caDir: `${pkiDir}/trust` },
  register: { file: `${pkiDir}/register.json` },
  log: { level: "silent" },
  admin: { enabled: false },
});
const verifier = verifierWith(3_600_000);

const signedAt = Date.now();
const privateKey = createPrivateKey(pki.tppA.qseal.keyPem);
const signer = new RequestSigner({
  privateKey,
  certificate: new X509Certificate(pki.tppA.qseal.pem).raw,
  clock: () => signedAt,
});
const extra = tppRequestHeaders(randomUUID());
/** Header objects as Node's parser hands them over: lower-case names, one string each. */
const pool: Record<string, string>[] = [];
for (let i = 0; i < POOL; i++) {
  const headers: Record<string, string> = { ...extra, "X-Request-ID": randomUUID() };
  const signed = await signer.sign({ method: "GET", target: TARGET, headers });
  const wire: Record<string, string> = { host: "127.0.0.1:8443", connection: "keep-alive" };
  for (const [name, value] of Object.entries({ ...headers, ...signed })) wire[name.toLowerCase()] = value;
  pool.push(wire);
}
const headerBytes = Object.entries(pool[0]!).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);

// The replay store's clock: one window further each time the pool comes round.
const windowMs = 2 * config.verification.dateToleranceSeconds * 1000;
let storeClock = signedAt;
const store = new MemoryLimitStore({
  maxWindows: config.store.type === "memory" ? config.store.maxWindows : 100_000,
  maxReplayKeys: config.replay.maxEntries,
  now: () => storeClock,
  purgeIntervalMs: 0,
});
// The chain as the gateway builds it: the one builder (src/app/request-path.ts).
const chain = chainOf(config, { now: () => signedAt, certificates: verifier, store });
const verification = config.verification;
const roles = new RoleTable(verification.roles);
const route = { path: TARGET, role: roles.roleFor(TARGET) };

let next = 0;
function nextHeaders(): Record<string, string> {
  if (next === POOL) {
    next = 0;
    storeClock += windowMs + 1;
  }
  return pool[next++]!;
}

function checkOne(): CheckContext {
  const context = new Context("GET", TARGET, nextHeaders(), route, undefined);
  const result = chain.runHead(context);
  if (result !== undefined) throw new Error(`refused: ${isRejection(result) ? result.text : "a promise"}`);
  return context;
}

const checked = checkOne();
const publicKey = checked.certificate!.publicKey;
const signatureBytes = (checked.dialectState as SignatureParams).signatureBytes;
const signingString = checked.signingString!;
if (!cryptoVerify("sha256", signingString, publicKey, signatureBytes)) throw new Error("setup: bare verify");

const strip = new Set([...Object.values(config.identityHeaders), "x-forwarded-for", "x-forwarded-proto"]);
const metrics = new GatewayMetrics({}, { defaultMetrics: false });
const silent = createLogger("silent");
const event: RequestEvent = {
  mode: "ingress",
  requestId: checked.headers["x-request-id"] as string,
  method: "GET",
  routeClass: "ais",
  status: 200,
  totalMs: 1.234,
  upstreamMs: 0.456,
  bytesOut: 313,
  organizationId: checked.organizationId!,
  psuId: checked.headers["psu-id"] as string,
};

// ---------------------------------------------------------------------------------------------
// Cases

let copied = 0;
const BARE_VERIFY = "bare `crypto.verify` RSA-2048/SHA-256, KeyObject cached (baseline)";
const CHECKS = "the chain's head phase, every step (`requestChecks` as ingress builds it), GET";
const cases: Case[] = [
  { name: BARE_VERIFY, run: () => cryptoVerify("sha256", signingString, publicKey, signatureBytes) },
  { name: CHECKS, run: checkOne },
  {
    name: "upstream request headers (`upstreamRequestHeaders`)",
    run: () => {
      copied = (copied + 1) % POOL;
      return upstreamRequestHeaders(pool[copied]!, strip);
    },
  },
  {
    name: "access line and request metrics, log level off (`recordRequest`)",
    run: () => recordRequest(event, silent, metrics),
  },
];

// --steps: the head phase's cost step by step, each step timed around its own call over the pool
// (performance.now's own cost, measured on an empty step, taken off), written to its own section.
if (process.argv.includes("--steps")) {
  const steps = chain.steps.filter((s) => s.run);
  const spent = new Float64Array(steps.length + 1);
  const empty = () => undefined;
  const rounds = Number(process.env.BENCH_STEP_REQUESTS ?? 200_000);
  for (let r = 0; r < rounds; r++) {
    const context = new Context("GET", TARGET, nextHeaders(), route, undefined);
    for (let i = 0; i < steps.length; i++) {
      const t = performance.now();
      const result = steps[i]!.run!(context);
      spent[i]! += performance.now() - t;
      if (result !== undefined) throw new Error(`${steps[i]!.name} refused during --steps`);
    }
    const t = performance.now();
    empty();
    spent[steps.length]! += performance.now() - t;
  }
  const clock = spent[steps.length]! / rounds;
  const per = steps.map((s, i) => ({ name: s.name, us: Math.max(0, (spent[i]! / rounds - clock) * 1000) }));
  const total = per.reduce((n, s) => n + s.us, 0);
  const table = [
    `${machineLine()}. The chain's head phase (as the one builder makes it for the default configuration) over ${rounds.toLocaleString("en-US")} signed GETs from a pool of ${POOL}, each step timed around its own call, the clock's own ${(clock * 1000).toFixed(2)} µs per reading taken off; the first 10 % of the run included (the JIT warms up there). Run with \`npx tsx bench/hot-path.bench.ts --steps --write\`.`,
    "",
    "| step | µs per request | share |",
    "|---|---:|---:|",
    ...per.map((s) => `| \`${s.name}\` | ${s.us.toFixed(2)} | ${((100 * s.us) / total).toFixed(0)} % |`),
    `| all | ${total.toFixed(2)} | 100 % |`,
  ].join("\n");
  console.log(table);
  if (process.argv.includes("--write"))
    replaceSection("The chain, step by step (bench/hot-path.bench.ts --steps)", table);
  process.exit(0);
}

// --step-heap: the heap bytes each head step allocates, as the difference between running the
// first k steps and the first k-1 on fresh contexts (GCProfiler's count, exact where a sampling
// heap profile attributes a step's bytes to its caller), in its own section.
if (process.argv.includes("--step-heap")) {
  const steps = chain.steps.filter((s) => s.run);
  const prefix = (k: number): Case => ({
    name: `first ${k}`,
    run: () => {
      const context = new Context("GET", TARGET, nextHeaders(), route, undefined);
      for (let i = 0; i < k; i++) {
        const result = steps[i]!.run!(context);
        if (result !== undefined) throw new Error(`${steps[i]!.name} refused during --step-heap`);
      }
      return context;
    },
  });
  const bytes: number[] = [];
  for (let k = 0; k <= steps.length; k++) {
    const runs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) runs.push((await measure(prefix(k), SECONDS)).heapBytesPerOp);
    bytes.push(median(runs));
  }
  const table = [
    `${machineLine()}. The chain's head phase over signed GETs from a pool of ${POOL}: the V8 heap bytes allocated per request by the first k steps on a fresh context, less the first k-1's (GCProfiler; ${ROUNDS} round(s) of ${SECONDS} s each, medians; the context itself is the first row). Run with \`npx tsx bench/hot-path.bench.ts --step-heap\`.`,
    "",
    "| step | V8 heap bytes per request |",
    "|---|---:|",
    `| (the context) | ${bytes[0]!.toFixed(0)} |`,
    ...steps.map((s, i) => `| \`${s.name}\` | ${(bytes[i + 1]! - bytes[i]!).toFixed(0)} |`),
    `| all | ${bytes[steps.length]!.toFixed(0)} |`,
  ].join("\n");
  console.log(table);
  process.exit(0);
}

// BENCH_CASES=checks (a substring of the names) runs only the matching cases, e.g. under --cpu-prof.
const only = process.env.BENCH_CASES;
const results = await runAll(only ? cases.filter((c) => c.name.includes(only)) : cases);
const micros = (name: string) => 1e6 / (results.get(name)?.opsPerSecond ?? Number.NaN);
const report = [
  `${machineLine()}. ${SECONDS} s per case and round after ${WARMUP_SECONDS} s of warm-up, ${ROUNDS} interleaved round(s), medians, one process. Requests: ${POOL} signed GETs of ${headerBytes} bytes of headers (bench/run.ts's), the development PKI's QSealC (RSA-2048), the gateway's default configuration. Heap bytes: V8 heap allocated per operation (GCProfiler), Buffers' backing stores not counted. Run with \`npx tsx bench/hot-path.bench.ts --write\`.`,
  "",
  "| operation | ops/s | µs/op | heap bytes/op |",
  "|---|---:|---:|---:|",
  ...cases.flatMap((c) => {
    const r = results.get(c.name);
    if (!r) return [];
    return `| ${c.name} | ${formatOps(r.opsPerSecond)} | ${formatMicros(r.opsPerSecond)} | ${Math.round(r.heapBytesPerOp)} |`;
  }),
  "",
  `The named checks ÷ bare \`crypto.verify\`: ${(micros(CHECKS) / micros(BARE_VERIFY)).toFixed(2)}; the checks' work besides the RSA verify: ${(micros(CHECKS) - micros(BARE_VERIFY)).toFixed(1)} µs.`,
].join("\n");
console.log(report);
if (sinkValue() === 0x7fffffff) console.log("(sink)");
if (process.argv.includes("--write")) {
  replaceSection(SECTION, report);
  console.log(`\nwrote the section '${SECTION}' of bench/RESULTS.md`);
}
