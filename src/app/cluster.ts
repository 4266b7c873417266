/**
 * `workers: N`: a primary process that runs N gateway workers sharing the listening port
 * (node:cluster). The config refuses N > 1 with the memory store, whose counters would split
 * between processes. The primary fetches every trust document for its workers (fetch-relay.ts),
 * restarts a worker that dies, passes SIGHUP on, and on SIGTERM or SIGINT lets every worker drain
 * and exit before it exits itself.
 */

import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry } from "prom-client";
import type { AnyGatewayConfig } from "../config/schema.js";
import type { ValidationReport } from "../eidas/index.js";
import { type ReadinessCheck, startAdminServer, type ValidationReports } from "../observability/admin.js";
import type { Logger } from "../observability/logger.js";
import { PrimaryMetrics } from "../observability/metrics.js";
import type { ClusterTrustReport, TrustReport, WorkerTrustReport } from "../trust/source-status.js";
import { adminAccessOf } from "./admin-access.js";
import { FETCH_MESSAGE, FetchRelay } from "./fetch-relay.js";

const READYZ_REQUEST = "psd2-gateway:readyz";
const TRUST_REQUEST = "psd2-gateway:trust";
const REPORT_REQUEST = "psd2-gateway:validation-report";
const ASSESS_REQUEST = "psd2-gateway:assess-certificate";
const ANSWER_TIMEOUT_MS = 2_000;
/** A certificate judged afresh may wait on OCSP and CRLs as a first request does. */
const ASSESS_TIMEOUT_MS = 30_000;

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

/** In a worker: answer the primary's questions for /trust with this worker's own view. */
export function answerTrustReports(report: () => TrustReport): void {
  process.on("message", (message: { type?: string; id?: number }) => {
    if (message?.type !== TRUST_REQUEST) return;
    try {
      process.send?.({ type: TRUST_REQUEST, id: message.id, report: report() });
    } catch (error) {
      process.send?.({ type: TRUST_REQUEST, id: message.id, error: (error as Error).message });
    }
  });
}

/**
 * In a worker: answer the primary's questions for /trust/reports/<id> (a report this worker made)
 * and POST /trust/certificate (a certificate judged by this worker's verifier).
 */
export function answerValidationReports(reports: () => ValidationReports | undefined): void {
  type Question = {
    type?: string;
    id?: number;
    reportId?: unknown;
    certificate?: unknown;
    purpose?: unknown;
  };
  process.on("message", (message: Question) => {
    const type = message?.type;
    if (type !== REPORT_REQUEST && type !== ASSESS_REQUEST) return;
    const answer = (work: Promise<ValidationReport | undefined>) =>
      work.then(
        (report) => process.send?.({ type, id: message.id, report }),
        (error: unknown) => process.send?.({ type, id: message.id, error: (error as Error).message }),
      );
    const verifier = reports();
    if (!verifier) return answer(Promise.resolve(undefined));
    if (type === REPORT_REQUEST) return answer(verifier.get(String(message.reportId)));
    const purpose = message.purpose === "qwac" ? "qwac" : "qseal";
    return answer(verifier.assess(String(message.certificate), purpose));
  });
}

let nextQuestion = 1;

/**
 * Asks every connected worker (or the first, with `one`) `type` with `payload`: each one's answer,
 * or undefined when it gave none within `timeoutMs`.
 */
function askWorkers<T extends { type?: string; id?: number }>(
  type: string,
  payload: Record<string, unknown> = {},
  options: { one?: boolean; timeoutMs?: number } = {},
): Promise<{ pid: number | undefined; answer: T | undefined }[]> {
  const connected = Object.values(cluster.workers ?? {}).filter(
    (w): w is Worker => w?.isConnected() === true,
  );
  const workers = options.one ? connected.slice(0, 1) : connected;
  return Promise.all(
    workers.map(
      (worker) =>
        new Promise<{ pid: number | undefined; answer: T | undefined }>((resolve) => {
          const id = nextQuestion++;
          const timer = setTimeout(() => {
            worker.off("message", onMessage);
            resolve({ pid: worker.process.pid, answer: undefined });
          }, options.timeoutMs ?? ANSWER_TIMEOUT_MS);
          const onMessage = (m: T) => {
            if (m?.type !== type || m.id !== id) return;
            clearTimeout(timer);
            worker.off("message", onMessage);
            resolve({ pid: worker.process.pid, answer: m });
          };
          worker.on("message", onMessage);
          worker.send({ ...payload, type, id });
        }),
    ),
  );
}

