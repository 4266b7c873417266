/**
 * Ingress mode's parts, which the one lifecycle (mode.ts) runs after binding the listeners: the
 * trust sources (app/trust.ts), verdict cache, limit store, metrics, demo bank, backend and request
 * path, and the watch of the TLS and trust files. A configuration reload builds anew only the parts
 * whose sections changed, beside the running ones, and swaps them for new requests.
 */

import { randomBytes, X509Certificate } from "node:crypto";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import {
  type Chain,
  type CheckContext,
  NO_COUNTS,
  REPLAY_CLOCK_MARGIN_MS,
  sumCounts,
} from "../checks/index.js";
import { configSchema, type GatewayConfig } from "../config/schema.js";
import { DEFECT_CHANNEL, type DefectEvent, type TppRegister, type TppVerifier } from "../eidas/index.js";
import type { RequestObserver } from "../events.js";
import { Backend } from "../forward/backend.js";
import { HandOverStore, type LimitStore, storeReadinessOf, WindowedStore } from "../limits/index.js";
import type { ReadinessCheck, ValidationReports } from "../observability/admin.js";
import type { Logger } from "../observability/logger.js";
import { GatewayMetrics } from "../observability/metrics.js";
import { recordRequest } from "../observability/request-log.js";
import type { KeyDirectoryResolver } from "../trust/key-resolver.js";
import type { TrustSourceStatus } from "../trust/source-status.js";
import { type CertificateSummary, commonName, summaryOf } from "./certificate-summary.js";
import { answerTrustReports, answerValidationReports } from "./cluster.js";
import { type Credentials, credentialFiles, loadCredentials } from "./credentials.js";
import { evidenceReadiness, startEvidence } from "./evidence.js";
import { fetchThroughPrimary } from "./fetch-relay.js";
import { followedWatch } from "./file-watch.js";
import { keyResolverOf, rememberingTrusted } from "./keys.js";
import { type ConfigFile, type Mode, type ModeContext, type ModeParts, runMode } from "./mode.js";
import { demoBankRestartKeys, type RequestPath, requestPathOf, verifierOf } from "./request-path.js";
import { createLimitStore } from "./store.js";
import { startTrust, type Trust } from "./trust.js";
import { RecentReports } from "./validation-reports.js";

