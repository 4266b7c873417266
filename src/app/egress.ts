/**
 * Egress mode assembled from the config: each bank profile's keys and certificates are loaded
 * (PEM or PKCS#12) and checked first, so a bad file fails the start with its name; then the admin
 * listener, then the application-facing listener (loopback TCP or a Unix socket).
 */

import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { AggregatorRegistry } from "prom-client";
import type { BankProfileConfig, EgressConfig } from "../config/schema.js";
import {
  type BankProfile,
  BankRouter,
  createEgressHandler,
  GATEWAY_WRITTEN_HEADERS,
} from "../egress/index.js";
import type { EgressEvent } from "../events.js";
import { Backend } from "../forward/backend.js";
import { type Listener, startListener } from "../listener/listener.js";
import { type AdminServer, type ReadinessCheck, startAdminServer } from "../observability/admin.js";
import { connectionLimitMetrics } from "../observability/connection-limits.js";
import { EgressMetrics, recordEgressRequest } from "../observability/egress-metrics.js";
import type { Logger } from "../observability/logger.js";
import { responseVerifierForProfile, signerForProfile } from "./bank-profile.js";
import { type CertificateSummary, summaryOf } from "./certificate-summary.js";
import { connectionLimitsOf } from "./connection-limits.js";
import { type Credentials, loadCredentials } from "./credentials.js";
import { drain, Started } from "./started.js";

export interface EgressGateway {
  /** `http://127.0.0.1:8090`, or `unix:/path` for a socket. */
  readonly url: string;
  readonly server: Server;
  readonly metrics: EgressMetrics;
  readonly adminUrl: string | undefined;
  readiness(): Promise<ReadinessCheck>;
  /**
   * Reads every bank profile's keys, certificates and CAs anew and swaps them in at once (SIGHUP);
   * throws, keeping the old ones, when any cannot be read.
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
}

/** Certificates closer than this to expiry are warned about at start. */
const EXPIRY_WARNING_MS = 30 * 24 * 3600 * 1000;

interface LoadedProfile extends BankProfile {
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
    let profiles = config.banks.map((bank) => loadProfile(bank, env, now));
    let router = new BankRouter<BankProfile>(profiles);
    const retired = new Set<Promise<void>>();
    started.add(async () => {
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
    const modes = new Map(profiles.map((p) => [p.name, p.responseMode]));

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
    guard.observe(connectionLimitMetrics(metrics.registry, "psd2_gateway_egress_", guard.open, logger, now));
    listener.serve(
      createEgressHandler({
        router: {
          route: (host, url) => router.route(host, url),
          describe: () => router.describe(),
        },
        maxBodyBytes: config.maxBodyBytes,
        onRequest: (event) => {
          recordEgressRequest(event, logger, metrics, (bank) => modes.get(bank) ?? "off");
          deps.onRequest?.(event);
        },
      }),
    );
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
    return {
      url,
      server,
      metrics,
      adminUrl: admin?.url,
      readiness,
      reload() {
        // Every profile is loaded before any is swapped: one bad file keeps all the old ones (it throws).
        const fresh = config.banks.map((bank) => loadProfile(bank, env, now));
        const old = profiles;
        profiles = fresh;
        router = new BankRouter<BankProfile>(fresh);
        warnExpiring(fresh, logger, now);
        // undici's close lets the requests still using the old pools finish first.
        for (const p of old) {
          const closing = p.backend.close().finally(() => retired.delete(closing));
          retired.add(closing);
        }
        logger.info(
          { banks: fresh.map((p) => ({ name: p.name, keyId: p.signer.keyId, mtls: p.qwac !== undefined })) },
          "bank profiles reloaded: keys and certificates read anew",
        );
      },
      async close(graceMs = config.shutdown.graceSeconds * 1000) {
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

function loadProfile(bank: BankProfileConfig, env: NodeJS.ProcessEnv, now: () => number): LoadedProfile {
  const qseal = loadCredentials(bank.qseal, `banks.${bank.name}.qseal`, env);
  const qwac = bank.qwac ? loadCredentials(bank.qwac, `banks.${bank.name}.qwac`, env) : undefined;
  const rules = bank.signing;
  const signer = signerForProfile(bank, qseal);
  const backend = new Backend({
    url: bank.url,
    ...(bank.ca ? { ca: readFileSync(bank.ca, "utf8") } : {}),
    ...(qwac ? { cert: qwac.certificatePem, key: qwac.keyPem } : {}),
    timeoutMs: bank.timeoutSeconds * 1000,
    connections: bank.connections,
  });
  const responses = bank.responses;
  const responseVerifier = responseVerifierForProfile(bank, now);
  return {
    name: bank.name,
    prefix: bank.prefix,
    host: bank.host,
    backend,
    signer,
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
