/**
 * Egress mode assembled from the config: each bank profile's keys and certificates are loaded
 * (PEM or PKCS#12) and checked first, so a bad file fails the start with its name; then the admin
 * listener, then the application-facing listener (loopback TCP or a Unix socket).
 */

import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { AggregatorRegistry } from "prom-client";
import { restartKeysChanged } from "../config/restart.js";
import { type BankProfileConfig, type EgressConfig, egressConfigSchema } from "../config/schema.js";
import {
  type BankProfile,
  BankRouter,
  createEgressHandler,
  egressRequestChain,
  GATEWAY_WRITTEN_HEADERS,
} from "../egress/index.js";
import type { EgressEvent } from "../events.js";
import { Backend } from "../forward/backend.js";
import { type Listener, startListener } from "../listener/listener.js";
import { type AdminServer, type ReadinessCheck, startAdminServer } from "../observability/admin.js";
import { EgressMetrics, recordEgressRequest } from "../observability/egress-metrics.js";
import type { Logger } from "../observability/logger.js";
import type { DocumentFetcher } from "../trust/http-fetch.js";
import { adminAccessOf } from "./admin-access.js";
import { type ProfileResponseVerifier, profileSigner, responseVerifierForProfile } from "./bank-profile.js";
import { type CertificateSummary, summaryOf } from "./certificate-summary.js";
import { connectionLimitsOf } from "./connection-limits.js";
import { type Credentials, loadCredentials } from "./credentials.js";
import { fetchThroughPrimary } from "./fetch-relay.js";
import { watchFiles } from "./file-watch.js";
import type { ConfigFile } from "./ingress.js";
import { drain, Started } from "./started.js";

export interface EgressGateway {
  /** `http://127.0.0.1:8090`, or `unix:/path` for a socket. */
  readonly url: string;
  readonly server: Server;
  readonly metrics: EgressMetrics;
  readonly adminUrl: string | undefined;
  readiness(): Promise<ReadinessCheck>;
  /**
   * SIGHUP: the configuration file read again and taken over (bank profiles, body bound, limits),
   * or, when it fails validation (kept, logged, counted), every bank profile's keys, certificates
   * and CAs read anew; throws, keeping the old ones, when any cannot be read.
   */
  reload(): void;
  close(graceMs?: number): Promise<void>;
}

export interface EgressDependencies {
  readonly logger: Logger;
  readonly now?: () => number;
  readonly env?: NodeJS.ProcessEnv;
  readonly onRequest?: (event: EgressEvent) => void;
  /** A worker of `workers: N`: the primary serves the admin listener and asks for its metrics. */
  readonly clusterWorker?: boolean;
  /** Where the configuration came from: read again on SIGHUP and when it changes. */
  readonly configFile?: ConfigFile;
}

/** Certificates closer than this to expiry are warned about at start. */
const EXPIRY_WARNING_MS = 30 * 24 * 3600 * 1000;

interface LoadedProfile extends BankProfile {
  readonly responseVerifier?: ProfileResponseVerifier;
  readonly qseal: Credentials;
  readonly qwac: Credentials | undefined;
}