export interface IngressGateway {
  readonly url: string;
  readonly server: Server;
  readonly verifier: TppVerifier;
  readonly register: TppRegister;
  readonly backendUrl: string;
  readonly store: LimitStore;
  readonly metrics: GatewayMetrics;
  /** The admin listener's base URL (/metrics, /healthz, /readyz), when enabled. */
  readonly adminUrl: string | undefined;
  readiness(): Promise<ReadinessCheck>;
  /**
   * SIGHUP: reloads TLS certificates, trust store and CRLs (on failure keeps the old ones and rejects
   * with the reason), refreshes the TPP register from its sources and reads the configuration file again.
   */
  reload(): Promise<void>;
  /**
   * Takes over a reloaded configuration for new requests: the chain, routes and roles, limits,
   * identity and forwarding headers, backend, response signing; requests in flight finish as they
   * began. Throws, keeping the running configuration, when it cannot be built; returns the keys
   * that changed but need a restart to take effect (kept as they were).
   */
  reconfigure(next: GatewayConfig): Promise<string[]>;
  /** Stops accepting, lets requests in flight finish, closes what is still open after `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

export type { ConfigFile } from "./mode.js";

/** A backend the command line started for this gateway (the demo bank), closed with it. */
export interface StartedBackend {
  /** Where the gateway forwards to (http://localhost with `socketPath`). */
  readonly url: string;
  /** A Unix socket the gateway connects to instead of the URL's host and port. */
  readonly socketPath?: string;
  /** Where its browser-facing pages are (the demo bank's SCA page), for the start-up line. */
  readonly scaUrl?: string;
  /** Headers the gateway adds to every request it forwards there (and removes from its clients'). */
  readonly forwardHeaders?: Readonly<Record<string, string>>;
  /** The operator's reset of everything it holds: the admin listener's POST /sandbox/reset. */
  resetAll?(): void;
  close(): Promise<void>;
}

/** What the demo bank is started with: its config, the names the gateway writes, this start's secret. */
export interface DemoBankRequest {
  readonly sandbox: GatewayConfig["sandbox"];
  readonly identityHeaders: GatewayConfig["identityHeaders"];
  /** Random per start: the gateway adds it to every call it forwards, the bank refuses calls without it. */
  readonly gatewaySecret: string;
}

export interface IngressDependencies {
  readonly logger: Logger;
  readonly now?: () => number;
  /** A store made by the caller (tests); otherwise the configured one is created. */
  readonly store?: LimitStore;
  readonly onRequest?: RequestObserver;
  /**
   * Running as a cluster worker: metrics and trust are reported to the primary, which owns the admin
   * listener, and trust documents are fetched through it.
   */
  readonly clusterWorker?: boolean;
  /** Starts the demo bank when `backend.url` is `sandbox` (the command line supplies it). */
  readonly startDemoBank?: (request: DemoBankRequest) => Promise<StartedBackend>;
  /**
   * Where the configuration came from: read again (and validated; it throws why not) on SIGHUP
   * and, watched with the other files, when it changes.
   */
  readonly configFile?: ConfigFile;
}

/** Ingress as the one lifecycle runs it (mode.ts): its parts are startComponents'. */
const ingressMode = (deps: IngressDependencies): Mode<GatewayConfig, Components> => ({
  name: "ingress",
  schema: configSchema,
  restartKeys: demoBankRestartKeys,
  // The demo bank reads the identity header names it started with: they stay until a restart.
  keep: (running, next) =>
    running.backend.url === "sandbox" && next.backend.url === "sandbox"
      ? { ...next, identityHeaders: running.identityHeaders }
      : next,
  start: (config, context) => startComponents(config, deps, context),
  adminRoutes: (parts) => ({
    trust: () => parts()?.trust.report() ?? { sources: [] },
    reports: () => {
      const running = parts();
      return running && validationReportsOf(running);
    },
    sandboxReset: () => parts()?.resetSandbox,
  }),
  // The primary's /trust shows every worker's view; its validation reports are the workers'.
  answerPrimary: (running) => {
    answerTrustReports(() => running.trust.report());
    answerValidationReports(() => validationReportsOf(running));
  },
});

export async function startIngressGateway(
  config: GatewayConfig,
  deps: IngressDependencies,
): Promise<IngressGateway> {
  const mode = await runMode(ingressMode(deps), config, deps);
  const components = mode.parts;
  return {
    url: mode.url,
    server: mode.server,
    // What a reload swaps is read at each use.
    get verifier() {
      return components.verifier;
    },
    get register() {
      return components.register;
    },
    get backendUrl() {
      return components.backendUrl;
    },
    get store() {
      return components.store;
    },
    metrics: components.metrics,
    adminUrl: mode.adminUrl,
    readiness: mode.readiness,
    reload: mode.reload,
    reconfigure: mode.reconfigure,
    close: mode.close,
  };
}

/** Ingress's parts: what the lifecycle runs, and what the gateway's getters read. */
interface Components extends ModeParts<GatewayConfig> {
  readonly metrics: GatewayMetrics;
  /** The chain and exchange factory the listener serves now (replaced by a configuration reload). */
  path: RequestPath;
  readonly verifier: TppVerifier;
  /** The validation reports made lately (/trust/reports/<id>). */
  readonly reports: RecentReports;
  readonly register: TppRegister;
  readonly store: LimitStore;
  readonly backendUrl: string;
  /** The demo bank's reset of every TPP's room, when it runs (the admin listener's POST /sandbox/reset). */
  readonly resetSandbox: (() => void) | undefined;
  /** Every trust source: CA and CRL folders, register, trusted lists, fetched CRLs, OCSP. */
  readonly trust: Trust;
  readonly tlsCertificate: () => CertificateSummary | undefined;
}

/** What the admin listener (or, in a worker, the primary's) asks of certificate validation. */
function validationReportsOf(components: Components): ValidationReports {
  return {
    get: async (id) => components.reports.get(id),
    assess: (certificate, purpose) => components.verifier.assess(certificate, purpose),
  };
}

async function startComponents(
  config: GatewayConfig,
  deps: IngressDependencies,
  { listener, started, draining, readiness }: ModeContext,
): Promise<Components> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;

