/**
 * The in-process micro-bench harness (bench/signature.bench.ts, bench/hot-path.bench.ts): each case
 * warms up, then runs for BENCH_SECONDS (default 1) per round; rounds are interleaved across cases
 * (BENCH_ROUNDS, default 3) and medians reported, with the V8 heap bytes each operation allocated
 * (from GCProfiler: what the collections freed plus what is still in use).
 */

import { GCProfiler, getHeapStatistics } from "node:v8";

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 1);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
export const WARMUP_SECONDS = Math.min(0.3, SECONDS / 2);

export interface Case {
  readonly name: string;
  /** Sync cases run in batches; async cases are awaited one at a time (latency, not throughput). */
  readonly run: () => unknown;
  readonly async?: boolean;
}

export interface Measured {
  readonly opsPerSecond: number;
  /** V8 heap bytes allocated per operation (Buffers' backing stores are outside the heap). */
  readonly heapBytesPerOp: number;
}

/** Results go here so that no call can be optimised away. */
let sink = 0;
function consume(value: unknown): void {
  sink = (sink + (value === true ? 1 : typeof value === "string" ? value.length : 3)) | 0;
}

/** Read it once at the end (print it if it is an impossible value) so the sink stays live. */
export function sinkValue(): number {
  return sink;
}

function nowSeconds(): number {
  return Number(process.hrtime.bigint()) / 1e9;
}

/** Operations per second over about `seconds`, and the heap bytes they allocated. */
export async function measure(benchCase: Case, seconds: number): Promise<Measured> {
  const profiler = new GCProfiler();
  profiler.start();
  const usedBefore = getHeapStatistics().used_heap_size;
  let operations = 0;
  const start = nowSeconds();
  let elapsed = 0;
  if (benchCase.async) {
    while (elapsed < seconds) {
      consume(await benchCase.run());
      operations++;
      elapsed = nowSeconds() - start;
    }
  } else {
    let batch = 1;
    while (elapsed < seconds) {
      const batchStart = nowSeconds();
      for (let i = 0; i < batch; i++) consume(benchCase.run());
      operations += batch;
      const now = nowSeconds();
      elapsed = now - start;
      // Aim for batches of about 5 ms so that reading the clock costs nothing measurable.
      if (now - batchStart < 0.005) batch *= 2;
    }
  }
  const usedAfter = getHeapStatistics().used_heap_size;
  let freed = 0;
  for (const gc of profiler.stop().statistics)
    freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  return {
    opsPerSecond: operations / elapsed,
    heapBytesPerOp: (freed + usedAfter - usedBefore) / operations,
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export async function runAll(cases: readonly Case[]): Promise<Map<string, Measured>> {
  for (const c of cases) await measure(c, WARMUP_SECONDS);
  const rounds = new Map<string, Measured[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) rounds.get(c.name)!.push(await measure(c, SECONDS));
  }
  return new Map(
    [...rounds].map(([name, values]) => [
      name,
      {
        opsPerSecond: median(values.map((v) => v.opsPerSecond)),
        heapBytesPerOp: median(values.map((v) => v.heapBytesPerOp)),
      },
    ]),
  );
}

export function formatOps(opsPerSecond: number): string {
  return Math.round(opsPerSecond).toLocaleString("en-US");
}

export function formatMicros(opsPerSecond: number): string {
  const micros = 1e6 / opsPerSecond;
  return micros < 10 ? micros.toFixed(2) : micros < 100 ? micros.toFixed(1) : Math.round(micros).toString();
}