export async function startEgressGateway(
  config: EgressConfig,
  deps: EgressDependencies,
): Promise<EgressGateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const started = new Started();
  let draining = false;
  try {
    const env = deps.env ?? process.env;
    // Replaced whole by reload(); a request in flight keeps the profile it started with.
    // In a cluster the primary fetches each bank's CRLs and OCSP answers once for every worker.
    const documentFetcher = deps.clusterWorker ? fetchThroughPrimary : undefined;
    let profiles = config.banks.map((bank) => loadProfile(bank, env, now, logger, documentFetcher));
    let router = new BankRouter<BankProfile>(profiles);
    const retired = new Set<Promise<void>>();
    started.add(async () => {
      for (const p of profiles) p.responseVerifier?.stop();
      await Promise.all([...profiles.map((p) => p.backend.close()), ...retired]);
    });
    warnExpiring(profiles, logger, now);

    const certificates = () =>
      profiles.flatMap((p) =>
        ownCertificates(p).map(({ kind, summary }) => ({
          kind,
          name: `${p.name}: ${summary.name}`,
          notAfter: summary.notAfter,
        })),
      );
    const metrics = new EgressMetrics(certificates, now);
    metrics.backendPools.watch(() => profiles.map((p) => [p.name, p.backend] as const));
    metrics.watchResponseSteps(() =>
      profiles.flatMap((p) => (p.responseVerifier ? [[p.name, p.responseVerifier.counts()] as const] : [])),
    );
    let modes = new Map(profiles.map((p) => [p.name, p.responseMode]));
    let running = config;

    let listener: Listener | undefined;
    const readiness = async (): Promise<ReadinessCheck> => {
      const checks = {
        listener: {
          ok: (listener?.server.listening ?? false) && !draining,
          ...(draining ? { detail: "draining" } : {}),
        },
        banks: { ok: true, detail: profiles.map((p) => p.name).join(", ") },
      };
      return { ready: Object.values(checks).every((c) => c.ok), checks };
    };
    const admin: AdminServer | undefined =
      config.admin.enabled && !deps.clusterWorker
        ? await startAdminServer({
            host: config.admin.host,
            port: config.admin.port,
            metrics: { metrics: () => metrics.registry.metrics(), contentType: metrics.registry.contentType },
            readiness,
            access: adminAccessOf(config.admin, "egress", logger),
          })
        : undefined;
    if (admin) started.add(() => admin.close());

    // The application's listener: loopback TCP or a Unix socket, the same connection layer as ingress.
    listener = await startListener({
      host: config.listen.host,
      port: config.listen.port,
      socket: config.listen.socket,
      limits: connectionLimitsOf(config.listen, deps.clusterWorker ? config.workers : 1),
    });
    const { server, url, guard } = listener;
    started.add(() => drain(server, 0));
    metrics.connections.countOpen(guard.open);
    guard.observe(metrics.connections.observer(logger, now));
    // One chain of request steps for the gateway's life: its counters survive reloads.
    const requestChain = egressRequestChain();
    metrics.watchRequestSteps(() => requestChain.counts());
    const factoryOf = (c: EgressConfig) =>
      createEgressHandler({
        chain: requestChain,
        router: {
          route: (host, url) => router.route(host, url),
          describe: () => router.describe(),
        },
        maxBodyBytes: c.maxBodyBytes,
        onRequest: (event) => {
          recordEgressRequest(event, logger, metrics, (bank) => modes.get(bank) ?? "off");
          deps.onRequest?.(event);
        },
      });
    listener.serve(factoryOf(config));
    if (deps.clusterWorker) {
      // Constructing one installs prom-client's listener that answers the primary's metric requests.
      new AggregatorRegistry();
      AggregatorRegistry.setRegistries([metrics.registry]);
    }
    logger.info(
      {
        url,
        banks: profiles.map((p) => ({
          name: p.name,
          prefix: p.prefix,
          host: p.host,
          url: p.backend.origin + p.backend.basePath,
          keyId: p.signer.keyId,
          mtls: p.qwac !== undefined,
          responses: p.responseMode,
        })),
      },
      "egress gateway listening",
    );
    if (admin) logger.info({ url: admin.url }, "admin listener: /metrics, /healthz, /readyz");

    /** Every profile is loaded before any is swapped: one bad file keeps all the old ones (it throws). */
    const swapProfiles = (banks: EgressConfig["banks"]) => {
      const fresh = banks.map((bank) => loadProfile(bank, env, now, logger, documentFetcher));
      const old = profiles;
      profiles = fresh;
      router = new BankRouter<BankProfile>(fresh);
      modes = new Map(fresh.map((p) => [p.name, p.responseMode]));
      warnExpiring(fresh, logger, now);
      // Requests under way finish on the old pools; each closes once none holds it.
      for (const p of old) {
        p.responseVerifier?.stop();
        const closing = p.backend.retire().finally(() => retired.delete(closing));
        retired.add(closing);
      }
      logger.info(
        { banks: fresh.map((p) => ({ name: p.name, keyId: p.signer.keyId, mtls: p.qwac !== undefined })) },
        "bank profiles loaded: keys and certificates read anew",
      );
    };
    const reloads = metrics.configReloads.reporter(logger, now);
    /** The bank profiles, body bound and limits of a reloaded configuration, for new requests. */
    const reloadConfiguration = (why: string): boolean => {
      const file = deps.configFile;
      if (!file) return false;
      try {
        const next = file.read();
        if (next.mode !== "egress")
          throw new Error(
            `${file.path}: mode is ${next.mode}; this gateway runs egress (a restart changes it)`,
          );
        swapProfiles(next.banks);
        const needsRestart = restartKeysChanged(egressConfigSchema, running, next);
        running = next;
        // The log level and the shutdown grace apply at once (close() reads the running config).
        logger.level = next.log.level;
        guard.apply(connectionLimitsOf(next.listen, deps.clusterWorker ? next.workers : 1));
        listener!.serve(factoryOf(next));
        reloads.applied(why, needsRestart);
        return true;
      } catch (error) {
        reloads.failed(why, error as Error);
        return false;
      }
    };
    const configWatch = deps.configFile
      ? watchFiles([deps.configFile.path], config.reload.pollSeconds * 1000, () =>
          reloadConfiguration("the config file changed"),
        )
      : undefined;
    if (configWatch) started.add(() => configWatch.stop());
    return {
      url,
      server,
      metrics,
      adminUrl: admin?.url,
      readiness,
      reload() {
        // A new configuration brings its profiles' keys read anew; otherwise the running ones are.
        if (!reloadConfiguration("SIGHUP")) swapProfiles(running.banks);
      },
      async close(graceMs = running.shutdown.graceSeconds * 1000) {
        draining = true;
        await drain(server, graceMs);
        await started.closeAll();
        logger.info("gateway stopped");
      },
    };
  } catch (error) {
    await started.closeAll();
    throw error;
  }
}