  // The verifier and metrics come after the trust sources, which report to both: reached through these.
  let metricsLater: GatewayMetrics | undefined;
  /** Documents refused while the sources first loaded, counted once the metrics exist. */
  const refusedBeforeMetrics: { source_kind: string; reason: string }[] = [];
  let verifierLater: TppVerifier | undefined;

  // Trust, verifier and store are swapped by a configuration reload: every reader goes through these.
  const trustDeps = {
    logger,
    now,
    // In a cluster the primary fetches each document once for every worker.
    ...(deps.clusterWorker ? { fetch: fetchThroughPrimary } : {}),
    onChange: () => verifierLater?.invalidate(),
    events: {
      ocspAnswered: (outcome: string, seconds: number) =>
        metricsLater?.ocspRequests.observe({ outcome }, seconds),
      unknownStatus: (action: string) => metricsLater?.revocationUnknown.inc({ action }),
      documentRefused: (kind: string, reason: string) => {
        if (metricsLater) metricsLater.trustDocumentsRefused.inc({ source_kind: kind, reason });
        else refusedBeforeMetrics.push({ source_kind: kind, reason });
      },
    },
  };
  let trust = await startTrust(config, trustDeps);
  // The running one at shutdown (a reload replaces it).
  started.add(() => trust.stop());

  const reports = new RecentReports();
  const verifierFor = (c: GatewayConfig, t: Trust) =>
    verifierOf(c, t, logger, now, (report) => {
      reports.add(report);
      metricsLater?.certificateValidations.inc({
        indication: report.indication,
        sub_indication: report.subIndication ?? "",
        check: report.check ?? "",
      });
    });
  let verifier = verifierFor(config, trust);
  verifierLater = verifier;
  // Keys a JWS names instead of sending: fetched, like trust documents, once for all workers. A
  // reload that changes `keys` builds a new resolver: what the old one fetched or saw is dropped.
  const keysOf = (c: GatewayConfig) =>
    keyResolverOf(c, {
      now,
      ...(deps.clusterWorker ? { fetch: fetchThroughPrimary } : {}),
      onFetch: (host, outcome, detail) => {
        metricsLater?.keyDirectoryFetches.inc({ result: outcome });
        if (outcome === "failed") logger.warn({ host, err: detail }, "key directory could not be read");
      },
    });
  let keys = keysOf(config);

  // Each store remembers the longest window it was asked to keep: a store replacing it consults it that long.
  const storeOf = async (c: GatewayConfig) =>
    new WindowedStore(
      await createLimitStore(c.store, c.replay.maxEntries, {
        now,
        onEvict: (what, key) =>
          logger.warn(
            { what, key: key.slice(0, 12) },
            "limit store evicted an entry before its time; raise store.maxWindows or use redis",
          ),
        onSnapshotProblem: (message) => logger.error(message),
        onConnectionError: throttled(30_000, (error: Error) =>
          logger.warn({ err: error.message }, "limit store connection failed; retrying"),
        ),
      }),
    );
  let store: LimitStore = deps.store ?? (await storeOf(config));
  /**
   * The store `to` needs, and whether it hands the running one over: the running store (a memory
   * store whose state stays, or nothing of it changed), a new connection to the same state (Redis
   * credentials), or a new store, the running one consulted beside it until its longest window has
   * passed (src/limits/hand-over.ts). One hand-over at a time.
   */
  const storeFor = async (
    from: GatewayConfig,
    to: GatewayConfig,
  ): Promise<{ store: LimitStore; fresh?: LimitStore; handOver?: HandOverStore }> => {
    const sameState = sameStoreState(from, to);
    if (deps.store || (sameState && (to.store.type === "memory" || sameKeys(from, to, ["store"]))))
      return { store };
    // `workers` is the running one (restart-only): the file's own check could not see it.
    if (to.workers > 1 && to.store.type !== "redis")
      throw new Error(
        `store: ${to.workers} workers run, and with the memory store each would count limits on its own; keep store.type: redis (workers change at a restart)`,
      );
    const handing =
      store instanceof WindowedStore && store.inner instanceof HandOverStore ? store.inner : undefined;
    if (handing?.handingOver)
      throw new Error(
        `store: the store replaced by an earlier reload is consulted until ${new Date(handing.untilMs).toISOString()} (its longest window); change the store again after that, or restart`,
      );
    if (sameState) {
      const fresh = await storeOf(to);
      return { store: fresh, fresh };
    }
    const snapshot = to.store.type === "memory" ? to.store.snapshotFile : undefined;
    if (from.store.type === "memory" && snapshot !== undefined && snapshot === from.store.snapshotFile)
      throw new Error(
        `store: the running memory store writes its snapshot to ${snapshot}; give store.snapshotFile another path with the change, or restart`,
      );
    const fresh = await storeOf(to);
    const running_ = store as WindowedStore;
    const untilMs = now() + Math.max(running_.longestMs, longestWindowMs(from));
    const handOver = new HandOverStore(fresh, running_, {
      untilMs,
      now,
      onHandedOver: () =>
        logger.info("limit store: the replaced store's last window has passed; it is closed"),
    });
    return { store: new WindowedStore(handOver), fresh, handOver };
  };
  /** A reload's old store connections, closed once the requests that began on them had their grace. */
  const retiredStores = new Set<LimitStore>();
  if (!deps.store)
    started.add(async () => {
      await Promise.all([store.close(), ...[...retiredStores].map((s) => s.close())]);
    });

