/**
 * The isolation probe of bench/signing.ts, in a process of its own so that the saturating load
 * generator's event loop never delays it: autocannon at a low fixed rate over one connection (one
 * request in flight, each sent when the previous has been answered, `rate` per second at most),
 * taking presigned requests in turn from a pool file. Every response time is kept at hrtime
 * resolution (autocannon's own histogram has 1 ms steps and records only 2xx by default).
 */

import type { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import type { PresignedRequest } from "../presign.js";

export interface ProbeJob {
  readonly port: number;
  readonly seconds: number;
  readonly rate: number;
}

export interface ProbeResult {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly statuses: Record<string, number>;
  readonly errors: number;
}

const [poolFile] = process.argv.slice(2) as [string];
const pool = JSON.parse(readFileSync(poolFile, "utf8")) as PresignedRequest[];
let next = 0;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function probe(job: ProbeJob): Promise<ProbeResult> {
  const times: number[] = [];
  const tracker = autocannon({
    url: `http://127.0.0.1:${job.port}`,
    connections: 1,
    overallRate: job.rate,
    // autocannon "corrects" rate-limited latencies with a 1 ms expected interval: not wanted here.
    ignoreCoordinatedOmission: true,
    duration: job.seconds,
    requests: [
      {
        setupRequest: (req: Record<string, unknown>) => {
          const r = pool[next++ % pool.length]!;
          return { ...req, method: r.method, path: r.path, headers: r.headers, body: r.body };
        },
      },
    ],
  } as unknown as autocannon.Options) as unknown as EventEmitter & Promise<autocannon.Result>;
  tracker.on("response", (_client: unknown, _status: number, _bytes: number, ms: number) => times.push(ms));
  const result = await tracker;
  times.sort((a, b) => a - b);
  const stats = (result as unknown as { statusCodeStats?: Record<string, { count: number }> })
    .statusCodeStats;
  return {
    count: times.length,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    max: times.at(-1) ?? Number.NaN,
    statuses: Object.fromEntries(Object.entries(stats ?? {}).map(([code, s]) => [code, s.count])),
    errors: result.errors + result.timeouts,
  };
}

process.on("message", (m: ProbeJob | "cpu") => {
  if (m === "cpu") process.send?.({ cpu: process.cpuUsage() });
  else void probe(m).then((result) => process.send?.({ result }));
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: process.pid });
