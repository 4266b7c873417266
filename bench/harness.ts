/**
 * What the benchmark scripts share (bench/run.ts, bench/signing.ts): child processes for the
 * servers (pinned, asked for their CPU), presigning in worker threads, one autocannon run over a
 * pool of requests, and the median.
 */

import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { cpus } from "node:os";
import { join } from "node:path";
import type { ConnectionOptions } from "node:tls";
import { Worker } from "node:worker_threads";
import autocannon from "autocannon";
import type { PresignedRequest, PresignJob } from "./presign.js";
import { CAN_PIN } from "./taskset.js";
import { judgeRun, type RunFacts } from "./validity.js";

export const BENCH_DIR = new URL(".", import.meta.url).pathname;

/**
 * Pins a process, every thread it has, to a core or a list of cores ("0", "0-1"); nothing without
 * taskset. All threads (`-a`): a child forked from a pinned parent starts on the parent's cores, and
 * by the time it can be pinned it already runs libuv's pool (started while tsx loads modules) and
 * V8's helper threads, which `taskset -p` alone would leave where they were.
 */
export function pin(pid: number, cores: number | string): void {
  if (CAN_PIN) execFileSync("taskset", ["-acp", String(cores), String(pid)], { stdio: "ignore" });
}

/**
 * The Node binary the servers under test run on: `BENCH_NODE` (e.g. /usr/bin/node, to measure
 * another runtime beside this one; bench/runtimes.ts alternates them), this process's by default.
 * Backends and clients stay on this process's runtime, so only the server under test changes.
 */
export const SERVER_NODE = process.env.BENCH_NODE || process.execPath;
const UNDER_TEST = new Set([
  "servers/proxy.ts",
  "servers/signing-gateway.ts",
  "servers/sign-limit.ts",
  "servers/soak-gateway.ts",
]);

/** Bench processes load the built gateway (dist/, see dist-hooks.mjs), through tsx for bench/'s own files. */
export const CHILD_EXEC_ARGV = [
  "--import",
  "tsx",
  "--import",
  join(BENCH_DIR, "dist-loader.mjs"),
  // Node 26 deprecates module.register for registerHooks, which Node 20 (BENCH_NODE) lacks.
  "--disable-warning=DEP0205",
];

/**
 * More Node options for the servers under test only (`BENCH_SERVER_ARGS="--perf-basic-prof"` for
 * `perf record`, `--trace-deopt` to see the JIT give up on a function), space-separated.
 */
const SERVER_ARGS = (process.env.BENCH_SERVER_ARGS ?? "").split(" ").filter(Boolean);

export interface Child {
  readonly process: ChildProcess;
  readonly port: number;
}

/** Forks a bench server (a file under bench/), pins it and waits for its `{ ready: port }`. */
export async function startChild(
  file: string,
  args: string[],
  cores: number | string = 0,
  env?: NodeJS.ProcessEnv,
): Promise<Child> {
  const child = fork(join(BENCH_DIR, file), args, {
    execArgv: UNDER_TEST.has(file) ? [...SERVER_ARGS, ...CHILD_EXEC_ARGV] : CHILD_EXEC_ARGV,
    execPath: UNDER_TEST.has(file) ? SERVER_NODE : process.execPath,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  pin(child.pid!, cores);
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m: { ready?: number }) =>
      m.ready ? resolve(m.ready) : reject(new Error("bad ready")),
    );
    child.once("exit", (code) => reject(new Error(`${file} exited with ${code}`)));
  });
  return { process: child, port };
}

/**
 * A server whose CPU a run reports: a bench child (asked over IPC) or, for a server that is not
 * one (nginx), any reader of its CPU time so far in µs.
 */
export type CpuSource = Child | (() => Promise<number>);

/** The child's CPU time so far (user + system, all its threads), µs. */
export async function cpuOf(child: CpuSource): Promise<number> {
  return (await usageOf(child)).cpuUs;
}

/**
 * CPU time so far, µs, and, from a bench/servers/proxy.ts child, its event loop thread's CPU time
 * so far and the bytes its V8 heap allocated so far.
 */
