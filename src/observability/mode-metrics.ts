/**
 * What both modes' metrics share, built once: the registry (with Node's default metrics), the
 * listener's connections and limits, the backend pools, configuration reloads, the expiry of the
 * gateway's own certificates, and the request chain's per-step counters. A mode's class
 * (GatewayMetrics for ingress, EgressMetrics) adds its own series under the same prefix.
 */

import { Counter, collectDefaultMetrics, Gauge, Registry as PromRegistry, type Registry } from "prom-client";
import type { StepCounts } from "../checks/index.js";
import { BackendPoolMetrics } from "./backend-pools.js";
import { ConfigReloadMetrics } from "./config-reload.js";
import { ConnectionLimitMetrics } from "./connection-limits.js";

/** The gateway's own certificates and trusted CAs, with their expiry, read at scrape time. */
export type CertificateExpiries = () => readonly {
  kind: "tls" | "qseal" | "qwac" | "ca";
  name: string;
  notAfter: Date;
}[];

export interface ModeMetricsOptions {
  /** `psd2_gateway_` (ingress) or `psd2_gateway_egress_`: every shared series is named under it. */
  readonly prefix: string;
  /** What the request chain's steps are, for `<prefix>steps_total`'s help. */
  readonly stepsHelp: string;
  readonly certificates?: CertificateExpiries;
  readonly now?: () => number;
  /** Node's process metrics (off for a second registry in one process, as tests make). */
  readonly defaultMetrics?: boolean;
}

export class ModeMetrics {
  readonly registry = new PromRegistry();
  /** The application listener's open connections and its limits that bit. */
  readonly connections: ConnectionLimitMetrics;
  /** The backend connection pools: connections open and idle, requests in flight and queued. */
  readonly backendPools: BackendPoolMetrics;
  readonly configReloads: ConfigReloadMetrics;
  private requestSteps: () => StepCounts | undefined = () => undefined;

  constructor(options: ModeMetricsOptions) {
    const { prefix } = options;
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.connections = new ConnectionLimitMetrics(this.registry, prefix);
    this.backendPools = new BackendPoolMetrics(this.registry, prefix);
    this.configReloads = new ConfigReloadMetrics(this.registry, prefix);
    certificateExpiryGauge(this.registry, options.certificates, options.now ?? Date.now);
    stepCounter(this.registry, `${prefix}steps_total`, options.stepsHelp, [], () => {
      const counts = this.requestSteps();
      return counts ? [[{}, counts] as const] : [];
    });
  }

  /** The request chain's per-step counts (a long-lived chain, or the one a reload put in place), read at scrape time. */
  watchRequestSteps(read: () => StepCounts | undefined): void {
    this.requestSteps = read;
  }
}

/** Seconds to expiry of the gateway's own certificates and trusted CAs, read at scrape time (both modes). */
export function certificateExpiryGauge(
  registry: Registry,
  certificates: CertificateExpiries | undefined,
  now: () => number,
): void {
  new Gauge({
    name: "psd2_gateway_certificate_expiry_seconds",
    help: "Seconds until the gateway's own certificates (tls, qseal, qwac) and trusted CAs (ca) expire",
    labelNames: ["kind", "name"] as const,
    registers: [registry],
    collect() {
      if (!certificates) return;
      this.reset();
      for (const c of certificates())
        this.set({ kind: c.kind, name: c.name }, (c.notAfter.getTime() - now()) / 1000);
    },
  });
}

/**
 * A counter of each step's passes and refusals, read at scrape time from long-lived chains (both
 * modes): one set of counts per value of `labelNames` (egress: per bank profile).
 */
export function stepCounter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => Iterable<readonly [Readonly<Record<L, string>>, StepCounts]>,
): void {
  new Counter({
    name,
    help,
    labelNames: [...labelNames, "step", "outcome"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, counts] of read()) {
        counts.names.forEach((step: string, i: number) => {
          this.inc({ ...labels, step, outcome: "passed" }, counts.passed[i]!);
          this.inc({ ...labels, step, outcome: "refused" }, counts.refused[i]!);
        });
      }
    },
  });
}