  let tlsCertificate = config.listen.tls ? readCertificate(config.listen.tls.cert) : undefined;
  /**
   * The response-signing QSealC in force. A reload that names other files, and a renewal written
   * over the same files (a Secret updated in place: they are watched with the TLS files), replace
   * it; the expiry metric follows.
   */
  let qseal = responseQsealOf(config);
  let qsealSummary = qseal && summaryOf(qseal.certificate);
  // The chain is built after the metrics it reports to (its steps count refusals there).
  let chainLater: (() => Chain<CheckContext>) | undefined;
  /**
   * What the request paths a reload replaced had counted: psd2_gateway_steps_total carries on across
   * them instead of starting again at 0 (requests still under way on a replaced path when it was
   * swapped out count on it alone).
   */
  let countedBefore = NO_COUNTS;
  const metrics = new GatewayMetrics({
    steps: () => chainLater && sumCounts(countedBefore, chainLater().counts()),
    certificateCache: () => verifier.stats,
    register: () => trust.register.stats,
    trustSources: () => trust.statuses(),
    ocspCache: () => trust.revocation.ocspCacheStatus,
    store: () => store.stats,
    certificates: () => [
      ...(qsealSummary ? [{ kind: "qseal" as const, ...qsealSummary }] : []),
      ...(tlsCertificate
        ? [{ kind: "tls" as const, name: tlsCertificate.name, notAfter: tlsCertificate.notAfter }]
        : []),
      ...trust.pool.trustStore.all.map((c) => ({
        kind: "ca" as const,
        name: commonName(c.subjectRfc2253),
        notAfter: c.notAfter,
      })),
    ],
    now,
  });
  metricsLater = metrics;
  for (const labels of refusedBeforeMetrics.splice(0)) metrics.trustDocumentsRefused.inc(labels);

  // A defect is a bug in our own code that an input reached: logged and counted, never silent.
  const onDefect = (message: unknown) => {
    const { where, error } = message as DefectEvent;
    metrics.defects.inc({ where });
    logger.error(
      { where, err: (error as Error)?.message ?? String(error) },
      "defect: unexpected exception (the request was refused)",
    );
  };
  subscribe(DEFECT_CHANNEL, onDefect);
  started.add(() => unsubscribe(DEFECT_CHANNEL, onDefect));

