/**
 * `workers: N`: a primary process that runs N gateway workers sharing the listening port
 * (node:cluster). The config refuses N > 1 with the memory store, whose counters would split
 * between processes. The primary restarts a worker that dies, passes SIGHUP on, and on SIGTERM
 * or SIGINT lets every worker drain and exit before it exits itself.
 */

import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry } from "prom-client";
import type { AnyGatewayConfig } from "../config/schema.js";
import { type ReadinessCheck, startAdminServer } from "../observability/admin.js";
import type { Logger } from "../observability/logger.js";

const READYZ_REQUEST = "psd2-gateway:readyz";
const READYZ_TIMEOUT_MS = 2_000;

/** In a worker: answer the primary's readiness questions (metrics go through prom-client's own IPC). */
export function answerReadiness(readiness: () => Promise<ReadinessCheck>): void {
  process.on("message", (message: { type?: string; id?: number }) => {
    if (message?.type !== READYZ_REQUEST) return;
    readiness().then(
      (r) => process.send?.({ type: READYZ_REQUEST, id: message.id, ready: r.ready, checks: r.checks }),
      (error: unknown) =>
        process.send?.({
          type: READYZ_REQUEST,
          id: message.id,
          ready: false,
          checks: { worker: { ok: false, detail: String(error) } },
        }),
    );
  });
}

/** Ready when every worker is up and says it is ready. */
async function clusterReadiness(expected: number): Promise<ReadinessCheck> {
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true);
  const answers = await Promise.all(
    workers.map(
      (worker, i) =>
        new Promise<{ pid: number | undefined; ready: boolean; checks: unknown }>((resolve) => {
          const id = Date.now() * 100 + i;
          const timer = setTimeout(() => {
            worker.off("message", onMessage);
            resolve({ pid: worker.process.pid, ready: false, checks: "no answer" });
          }, READYZ_TIMEOUT_MS);
          const onMessage = (m: { type?: string; id?: number; ready?: boolean; checks?: unknown }) => {
            if (m?.type !== READYZ_REQUEST || m.id !== id) return;
            clearTimeout(timer);
            worker.off("message", onMessage);
            resolve({ pid: worker.process.pid, ready: m.ready === true, checks: m.checks });
          };
          worker.on("message", onMessage);
          worker.send({ type: READYZ_REQUEST, id });
        }),
    ),
  );
  const checks: ReadinessCheck["checks"] = {
    workers: { ok: answers.length === expected, detail: `${answers.length} of ${expected} running` },
  };
  for (const a of answers) checks[`worker ${a.pid}`] = { ok: a.ready, detail: JSON.stringify(a.checks) };
  return { ready: Object.values(checks).every((c) => c.ok), checks };
}

const RESTART_DELAY_MS = 1_000;
const STARTED = "psd2-gateway:started";

/** In a worker, once its gateway serves: a worker that exits before saying so could not start. */
export function reportStarted(): void {
  process.send?.({ type: STARTED });
}

/**
 * Binds the admin listener, then forks the workers. Resolves true once every worker has started;
 * false when one of them could not (a taken port, an unreadable file), after stopping the others
 * and closing the admin listener: restarting it would only hang, retrying the same failure.
 */
export async function runPrimary(
  config: Pick<AnyGatewayConfig, "workers" | "admin">,
  logger: Logger,
): Promise<boolean> {
  const workers = config.workers;
  let stopping = false;

  // One admin listener for the whole cluster: the workers' metrics summed, readiness of all of them.
  // Bound before any worker starts, so a taken admin port fails with nothing to clean up.
  const aggregator = new AggregatorRegistry();
  const admin = config.admin.enabled
    ? await startAdminServer({
        host: config.admin.host,
        port: config.admin.port,
        metrics: { metrics: () => aggregator.clusterMetrics(), contentType: aggregator.contentType },
        readiness: () => clusterReadiness(workers),
      })
    : undefined;

  const each = (f: (w: Worker) => void) => {
    for (const w of Object.values(cluster.workers ?? {})) if (w) f(w);
  };
  /** Every worker gets `signal` (SIGTERM drains it); resolves once all have exited and admin is closed. */
  const stopWorkers = (signal: NodeJS.Signals): Promise<void> => {
    stopping = true;
    each((w) => w.process.kill(signal));
    return new Promise((resolve) => {
      const check = setInterval(() => {
        if (Object.keys(cluster.workers ?? {}).length > 0) return;
        clearInterval(check);
        void (admin?.close() ?? Promise.resolve()).then(resolve);
      }, 100);
    });
  };

  /** First-generation workers still starting; the cluster has started when it reaches 0. */
  let starting = workers;
  let settle!: (started: boolean) => void;
  const outcome = new Promise<boolean>((resolve) => {
    settle = resolve;
  });
  const fork = () => {
    const worker = cluster.fork();
    let started = false;
    worker.on("message", (message: { type?: string }) => {
      if (message?.type !== STARTED || started) return;
      started = true;
      if (starting > 0 && --starting === 0) settle(true);
    });
    worker.on("exit", (code, signal) => {
      if (stopping) return;
      if (!started && starting > 0) {
        logger.fatal(
          { worker: worker.process.pid, code, signal },
          "a gateway worker could not start (its log says why); stopping the others",
        );
        void stopWorkers("SIGTERM").then(() => settle(false));
        return;
      }
      logger.error({ worker: worker.process.pid, code, signal }, "gateway worker died; starting another");
      setTimeout(fork, RESTART_DELAY_MS).unref();
    });
  };
  for (let i = 0; i < workers; i++) fork();
  logger.info({ workers }, "primary started its gateway workers");
  if (admin) logger.info({ url: admin.url }, "admin listener (all workers): /metrics, /healthz, /readyz");

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    logger.info({ signal }, "stopping gateway workers");
    void stopWorkers(signal).then(() => process.exit(0));
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGHUP", () => each((w) => w.process.kill("SIGHUP")));
  return outcome;
}

export const isPrimary = (): boolean => cluster.isPrimary;
export const isWorker = (): boolean => cluster.isWorker;