/** Ready when every worker is up and says it is ready. */
async function clusterReadiness(expected: number): Promise<ReadinessCheck> {
  type Answer = { type?: string; id?: number; ready?: boolean; checks?: unknown };
  const answers = (await askWorkers<Answer>(READYZ_REQUEST)).map(({ pid, answer }) =>
    answer
      ? { pid, ready: answer.ready === true, checks: answer.checks }
      : { pid, ready: false, checks: "no answer" },
  );
  const checks: ReadinessCheck["checks"] = {
    workers: { ok: answers.length === expected, detail: `${answers.length} of ${expected} running` },
  };
  for (const a of answers) checks[`worker ${a.pid}`] = { ok: a.ready, detail: JSON.stringify(a.checks) };
  return { ready: Object.values(checks).every((c) => c.ok), checks };
}

/** /trust on the primary: what it fetched for the workers, and each worker's own view. */
async function clusterTrust(relay: FetchRelay): Promise<ClusterTrustReport> {
  type Answer = { type?: string; id?: number; report?: TrustReport; error?: string };
  const workers = (await askWorkers<Answer>(TRUST_REQUEST)).map(({ pid, answer }): WorkerTrustReport => {
    if (answer?.report) return { pid, ...answer.report };
    return { pid, error: answer?.error ?? `no answer within ${ANSWER_TIMEOUT_MS / 1000} s` };
  });
  return { primary: { fetches: relay.status() }, workers };
}

/**
 * The primary's validation reports: a report is looked for in every worker (each keeps its own),
 * a certificate is judged by one of them (they share the trust sources' documents).
 */
const clusterReports: ValidationReports = {
  async get(reportId) {
    type Answer = { type?: string; id?: number; report?: ValidationReport };
    const answers = await askWorkers<Answer>(REPORT_REQUEST, { reportId });
    return answers.find((a) => a.answer?.report)?.answer?.report;
  },
  async assess(certificate, purpose) {
    type Answer = { type?: string; id?: number; report?: ValidationReport; error?: string };
    const [first] = await askWorkers<Answer>(
      ASSESS_REQUEST,
      { certificate, purpose },
      { one: true, timeoutMs: ASSESS_TIMEOUT_MS },
    );
    if (first?.answer?.report) return first.answer.report;
    throw new Error(
      first === undefined
        ? "no worker is running"
        : (first.answer?.error ?? `worker ${first.pid} gave no answer within ${ASSESS_TIMEOUT_MS / 1000} s`),
    );
  },
};

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
  config: Pick<AnyGatewayConfig, "workers" | "admin" | "mode">,
  logger: Logger,
): Promise<boolean> {
  const workers = config.workers;
  let stopping = false;
  // Structured clone over IPC: a fetched document's bytes travel as bytes, not as a JSON array.
  cluster.setupPrimary({ serialization: "advanced" });
  const primaryMetrics = new PrimaryMetrics();
  const relay = new FetchRelay({ onOutcome: (outcome) => primaryMetrics.trustFetches.inc({ outcome }) });

  // One admin listener for the whole cluster: the workers' metrics summed (and the primary's own),
  // readiness and trust of all of them. Bound before any worker starts, so a taken admin port fails
  // with nothing to clean up.
  const aggregator = new AggregatorRegistry();
  const admin = config.admin.enabled
    ? await startAdminServer({
        host: config.admin.host,
        port: config.admin.port,
        metrics: {
          metrics: async () =>
            `${await aggregator.clusterMetrics()}\n${await primaryMetrics.registry.metrics()}`,
          contentType: aggregator.contentType,
        },
        readiness: () => clusterReadiness(workers),
        // Egress workers hold no trust sources: /trust stays a 404 there, as with one process.
        ...(config.mode === "ingress"
          ? { trust: () => clusterTrust(relay), reports: () => clusterReports }
          : {}),
        access: adminAccessOf(config.admin, config.mode, logger),
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
      if (message?.type === FETCH_MESSAGE) {
        // A worker gone by the time the answer is in is not answered: nothing of it stays behind.
        void relay.answer(message).then((answer) => {
          if (answer && worker.isConnected()) worker.send(answer);
        });
        return;
      }
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
  if (admin)
    logger.info({ url: admin.url }, "admin listener (all workers): /metrics, /healthz, /readyz, /trust");

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    logger.info({ signal }, "stopping gateway workers");
    void stopWorkers(signal).then(() => process.exit(0));
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGHUP", () => {
    // An operator's refresh fetches for real: no kept copy stands in for it.
    relay.clear();
    each((w) => w.process.kill("SIGHUP"));
  });
  return outcome;
}

export const isPrimary = (): boolean => cluster.isPrimary;
export const isWorker = (): boolean => cluster.isWorker;