  // The checkpoints are signed with the QSealC of the configuration the store opens with.
  const evidenceOf = (c: GatewayConfig, q: typeof qseal) =>
    c.evidence?.enabled
      ? startEvidence(c.evidence, {
          qseal: q,
          metrics,
          logger,
          now,
          clusterWorker: deps.clusterWorker ?? false,
          reports,
          // The trust in force when each record is written (a reload swaps it).
          trustStores: () => [trust.pool.trustStore],
        })
      : Promise.resolve(undefined);
  let evidence = await evidenceOf(config, qseal);
  /** A reload's old evidence stores, taking the records of requests that began on them until closed. */
  const retiredEvidence = new Set<NonNullable<typeof evidence>>();
  // Closed after the listener drained: what was queued is written, with a last checkpoint.
  started.add(async () => {
    await Promise.all([evidence?.close(), ...[...retiredEvidence].map((e) => e.close())]);
  });

  const onStoreError = (error: unknown) =>
    logger.warn({ err: (error as Error).message }, "limit store unreachable");

  // The demo bank is the command line's to start, and only when the config asks for it.
  let demoBank: StartedBackend | undefined;
  if (config.backend.url === "sandbox") {
    if (!deps.startDemoBank) throw new Error("backend.url is 'sandbox' but no demo bank was supplied");
    demoBank = await deps.startDemoBank({
      sandbox: config.sandbox,
      identityHeaders: config.identityHeaders,
      // Per start, never logged: it proves to the bank that a call came through this gateway.
      gatewaySecret: randomBytes(32).toString("base64url"),
    });
    started.add(() => demoBank!.close());
    logger.info(
      { api: demoBank.socketPath ?? demoBank.url, scaPage: demoBank.scaUrl },
      "built-in demo bank started (its API only for this gateway; publish the SCA page, never the API)",
    );
  }
  const backendOf = (c: GatewayConfig) =>
    Backend.fromFiles({
      url: c.backend.url === "sandbox" ? demoBank!.url : c.backend.url,
      ...(c.backend.url === "sandbox" && demoBank!.socketPath !== undefined
        ? { socketPath: demoBank!.socketPath }
        : {}),
      ca: c.backend.ca,
      cert: c.backend.cert,
      key: c.backend.key,
      timeoutMs: c.backend.timeoutSeconds * 1000,
      connections: c.backend.connections,
    });
  let backend = backendOf(config);
  started.add(() => backend.close());
  metrics.backendPools.watch(() => [[backend.host, backend]]);