export async function usageOf(
  child: CpuSource,
): Promise<{ cpuUs: number; loopUs?: number; heapAllocated?: number }> {
  if (typeof child === "function") return { cpuUs: await child() };
  return new Promise((resolve) => {
    child.process.once(
      "message",
      (m: { cpu: NodeJS.CpuUsage; loop?: NodeJS.CpuUsage; heapAllocated?: number }) =>
        resolve({
          cpuUs: m.cpu.user + m.cpu.system,
          ...(m.loop !== undefined ? { loopUs: m.loop.user + m.loop.system } : {}),
          ...(m.heapAllocated !== undefined ? { heapAllocated: m.heapAllocated } : {}),
        }),
    );
    child.process.send("cpu");
  });
}

/** Disconnecting lets the child exit on its own (and write its CPU profile); kill it if it lingers. */
export async function stop(child: Child | undefined): Promise<void> {
  if (!child) return;
  const exited = new Promise<void>((resolve) => child.process.once("exit", () => resolve()));
  child.process.disconnect();
  const timer = setTimeout(() => child.process.kill(), 5000);
  await exited;
  clearTimeout(timer);
}

/** Signs `job.count` requests ahead of the run, split over worker threads (bench/presign.ts). */
export async function presign(
  job: PresignJob,
  workers = Math.max(1, cpus().length),
): Promise<PresignedRequest[]> {
  const per = Math.ceil(job.count / workers);
  const parts = await Promise.all(
    Array.from({ length: workers }, (_, w) => {
      const certificatePems =
        job.certificatePems.length > 1
          ? job.certificatePems.slice(w * per, (w + 1) * per)
          : job.certificatePems;
      return new Promise<PresignedRequest[]>((resolve, reject) => {
        // Workers do not take --import from execArgv on Node 20: register tsx inside the worker.
        const bootstrap = `import("tsx/esm/api").then((m) => { m.register(); return import(${JSON.stringify(join(BENCH_DIR, "presign.ts"))}); })`;
        const worker = new Worker(bootstrap, {
          eval: true,
          workerData: {
            ...job,
            certificatePems,
            count: Math.min(per, job.count - w * per),
            indexOffset: w * per,
          },
        });
        worker.once("message", resolve);
        worker.once("error", reject);
      });
    }),
  );
  return parts.flat();
}

export interface RunResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuUsPerRequest: number | undefined;
  /** Of it, the event loop thread's (bench/servers/proxy.ts children only). */
  readonly loopCpuUsPerRequest?: number | undefined;
  /** V8 heap bytes the measured server allocated per request (bench/servers/proxy.ts children only). */
  readonly heapBytesPerRequest?: number | undefined;
  readonly non2xx: number;
  /** Requests that failed without an answer, timeouts included (autocannon counts both). */
  readonly errors: number;
  /** Of `errors`, those that timed out. */
  readonly timeouts: number;
  readonly total: number;
  /** Requests written and requests answered in this run (autocannon's totalRequests, totalCompletedRequests). */
  readonly sent: number;
  readonly completed: number;
  /** Answers by status code ("200": n). */
  readonly statuses: Record<string, number>;
  /** The pool's size, and where its cursor stood after this run: every entry taken so far, warm-up included. */
  readonly poolSize: number;
  readonly poolConsumed: number;
}

/** Where a pool has got to: shared by the warm-up and the run against one gateway process, so no signature is sent twice. */
export interface Cursor {
  next: number;
}

/** Where a run goes when not to plain HTTP on 127.0.0.1: a URL, and for https the client's TLS options. */
export interface LoadTarget {
  readonly url: string;
  readonly tlsOptions?: ConnectionOptions;
}

/**
 * One autocannon run over `pool` (each request taken once, in turn, from `cursor`): for `seconds`,
 * or for `amount` requests. `measured` is the server whose CPU per request is reported.
 */
