/**
 * The evidence store from the config (src/evidence/): a folder, or PostgreSQL (`store: postgres`);
 * its checkpoints signed with the response-signing QSealC when there is one, otherwise the store's
 * own key; its events to the metrics and the log. One chain per process: a cluster worker's
 * instance id is its own.
 */

import type { GatewayConfig } from "../config/schema.js";
import type { TrustStore } from "../eidas/index.js";
import {
  checkpointKeyOf,
  type EvidenceEvents,
  type EvidenceStoreStatus,
  type FailurePolicy,
  FileEvidenceStore,
  PostgresEvidenceStore,
  type QueuedEvidenceStore,
  redactedUrl,
  type ValidationEvidence,
} from "../evidence/index.js";
import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Credentials } from "./credentials.js";
import type { RecentReports } from "./validation-reports.js";

export async function startEvidence(
  config: NonNullable<GatewayConfig["evidence"]>,
  parts: {
    readonly qseal: Credentials | undefined;
    /** Ingress's or egress's: both carry the evidence metrics. */
    readonly metrics: Pick<GatewayMetrics, "evidence">;
    readonly logger: Logger;
    readonly now: () => number;
    readonly clusterWorker: boolean;
    /** The recent validation reports and the trust store: each record's report and CAs are kept with it. */
    readonly reports?: RecentReports;
    /** The trust stores in force (a reload swaps them): read at each record's report. */
    readonly trustStores?: () => readonly TrustStore[];
  },
): Promise<QueuedEvidenceStore> {
  const { metrics, logger, qseal } = parts;
  const lastWarned = new Map<string, number>();
  const events: EvidenceEvents = {
    written: (records, seconds) => {
      metrics.evidence.written.inc(records);
      metrics.evidence.writeDuration.observe(seconds);
    },
    failed: (reason, error) => {
      metrics.evidence.failures.inc({ reason });
      // One line per reason every 10 s: a full queue under load must not flood the log.
      const now = Date.now();
      if (now - (lastWarned.get(reason) ?? 0) < 10_000) return;
      lastWarned.set(reason, now);
      logger.warn(
        { reason, ...(error ? { err: error.message } : {}) },
        "evidence: a record could not be kept or written",
      );
    },
    recovered: () => logger.info("evidence: the store writes again"),
  };
  const shared = {
    ...(config.instanceId !== undefined
      ? { instanceId: parts.clusterWorker ? `${config.instanceId}-${process.pid}` : config.instanceId }
      : {}),
    rotateBytes: config.rotateBytes,
    rotateSeconds: config.rotateSeconds,
    retainDays: config.retainDays,
    queueLength: config.queueLength,
    checkpointSeconds: config.checkpointSeconds,
    ...(qseal ? { key: checkpointKeyOf(qseal.privateKey, qseal.certificate.toString()) } : {}),
    now: parts.now,
    ...(parts.reports && parts.trustStores
      ? { validation: validationOf(parts.reports, parts.trustStores) }
      : {}),
    events,
  };
  const store =
    config.store === "postgres"
      ? await PostgresEvidenceStore.open({ ...shared, url: config.postgres!.url })
      : await FileEvidenceStore.open({ ...shared, folder: config.folder!, fsync: config.fsync });
  metrics.evidence.watch(() => store.status());
  logger.info(
    {
      ...(config.store === "postgres"
        ? { postgres: redactedUrl(config.postgres!.url) }
        : { folder: config.folder, fsync: config.fsync }),
      chain: store.chainId,
      checkpointKey: qseal
        ? "responseSigning.qseal"
        : `the ${config.store === "postgres" ? "database" : "folder"}'s own`,
      bodies: config.bodies,
      onFailure: config.onFailure,
    },
    "evidence kept",
  );
  return store;
}

/** A report by id and the DER of the CAs on its path that the trust stores hold. */
function validationOf(
  reports: RecentReports,
  trustStores: () => readonly TrustStore[],
): (id: string) => ValidationEvidence | undefined {
  const byFingerprint = new WeakMap<TrustStore, Map<string, Uint8Array>>();
  const known = (store: TrustStore) => {
    let map = byFingerprint.get(store);
    if (!map) {
      map = new Map();
      for (const c of store.all) map.set(c.sha256Fingerprint, c.der);
      for (const a of store.anchors) map.set(a.certificate.sha256Fingerprint, a.certificate.der);
      byFingerprint.set(store, map);
    }
    return map;
  };
  return (id) => {
    const report = reports.get(id);
    if (!report) return undefined;
    const stores = trustStores().map(known);
    const issuers = report.path
      .filter((p) => p.role !== "signer")
      .flatMap((p) => {
        const der = stores.map((cas) => cas.get(p.sha256)).find((d) => d !== undefined);
        return der ? [der] : [];
      });
    return { report, issuers };
  };
}

export interface EvidenceReadiness {
  readonly ok: boolean;
  readonly detail: string;
  readonly reason?: string;
}

/**
 * /readyz's evidence check: a store that cannot write makes the instance not ready when any route
 * class refuses without its record (a load balancer then sends the TPPs elsewhere); under
 * `continue` alone it is named, and the instance stays in rotation.
 */
export function evidenceReadiness(
  status: Pick<EvidenceStoreStatus, "failing" | "queued" | "queueLength">,
  onFailure: { readonly payments: FailurePolicy; readonly others: FailurePolicy },
): EvidenceReadiness {
  const refuses = onFailure.payments === "refuse" || onFailure.others === "refuse";
  const full = status.queued >= status.queueLength;
  if (!status.failing && !full)
    return { ok: true, detail: `${status.queued} of ${status.queueLength} queued` };
  const detail = status.failing
    ? `failing since ${new Date(status.failing.since).toISOString()}: ${status.failing.reason}`
    : `queue full (${status.queueLength})`;
  return {
    ok: !refuses,
    detail: refuses ? detail : `${detail} (onFailure continue: requests pass without records)`,
    reason: status.failing ? status.failing.reason : "queue-full",
  };
}
