/**
 * The evidence store from the config (src/evidence/): its checkpoints signed with the
 * response-signing QSealC when there is one, otherwise the folder's own key; its events to the
 * metrics and the log. One chain per process: a cluster worker's instance id is its own.
 */

import type { GatewayConfig } from "../config/schema.js";
import { checkpointKeyOf, FileEvidenceStore } from "../evidence/index.js";
import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { Credentials } from "./credentials.js";

export async function startEvidence(
  config: NonNullable<GatewayConfig["evidence"]>,
  parts: {
    readonly qseal: Credentials | undefined;
    readonly metrics: GatewayMetrics;
    readonly logger: Logger;
    readonly now: () => number;
    readonly clusterWorker: boolean;
  },
): Promise<FileEvidenceStore> {
  const { metrics, logger, qseal } = parts;
  const lastWarned = new Map<string, number>();
  const store = await FileEvidenceStore.open({
    folder: config.folder!,
    ...(config.instanceId !== undefined
      ? { instanceId: parts.clusterWorker ? `${config.instanceId}-${process.pid}` : config.instanceId }
      : {}),
    fsync: config.fsync,
    rotateBytes: config.rotateBytes,
    rotateSeconds: config.rotateSeconds,
    retainDays: config.retainDays,
    queueLength: config.queueLength,
    checkpointSeconds: config.checkpointSeconds,
    ...(qseal ? { key: checkpointKeyOf(qseal.privateKey, qseal.certificate.toString()) } : {}),
    now: parts.now,
    events: {
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
    },
  });
  metrics.evidence.watch(() => store.status());
  logger.info(
    {
      folder: config.folder,
      chain: store.chainId,
      checkpointKey: qseal ? "responseSigning.qseal" : "the folder's own",
      bodies: config.bodies,
      fsync: config.fsync,
      onFailure: config.onFailure,
    },
    "evidence kept",
  );
  return store;
}
