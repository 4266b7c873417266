/**
 * The gateway's Prometheus metrics (prom-client), in one registry handed to the parts that count.
 * Names follow Prometheus conventions: `psd2_gateway_` prefix, `_total` counters, base units
 * (`_seconds`), and bounded label values only (route classes and codes, never paths or ids).
 */

import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { StepCounts } from "../checks/index.js";
import type { OcspCacheStatus, TrustSourceStatus } from "../trust/source-status.js";
import { BoundCounter, BoundHistogram } from "./bound-metrics.js";
import { EvidenceMetrics } from "./evidence-metrics.js";
import { type CertificateExpiries, ModeMetrics } from "./mode-metrics.js";

/** Latency buckets in seconds: the gateway's own share is sub-millisecond, the backend's can be seconds. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface MetricSources {
  /** Certificate verdict cache counters, read at scrape time. */
  readonly certificateCache?: () => { hits: number; misses: number; size: number; evictions: number };
  /** TPP register state, read at scrape time. */
  readonly register?: () => { entries: number; lastSuccess: number | undefined; failures: number };
  /** Limit store counters, read at scrape time. */
  readonly store?: () => { evictions: number; errors: number };
  /** Expiry of the gateway's own certificates and of trusted CAs, read at scrape time. */
  readonly certificates?: CertificateExpiries;
  /** The chain's passes and refusals per step, read at scrape time. */
  readonly steps?: () => StepCounts | undefined;
  /** Every trust source (CRLs, OCSP responders, register sources, trusted lists), read at scrape time. */
  readonly trustSources?: () => readonly TrustSourceStatus[];
  /** The OCSP answers held in memory, read at scrape time. */
  readonly ocspCache?: () => OcspCacheStatus;
  readonly now?: () => number;
}

/** Ingress's metrics: the shared set (ModeMetrics) and what only ingress judges (trust, cache, register, store, limits). */
export class GatewayMetrics extends ModeMetrics {
  private readinessOf:
    | (() => Promise<{ checks: Record<string, { ok: boolean; reason?: string }> }>)
    | undefined;

  /** What /readyz judges, for `psd2_gateway_ready` (set once the mode knows its checks). */
  watchReadiness(read: () => Promise<{ checks: Record<string, { ok: boolean; reason?: string }> }>): void {
    this.readinessOf = read;
  }

  // The four per-request metrics are bound once per label combination (request-log.ts).
  readonly requests = new BoundCounter({
    name: "psd2_gateway_requests_total",
    help: "Requests handled, by mode, route class, outcome (forwarded, rejected, upstream_error) and HTTP status",
    labelNames: ["mode", "route_class", "outcome", "status"] as const,
    registers: [this.registry],
  });

  readonly rejections = new Counter({
    name: "psd2_gateway_rejections_total",
    help: "Requests the gateway answered itself, by Berlin Group code and the step that refused them (a step of the chain, request-timeout, upstream, …)",
    labelNames: ["code", "step"] as const,
    registers: [this.registry],
  });

