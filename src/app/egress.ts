/**
 * Egress mode's parts, which the one lifecycle (mode.ts) runs after binding the application's
 * listener (loopback TCP or a Unix socket) and the admin listener: each bank profile's keys and
 * certificates loaded (PEM or PKCS#12) and checked, so a bad file fails the start with its name
 * (the listeners closed again), the router and the handler over one request chain.
 */

import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { dialectUnit, type JadesSigningRules } from "../checks/dialects/index.js";
import { NO_COUNTS, type StepCounts, sumCounts } from "../checks/index.js";
import { type BankProfileConfig, type EgressConfig, egressConfigSchema } from "../config/schema.js";
import {
  type BankProfile,
  BankRouter,
  createEgressHandler,
  egressRequestChain,
  GATEWAY_WRITTEN_HEADERS,
} from "../egress/index.js";
import type { CheckedResponse } from "../egress/response-signature.js";
import type { ValidationReport } from "../eidas/index.js";
import type { EgressEvent } from "../events.js";
import { type BodyPolicy, type QueuedEvidenceStore, verifiedResponseEvidence } from "../evidence/index.js";
import { Backend } from "../forward/backend.js";
import type { ReadinessCheck } from "../observability/admin.js";
import { EgressMetrics, recordEgressRequest } from "../observability/egress-metrics.js";
import type { Logger } from "../observability/logger.js";
import type { HttpHeadersPayloadStyle } from "../signature/jws/index.js";
import type { DocumentFetcher } from "../trust/http-fetch.js";
import { type ProfileResponseVerifier, profileSigner, responseVerifierForProfile } from "./bank-profile.js";
import { type CertificateSummary, summaryOf } from "./certificate-summary.js";
import { type Credentials, credentialFiles, loadCredentials } from "./credentials.js";
import { startEvidence } from "./evidence.js";
import { fetchThroughPrimary } from "./fetch-relay.js";
import { followedWatch } from "./file-watch.js";
import { type ConfigFile, type ModeContext, type ModeParts, runMode } from "./mode.js";
import { RecentReports } from "./validation-reports.js";

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
   * and CAs read anew; rejects, keeping the old ones, when any cannot be read.
   */
  reload(): Promise<void>;
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

/** Egress as the one lifecycle runs it (mode.ts): its parts are the bank profiles and the handler over them. */
interface EgressParts extends ModeParts<EgressConfig> {
  readonly metrics: EgressMetrics;
}

export async function startEgressGateway(
  config: EgressConfig,
  deps: EgressDependencies,
): Promise<EgressGateway> {
  const mode = await runMode<EgressConfig, EgressParts>(
    { name: "egress", schema: egressConfigSchema, start: (c, context) => startParts(c, deps, context) },
    config,
    deps,
  );
  return {
    url: mode.url,
    server: mode.server,
    metrics: mode.parts.metrics,
    adminUrl: mode.adminUrl,
    readiness: mode.readiness,
    reload: mode.reload,
    close: mode.close,
  };
}

