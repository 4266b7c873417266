/**
 * The one builder of ingress's request path from a validated config: the chain of named steps
 * (with the unattended-access policy and the response signer it needs) and the exchange factory
 * around it. `start` builds it at start and again on a configuration reload; `verify --config`
 * builds the same chain, so its verdicts are the gateway's; the benches build it through
 * startGateway. The long-lived parts it is built on (the certificate verifier, the limit store,
 * the logs and metrics) are passed in, never made here.
 */

import {
  type CertificateVerifier,
  Chain,
  type CheckContext,
  type CheckOptions,
  type Dialect,
  type DialectUnit,
  dialectUnit,
  dialectUnits,
  type ResponseSigner,
  RoleTable,
  requestChecks,
  requestMessage,
  type SignResponse,
} from "../checks/index.js";
import { restartKeysChanged } from "../config/restart.js";
import { configSchema, type GatewayConfig } from "../config/schema.js";
import { type KeyResolver, parseCertificate, TppVerifier, type ValidationReport } from "../eidas/index.js";
import { isRejection } from "../errors.js";
import type { RequestObserver } from "../events.js";
import {
  type EvidenceSink,
  evidenceStep,
  type ResponseEvidenceSink,
  withResponseEvidence,
} from "../evidence/index.js";
import type { Backend } from "../forward/backend.js";
import { joinedHeaders } from "../forward/headers.js";
import { createIngressHandler } from "../ingress/handler.js";
import { type LimitStore, MemoryLimitStore, UnattendedAccessPolicy } from "../limits/index.js";
import type { ExchangeFactory } from "../listener/connection.js";
import type { Logger } from "../observability/logger.js";
import { type Credentials, loadCredentials } from "./credentials.js";
import { forwardedHeaderNames } from "./forwarded-headers.js";
import { keyResolverOf, rememberingTrusted } from "./keys.js";
import { startTrust, type Trust } from "./trust.js";

/** What the chain is built on besides the config. */
export interface ChainParts {
  readonly now: () => number;
  readonly certificates: CertificateVerifier;
  readonly store: LimitStore;
  /** Hooks into logs and metrics; none in explain mode. */
  readonly onStoreError?: (error: unknown) => void;
  readonly onReplayRefused?: () => void;
  readonly onUnattendedExceeded?: (limitClass: string, source: string) => void;
  /** An unattended call let through, by where its limit came from (limits/agreements.ts). */
  readonly onUnattendedAdmitted?: (limitClass: string, source: string) => void;
  /** `verify --config` explains a request without its connection: mutual TLS is not checked. */
  readonly withoutConnection?: boolean;
  /**
   * Where the `evidence` step (the chain's last) queues its records, and the response signer those
   * of the responses it signs, when evidence is enabled.
   */
  readonly evidence?: EvidenceSink & ResponseEvidenceSink;
  /** Finds the certificate a JWS names by kid / x5t#S256 (config `keys`); without it, x5c only. */
  readonly keys?: KeyResolver;
  /**
   * The response-signing QSealC as the gateway loaded it (a renewal read at the same path replaces
   * it); without it, read from `responseSigning.qseal` here.
   */
  readonly responseQseal?: Credentials;
}

const keysOf = (parts: ChainParts) => (parts.keys ? { keys: parts.keys } : {});