  readonly requestDuration = new BoundHistogram({
    name: "psd2_gateway_request_duration_seconds",
    help: "Time from request start to response end, by mode and route class",
    labelNames: ["mode", "route_class"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly gatewayDuration = new BoundHistogram({
    name: "psd2_gateway_own_duration_seconds",
    help: "The gateway's own share of each request's time (total minus the upstream's)",
    labelNames: ["mode", "route_class"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly upstreamDuration = new BoundHistogram({
    name: "psd2_gateway_upstream_duration_seconds",
    help: "Time from forwarding to the backend's response headers",
    labelNames: ["mode", "route_class"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly upstreamErrors = new Counter({
    name: "psd2_gateway_upstream_errors_total",
    help: "Backend failures: refused or reset (bad_gateway) and slower than the timeout (timeout)",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });

  readonly unattendedRejections = new Counter({
    name: "psd2_gateway_unattended_limit_rejections_total",
    help: "Calls without the PSU present refused by their limit (SPEC 8's 4 per 24 h, or one agreed), by class and where the limit came from",
    labelNames: ["class", "source"] as const,
    registers: [this.registry],
  });

  readonly unattendedCalls = new Counter({
    name: "psd2_gateway_unattended_calls_total",
    help: "Calls without the PSU present let through under their limit, by class and where the limit came from (default, register, config, consent, config-consent)",
    labelNames: ["class", "source"] as const,
    registers: [this.registry],
  });

  readonly replayRefusals = new Counter({
    name: "psd2_gateway_replay_refusals_total",
    help: "Requests refused because their signature was already used inside the replay window",
    registers: [this.registry],
  });

  /** The evidence store: records written, queue, write latency, checkpoint age, failures. */
  readonly evidence = new EvidenceMetrics(this.registry);

  readonly defects = new Counter({
    name: "psd2_gateway_defects_total",
    help: "Exceptions the gateway caught where none was expected (a bug: the request was still refused), by where",
    labelNames: ["where"] as const,
    registers: [this.registry],
  });

  readonly ocspRequests = new Histogram({
    name: "psd2_gateway_ocsp_request_duration_seconds",
    help: "OCSP round trips to QTSP responders, by outcome (good, revoked, unknown, error)",
    labelNames: ["outcome"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly revocationUnknown = new Counter({
    name: "psd2_gateway_revocation_unknown_total",
    help: "Certificates whose revocation status no source could prove: refused, or allowed by revocation.softFail",
    labelNames: ["action"] as const,
    registers: [this.registry],
  });

  readonly trustDocumentsRefused = new Counter({
    name: "psd2_gateway_trust_documents_refused_total",
    help: "Trust documents refused by a bound (the copy held is kept), by source kind (crl, ocsp, register, trusted-list) and reason (size, uncompressed-size, entries, ratio, content-encoding)",
    labelNames: ["source_kind", "reason"] as const,
    registers: [this.registry],
  });

  readonly keyDirectoryFetches = new Counter({
    name: "psd2_gateway_key_directory_fetches_total",
    help: "Fetches of TPPs' key directories (a JWKS or a key's x5u, keys.directories) by result (fetched, failed: down, slow, too large, not a JWKS)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });

  readonly certificateValidations = new Counter({
    name: "psd2_gateway_certificate_validations_total",
    help: "Certificates judged (verdict-cache misses), by the validation report's indication, sub-indication and the check that decided",
    labelNames: ["indication", "sub_indication", "check"] as const,
    registers: [this.registry],
  });

  constructor(sources: MetricSources = {}, options: { defaultMetrics?: boolean } = {}) {
    super({
      prefix: "psd2_gateway_",
      stepsHelp:
        "Verdicts of each named step of the chain (its head, body end and response phases), by outcome",
      ...(sources.certificates ? { certificates: sources.certificates } : {}),
      ...(sources.now ? { now: sources.now } : {}),
      ...options,
    });
    if (sources.steps) this.watchRequestSteps(sources.steps);
    const now = sources.now ?? Date.now;
    const registers = [this.registry];
    // 1 for each readiness check that passes, 0 with its reason code for one that does not, judged
    // at scrape time as /readyz judges (the store's write probe runs at most once a second), so an
    // alert sees what a balancer sees.
    const readiness = () => this.readinessOf;
    new Gauge({
      name: "psd2_gateway_ready",
      help: "Whether each readiness check passes (1) or not (0, with its reason), as /readyz judges",
      labelNames: ["check", "reason"] as const,
      registers,
      async collect() {
        const read = readiness();
        if (!read) return;
        const { checks } = await read();
        this.reset();
        for (const [check, c] of Object.entries(checks)) {
          this.set({ check, reason: c.ok ? "" : (c.reason ?? "not-ready") }, c.ok ? 1 : 0);
        }
      },
    });

    /** A counter kept elsewhere (cache, register, store), read when Prometheus scrapes. */
    const scrapedCounter = (name: string, help: string, read: (() => number) | undefined) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          if (!read) return;
          this.reset();
          this.inc(read());
        },
      });
    const scrapedGauge = (name: string, help: string, read: (() => number) | undefined) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          if (read) this.set(read());
        },
      });
    const from = <S, T>(source: (() => S) | undefined, pick: (s: S) => T) =>
      source ? () => pick(source()) : undefined;

    const cache = sources.certificateCache;
    scrapedGauge(
      "psd2_gateway_certificate_cache_entries",
      "Certificate verdicts in the cache",
      from(cache, (s) => s.size),
    );
    scrapedCounter(
      "psd2_gateway_certificate_cache_hits_total",
      "Certificate verdict cache hits",
      from(cache, (s) => s.hits),
    );
    scrapedCounter(
      "psd2_gateway_certificate_cache_misses_total",
      "Certificate verdict cache misses (a certificate checked anew)",
      from(cache, (s) => s.misses),
    );
    scrapedCounter(
      "psd2_gateway_certificate_cache_evictions_total",
      "Certificate verdicts pushed out by the size bound",
      from(cache, (s) => s.evictions),
    );

    const register = sources.register;
    scrapedGauge(
      "psd2_gateway_register_entries",
      "TPPs in the loaded register copy",
      from(register, (s) => s.entries),
    );
    scrapedGauge(
      "psd2_gateway_register_age_seconds",
      "Seconds since the TPP register was last refreshed successfully (-1 before the first load)",
      from(register, (s) => (s.lastSuccess === undefined ? -1 : (now() - s.lastSuccess) / 1000)),
    );
    scrapedCounter(
      "psd2_gateway_register_refresh_failures_total",
      "Failed refreshes of the TPP register (the last good copy is kept)",
      from(register, (s) => s.failures),
    );
    scrapedGauge(
      "psd2_gateway_register_last_success_timestamp_seconds",
      "Unix time of the last successful register refresh (0 before the first)",
      from(register, (s) => (s.lastSuccess ?? 0) / 1000),
    );

    trustSourceMetrics(this.registry, sources.trustSources, now);

    const ocsp = sources.ocspCache;
    scrapedGauge(
      "psd2_gateway_ocsp_cache_entries",
      "OCSP answers held in memory (one per certificate, until it expires)",
      from(ocsp, (s) => s.entries),
    );
    scrapedGauge(
      "psd2_gateway_ocsp_cache_max_entries",
      "The OCSP answer cache's bound (revocation.ocsp.maxEntries)",
      from(ocsp, (s) => s.maxEntries),
    );
    scrapedCounter(
      "psd2_gateway_ocsp_cache_hits_total",
      "Revocation checks answered by an OCSP answer in memory",
      from(ocsp, (s) => s.hits),
    );
    scrapedCounter(
      "psd2_gateway_ocsp_cache_misses_total",
      "Revocation checks that had to ask an OCSP responder (no answer in memory, or an expired one)",
      from(ocsp, (s) => s.misses),
    );
    scrapedCounter(
      "psd2_gateway_ocsp_cache_evictions_total",
      "OCSP answers pushed out by revocation.ocsp.maxEntries before they expired",
      from(ocsp, (s) => s.evictions),
    );

    const store = sources.store;
    scrapedCounter(
      "psd2_gateway_store_errors_total",
      "Limit/replay store operations that failed (store unreachable)",
      from(store, (s) => s.errors),
    );
    scrapedCounter(
      "psd2_gateway_store_evictions_total",
      "Limit/replay entries evicted before their time (memory store): a TPP could exceed its limit",
      from(store, (s) => s.evictions),
    );
  }

  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * One gauge family per trust-source property, labelled by kind and source (URL or file): bounded,
 * as the sources are configured files and URLs, or distribution points and responders named by
 * certificates of trusted CAs (at most revocation.crl.maxLists and 256), never a request's text.
 */
function trustSourceMetrics(
  registry: Registry,
  read: MetricSources["trustSources"],
  now: () => number,
): void {
  const family = (name: string, help: string, value: (s: TrustSourceStatus) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ["kind", "source"] as const,
      registers: [registry],
      collect() {
        if (!read) return;
        this.reset();
        for (const s of read()) {
          const v = value(s);
          if (v !== undefined) this.set({ kind: s.kind, source: s.source }, v);
        }
      },
    });
  family(
    "psd2_gateway_trust_source_age_seconds",
    "Seconds since the source was last refreshed (or answered) successfully; -1 before the first time",
    (s) => (s.lastSuccess === undefined ? -1 : (now() - s.lastSuccess) / 1000),
  );
  family(
    "psd2_gateway_trust_source_last_success_timestamp_seconds",
    "Unix time of the source's last success (0 before the first)",
    (s) => (s.lastSuccess ?? 0) / 1000,
  );
  family(
    "psd2_gateway_trust_source_failures",
    "Failed refreshes of the source since start (the last good copy is kept)",
    (s) => s.failures,
  );
  family(
    "psd2_gateway_trust_source_entries",
    "Entries the source's copy holds (revoked serials, TPPs, trusted CAs, cached OCSP answers)",
    (s) => s.size,
  );
  family(
    "psd2_gateway_trust_source_stale",
    "1 while the source has no copy that proves anything (never loaded, past nextUpdate or allowed age)",
    (s) => (s.stale ? 1 : 0),
  );
  family(
    "psd2_gateway_trust_source_next_update_timestamp_seconds",
    "Unix time the source's copy stops proving anything (nextUpdate, + grace for CRLs)",
    (s) => (s.nextUpdate === undefined ? undefined : s.nextUpdate / 1000),
  );
  family(
    "psd2_gateway_trust_source_this_update_timestamp_seconds",
    "CRLs: Unix time the list held was issued (its thisUpdate)",
    (s) => (s.crl?.thisUpdate === undefined ? undefined : s.crl.thisUpdate / 1000),
  );
}

/**
 * The primary of `workers > 1`: its own registry beside the workers' sum, counting the asks of its
 * fetch relay (app/fetch-relay.ts) by outcome (fetched upstream, shared from the kept copy or the
 * fetch under way, confirmed by a 304, failed).
 */
export class PrimaryMetrics {
  readonly registry = new Registry();
  readonly trustFetches = new Counter({
    name: "psd2_gateway_trust_fetches_total",
    help: "Trust documents the workers asked the primary for, by outcome (fetched, shared, not_modified, failed)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
}
