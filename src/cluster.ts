/**
 * `workers: N`: a primary process that runs N gateway workers sharing the listening port
 * (node:cluster). The config refuses N > 1 with the memory store, whose counters would split
 * between processes. The primary restarts a worker that dies, passes SIGHUP on, and on SIGTERM
 * or SIGINT lets every worker drain and exit before it exits itself.
 */

import cluster, { type Worker } from "node:cluster";
import type { Logger } from "./observability/logger.js";

const RESTART_DELAY_MS = 1_000;

export function runPrimary(workers: number, logger: Logger): void {
  let stopping = false;
  const fork = () => {
    const worker = cluster.fork();
    worker.on("exit", (code, signal) => {
      if (stopping) return;
      logger.error({ pid: worker.process.pid, code, signal }, "gateway worker died; starting another");
      setTimeout(fork, RESTART_DELAY_MS).unref();
    });
  };
  for (let i = 0; i < workers; i++) fork();
  logger.info({ workers }, "primary started its gateway workers");

  const each = (f: (w: Worker) => void) => {
    for (const w of Object.values(cluster.workers ?? {})) if (w) f(w);
  };
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping gateway workers");
    each((w) => w.process.kill(signal));
    const check = setInterval(() => {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        clearInterval(check);
        process.exit(0);
      }
    }, 100);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGHUP", () => each((w) => w.process.kill("SIGHUP")));
}

export const isPrimary = (): boolean => cluster.isPrimary;
