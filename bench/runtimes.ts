/**
 * `npm run bench:runtimes` (issue 25): what moving from Node 20 to Node 26 changes, measured on one
 * machine in one session. Each round runs npm run bench (undici, undici-verify, gateway, GET and
 * POST), bench:tls (keep-alive and a new connection per request, nginx as the yardstick) and
 * bench:signing (egress against the machine's signing limit) once per runtime, the runtimes'
 * order alternating from round to round; only the servers under test change runtime (BENCH_NODE),
 * the clients, backends and nginx stay as they are. Each figure is a ratio to a baseline of the
 * same run and runtime (bare undici, nginx, bare crypto.sign), so the machine's load moves both
 * sides; medians over the rounds. Results go to bench/RESULTS.md, section "Runtime".
 *
 * Environment: RUNTIME_OLD (default /usr/bin/node), RUNTIME_NEW (default this process's node),
 * RUNTIME_ROUNDS (default 3), BENCH_SECONDS (default 5), BENCH_POOL (default 30000).
 */

import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { median, type RunResult } from "./harness.js";
import { machineLine, replaceSection } from "./results-file.js";

const OLD = process.env.RUNTIME_OLD ?? "/usr/bin/node";
const NEW = process.env.RUNTIME_NEW ?? process.execPath;
const ROUNDS = Number(process.env.RUNTIME_ROUNDS ?? 3);
const SECONDS = process.env.BENCH_SECONDS ?? "5";
const POOL = process.env.BENCH_POOL ?? "30000";
const BENCH = new URL(".", import.meta.url).pathname;

const versionOf = (node: string) => execFileSync(node, ["-p", "process.versions.node"]).toString().trim();
const opensslOf = (node: string) => execFileSync(node, ["-p", "process.versions.openssl"]).toString().trim();

interface Runtime {
  readonly name: string;
  readonly node: string;
}

const RUNTIMES: readonly Runtime[] = [
  { name: `Node ${versionOf(OLD)}`, node: OLD },
  { name: `Node ${versionOf(NEW)}`, node: NEW },
];

/** Figures of one run: name → value. */
type Figures = Record<string, number>;

