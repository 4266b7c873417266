/**
 * Trust assembled from the config: each trust source made from its section (the CA and CRL
 * folders, the TPP register's sources, the EU trusted lists, fetched CRLs, OCSP responders),
 * started in that order (fetched CRLs are verified with the CAs the ones before brought), then
 * refreshed, reported and stopped alike. What they contribute meets in the TrustPool (trust
 * store, CRL files), the TppRegister and LiveRevocation, which the verifier reads.
 */

import type { GatewayConfig, RevocationConfig } from "../config/schema.js";
import { type ParsedCertificate, type RevocationList, TppRegister } from "../eidas/index.js";
import type { Logger } from "../observability/logger.js";
import type { RefusalReason } from "../trust/bounds.js";
import { CrlCache } from "../trust/crl-cache.js";
import type { DocumentFetcher } from "../trust/http-fetch.js";
import { LiveRevocation, type RevocationEvents } from "../trust/live-revocation.js";
import { TrustPool } from "../trust/pool.js";
import {
  createRegisterSource,
  FileRegisterSource,
  HttpRegisterSource,
  MetadataRegisterSource,
  type RegisterSource,
  RegisterTrustSource,
} from "../trust/register-sources.js";
import type { TrustSource } from "../trust/source.js";
import type { TrustReport, TrustSourceKind, TrustSourceStatus } from "../trust/source-status.js";
import { TrustFolderSource } from "../trust/trust-material.js";
import { TrustedListSource } from "../trust/trusted-lists.js";

export interface Trust {
  /** The trust store and the CRL files. */
  readonly pool: TrustPool;
  readonly register: TppRegister;
  /** OCSP, fetched CRLs and CRL files, asked in the configured order. */
  readonly revocation: LiveRevocation;
  readonly sources: readonly TrustSource[];
  /** Every source's state: metrics, /readyz, /trust. */
  statuses(): TrustSourceStatus[];
  /** The sources and the OCSP cache: /trust. */
  report(): TrustReport;
  /** SIGHUP: every source that can be read on demand is read again, in the background. */
  refresh(): void;
  /**
   * Reads the sources kept in files again and returns what puts them in place; throws (keeping the
   * old) when they do not load.
   */
  prepareReload(): () => void;
  stop(): void;
}

/** What the metrics count of trust: live revocation's answers, and documents refused by their bounds. */
export interface TrustEvents extends RevocationEvents {
  /** A CRL, OCSP answer, register copy or trusted list refused by a bound (the copy held is kept). */
  documentRefused?(kind: TrustSourceKind, reason: RefusalReason): void;
}

export interface TrustDependencies {
  readonly logger: Logger;
  readonly now: () => number;
  /** Cached verdicts may rest on what changed (a CA, an anchor, a CRL). */
  readonly onChange: () => void;
  readonly events?: TrustEvents;
  /** What every source fetches with: fetchDocument by default, the primary's relay in a cluster worker. */
  readonly fetch?: DocumentFetcher;
}

