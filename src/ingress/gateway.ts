/**
 * Ingress mode assembled from the config: trust material, register, verdict cache, limit store,
 * backend (or the built-in demo bank), the TPP-facing listener and the admin listener; reloads
 * on file changes and SIGHUP; drains on close.
 */

import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { AggregatorRegistry } from "prom-client";
import { type FileWatch, watchFiles } from "../app/file-watch.js";
import { createLimitStore } from "../app/store.js";
import { RoleTable } from "../checks/routes.js";
import type { GatewayConfig } from "../config/schema.js";
import { TppRegister, TppVerifier } from "../eidas/index.js";
import { Backend } from "../forward/backend.js";
import type { LimitStore } from "../limits/index.js";
import { UnattendedAccessPolicy } from "../limits/index.js";
import { type AdminServer, type ReadinessCheck, startAdminServer } from "../observability/admin.js";
import type { Logger } from "../observability/logger.js";
import { GatewayMetrics } from "../observability/metrics.js";
import { recordRequest } from "../observability/request-log.js";
import { createSandboxBank } from "../sandbox/index.js";
import { FileRegisterSource, HttpRegisterSource, type RegisterSource } from "../trust/register-sources.js";
import { loadTrustMaterial, type TrustMaterial } from "../trust/trust-material.js";
import { createIngressHandler, type RequestEvent } from "./handler.js";
import { startListener } from "./listener.js";

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
   * Reloads TLS certificates, trust store and CRLs (on failure keeps the old ones and throws the
   * reason) and refreshes the TPP register from its sources.
   */
  reload(): void;
  /** Stops accepting, lets requests in flight finish, closes what is still open after `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

export interface IngressDependencies {
  readonly logger: Logger;
  readonly now?: () => number;
  /** A store made by the caller (tests); otherwise the configured one is created. */
  readonly store?: LimitStore;
  readonly onRequest?: (event: RequestEvent) => void;
  /** Running as a cluster worker: metrics are reported to the primary, which owns the admin listener. */
  readonly clusterWorker?: boolean;
}