/** The chain the config asks for, every step in its order. */
export function chainOf(config: GatewayConfig, parts: ChainParts): Chain<CheckContext> {
  const verification = config.verification;
  const unattendedConfig = config.limits.unattended;
  const onStoreError = parts.onStoreError;
  const unattended = unattendedConfig.enabled
    ? new UnattendedAccessPolicy(
        {
          limit: unattendedConfig.limit,
          windowMs: unattendedConfig.windowSeconds * 1000,
          routes: unattendedConfig.routes,
          includeConsentId: unattendedConfig.includeConsentId,
          maxTransactionAgeDays: unattendedConfig.maxTransactionAgeDays,
          failOpen: config.store.failOpen,
          agreements: unattendedConfig.agreements,
          consentFrequencyHeader: unattendedConfig.consentFrequencyHeader,
          consentFrequencyTtlMs: unattendedConfig.consentFrequencyTtlSeconds * 1000,
        },
        parts.store,
        {
          ...(onStoreError ? { onStoreError } : {}),
          ...(parts.onUnattendedExceeded ? { onExceeded: parts.onUnattendedExceeded } : {}),
          ...(parts.onUnattendedAdmitted ? { onAdmitted: parts.onUnattendedAdmitted } : {}),
        },
      )
    : undefined;
  const signing = config.responseSigning;
  const options: CheckOptions = {
    now: parts.now,
    dateToleranceMs: verification.dateToleranceSeconds * 1000,
    algorithms: verification.algorithms,
    allowDecimalSerial: verification.allowDecimalSerial,
    keyIdPolicy: verification.keyIdPolicy,
    redirectUriOptionalPrefixes: verification.redirectUriOptionalPrefixes.map((p) => p.toLowerCase()),
    characterPolicy: verification.characterPolicy,
    certificates: parts.certificates,
    hostNames: config.listen.hostNames,
    clientCertificate: {
      mode: parts.withoutConnection ? "not-checked" : config.listen.clientCertificate,
      requireSameOrganization: config.listen.requireSameOrganization,
    },
    replay: parts.store,
    replayWindowMs: (config.replay.windowSeconds ?? 0) * 1000,
    storeFailOpen: config.store.failOpen,
    ...(onStoreError ? { onStoreError } : {}),
    ...(parts.onReplayRefused ? { onReplayRefused: parts.onReplayRefused } : {}),
    overrideHeaders: verification.overrideHeaders,
    dialects: {
      accept: verification.dialects.accept,
      routes: verification.dialects.routes.map((r) => ({ prefix: r.prefix.toLowerCase(), accept: r.accept })),
    },
    // Each dialect's own options from its config fragment; a JWS dialect finds keys through `keys`.
    ownOptions: Object.fromEntries(
      [...dialectUnits()].map((unit) => [
        unit.name,
        { ...(ownOptionsIn(config, unit) as object), ...keysOf(parts) },
      ]),
    ),
    maxBodyBytes: verification.maxBodyBytes,
    ...(unattended ? { unattended } : {}),
    ...(signing ? { responseSigner: responseSignerOf(config, signing, parts) } : {}),
  };
  const steps = requestChecks(options);
  const evidence = config.evidence;
  if (parts.evidence && evidence?.enabled) {
    // Last: it runs once every other step has passed, before the request (or its body's last
    // chunk) is forwarded.
    steps.push(
      evidenceStep({
        sink: parts.evidence,
        bodies: evidence.bodies,
        onFailure: evidence.onFailure,
        now: parts.now,
      }),
    );
  }
  return new Chain(steps);
}

/** The response signer, each response it signs recorded when evidence is kept. */
function responseSignerOf(
  config: GatewayConfig,
  signing: NonNullable<GatewayConfig["responseSigning"]>,
  parts: ChainParts,
): ResponseSigner {
  const qseal = parts.responseQseal ?? loadCredentials(signing.qseal, "responseSigning.qseal");
  const signer = responseSignerFrom(signing, qseal, (unit) => ownOptionsIn(config, unit));
  if (!parts.evidence || !config.evidence?.enabled) return signer;
  const parsed = parseCertificate(qseal.certificateDer);
  const organizationId = isRejection(parsed) ? undefined : parsed.organizationIdentifier;
  return withResponseEvidence(signer, {
    sink: parts.evidence,
    bodies: config.evidence.bodies,
    certificate: qseal.certificateDer,
    ...(organizationId !== undefined ? { organizationId } : {}),
    now: parts.now,
    // RFC 9421's `;req` components, with the scheme its own options name.
    requestMessage: (request) => requestMessage(request, rfc9421SchemeIn(config)),
  });
}

function rfc9421SchemeIn(config: GatewayConfig): "https" | "http" {
  const unit = dialectUnit("rfc9421");
  return (
    (unit && (ownOptionsIn(config, unit) as { scheme?: "https" | "http" } | undefined)?.scheme) ?? "https"
  );
}

/** A dialect's own options as the config holds them (`verification.dialects.<its fragment's key>`). */
function ownOptionsIn(config: GatewayConfig, unit: DialectUnit): unknown {
  const dialects: Readonly<Record<string, unknown>> = config.verification.dialects;
  return unit.config === undefined ? undefined : dialects[unit.config.key];
}

/** The routes' roles the config names (the role check, and metrics' route classes). */
export function rolesOf(config: GatewayConfig): RoleTable {
  return new RoleTable(config.verification.roles);
}

export interface RequestPath {
  readonly chain: Chain<CheckContext>;
  readonly factory: ExchangeFactory;
}

/** The chain and the exchange factory around it: what the listener serves. */
export function requestPathOf(
  config: GatewayConfig,
  parts: ChainParts & {
    readonly backend: Backend;
    /** Added to every forwarded request (the demo bank's gateway secret); clients' copies removed. */
    readonly backendHeaders?: Readonly<Record<string, string>>;
    readonly draining: () => boolean;
    readonly onRequest: RequestObserver;
  },
): RequestPath {
  const chain = chainOf(config, parts);
  const factory = createIngressHandler({
    chain,
    roles: rolesOf(config),
    backend: parts.backend,
    ...(parts.backendHeaders ? { backendHeaders: parts.backendHeaders } : {}),
    identityHeaders: config.identityHeaders,
    statusProfile: config.verification.statusProfile,
    trustedProxies: new Set(config.listen.trustedProxies),
    clientCertificateHeader: config.listen.clientCertificateHeader,
    forwardedHeaders: forwardedHeaderNames(config.backend.forwardedHeaders),
    draining: parts.draining,
    ...(parts.onStoreError ? { onStoreError: parts.onStoreError } : {}),
    onRequest: parts.onRequest,
  });
  return { chain, factory };
}

