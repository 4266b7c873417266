/**
 * The gateways of bench/signing.ts, one per process (started like bench/servers/proxy.ts starts its
 * gateway, through the one composition root):
 * - `egress`: one bank profile (`/bank` → the backend over plain HTTP, no QWAC: no mutual TLS),
 *   signing every request with TPP A's QSealC, SPEC 5 signing rules, response checking off;
 * - `ingress-signing`: full verification, and every backend response signed with the demo bank's
 *   QSealC (`responseSigning`, as config/default.yaml turns it on);
 * - `ingress`: the same without responseSigning (the control of the isolation measurement);
 * - `egress-workers`: `egress` in one worker process per core behind one port (node:cluster, as
 *   the egress config's `workers` runs it); this process is the primary and answers for them all.
 *
 * Answers "cpu" with its CPU time (all threads: the event loop and libuv's pool, where RSA signing
 * runs), its event-loop utilisation, the event-loop thread's time on a core and waiting for one,
 * and what it answered, counted by status, code and step.
 * BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the process when it is stopped.
 */

import cluster, { type Worker } from "node:cluster";
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { startGateway } from "../../src/app.js";
import { validateEgressConfig } from "../../src/config/load.js";
import type { EgressEvent, RequestEvent } from "../../src/events.js";
import { createLogger } from "../../src/observability/logger.js";
import { benchGatewayConfig } from "./gateway-config.js";

const [mode, backendUrl, pkiDir] = process.argv.slice(2) as [string, string, string];

export interface GatewayStats {
  readonly cpu: NodeJS.CpuUsage;
  readonly elu: { idle: number; active: number; utilization: number };
  /** Answers so far, by `status code step`. */
  readonly answers: Record<string, number>;
  /** Egress: the summed time from "sign" to "signed" (queue on libuv's pool included), ms. */
  readonly signingMs: number;
  readonly signed: number;
  /**
   * The event-loop thread's time on a core and waiting for one (runnable, but the kernel ran
   * another thread: a libuv pool thread signing, the client, the backend…), ns so far; Linux
   * /proc schedstat, -1 elsewhere.
   */
  readonly loopCpuNs: number;
  readonly loopWaitNs: number;
}

function loopThread(): { cpu: number; wait: number } {
  try {
    const [cpu, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8")
      .split(" ")
      .map(Number);
    return { cpu: cpu ?? -1, wait: wait ?? -1 };
  } catch {
    return { cpu: -1, wait: -1 };
  }
}

const answers: Record<string, number> = {};
let signingMs = 0;
let signed = 0;
const onRequest = (event: RequestEvent | EgressEvent) => {
  const key = `${event.status} ${event.code ?? "-"} ${event.step ?? "-"}`;
  answers[key] = (answers[key] ?? 0) + 1;
  const ms = (event as EgressEvent).signingMs;
  if (ms !== undefined) {
    signingMs += ms;
    signed++;
  }
};

/** The primary of `egress-workers`: forks the workers, reports their port, sums their stats. */
async function primary(): Promise<void> {
  const workers: Worker[] = [];
  const ports = await Promise.all(
    Array.from({ length: availableParallelism() }, () => {
      const worker = cluster.fork();
      workers.push(worker);
      return new Promise<number>((resolve) =>
        worker.once("message", (m: { ready?: number }) => resolve(m.ready ?? 0)),
      );
    }),
  );
  process.on("message", async (m) => {
    if (m !== "cpu") return;
    const each = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<GatewayStats>((resolve) => {
            worker.once("message", (stats: GatewayStats) => resolve(stats));
            worker.send("cpu");
          }),
      ),
    );
    const own = process.cpuUsage();
    const merged: Record<string, number> = {};
    for (const stats of each)
      for (const [key, n] of Object.entries(stats.answers)) merged[key] = (merged[key] ?? 0) + n;
    const sum = (f: (s: GatewayStats) => number) => each.reduce((total, stats) => total + f(stats), 0);
    const active = sum((x) => x.elu.active);
    const idle = sum((x) => x.elu.idle);
    const stats: GatewayStats = {
      cpu: { user: own.user + sum((x) => x.cpu.user), system: own.system + sum((x) => x.cpu.system) },
      // The loops together: "busy" is the share of all their time they were busy.
      elu: { active, idle, utilization: active / (active + idle) },
      answers: merged,
      signingMs: sum((x) => x.signingMs),
      signed: sum((x) => x.signed),
      loopCpuNs: sum((x) => x.loopCpuNs),
      loopWaitNs: sum((x) => x.loopWaitNs),
    };
    process.send?.(stats);
  });
  process.on("disconnect", () => {
    for (const worker of workers) worker.process.kill();
    process.exit(0);
  });
  process.send?.({ ready: ports[0] });
}

async function main() {
  const logger = createLogger("silent");
  if (mode === "egress-workers" && cluster.isPrimary) return primary();
  if (mode === "egress" || mode === "egress-workers") {
    const config = validateEgressConfig({
      mode: "egress",
      listen: { host: "127.0.0.1", port: 0 },
      admin: { enabled: false },
      log: { level: "silent" },
      banks: [
        {
          name: "bench",
          prefix: "/bank",
          url: backendUrl,
          qseal: { cert: `${pkiDir}/tpp/tpp-a-qseal.pem`, key: `${pkiDir}/tpp/tpp-a-qseal.key.pem` },
          defaultHeaders: { "TPP-Redirect-URI": "https://tpp.example.com/psd2/callback" },
          responses: { mode: "off" },
        },
      ],
    });
    const gateway = await startGateway(config, { logger, onRequest });
    process.send?.({ ready: Number(new URL(gateway.url).port) });
    return;
  }
  const config = benchGatewayConfig(
    pkiDir,
    backendUrl,
    mode === "ingress-signing"
      ? {
          responseSigning: {
            qseal: { cert: `${pkiDir}/bank/bank-qseal.pem`, key: `${pkiDir}/bank/bank-qseal.key.pem` },
          },
        }
      : {},
  );
  const gateway = await startGateway(config, { logger, onRequest });
  process.send?.({ ready: Number(new URL(gateway.url).port) });
}

process.on("message", (m) => {
  if (m !== "cpu" || (mode === "egress-workers" && cluster.isPrimary)) return;
  const thread = loopThread();
  const stats: GatewayStats = {
    cpu: process.cpuUsage(),
    elu: performance.eventLoopUtilization(),
    answers,
    signingMs,
    signed,
    loopCpuNs: thread.cpu,
    loopWaitNs: thread.wait,
  };
  process.send?.(stats);
});
// BENCH_CPU_PROF=<dir>: a V8 CPU profile of the gateway process (as in bench/servers/proxy.ts).
const profileDir = process.env.BENCH_CPU_PROF;
let profiler: Session | undefined;
if (profileDir) {
  profiler = new Session();
  profiler.connect();
  profiler.post("Profiler.enable", () => profiler!.post("Profiler.start"));
}
process.on("disconnect", () => {
  if (mode === "egress-workers" && cluster.isPrimary) return; // primary() handles it
  if (!profiler) process.exit(0);
  profiler.post("Profiler.stop", (error, result) => {
    if (!error)
      writeFileSync(join(profileDir!, `${mode}-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    process.exit(0);
  });
});
void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