  // The request path: the one builder, again on a configuration reload.
  const pathOf = (
    c: GatewayConfig,
    b: Backend,
    v: TppVerifier,
    st: LimitStore,
    k: KeyDirectoryResolver,
    e: typeof evidence,
    q: typeof qseal,
  ) =>
    requestPathOf(c, {
      now,
      ...(q ? { responseQseal: q } : {}),
      // Each certificate it trusts is remembered for a JWS naming it by x5t#S256 later.
      certificates: rememberingTrusted(v, k),
      keys: k,
      store: st,
      onStoreError,
      onReplayRefused: () => metrics.replayRefusals.inc(),
      onUnattendedExceeded: (limitClass, source) =>
        metrics.unattendedRejections.inc({ class: limitClass, source }),
      onUnattendedAdmitted: (limitClass, source) =>
        metrics.unattendedCalls.inc({ class: limitClass, source }),
      ...(e ? { evidence: e } : {}),
      backend: b,
      // The demo bank's proof that a call came through this gateway; a real backend gets none.
      ...(c.backend.url === "sandbox" && demoBank?.forwardHeaders
        ? { backendHeaders: demoBank.forwardHeaders }
        : {}),
      draining,
      onRequest: (event) => {
        recordRequest(event, logger, metrics);
        deps.onRequest?.(event);
      },
    });
  let running = config;
  const components: Components = {
    path: pathOf(config, backend, verifier, store, keys, evidence, qseal),
    get verifier() {
      return verifier;
    },
    reports,
    get register() {
      return trust.register;
    },
    get store() {
      return store;
    },
    metrics,
    get backendUrl() {
      return backend.origin + backend.basePath;
    },
    resetSandbox: demoBank?.resetAll,
    get trust() {
      return trust;
    },
    tlsCertificate: () => tlsCertificate,
    factory: () => components.path.factory,
    listening: {
      backend: backend.origin + backend.basePath,
      tls: Boolean(config.listen.tls),
      mtls: config.listen.clientCertificate,
      store: config.store.type,
      tlsCertificate: tlsCertificate && {
        name: tlsCertificate.name,
        sha256: tlsCertificate.fingerprint,
        notAfter: tlsCertificate.notAfter,
      },
    },
    async readiness() {
      const storeReadiness = await storeReadinessOf(store);
      const stats = trust.register.stats;
      return {
        register: {
          ok: trust.register.isFresh(),
          ...(trust.register.isFresh() ? {} : { reason: "stale" }),
          detail:
            stats.lastSuccess === undefined
              ? "not loaded"
              : `${Math.round((now() - stats.lastSuccess) / 1000)} s old, ${stats.entries} TPPs`,
        },
        store: {
          ok: storeReadiness.ok,
          detail: `${running.store.type}${storeReadiness.detail ? `: ${storeReadiness.detail}` : ""}`,
          ...(storeReadiness.reason ? { reason: storeReadiness.reason } : {}),
        },
        trust: trustReadiness(trust.statuses(), now()),
        ...(evidence && running.evidence
          ? { evidence: evidenceReadiness(evidence.status(), running.evidence.onFailure) }
          : {}),
      };
    },
    // SIGHUP: certificates and trust at once, the register from its sources (file or URL).
    reloadFiles() {
      try {
        reloadFiles();
      } finally {
        trust.refresh();
      }
    },
    stopping() {
      watch.stop();
      trust.stop();
    },
    async prepareReload(_running, next) {
      const made: (() => unknown)[] = [];
      try {
        // New trust sources start (and load) beside the running ones; a source that fails keeps them all.
        const trustChanged = !sameKeys(running, next, ["trust", "revocation", "register"]);
        const nextTrust = trustChanged ? await startTrust(next, trustDeps) : trust;
        if (nextTrust !== trust) made.push(() => nextTrust.stop());
        const nextVerifier =
          trustChanged ||
          !sameKeys(running, next, ["cache"]) ||
          JSON.stringify(running.verification.certificateKinds) !==
            JSON.stringify(next.verification.certificateKinds)
            ? verifierFor(next, nextTrust)
            : verifier;
        const { store: nextStore, fresh, handOver } = await storeFor(running, next);
        if (fresh)
          made.push(() => {
            handOver?.abandon();
            return fresh.close();
          });
        const nextBackend = sameBackend(running, next) ? backend : backendOf(next);
        if (nextBackend !== backend) made.push(() => nextBackend.close());
        // A key file that does not load fails the reload here, keeping the running resolver.
        const nextKeys = sameKeys(running, next, ["keys"]) ? keys : keysOf(next);
        // Read once for the response signer and a new evidence store's checkpoints.
        const nextQseal = responseQsealOf(next);
        // Only what the store is opened with needs a new one (bodies and onFailure are the chain's).
        const nextEvidence = sameEvidenceStore(running, next) ? evidence : await evidenceOf(next, nextQseal);
        if (nextEvidence && nextEvidence !== evidence) made.push(() => nextEvidence.close());
        const path = pathOf(next, nextBackend, nextVerifier, nextStore, nextKeys, nextEvidence, nextQseal);
        return {
          commit: () => {
            const old = { backend, trust, store, evidence, grace: running.shutdown.graceSeconds * 1000 };
            running = next;
            backend = nextBackend;
            trust = nextTrust;
            verifier = nextVerifier;
            verifierLater = nextVerifier;
            store = nextStore;
            keys = nextKeys;
            evidence = nextEvidence;
            qseal = nextQseal;
            qsealSummary = nextQseal && summaryOf(nextQseal.certificate);
            replacePath(path);
            // Requests under way finish on the old pool; it closes once none holds it.
            if (old.backend !== nextBackend) void old.backend.retire();
            // The old sources stop polling; a verdict under way reads what they hold.
            if (old.trust !== nextTrust) old.trust.stop();
            // A store handed over is closed by its successor once its last window has passed.
            if (handOver)
              logger.info(
                { until: new Date(handOver.untilMs).toISOString() },
                "limit store: a new store takes every write; the replaced one is consulted until its last window has passed",
              );
            else if (old.store !== nextStore) retireStore(old.store, old.grace);
            if (old.evidence && old.evidence !== nextEvidence) retireEvidence(old.evidence, old.grace);
            watchTrustFiles();
          },
        };
      } catch (error) {
        for (const undo of made) await Promise.resolve(undo()).catch(() => {});
        throw error;
      }
    },
  };
  /** A replaced Redis connection: requests that began on it keep it for the shutdown grace, then it closes. */
  const retireStore = (old: LimitStore, graceMs: number) => {
    retiredStores.add(old);
    setTimeout(() => {
      if (retiredStores.delete(old)) void old.close().catch(() => {});
    }, graceMs).unref();
  };
  /**
   * A replaced evidence store: requests that began on it keep offering it their records for the
   * shutdown grace; then it writes its queue and closes its chain with a checkpoint. Nothing it
   * acknowledged is lost; a request still under way after that meets a closed store (`onFailure`).
   */
  const retireEvidence = (old: NonNullable<typeof evidence>, graceMs: number) => {
    retiredEvidence.add(old);
    setTimeout(() => {
      if (retiredEvidence.delete(old))
        void old.close().then(
          () => logger.info({ chain: old.status().chain }, "evidence: the replaced store closed its chain"),
          (error: Error) => logger.warn({ err: error.message }, "evidence: the replaced store did not close"),
        );
    }, graceMs).unref();
  };
  chainLater = () => components.path.chain;
  const replacePath = (next: RequestPath) => {
    countedBefore = sumCounts(countedBefore, components.path.chain.counts());
    components.path = next;
  };
  metrics.watchReadiness(readiness);