export async function startIngress(
  config: GatewayConfig,
  deps: IngressDependencies,
): Promise<IngressGateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;

  let trust: TrustMaterial = loadTrustMaterial(config.trust.caDir, config.trust.crlDir);
  logTrust(logger, trust);

  const register = new TppRegister(config.register.maxAgeSeconds * 1000, now);
  const sources = await startRegisterSources(config, register, logger);

  const verifier = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    register,
    now,
    cacheTtlMs: config.cache.ttlSeconds * 1000,
    failureTtlMs: config.cache.failureTtlSeconds * 1000,
    maxEntries: config.cache.maxEntries,
  });

  const store =
    deps.store ??
    (await createLimitStore(config, {
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
    }));

  let tlsCertificate = config.listen.tls ? readCertificate(config.listen.tls.cert) : undefined;
  const metrics = new GatewayMetrics({
    certificateCache: () => verifier.stats,
    register: () => register.stats,
    store: () => store.stats,
    certificates: () => [
      ...(tlsCertificate
        ? [{ kind: "tls" as const, name: tlsCertificate.name, notAfter: tlsCertificate.notAfter }]
        : []),
      ...trust.store.all.map((c) => ({
        kind: "ca" as const,
        name: commonName(c.subjectRfc2253),
        notAfter: c.notAfter,
      })),
    ],
    now,
  });

  const onStoreError = (error: unknown) =>
    logger.warn({ err: (error as Error).message }, "limit store unreachable");
  const unattendedConfig = config.limits.unattended;
  const unattended = unattendedConfig.enabled
    ? new UnattendedAccessPolicy(
        {
          limit: unattendedConfig.limit,
          windowMs: unattendedConfig.windowSeconds * 1000,
          routes: unattendedConfig.routes,
          includeConsentId: unattendedConfig.includeConsentId,
          maxTransactionAgeDays: unattendedConfig.maxTransactionAgeDays,
          failOpen: config.store.failOpen,
        },
        store,
        { onStoreError, onExceeded: (limitClass) => metrics.unattendedRejections.inc({ class: limitClass }) },
      )
    : undefined;

  const backend = await startBackend(config, now, logger);

  let draining = false;
  const handler = createIngressHandler({
    draining: () => draining,
    pipeline: {
      now,
      dateToleranceMs: config.verification.dateToleranceSeconds * 1000,
      algorithms: config.verification.algorithms,
      allowDecimalSerial: config.verification.allowDecimalSerial,
      keyIdPolicy: config.verification.keyIdPolicy,
      redirectUriOptionalPrefixes: config.verification.redirectUriOptionalPrefixes.map((p) =>
        p.toLowerCase(),
      ),
      characterPolicy: config.verification.characterPolicy,
      roles: new RoleTable(config.verification.roles),
      replay: store,
      replayWindowMs: (config.replay.windowSeconds ?? 2 * config.verification.dateToleranceSeconds) * 1000,
      storeFailOpen: config.store.failOpen,
      onStoreError,
      onReplayRefused: () => metrics.replayRefusals.inc(),
      ...(unattended ? { unattended } : {}),
      certificates: verifier,
      clientCertificate: {
        mode: config.listen.clientCertificate,
        requireSameOrganization: config.listen.requireSameOrganization,
      },
    },
    backend: backend.backend,
    identityHeaders: config.identityHeaders,
    statusProfile: config.verification.statusProfile,
    maxBodyBytes: config.verification.maxBodyBytes,
    trustedProxies: new Set(config.listen.trustedProxies),
    clientCertificateHeader: config.listen.clientCertificateHeader,
    onDone: (event) => {
      recordRequest(event, logger, metrics);
      deps.onRequest?.(event);
    },
  });

  const listener = await startListener(config, handler);
  logger.info(
    {
      url: listener.url,
      backend: backend.url,
      tls: Boolean(config.listen.tls),
      mtls: config.listen.clientCertificate,
      store: config.store.type,
      tlsCertificate: tlsCertificate && {
        name: tlsCertificate.name,
        sha256: tlsCertificate.fingerprint,
        notAfter: tlsCertificate.notAfter,
      },
    },
    "ingress gateway listening",
  );

  const readiness = async (): Promise<ReadinessCheck> => {
    const storeReady = await Promise.resolve(store.ready()).catch(() => false);
    const stats = register.stats;
    const checks = {
      listener: { ok: listener.server.listening && !draining, ...(draining ? { detail: "draining" } : {}) },
      register: {
        ok: register.isFresh(),
        detail:
          stats.lastSuccess === undefined
            ? "not loaded"
            : `${Math.round((now() - stats.lastSuccess) / 1000)} s old, ${stats.entries} TPPs`,
      },
      store: { ok: storeReady, detail: config.store.type },
    };
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  };

  if (deps.clusterWorker) {
    // Constructing one installs prom-client's listener that answers the primary's metric requests.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
  }
  const admin: AdminServer | undefined =
    config.admin.enabled && !deps.clusterWorker
      ? await startAdminServer({ host: config.admin.host, port: config.admin.port, metrics, readiness })
      : undefined;
  if (admin) logger.info({ url: admin.url }, "admin listener: /metrics, /healthz, /readyz");

  const reload = () => {
    // Everything is read first; only when all of it loads does any of it replace the old state.
    const nextTrust = loadTrustMaterial(config.trust.caDir, config.trust.crlDir);
    const nextTls = config.listen.tls ? readCertificate(config.listen.tls.cert) : undefined;
    listener.reloadTls();
    trust = nextTrust;
    tlsCertificate = nextTls;
    verifier.invalidate();
    logTrust(logger, nextTrust);
    if (nextTls)
      logger.info(
        { name: nextTls.name, sha256: nextTls.fingerprint, notAfter: nextTls.notAfter },
        "TLS certificate loaded",
      );
  };
  // SIGHUP: certificates and trust at once, and the register from its sources (file or URL).
  const reloadAll = () => {
    reload();
    for (const source of sources) void source.refresh();
  };
  const tryReload = (why: string) => {
    try {
      reload();
      logger.info({ why }, "reloaded");
    } catch (error) {
      logger.error(
        { why, err: (error as Error).message },
        "reload failed; keeping the previous certificates and trust store",
      );
    }
  };
  const watched = [
    config.trust.caDir,
    ...(config.trust.crlDir ? [config.trust.crlDir] : []),
    ...(config.listen.tls ? [config.listen.tls.cert, config.listen.tls.key] : []),
  ];
  const watch: FileWatch = watchFiles(watched, config.reload.pollSeconds * 1000, () =>
    tryReload("files changed"),
  );

  return {
    url: listener.url,
    server: listener.server,
    verifier,
    register,
    backendUrl: backend.url,
    store,
    metrics,
    adminUrl: admin?.url,
    readiness,
    reload: reloadAll,
    async close(graceMs = config.shutdown.graceSeconds * 1000) {
      draining = true;
      watch.stop();
      for (const source of sources) source.stop();
      await drain(listener.server, graceMs);
      await backend.close();
      if (!deps.store) await store.close();
      await admin?.close();
      logger.info("gateway stopped");
    },
  };
}

