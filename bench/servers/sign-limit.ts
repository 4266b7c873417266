/**
 * The machine's RSA-2048/SHA-256 signing limit for bench/signing.ts, in a process of its own
 * (pinned to every core, nothing else running): bare `crypto.sign` with a cached KeyObject over a
 * response-sized signing string, either
 * - `async`: `crypto.sign(alg, data, key, callback)` on libuv's thread pool (UV_THREADPOOL_SIZE,
 *   default 4 threads), `inFlight` signatures outstanding at all times; or
 * - `workers`: one worker thread per core, each signing synchronously in a loop.
 */

import { createPrivateKey, randomUUID, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { Worker } from "node:worker_threads";

export interface LimitJob {
  readonly mode: "async" | "workers";
  readonly seconds: number;
  /** Async: signatures outstanding at all times. */
  readonly inFlight?: number;
  /** Workers: how many (default one per core). */
  readonly workers?: number;
}

export interface LimitResult {
  readonly signsPerSecond: number;
  /** The process's CPU time per signature, µs (all threads). */
  readonly cpuUsPerSign: number;
  readonly threads: number;
}

const [keyFile] = process.argv.slice(2) as [string];
const keyPem = readFileSync(keyFile, "utf8");
const key = createPrivateKey(keyPem);
/** What a response signature covers: `date digest x-request-id` (ingress responseSigning's default). */
const DATA = Buffer.from(
  `date: ${new Date().toUTCString()}\ndigest: SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nx-request-id: ${randomUUID()}`,
  "latin1",
);
const WARM_UP_MS = 500;

/** Keeps `inFlight` signatures outstanding; counts those that finish inside [start, end). */
function asyncFor(ms: number, inFlight: number): Promise<number> {
  return new Promise((resolve) => {
    const end = performance.now() + ms;
    let done = 0;
    let outstanding = 0;
    const one = () => {
      outstanding++;
      sign("sha256", DATA, key, (error) => {
        if (error) throw error;
        outstanding--;
        if (performance.now() < end) {
          done++;
          one();
        } else if (outstanding === 0) resolve(done);
      });
    };
    for (let i = 0; i < inFlight; i++) one();
  });
}

async function runAsync(job: LimitJob): Promise<LimitResult> {
  const inFlight = job.inFlight ?? 64;
  await asyncFor(WARM_UP_MS, inFlight);
  const cpu = process.cpuUsage();
  const start = performance.now();
  const done = await asyncFor(job.seconds * 1000, inFlight);
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    signsPerSecond: done / elapsed,
    cpuUsPerSign: (used.user + used.system) / done,
    threads: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
  };
}

/** A CommonJS worker: warms up, says so, then signs synchronously for `seconds` and reports its count. */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { createPrivateKey, sign } = require("node:crypto");
const key = createPrivateKey(workerData.keyPem);
const data = Buffer.from(workerData.data, "latin1");
const warm = performance.now() + workerData.warmUpMs;
while (performance.now() < warm) sign("sha256", data, key);
parentPort.once("message", ({ seconds }) => {
  const start = performance.now();
  const end = start + seconds * 1000;
  let count = 0;
  while (performance.now() < end) { sign("sha256", data, key); count++; }
  parentPort.postMessage({ count, seconds: (performance.now() - start) / 1000 });
});
parentPort.postMessage("ready");
`;

async function runWorkers(job: LimitJob): Promise<LimitResult> {
  const n = job.workers ?? cpus().length;
  const workers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Worker>((resolve, reject) => {
          const w = new Worker(WORKER, {
            eval: true,
            workerData: { keyPem, data: DATA.toString("latin1"), warmUpMs: WARM_UP_MS },
          });
          w.once("message", () => resolve(w));
          w.once("error", reject);
        }),
    ),
  );
  const cpu = process.cpuUsage();
  const counts = await Promise.all(
    workers.map(
      (w) =>
        new Promise<{ count: number; seconds: number }>((resolve) => {
          w.once("message", resolve);
          w.postMessage({ seconds: job.seconds });
        }),
    ),
  );
  const used = process.cpuUsage(cpu);
  await Promise.all(workers.map((w) => w.terminate()));
  const total = counts.reduce((n, c) => n + c.count, 0);
  return {
    signsPerSecond: counts.reduce((rate, c) => rate + c.count / c.seconds, 0),
    cpuUsPerSign: (used.user + used.system) / total,
    threads: n,
  };
}

process.on("message", (job: LimitJob) => {
  void (job.mode === "async" ? runAsync(job) : runWorkers(job)).then((result) => process.send?.({ result }));
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: process.pid });