export async function startTrust(
  config: Pick<GatewayConfig, "trust" | "revocation" | "register">,
  deps: TrustDependencies,
): Promise<Trust> {
  const { logger, now } = deps;
  const fetch = deps.fetch ? { fetch: deps.fetch } : {};
  const r = config.revocation;
  const lists = config.trust.trustedLists;
  const pool = new TrustPool(deps.onChange);
  const register = registerOf(config, now);
  const sources: TrustSource[] = [];
  /** Made and started one after the other: fetched CRLs are verified with the CAs the ones before brought. */
  const add = async <S extends TrustSource>(source: S): Promise<S> => {
    sources.push(source);
    await source.start();
    return source;
  };
  try {
    await add(
      new TrustFolderSource({
        caDir: config.trust.caDir,
        crlDir: config.trust.crlDir,
        listsToo: lists !== undefined,
        graceMs: r.crl.graceSeconds * 1000,
        pool,
        log: logger,
        now,
      }),
    );
    await add(
      new RegisterTrustSource(
        register,
        registerSourcesOf(config, register, logLine(logger), deps.fetch, refusedAs(deps.events, "register")),
      ),
    );
    if (lists)
      await add(
        new TrustedListSource({
          lotl: lists.lotl,
          lotlSignerFiles: lists.lotlSigners,
          ...(lists.territories ? { territories: lists.territories } : {}),
          timeoutMs: lists.timeoutSeconds * 1000,
          pollMs: lists.pollSeconds * 1000,
          ...optional("onRefused", refusedAs(deps.events, "trusted-list")),
          pool,
          log: logger,
          now,
          ...fetch,
        }),
      );
    const live = liveRevocationOf(r, {
      cas: () => pool.cas(),
      localList: (issuer) => pool.localList(issuer),
      now,
      onChange: (url) => {
        logger.info({ url }, "CRL changed; certificate verdicts checked again");
        deps.onChange();
      },
      log: logLine(logger),
      ...(deps.events ? { events: deps.events } : {}),
      ...fetch,
    });
    await add(live.crls);
    const revocation = await add(live.revocation);
    if (r.softFail)
      logger.warn(
        "revocation.softFail is on: certificates whose revocation status cannot be determined are let through",
      );
    return trustOf(pool, register, revocation, sources);
  } catch (error) {
    for (const source of sources) source.stop();
    throw error;
  }
}

export interface LiveRevocationDependencies {
  /** The CAs a fetched CRL may be signed by, read when a list arrives. */
  readonly cas: () => readonly ParsedCertificate[];
  /** CRL files, looked up by issuer. */
  readonly localList: (issuer: ParsedCertificate) => RevocationList | undefined;
  readonly now: () => number;
  /** A fetched CRL changed: the verdicts resting on the old one must go. */
  readonly onChange?: (url: string) => void;
  readonly log?: (message: string, error?: boolean) => void;
  readonly events?: TrustEvents;
  /** What CRLs and OCSP are fetched with (default fetchDocument). */
  readonly fetch?: DocumentFetcher;
}

/**
 * The one live revocation path (OCSP, CRL distribution points, `crl.urls`, CRL files; fail closed
 * unless `softFail`) made from a `revocation:` section: ingress's trust, egress's check of a bank's
 * certificate and `psd2-gateway verify` all take it from here. The CrlCache is a trust source: its
 * owner starts and stops it.
 */
export function liveRevocationOf(
  r: RevocationConfig,
  deps: LiveRevocationDependencies,
): { crls: CrlCache; revocation: LiveRevocation } {
  const crls = new CrlCache({
    urls: r.crl.urls,
    cas: deps.cas,
    refreshMs: r.crl.refreshSeconds * 1000,
    graceMs: r.crl.graceSeconds * 1000,
    timeoutMs: r.crl.timeoutSeconds * 1000,
    maxBytes: r.crl.maxBytes,
    maxLists: r.crl.maxLists,
    ...(r.crl.cacheDir ? { cacheDir: r.crl.cacheDir } : {}),
    now: deps.now,
    ...(deps.onChange ? { onChange: deps.onChange } : {}),
    ...(deps.log ? { log: deps.log } : {}),
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...optional("onRefused", refusedAs(deps.events, "crl")),
  });
  const revocation = new LiveRevocation({
    order: r.order,
    softFail: r.softFail,
    firstAnswerTimeoutMs: r.firstAnswerTimeoutSeconds * 1000,
    ocsp: {
      timeoutMs: r.ocsp.timeoutSeconds * 1000,
      maxAgeMs: r.ocsp.maxAgeSeconds * 1000,
      maxEntries: r.ocsp.maxEntries,
    },
    crls,
    localList: deps.localList,
    graceMs: r.crl.graceSeconds * 1000,
    now: deps.now,
    ...(deps.events ? { events: deps.events } : {}),
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...(deps.log ? { log: deps.log } : {}),
    ...optional("onRefused", refusedAs(deps.events, "ocsp")),
  });
  return { crls, revocation };
}