function loadProfile(
  bank: BankProfileConfig,
  env: NodeJS.ProcessEnv,
  now: () => number,
  logger: Logger,
  fetch: DocumentFetcher | undefined,
): LoadedProfile {
  const qseal = loadCredentials(bank.qseal, `banks.${bank.name}.qseal`, env);
  const qwac = bank.qwac ? loadCredentials(bank.qwac, `banks.${bank.name}.qwac`, env) : undefined;
  const rules = bank.signing;
  const signer = profileSigner(bank, qseal);
  const backend = new Backend({
    url: bank.url,
    ...(bank.ca ? { ca: readFileSync(bank.ca, "utf8") } : {}),
    ...(qwac ? { cert: qwac.certificatePem, key: qwac.keyPem } : {}),
    timeoutMs: bank.timeoutSeconds * 1000,
    connections: bank.connections,
  });
  const responses = bank.responses;
  const responseVerifier = responseVerifierForProfile(
    bank,
    now,
    (message, error) =>
      error ? logger.warn({ bank: bank.name }, message) : logger.info({ bank: bank.name }, message),
    fetch,
  );
  return {
    name: bank.name,
    prefix: bank.prefix,
    host: bank.host,
    backend,
    signer,
    dialect: rules.dialect,
    defaultHeaders: Object.fromEntries(
      Object.entries(bank.defaultHeaders).map(([name, value]) => [name.toLowerCase(), value]),
    ),
    gatewayHeaders: new Set([...GATEWAY_WRITTEN_HEADERS, rules.certificateHeader.name.toLowerCase()]),
    responseMode: responses.mode,
    ...(responseVerifier ? { responseVerifier } : {}),
    maxResponseBytes: responses.maxBodyBytes,
    qseal,
    qwac,
  };
}

/** A profile's QSealC, and its QWAC when it has one. */
function ownCertificates(p: LoadedProfile): { kind: "qseal" | "qwac"; summary: CertificateSummary }[] {
  return [
    { kind: "qseal", summary: summaryOf(p.qseal.certificate) },
    ...(p.qwac ? [{ kind: "qwac" as const, summary: summaryOf(p.qwac.certificate) }] : []),
  ];
}

function warnExpiring(profiles: readonly LoadedProfile[], logger: Logger, now: () => number): void {
  for (const p of profiles) {
    for (const { kind, summary } of ownCertificates(p)) {
      const left = summary.notAfter.getTime() - now();
      if (left < EXPIRY_WARNING_MS)
        logger.warn(
          {
            bank: p.name,
            kind,
            name: summary.name,
            notAfter: summary.notAfter.toISOString(),
            days: Math.floor(left / 86_400_000),
          },
          left < 0 ? "certificate has expired" : "certificate expires within 30 days",
        );
    }
  }
}
