/**
 * Live trust assembled from the config: revocation (the CRL cache — configured URLs and the
 * certificates' distribution points, on disk when configured — and OCSP, in front of the local
 * CRL files) and the EU trusted lists, each refreshed on its own schedule.
 */

import { readFileSync } from "node:fs";
import type { GatewayConfig } from "../config/schema.js";
import {
  certificatesFromFile,
  type ParsedCertificate,
  type QualifiedAnchor,
  type RevocationList,
} from "../eidas/index.js";
import type { Logger } from "../observability/logger.js";
import { CrlCache } from "../trust/crl-cache.js";
import { LiveRevocation, type RevocationEvents } from "../trust/live-revocation.js";
import type { TrustSourceStatus } from "../trust/source-status.js";
import { TrustedListSet } from "../trust/trusted-lists.js";

export interface LiveRevocationParts {
  readonly revocation: LiveRevocation;
  readonly crls: CrlCache;
  statuses(): TrustSourceStatus[];
  stop(): void;
}

export async function startLiveRevocation(
  config: Pick<GatewayConfig, "revocation">,
  deps: {
    readonly logger: Logger;
    readonly now: () => number;
    readonly cas: () => readonly ParsedCertificate[];
    readonly localList: (issuer: ParsedCertificate) => RevocationList | undefined;
    /** A CRL changed: cached verdicts may rest on the old one. */
    readonly onChange: () => void;
    readonly events?: RevocationEvents;
  },
): Promise<LiveRevocationParts> {
  const { revocation: r } = config;
  const { logger } = deps;
  const crls = new CrlCache({
    cas: deps.cas,
    refreshMs: r.crl.refreshSeconds * 1000,
    graceMs: r.crl.graceSeconds * 1000,
    timeoutMs: r.crl.timeoutSeconds * 1000,
    maxBytes: r.crl.maxBytes,
    maxLists: r.crl.maxLists,
    ...(r.crl.cacheDir ? { cacheDir: r.crl.cacheDir } : {}),
    now: deps.now,
    onChange: (url) => {
      logger.info({ url }, "CRL changed; certificate verdicts checked again");
      deps.onChange();
    },
    log: (message, error) => (error ? logger.warn(message) : logger.info(message)),
  });
  crls.loadFromDisk();
  await crls.pin(r.crl.urls);
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
  });
  if (r.softFail)
    logger.warn(
      "revocation.softFail is on: certificates whose revocation status cannot be determined are let through",
    );
  return {
    revocation,
    crls,
    statuses: () => [...crls.statuses, ...revocation.responderStatuses],
    stop: () => crls.stop(),
  };
}

export interface TrustedListParts {
  /** The anchors of the last good copies. */
  anchors(): readonly QualifiedAnchor[];
  statuses(): TrustSourceStatus[];
  /** Reads every list again now (SIGHUP). */
  refresh(): Promise<void>;
  stop(): void;
}

/** First retry after a failed refresh; doubles up to the poll interval. */
const TRUSTED_LIST_RETRY_MS = 30_000;

/**
 * The EU trusted lists, read once before the gateway serves and then on their own schedule; a
 * refresh that brings other anchors calls `onChange` (the trust store is rebuilt).
 */
export async function startTrustedLists(
  config: NonNullable<GatewayConfig["trust"]["trustedLists"]>,
  deps: {
    readonly logger: Logger;
    readonly now: () => number;
    /** Other anchors than before: the trust store is rebuilt with these. */
    readonly onChange: (anchors: readonly QualifiedAnchor[]) => void;
  },
): Promise<TrustedListParts> {
  const { logger, now } = deps;
  const lotlSigners = config.lotlSigners.flatMap((file) => {
    const found = certificatesFromFile(file, readFileSync(file));
    if (found.certificates.length === 0)
      throw new Error(`trust.trustedLists.lotlSigners: no certificate in ${file}`);
    return found.certificates.map((c) => c.der);
  });
  const set = new TrustedListSet({
    lotl: config.lotl,
    lotlSigners,
    ...(config.territories ? { territories: config.territories } : {}),
    timeoutMs: config.timeoutSeconds * 1000,
  });
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let anchorsKey = "";
  const refresh = async () => {
    const result = await set.refresh(new Date(now()));
    const failed = result.lists.filter((l) => !l.ok);
    failures = failed.length > 0 ? failures + 1 : 0;
    for (const l of failed)
      logger.warn(
        { list: l.location, territory: l.territory, err: l.error },
        "trusted list refresh failed; keeping the last good copy",
      );
    for (const problem of result.problems) logger.warn(problem);
    // A new sequence number may change a CA's qualification or history without changing the CA.
    const key = [
      ...result.lists.map((l) => `${l.location}#${l.sequenceNumber}`),
      ...result.anchors.map((a) => `${a.source}:${a.certificate.sha256Fingerprint}`),
    ].join(",");
    if (key !== anchorsKey) {
      anchorsKey = key;
      logger.info(
        { lists: result.lists.filter((l) => l.inUse).length, anchors: result.anchors.length },
        "trusted lists loaded",
      );
      deps.onChange(result.anchors);
    }
  };
  const schedule = () => {
    if (stopped) return;
    const poll = config.pollSeconds * 1000;
    const delay = failures > 0 ? Math.min(TRUSTED_LIST_RETRY_MS * 2 ** (failures - 1), poll) : poll;
    // ±10 % jitter so many gateways do not fetch the lists in the same second.
    timer = setTimeout(() => void refresh().finally(schedule), delay * (0.9 + Math.random() * 0.2));
    timer.unref();
  };
  await refresh();
  schedule();
  return {
    anchors: () => set.anchors,
    refresh,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
    statuses: () => {
      const stats = new Map(set.stats().map((s) => [s.location, s]));
      const at = new Date(now());
      const staleLocations = new Set(set.stale(at).map((l) => l.location));
      const anchors = set.anchors;
      return set.current.lists.map((l) => {
        const s = stats.get(l.location);
        return {
          kind: "trusted-list" as const,
          source: `${l.territory} ${l.location}`,
          lastSuccess: s?.lastSuccess?.getTime(),
          failures: s?.failures ?? 0,
          ...(s?.lastError ? { lastError: s.lastError } : {}),
          size:
            l.kind === "lotl"
              ? set.current.lists.length - 1
              : anchors.filter((a) => a.source.includes(l.location)).length,
          ...(l.nextUpdate ? { nextUpdate: l.nextUpdate.getTime() } : {}),
          stale: !l.inUse || staleLocations.has(l.location),
          failsReadiness: true,
        };
      });
    },
  };
}