/** What the gateway does with every source alike. */
function trustOf(
  pool: TrustPool,
  register: TppRegister,
  revocation: LiveRevocation,
  sources: readonly TrustSource[],
): Trust {
  const statuses = () => sources.flatMap((s) => s.status());
  return {
    pool,
    register,
    revocation,
    sources,
    statuses,
    report: () => ({ sources: statuses(), ocspCache: revocation.ocspCacheStatus }),
    refresh: () => {
      for (const source of sources) void source.refresh?.();
    },
    prepareReload: () => {
      // Everything is read first; only when all of it loads does any of it replace the old state.
      const commits = sources.flatMap((s) => (s.prepareReload ? [s.prepareReload()] : []));
      return () => {
        for (const commit of commits) commit();
      };
    },
    stop: () => {
      for (const source of sources) source.stop();
    },
  };
}

/** A file is cheap to look at: checked every few seconds whatever the poll interval. */
const FILE_POLL_MS = 5_000;

/** The register's layers: one per source (the simple form is one layer called `register`). */
function registerOf(config: Pick<GatewayConfig, "register">, now: () => number): TppRegister {
  const r = config.register;
  const bankCountry = r.bankCountry ? { bankCountry: r.bankCountry } : {};
  const layers = r.sources
    ? r.sources.map((s) => ({ name: s.name, maxAgeMs: s.maxAgeSeconds * 1000 }))
    : [{ name: "register", maxAgeMs: r.maxAgeSeconds * 1000 }];
  return new TppRegister({ sources: layers, now, ...bankCountry });
}

function registerSourcesOf(
  config: Pick<GatewayConfig, "register">,
  register: TppRegister,
  log: (message: string, error?: boolean) => void,
  fetch: DocumentFetcher | undefined,
  onRefused: ((reason: RefusalReason) => void) | undefined,
): RegisterSource[] {
  const r = config.register;
  // Every layer shares the register's bounds: the bytes read, and a ZIP's (register-zip.ts).
  const shared = {
    ...(fetch ? { fetch } : {}),
    ...optional("onRefused", onRefused),
    maxBytes: r.maxBytes,
    load: {
      maxUncompressedBytes: r.zip.maxUncompressedBytes,
      maxZipEntries: r.zip.maxEntries,
      maxCompressionRatio: r.zip.maxRatio,
    },
  };
  if (r.sources)
    return r.sources.map((s) => {
      const pollMs = s.pollSeconds * 1000;
      return createRegisterSource(
        {
          name: s.name,
          format: s.format,
          ...(s.file
            ? { file: s.file, pollMs: Math.min(pollMs, FILE_POLL_MS) }
            : s.metadata
              ? { metadata: s.metadata, pollMs }
              : { url: s.url!, pollMs }),
          ...shared,
        },
        register,
        log,
      );
    });
  const pollMs = r.pollSeconds * 1000;
  const options = { format: r.format, name: "register", ...shared };
  return [
    ...(r.file
      ? [new FileRegisterSource(r.file, register, Math.min(pollMs, FILE_POLL_MS), log, options)]
      : []),
    ...(r.url ? [new HttpRegisterSource(r.url, register, pollMs, log, options)] : []),
    ...(r.metadata ? [new MetadataRegisterSource(r.metadata, register, pollMs, log, options)] : []),
  ];
}

/** The refusal callback of one kind of source, when anything counts refusals. */
function refusedAs(
  events: TrustEvents | undefined,
  kind: TrustSourceKind,
): ((reason: RefusalReason) => void) | undefined {
  const count = events?.documentRefused;
  return count ? (reason) => count(kind, reason) : undefined;
}

/** `{ [key]: value }` when value is defined, `{}` otherwise (exactOptionalPropertyTypes). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function logLine(logger: Logger): (message: string, error?: boolean) => void {
  return (message, error) => (error ? logger.warn(message) : logger.info(message));
}