/** Runs one bench script in a child (tsx, this process's node) with the servers on `node`; its JSON. */
function runBench(script: string, runtime: Runtime, env: Record<string, string>): unknown {
  const out = join(mkdtempSync(join(tmpdir(), "psd2-runtime-")), "run.json");
  const run = spawnSync(process.execPath, ["--import", "tsx", join(BENCH, script)], {
    env: { ...process.env, ...env, BENCH_NODE: runtime.node, BENCH_JSON: out, SOAK_COUNT: "0" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  // Each bench judges its own runs (issue 42): a refused run exits 1 with its reasons on stderr and
  // no BENCH_JSON, so no figure of it reaches this report.
  if (run.status !== 0)
    throw new Error(
      `${script} on ${runtime.name} exited with ${run.status} (a run refused or failed: its reasons above); the section "Runtime (bench/runtimes.ts)" of RESULTS.md left as it was`,
    );
  return JSON.parse(readFileSync(out, "utf8"));
}

const cpu = (r: RunResult) => r.cpuUsPerRequest ?? 0;

function throughputFigures(runtime: Runtime): Figures {
  const { results } = runBench("run.ts", runtime, {
    BENCH_CONFIGS: "undici,undici-verify,gateway",
    BENCH_ROUNDS: "1",
    BENCH_SECONDS: SECONDS,
    BENCH_POOL: POOL,
  }) as { results: Record<string, RunResult[]> };
  const one = (key: string) => results[key]![0]!;
  const f: Figures = {};
  for (const method of ["GET", "POST"]) {
    const undici = one(`undici ${method}`);
    const reference = one(`undici-verify ${method}`);
    const gateway = one(`gateway ${method}`);
    f[`gateway ÷ bare undici, req/s, ${method}`] = gateway.rps / undici.rps;
    f[`gateway CPU per request ÷ bare undici's, ${method}`] = cpu(gateway) / cpu(undici);
    f[`gateway ÷ undici-verify, req/s, ${method}`] = gateway.rps / reference.rps;
    f[`undici-verify ÷ bare undici, req/s, ${method}`] = reference.rps / undici.rps;
    f[`gateway CPU µs per request, ${method}`] = cpu(gateway);
    f[`bare undici CPU µs per request, ${method}`] = cpu(undici);
  }
  return f;
}

function tlsFigures(runtime: Runtime): Figures {
  const { keepAlive, newConnection } = runBench("tls.ts", runtime, {
    BENCH_TLS_SERVERS: "nginx-tls,undici-tls,gateway-tls,gateway-mtls",
    BENCH_ROUNDS: "1",
    BENCH_SECONDS: SECONDS,
    BENCH_POOL: POOL,
  }) as {
    keepAlive: Record<string, RunResult[]>;
    newConnection: Record<string, { requests: number; seconds: number; cpuUsPerRequest: number }[]>;
  };
  const ka = (s: string) => keepAlive[s]![0]!.rps;
  const nc = (s: string) => {
    const r = newConnection[s]![0]!;
    return r.requests / r.seconds;
  };
  return {
    "keep-alive TLS: gateway ÷ nginx": ka("gateway-tls") / ka("nginx-tls"),
    "keep-alive TLS: gateway with mTLS ÷ nginx": ka("gateway-mtls") / ka("nginx-tls"),
    "keep-alive TLS: bare undici behind Node TLS ÷ nginx": ka("undici-tls") / ka("nginx-tls"),
    "new connection per request, full handshake: gateway ÷ nginx":
      nc("gateway-tls full") / nc("nginx-tls full"),
    "new connection per request, resumed: gateway ÷ nginx":
      nc("gateway-tls resumed") / nc("nginx-tls resumed"),
    "new connection per request, full handshake: gateway CPU µs per request":
      newConnection["gateway-tls full"]![0]!.cpuUsPerRequest,
  };
}

function signingFigures(runtime: Runtime): Figures {
  const { limits, throughput } = runBench("signing.ts", runtime, {
    BENCH_PARTS: "limit,egress",
    BENCH_ROUNDS: "1",
    BENCH_SECONDS: SECONDS,
    BENCH_POOL: POOL,
  }) as {
    limits: Record<string, { signsPerSecond: number; cpuUsPerSign: number }[]>;
    throughput: Record<string, { run: RunResult; interval: { gatewayCpuUs: number } }[]>;
  };
  const limit = Math.max(...Object.values(limits).map((runs) => runs[0]!.signsPerSecond));
  const signUs = Math.min(...Object.values(limits).map((runs) => runs[0]!.cpuUsPerSign));
  const f: Figures = { "bare crypto.sign CPU µs per signature (RSA-2048)": signUs };
  for (const method of ["GET", "POST"]) {
    const t = throughput[`egress ${method}`]![0]!;
    f[`egress ÷ the signing limit, ${method}`] = t.run.rps / limit;
    f[`egress CPU µs per request besides the signature, ${method}`] =
      t.interval.gatewayCpuUs / t.run.total - signUs;
  }
  return f;
}

const PARTS = [
  ["npm run bench", throughputFigures],
  ["npm run bench:tls", tlsFigures],
  ["npm run bench:signing", signingFigures],
] as const;

async function main() {
  const started = Date.now();
  const loadBefore = loadavg().map((x) => x.toFixed(2));
  const collected = new Map<string, Map<string, number[]>>(); // runtime → figure → values
  for (let round = 0; round < ROUNDS; round++) {
    // The order alternates, so neither runtime always runs first in a round.
    const order = round % 2 === 0 ? RUNTIMES : [...RUNTIMES].reverse();
    for (const [part, figures] of PARTS) {
      for (const runtime of order) {
        console.error(`runtimes: round ${round + 1}/${ROUNDS}, ${part} on ${runtime.name} …`);
        const f = figures(runtime);
        const byFigure = collected.get(runtime.name) ?? new Map<string, number[]>();
        for (const [name, value] of Object.entries(f))
          byFigure.set(name, [...(byFigure.get(name) ?? []), value]);
        collected.set(runtime.name, byFigure);
      }
    }
  }
  const [old, fresh] = RUNTIMES.map((r) => collected.get(r.name)!) as [
    Map<string, number[]>,
    Map<string, number[]>,
  ];
  const show = (name: string, x: number) => (name.includes("µs") ? x.toFixed(0) : x.toFixed(2));
  const rows = [...old.keys()].map((name) => {
    const a = median(old.get(name)!);
    const b = median(fresh.get(name)!);
    const rounds = (values: number[]) => values.map((v) => show(name, v)).join(" · ");
    return `| ${name} | ${show(name, a)} (${rounds(old.get(name)!)}) | ${show(name, b)} (${rounds(fresh.get(name)!)}) | ${(b / a).toFixed(2)} |`;
  });
  const report = `
${machineLine()} (the clients). Servers under test on ${RUNTIMES.map((r) => `${r.name} (OpenSSL ${opensslOf(r.node)})`).join(" and ")}; ${ROUNDS} rounds, each running every part once per runtime, the runtimes' order alternating per round; ${SECONDS} s per measurement; medians over the rounds (each round's value in brackets). Every figure but the µs ones is a ratio to a baseline measured in the same run on the same runtime. The machine is shared: load average ${loadBefore.join(", ")} before, ${loadavg()
    .map((x) => x.toFixed(2))
    .join(
      ", ",
    )} after; the run took ${((Date.now() - started) / 60_000).toFixed(0)} min. Run with \`npm run bench:runtimes\`.

| figure | ${RUNTIMES[0]!.name} | ${RUNTIMES[1]!.name} | new ÷ old |
|---|---:|---:|---:|
${rows.join("\n")}
`;
  replaceSection("Runtime (bench/runtimes.ts)", report);
  console.log(report);
}

main().catch((error: unknown) => {
  console.error(`runtimes: ${(error as Error).message}`);
  process.exit(1);
});