  /** Reads trust material and the TLS certificate again and puts them in place; throws (keeping the old state) when they do not load. */
  const reloadFiles = () => {
    // Everything is read first; only when all of it loads does any of it replace the old state.
    const commitTrust = trust.prepareReload();
    const nextTls = running.listen.tls ? readCertificate(running.listen.tls.cert) : undefined;
    // A QSealC renewed in the same files: the request path is built anew to sign with it (only
    // then: a new path starts its step counters afresh, as a configuration reload's does).
    const fresh = responseQsealOf(running);
    const renewed = fresh && qseal && !sameCredentials(fresh, qseal) ? fresh : undefined;
    const nextPath = renewed && pathOf(running, backend, verifier, store, keys, evidence, renewed);
    listener.reloadTls();
    commitTrust();
    tlsCertificate = nextTls;
    if (renewed && nextPath) {
      qseal = renewed;
      qsealSummary = summaryOf(renewed.certificate);
      replacePath(nextPath);
      logger.info(
        { name: qsealSummary.name, notAfter: qsealSummary.notAfter },
        "responseSigning: the renewed QSealC signs from now on",
      );
    }
    verifier.invalidate();
    if (nextTls)
      logger.info(
        { name: nextTls.name, sha256: nextTls.fingerprint, notAfter: nextTls.notAfter },
        "TLS certificate loaded",
      );
  };
  const tryReload = (why: string) => {
    try {
      reloadFiles();
      logger.info({ why }, "reloaded");
    } catch (error) {
      logger.error(
        { why, err: (error as Error).message },
        "reload failed; keeping the previous certificates and trust store",
      );
    }
  };
  /** The trust folders, TLS and QSealC files of the configuration in force, polled; a reload may move them. */
  const watch = followedWatch(() => tryReload("files changed"));
  const watchTrustFiles = () =>
    watch.follow(
      [
        ...(running.trust.caDir ? [running.trust.caDir] : []),
        ...(running.trust.crlDir ? [running.trust.crlDir] : []),
        ...(running.listen.tls ? [running.listen.tls.cert, running.listen.tls.key] : []),
        ...credentialFiles(running.responseSigning?.qseal),
      ],
      running.reload.pollSeconds * 1000,
    );
  watchTrustFiles();
  started.add(() => watch.stop());
  return components;
}

/** Where the store's state lives, and its bounds, are the same: no hand-over is needed. */
function sameStoreState(a: GatewayConfig, b: GatewayConfig): boolean {
  const stateOf = ({ store: s, replay }: GatewayConfig) => [
    s.type,
    s.url,
    s.sentinels,
    s.name,
    s.cluster,
    s.maxWindows,
    s.snapshotFile,
    replay.maxEntries,
  ];
  return JSON.stringify(stateOf(a)) === JSON.stringify(stateOf(b));
}

