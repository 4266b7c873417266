/**
 * The evidence store's metrics (src/evidence/): records written, write latency, failures by
 * reason, and, read at scrape time, the queue's depth and the last checkpoint's age.
 */

import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** What the store says at scrape time (the file or PostgreSQL store's status()). */
export interface EvidenceGauges {
  readonly queued: number;
  readonly queueLength: number;
  readonly lastCheckpoint: number | undefined;
  readonly failing: { readonly reason: string } | undefined;
}

const WRITE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export class EvidenceMetrics {
  private status: (() => EvidenceGauges) | undefined;
  private readonly now: () => number;

  readonly written: Counter<never>;
  readonly writeDuration: Histogram<never>;
  readonly failures: Counter<"reason">;

  constructor(registry: Registry, now: () => number = Date.now) {
    this.now = now;
    this.written = new Counter({
      name: "psd2_gateway_evidence_records_written_total",
      help: "Evidence records written to the evidence store",
      registers: [registry],
    });
    this.writeDuration = new Histogram({
      name: "psd2_gateway_evidence_write_duration_seconds",
      help: "Time to write one batch of evidence records (and fsync it, with evidence.fsync every)",
      buckets: WRITE_BUCKETS,
      registers: [registry],
    });
    this.failures = new Counter({
      name: "psd2_gateway_evidence_failures_total",
      help: "Evidence not kept or not written, by reason: queue-full, store-failing (a record offered while the store fails), disk-full, read-only, gone, io, certificate, report, conflict (PostgreSQL: another process writes the same chain)",
      labelNames: ["reason"] as const,
      registers: [registry],
    });
    const read = () => this.status?.();
    new Gauge({
      name: "psd2_gateway_evidence_queue_depth",
      help: "Evidence records waiting to be written",
      registers: [registry],
      collect() {
        const s = read();
        if (s) this.set(s.queued);
      },
    });
    new Gauge({
      name: "psd2_gateway_evidence_queue_capacity",
      help: "evidence.queueLength: records the queue holds before onFailure decides",
      registers: [registry],
      collect() {
        const s = read();
        if (s) this.set(s.queueLength);
      },
    });
    const age = () => {
      const at = read()?.lastCheckpoint;
      return at === undefined ? undefined : (this.now() - at) / 1000;
    };
    new Gauge({
      name: "psd2_gateway_evidence_checkpoint_age_seconds",
      help: "Seconds since the evidence chain's last signed checkpoint",
      registers: [registry],
      collect() {
        const seconds = age();
        if (seconds !== undefined) this.set(seconds);
      },
    });
    new Gauge({
      name: "psd2_gateway_evidence_store_failing",
      help: "1 while the evidence store's writes fail",
      registers: [registry],
      collect() {
        const s = read();
        if (s) this.set(s.failing ? 1 : 0);
      },
    });
  }

  /** The store to read at scrape time. */
  watch(status: () => EvidenceGauges): void {
    this.status = status;
  }
}