async function startParts(
  config: EgressConfig,
  deps: EgressDependencies,
  { started }: ModeContext,
): Promise<EgressParts> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const env = deps.env ?? process.env;
  // Replaced whole by a reload; a request in flight keeps the profile it started with.
  // In a cluster the primary fetches each bank's CRLs and OCSP answers once for every worker.
  const documentFetcher = deps.clusterWorker ? fetchThroughPrimary : undefined;
  // The validation reports of the banks' certificates, for the evidence records that name them.
  const bankReports = new RecentReports();
  let profiles = config.banks.map((bank) =>
    loadProfile(bank, env, now, logger, documentFetcher, bankReports.add),
  );
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
  // What the profiles a reload replaced had counted, by bank: the response steps' counters carry on.
  const judgedBefore = new Map<string, StepCounts>();
  metrics.watchResponseSteps(() =>
    profiles.flatMap((p) =>
      p.responseVerifier
        ? [[p.name, sumCounts(judgedBefore.get(p.name) ?? NO_COUNTS, p.responseVerifier.counts())] as const]
        : [],
    ),
  );
  let modes = new Map(profiles.map((p) => [p.name, p.responseMode]));

  // Evidence of each bank answer whose signature was checked; checkpoints signed with the store's own key.
  const evidence = config.evidence?.enabled
    ? await startEvidence(config.evidence, {
        qseal: undefined,
        metrics,
        logger,
        now,
        clusterWorker: deps.clusterWorker ?? false,
        // Each record's validation report, and the CAs of its path from the profiles' trust stores.
        reports: bankReports,
        trustStores: () =>
          profiles.flatMap((p) => (p.responseVerifier ? [p.responseVerifier.trustStore] : [])),
      })
    : undefined;
  if (evidence) started.add(() => evidence.close());
  const keepResponse =
    evidence && config.evidence
      ? responseKeeper(
          evidence,
          config.evidence.bodies,
          now,
          (bank) =>
            // The running profiles' (a reload swaps them): how a JAdES answer's payload is rebuilt.
            (running.banks.find((b) => b.name === bank)?.signing as Partial<JadesSigningRules> | undefined)
              ?.jades?.payloadStyle,
        )
      : undefined;

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
      ...(keepResponse ? { keepResponse } : {}),
      onRequest: (event) => {
        recordEgressRequest(event, logger, metrics, (bank) => modes.get(bank) ?? "off");
        deps.onRequest?.(event);
      },
    });
  let factory = factoryOf(config);
  let running = config;

  /** Every profile is loaded before any is swapped: one bad file keeps all the old ones (it throws). */
  const loadProfiles = (banks: EgressConfig["banks"]) => {
    const fresh = banks.map((bank) => loadProfile(bank, env, now, logger, documentFetcher, bankReports.add));
    return () => {
      const old = profiles;
      profiles = fresh;
      router = new BankRouter<BankProfile>(fresh);
      modes = new Map(fresh.map((p) => [p.name, p.responseMode]));
      warnExpiring(fresh, logger, now);
      // Requests under way finish on the old pools; each closes once none holds it.
      for (const p of old) {
        if (p.responseVerifier) {
          judgedBefore.set(
            p.name,
            sumCounts(judgedBefore.get(p.name) ?? NO_COUNTS, p.responseVerifier.counts()),
          );
          p.responseVerifier.stop();
        }
        const closing = p.backend.retire().finally(() => retired.delete(closing));
        retired.add(closing);
      }
      logger.info(
        { banks: fresh.map((p) => ({ name: p.name, keyId: p.signer.keyId, mtls: p.qwac !== undefined })) },
        "bank profiles loaded: keys and certificates read anew",
      );
    };
  };

  // The profiles' key and certificate files, polled: a renewal written over them (a Secret updated
  // in place) is read as SIGHUP reads it; one that does not load keeps the running profiles.
  const watch = followedWatch(() => {
    try {
      loadProfiles(running.banks)();
    } catch (error) {
      logger.error(
        { why: "files changed", err: (error as Error).message },
        "reload failed; keeping the running bank profiles",
      );
    }
  });
  const watchProfileFiles = () =>
    watch.follow(
      running.banks.flatMap((bank) => [...credentialFiles(bank.qseal), ...credentialFiles(bank.qwac)]),
      running.reload.pollSeconds * 1000,
    );
  watchProfileFiles();
  started.add(() => watch.stop());

  return {
    metrics,
    factory: () => factory,
    readiness: async () => ({ banks: { ok: true, detail: profiles.map((p) => p.name).join(", ") } }),
    listening: {
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
    // The bank profiles (keys read anew) and the body bound of a reloaded configuration, for new requests.
    async prepareReload(_running, next) {
      const commitProfiles = loadProfiles(next.banks);
      const nextFactory = factoryOf(next);
      return {
        commit: () => {
          commitProfiles();
          factory = nextFactory;
          running = next;
          watchProfileFiles();
        },
      };
    },
    // SIGHUP without a new configuration: the running profiles' keys and certificates read anew.
    reloadUnchanged: () => loadProfiles(running.banks)(),
  };
}

function loadProfile(
  bank: BankProfileConfig,
  env: NodeJS.ProcessEnv,
  now: () => number,
  logger: Logger,
  fetch: DocumentFetcher | undefined,
  onReport: (report: ValidationReport) => void,
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
    onReport,
  );
  return {
    name: bank.name,
    prefix: bank.prefix,
    host: bank.host,
    backend,
    signer,
    dialect: rules.dialect,
    responsesBindRequest: dialectUnit(rules.dialect)?.responsesBindRequest === true,
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

/** Each checked bank answer queued as a `response` record (never refused: the call has happened). */
function responseKeeper(
  sink: QueuedEvidenceStore,
  bodies: BodyPolicy,
  now: () => number,
  payloadStyleOf: (bank: string) => HttpHeadersPayloadStyle | undefined,
): (checked: CheckedResponse) => void {
  return (checked) => {
    const identity = checked.signer?.identity;
    if (identity && checked.signerCertificate && !sink.hasCertificate(identity.fingerprint))
      sink.putCertificate(identity.fingerprint, Buffer.from(checked.signerCertificate, "base64"));
    sink.offerResponse(
      verifiedResponseEvidence({
        at: now(),
        request: checked.request,
        traceId: checked.traceId,
        status: checked.status,
        headers: checked.headers,
        body: checked.body,
        verdict: checked.verdict,
        dialect: checked.dialect,
        // Read by the units that need it (JAdES's payload layout); the others ignore it.
        payloadStyle: payloadStyleOf(checked.bank),
        ...(checked.signer ? { key: checked.signer.publicKey } : {}),
        ...(checked.signer?.reportId ? { validationReport: checked.signer.reportId } : {}),
        ...(identity ? { certificate: identity.fingerprint, organizationId: identity.organizationId } : {}),
        bodies,
      }),
    );
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