/** Stop accepting, close idle keep-alive connections, let requests in flight finish, then cut the rest. */
async function drain(server: Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Connections that finish a request while draining are closed instead of kept alive.
  const idle = setInterval(() => server.closeIdleConnections(), 100);
  const force = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearInterval(idle);
  clearTimeout(force);
}

async function startRegisterSources(
  config: GatewayConfig,
  register: TppRegister,
  logger: Logger,
): Promise<RegisterSource[]> {
  const log = (message: string, error?: boolean) => (error ? logger.warn(message) : logger.info(message));
  const sources: RegisterSource[] = [];
  const pollMs = config.register.pollSeconds * 1000;
  // A file is cheap to look at: checked every few seconds whatever the poll interval.
  if (config.register.file)
    sources.push(new FileRegisterSource(config.register.file, register, Math.min(pollMs, 5000), log));
  if (config.register.url) sources.push(new HttpRegisterSource(config.register.url, register, pollMs, log));
  for (const source of sources) {
    await source.refresh();
    source.start();
  }
  return sources;
}

async function startBackend(config: GatewayConfig, now: () => number, logger: Logger) {
  let url = config.backend.url;
  let sandboxClose: (() => Promise<void>) | undefined;
  if (url === "sandbox") {
    const bank = await createSandboxBank({ clock: now }).listen(0, "127.0.0.1");
    url = bank.url;
    sandboxClose = bank.close;
    logger.info({ url: bank.url }, "built-in demo bank started");
  }
  const backend = Backend.fromFiles({
    url,
    ca: config.backend.ca,
    cert: config.backend.cert,
    key: config.backend.key,
    timeoutMs: config.backend.timeoutSeconds * 1000,
    connections: config.backend.connections,
  });
  return {
    backend,
    url,
    async close() {
      await backend.close();
      await sandboxClose?.();
    },
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

function readCertificate(file: string) {
  const cert = new X509Certificate(readFileSync(file));
  return {
    name: commonName(cert.subject.split("\n").reverse().join(",")),
    notAfter: new Date(cert.validTo),
    fingerprint: cert.fingerprint256,
  };
}

function commonName(dn: string): string {
  return /(?:^|,)CN=([^,]+)/.exec(dn)?.[1] ?? dn.slice(0, 60);
}

function logTrust(logger: Logger, trust: TrustMaterial): void {
  logger.info(
    {
      cas: trust.store.all.map((c) => ({
        subject: c.subjectRfc2253,
        sha256: c.sha256Fingerprint,
        notAfter: c.notAfter.toISOString(),
      })),
      crls: trust.revocation.lists.map((l) => ({
        source: l.source,
        revoked: l.revoked.size,
        nextUpdate: l.nextUpdate?.toISOString(),
      })),
    },
    "trust store loaded",
  );
  for (const problem of trust.problems) logger.warn(problem);
}