export async function load(
  target: number | LoadTarget,
  pool: readonly PresignedRequest[],
  cursor: Cursor,
  seconds: number,
  measured?: CpuSource,
  amount?: number,
  connections = 50,
): Promise<RunResult> {
  const { url, tlsOptions } = typeof target === "number" ? { url: `http://127.0.0.1:${target}` } : target;
  const options = {
    url,
    ...(tlsOptions ? { tlsOptions } : {}),
    connections,
    ...(amount ? { amount } : { duration: seconds }),
    requests: [
      {
        setupRequest: (req: Record<string, unknown>) => {
          const r = pool[cursor.next++ % pool.length]!;
          return { ...req, method: r.method, path: r.path, headers: r.headers, body: r.body };
        },
      },
    ],
  };
  const before = measured ? await usageOf(measured) : undefined;
  const result = await autocannon(options as unknown as autocannon.Options);
  const after = measured ? await usageOf(measured) : undefined;
  const total = result.requests.total;
  // Fields autocannon 8 returns that its typings leave out.
  const more = result as unknown as {
    statusCodeStats?: Record<string, { count: number }>;
    totalRequests?: number;
    totalCompletedRequests?: number;
  };
  const stats = more.statusCodeStats;
  return {
    rps: amount ? total / result.duration : result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUsPerRequest: before && after ? (after.cpuUs - before.cpuUs) / total : undefined,
    loopCpuUsPerRequest:
      before?.loopUs !== undefined && after?.loopUs !== undefined
        ? (after.loopUs - before.loopUs) / total
        : undefined,
    heapBytesPerRequest:
      before?.heapAllocated !== undefined && after?.heapAllocated !== undefined
        ? (after.heapAllocated - before.heapAllocated) / total
        : undefined,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    total,
    sent: more.totalRequests ?? total,
    completed: more.totalCompletedRequests ?? total,
    statuses: Object.fromEntries(Object.entries(stats ?? {}).map(([code, s]) => [code, s.count])),
    poolSize: pool.length,
    // setupRequest runs once per request written (autocannon 8), so this counts every entry sent.
    poolConsumed: cursor.next,
  };
}

/** How a run is judged (bench/validity.ts): whether its pool is single-use, and what it asks for. */
export interface JudgeOptions {
  /** Its pool's entries are presigned, each sendable once (false: unsigned requests, reused on purpose). */
  readonly singleUse?: boolean;
  readonly non2xxAskedFor?: boolean;
  readonly knobs?: RunFacts["knobs"];
}

/** A harness run as bench/validity.ts's facts. */
export function factsOf(run: RunResult, options: JudgeOptions = {}): RunFacts {
  return {
    non2xx: run.non2xx,
    errors: run.errors,
    timeouts: run.timeouts,
    sent: run.sent,
    completed: run.completed,
    statuses: run.statuses,
    ...(options.singleUse !== false ? { pool: { size: run.poolSize, consumed: run.poolConsumed } } : {}),
    ...(options.non2xxAskedFor ? { non2xxAskedFor: true } : {}),
    ...(options.knobs ? { knobs: options.knobs } : {}),
  };
}

/**
 * The runs a bench judged: an invalid one's reasons go to stderr as it is judged; at the end the
 * bench writes no section of RESULTS.md and prints no figures when any was invalid, and exits 1.
 */
export class Judged {
  private readonly refused: string[] = [];

  /** Judges one run; true when it is a result. `label` names it in the reasons. */
  ok(label: string, facts: RunFacts): boolean {
    const verdict = judgeRun(facts);
    if (verdict.valid) return true;
    this.refused.push(label);
    console.error(
      `bench: REFUSED ${label}: not a valid measurement (issue 42):\n${verdict.reasons.map((r) => `  - ${r}`).join("\n")}`,
    );
    return false;
  }

  get anyRefused(): boolean {
    return this.refused.length > 0;
  }

  /** At the end: names the refused runs; the exit code the bench should end with. */
  finish(what: string): number {
    if (this.refused.length === 0) return 0;
    console.error(
      `bench: ${this.refused.length} run(s) refused (${this.refused.join("; ")}): ${what} left out; reasons above`,
    );
    return 1;
  }
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * The headers a realistic TPP call carries besides the signature ones (about 2.6 KB signed), and
 * a 1 KiB payment body: what every bench request is made of.
 */
export function tppRequestHeaders(sessionId: string): Record<string, string> {
  return {
    Accept: "application/json",
    "TPP-Redirect-URI": "https://tpp.example.com/psd2/callback?session=7f3c2a",
    "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
    "PSU-IP-Address": "192.0.2.10",
    "PSU-User-Agent":
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
    "TPP-Session-ID": sessionId,
    "x-accept-fix": "amount-as-string",
  };
}

export const PAYMENT_BODY = JSON.stringify({
  instructedAmount: { amount: "125.50", currency: "NOK" },
  debtorAccount: { bban: "12345678903" },
  creditorAccount: { bban: "98765432105" },
  creditorName: "Kari Nordmann",
  remittanceInformationUnstructured: "x".repeat(800),
}).slice(0, 1024);