/**
 * The bank's response signer: each answer signed in the dialect of the request it answers, by that
 * dialect's unit (`responseSigner`, built once per unit here), with the bank's QSealC. An answer to
 * a request in a dialect that cannot sign answers fails closed (502, never sent unsigned); config
 * refuses to accept such a dialect beside `responseSigning` when it loads.
 */
export function responseSignerFrom(
  signing: NonNullable<GatewayConfig["responseSigning"]>,
  qseal: Credentials,
  ownOptions: (unit: DialectUnit) => unknown = () => undefined,
): ResponseSigner {
  const { qseal: _paths, ...rules } = signing;
  const signers = new Map<Dialect, SignResponse>();
  for (const unit of dialectUnits()) {
    const own = { ...(unit.defaults as object), ...(ownOptions(unit) as object | undefined) };
    const signer = unit.responseSigner?.({
      privateKey: qseal.privateKey,
      certificateDer: qseal.certificateDer,
      certificateHeader: signing.certificateHeader,
      rules,
      own,
    });
    if (signer) signers.set(unit.name, signer);
  }
  return {
    maxBodyBytes: signing.maxBodyBytes,
    sign: async (body, headers, status, request) => {
      const sign = signers.get(request.dialect);
      if (!sign)
        throw new Error(`the signing dialect '${request.dialect}' cannot sign responses in this build`);
      return sign(body, joinedHeaders(headers), status, request);
    },
  };
}

/**
 * What a running ingress gateway cannot take over without a restart: the keys its schema marks
 * (config/restart.ts), and the demo bank's two switches, which are conditions rather than keys.
 */
export function keysNeedingRestart(running: GatewayConfig, next: GatewayConfig): string[] {
  return [...restartKeysChanged(configSchema, running, next), ...demoBankRestartKeys(running, next)];
}

/** What the schema cannot mark: the demo bank, started for `sandbox`, reads what it started with. */
export function demoBankRestartKeys(running: GatewayConfig, next: GatewayConfig): string[] {
  const keys: string[] = [];
  // The demo bank is started for `sandbox` and stays: a switch to or from it needs a restart.
  if ((running.backend.url === "sandbox") !== (next.backend.url === "sandbox"))
    keys.push("backend.url (sandbox)");
  // The demo bank reads the names it was started with.
  const demoNames = (c: GatewayConfig) =>
    c.backend.url === "sandbox" ? JSON.stringify(c.identityHeaders) : "";
  if (demoNames(running) !== demoNames(next)) keys.push("identityHeaders (sandbox)");
  return keys;
}

/** The certificate verdicts over the trust sources, cached as the config says. */
export function verifierOf(
  config: GatewayConfig,
  trust: Trust,
  logger: Logger,
  now: () => number,
  onReport?: (report: ValidationReport) => void,
): TppVerifier {
  return new TppVerifier({
    trustStore: () => trust.pool.trustStore,
    revocation: () => trust.revocation,
    onRevocationWarning: (certificate, warning) =>
      logger.warn({ certificate: certificate.sha256Fingerprint }, warning),
    // One line per judgement (not per request): the access lines' trustReport points here.
    onReport: (report) => {
      logger.info({ report }, "validation report");
      onReport?.(report);
    },
    register: trust.register,
    kinds: {
      qseal: config.verification.certificateKinds.signature,
      qwac: config.verification.certificateKinds.clientCertificate,
    },
    now,
    cacheTtlMs: config.cache.ttlSeconds * 1000,
    failureTtlMs: config.cache.failureTtlSeconds * 1000,
    maxEntries: config.cache.maxEntries,
  });
}

/**
 * The chain a gateway started with `config` runs, for `verify --config`: the same trust sources
 * (they load and fetch as the gateway's do) and verifier, over a fresh in-memory store, so a request
 * is judged as the gateway judges the first of its kind (no replay, its unattended slot free).
 */
export async function startChainOfConfig(
  config: GatewayConfig,
  logger: Logger,
  now: () => number,
  onReport?: (report: ValidationReport) => void,
): Promise<{ chain: Chain<CheckContext>; roles: RoleTable; close(): Promise<void> }> {
  let verifier: TppVerifier | undefined;
  const trust = await startTrust(config, { logger, now, onChange: () => verifier?.invalidate() });
  verifier = verifierOf(config, trust, logger, now, onReport);
  const store = new MemoryLimitStore({ now, maxWindows: 1024, maxReplayKeys: 1024, purgeIntervalMs: 0 });
  try {
    const keys = keyResolverOf(config, { now });
    return {
      chain: chainOf(config, {
        now,
        certificates: rememberingTrusted(verifier, keys),
        store,
        withoutConnection: true,
        keys,
      }),
      roles: rolesOf(config),
      async close() {
        trust.stop();
        await store.close();
      },
    };
  } catch (error) {
    trust.stop();
    await store.close();
    throw error;
  }
}