/**
 * The longest a record or slot of a store written under `c` can matter: the unattended window, the
 * replay window, a Date-bound signature's acceptance either side of the clock. A store that saw
 * longer (a dialect's own window) says so itself (WindowedStore).
 */
function longestWindowMs(c: GatewayConfig): number {
  const seconds = Math.max(
    c.limits.unattended.windowSeconds,
    c.replay.windowSeconds ?? 0,
    2 * c.verification.dateToleranceSeconds,
  );
  return seconds * 1000 + REPLAY_CLOCK_MARGIN_MS;
}

/**
 * The evidence store of `b` is the one `a` opened: the same block but for what the chain reads
 * (`bodies`, `onFailure`). A new store opens a new chain; one whose configured instanceId and folder
 * are the running chain's would write over it, so that reload is refused, saying what to change.
 */
function sameEvidenceStore(a: GatewayConfig, b: GatewayConfig): boolean {
  const storeOf = (c: GatewayConfig) =>
    c.evidence?.enabled ? { ...c.evidence, bodies: undefined, onFailure: undefined } : undefined;
  if (JSON.stringify(storeOf(a)) === JSON.stringify(storeOf(b))) return true;
  const [from, to] = [a.evidence, b.evidence];
  if (
    from?.enabled &&
    to?.enabled &&
    to.instanceId !== undefined &&
    to.instanceId === from.instanceId &&
    to.folder === from.folder
  )
    throw new Error(
      `evidence: a changed store opens a new chain, and instanceId '${to.instanceId}' names the running one in ${to.folder}; give evidence.instanceId another value (or none) with the change`,
    );
  return false;
}

/** The backend block is the same (a new pool is made only when it changed). */
function sameBackend(a: GatewayConfig, b: GatewayConfig): boolean {
  return sameKeys(a, b, ["backend"]);
}

/** The sections `keys` of two configurations are equal (what a reload need not build anew). */
function sameKeys(a: GatewayConfig, b: GatewayConfig, keys: readonly (keyof GatewayConfig)[]): boolean {
  return keys.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
}

/**
 * Stale sources named: a stale register or trusted list fails every request, so it fails
 * readiness; a stale CRL or a failing responder refuses only its QTSP's certificates, so it is
 * named but the gateway stays in rotation for everyone else.
 */
export function trustReadiness(
  sources: readonly TrustSourceStatus[],
  now: number,
): { ok: boolean; detail?: string; reason?: string } {
  const stale = sources.filter((s) => s.stale);
  if (stale.length === 0) return { ok: true, detail: `${sources.length} sources fresh` };
  const describe = (s: TrustSourceStatus) =>
    `${s.kind} ${s.source}${s.lastError ? ` (${s.lastError})` : ""}${
      s.lastSuccess === undefined
        ? ", never loaded"
        : `, ${Math.round((now - s.lastSuccess) / 1000)} s since last success`
    }`;
  const ok = !stale.some((s) => s.failsReadiness);
  return {
    ok,
    ...(ok ? {} : { reason: "stale" }),
    detail: `stale: ${stale.slice(0, 10).map(describe).join("; ")}${stale.length > 10 ? ` and ${stale.length - 10} more` : ""}`,
  };
}

/** Calls `f` at most once per interval: a down Redis reports every reconnect attempt. */
function throttled<T>(intervalMs: number, f: (value: T) => void): (value: T) => void {
  let last = 0;
  return (value) => {
    const now = Date.now();
    if (now - last < intervalMs) return;
    last = now;
    f(value);
  };
}

function readCertificate(file: string): CertificateSummary {
  return summaryOf(new X509Certificate(readFileSync(file)));
}

/** The response-signing QSealC a configuration names, read from its files; throws when they do not load. */
function responseQsealOf(config: GatewayConfig): Credentials | undefined {
  const signing = config.responseSigning;
  return signing ? loadCredentials(signing.qseal, "responseSigning.qseal") : undefined;
}

function sameCredentials(a: Credentials, b: Credentials): boolean {
  return a.certificateDer.equals(b.certificateDer) && a.privateKey.equals(b.privateKey);
}
