/**
 * The fuzz harness: a real ingress gateway process over TLS on loopback in front of a recording
 * backend, with response signing on (the bank's QSealC; ingress.ts), and — for egress families —
 * an egress gateway process on plain HTTP in front of a second recording backend (egress.ts);
 * hostile traffic from seeded families, and the invariants (issues 11 and 12) checked on every
 * exchange and once more over each backend's whole record at the end: those both targets share in
 * exchange-check.ts, each target's own in its file. Here, for the whole run: /healthz on each
 * admin listener stays 200, no process exits, each one's RSS stays under the limit, and no family
 * throws.
 */

import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { get as httpGet } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import type { FuzzBackend } from "./backend.js";
import { type EgressSide, EgressTarget, startEgressSide } from "./egress.js";
import { checkEvidence, evidenceFolderOf } from "./evidence.js";
import { type FuzzGateway, fuzzListenLimits } from "./gateway.js";
import { type IngressSide, IngressTarget, MAX_BODY_BYTES, startIngressSide } from "./ingress.js";
import { Rng } from "./prng.js";
import { signRequest } from "./request.js";
import { makeTpps, type TppSet } from "./tpps.js";
import type { AnyFamily, CaseContext, EgressCaseContext, FamilyCheck, ListenLimits } from "./types.js";
import type { Checker, FamilyStats, Violation } from "./verdicts.js";

export type { FamilyStats, Violation } from "./verdicts.js";

export interface FuzzOptions {
  readonly count: number;
  readonly seed: number;
  readonly families: readonly AnyFamily[];
  readonly rssLimitMb: number;
  /** Connections in flight at once. */
  readonly concurrency: number;
  /** Run only this case index of each family (a reproduction). */
  readonly onlyCase?: number;
  /**
   * Per mille of ingress requests the backend answers on the head, before the body (default 100;
   * a family forces it with `x-fuzz-eager: 1`): the backend a legacy core's GET or DELETE handler is.
   */
  readonly eagerPerMille?: number;
  /**
   * Configuration reloads to make during the run, spread evenly over its requests (default 0):
   * each gateway's config file gets a change that judges nothing differently (a new chain, a new
   * backend pool, new bank profiles) and a SIGHUP. Nothing may be lost or judged otherwise, and
   * every reload must apply.
   */
  readonly reloads?: number;
  /**
   * The ingress gateway keeps evidence (`onFailure: refuse`); after the run its chain must verify,
   * hold a record of every request the backend executed and none of one it never saw (evidence.ts).
   */
  readonly evidence?: boolean;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface FuzzReport {
  readonly seed: number;
  readonly count: number;
  readonly sent: number;
  readonly ms: number;
  readonly families: Record<string, FamilyStats>;
  readonly violations: Violation[];
  readonly passed: number;
  readonly failed: number;
  /** VmRSS samples of each gateway process, by process name (ingress, egress). */
  readonly rssSamplesMb: Record<string, { t: number; mb: number }[]>;
  readonly healthChecks: number;
  readonly gatewayWarnings: string[];
  /** With `evidence`: the request records and the chains they were counted over. */
  readonly evidence?: { readonly records: number; readonly chains: number };
}

const MAX_VIOLATIONS_KEPT = 200;

function rssMb(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

function healthz(adminUrl: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpGet(`${adminUrl}/healthz`, { timeout: 5_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve(0));
  });
}

/** The gateway's backend requests still in flight or queued (its /metrics), undefined when unreadable. */
function backendRequestsOpen(adminUrl: string): Promise<number | undefined> {
  return metricSum(adminUrl, /^psd2_gateway_(?:egress_)?backend_requests\{[^}]*\} (\d+)$/gm);
}

/** The sum of the values `line` matches in a gateway's /metrics; undefined when none does. */
function metricSum(adminUrl: string, line: RegExp): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = httpGet(`${adminUrl}/metrics`, { timeout: 5_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const values = [...text.matchAll(line)];
        resolve(values.length === 0 ? undefined : values.reduce((sum, m) => sum + Number(m[1]), 0));
      });
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve(undefined));
  });
}

/**
 * The n-th reload's change to a gateway's config: nothing any request is judged by. Ingress gets a
 * new chain (an unused prefix where TPP-Redirect-URI is optional) and, every other time, a new
 * backend pool (its connection count) and new trust sources (the CRL fetch timeout: the sources
 * started anew beside the running ones, then swapped), and every reload a new verdict cache;
 * egress rebuilds its bank profiles on every reload (new keys read, new backend pools) and gets a
 * new shutdown grace. Once, at `handOverAt`, ingress moves its limit store (another memory store):
 * the new one takes every write and the old one is still consulted, so a replay sent across the
 * move is refused all the same (one hand-over at a time, hence once). With evidence on (FUZZ_EVIDENCE),
 * every reload flips `evidence.bodies` (payments, all: the step made anew, the store kept), and once,
 * after the hand-over, the store itself changes (another instanceId and checkpoint interval: a new
 * chain opens beside the first, which takes the records of the requests that began before): the
 * records are counted over both chains, so none may be lost or doubled across the swap.
 */
function harmlessChange(
  name: string,
  n: number,
  handOverAt: number,
): (config: Record<string, unknown>) => void {
  return (config) => {
    const shutdown = { graceSeconds: 25 + (n % 2) };
    config["shutdown"] = shutdown;
    if (name !== "ingress") return;
    if (n === handOverAt)
      config["store"] = { ...((config["store"] ?? {}) as Record<string, unknown>), maxWindows: 400_000 };
    const verification = (config["verification"] ?? {}) as Record<string, unknown>;
    verification["redirectUriOptionalPrefixes"] = ["/v1/sandbox", `/v1/fuzz-reload-${n}`];
    config["verification"] = verification;
    const backend = (config["backend"] ?? {}) as Record<string, unknown>;
    backend["connections"] = 128 + (n % 2);
    config["backend"] = backend;
    const revocation = (config["revocation"] ?? {}) as Record<string, Record<string, unknown>>;
    revocation["crl"] = { ...(revocation["crl"] ?? {}), timeoutSeconds: 10 + (n % 2) };
    config["revocation"] = revocation;
    config["cache"] = { ...((config["cache"] ?? {}) as Record<string, unknown>), ttlSeconds: 300 + (n % 3) };
    const evidence = config["evidence"] as Record<string, unknown> | undefined;
    if (evidence) {
      evidence["bodies"] = n % 2 === 1 ? "all" : "payments";
      if (n === handOverAt + 1) {
        evidence["instanceId"] = "fuzz-after-reload";
        evidence["checkpointSeconds"] = 30;
      }
    }
  };
}

/** Starts what the selected families need, runs them, checks, stops everything. Never throws for a violation. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), "psd2-fuzz-"));
  const started = performance.now();
  const closers: (() => Promise<void>)[] = [];
  try {
    const pki: DevPki = await generateDevPki(join(dir, "pki"));
    const tpps = await makeTpps(pki);
    // Stopped last-started first: each gateway before its backend.
    const stopLater = (side: { readonly gateway: FuzzGateway; readonly backend: FuzzBackend }) =>
      closers.unshift(
        () => side.gateway.stop(5_000),
        () => side.backend.close(),
      );
    let ingress: IngressSide | undefined;
    if (options.families.some((f) => f.target !== "egress")) {
      ingress = await startIngressSide(
        pki,
        dir,
        options.concurrency,
        options.eagerPerMille ?? 100,
        options.evidence ?? false,
      );
      stopLater(ingress);
      const directory = ingress.keyDirectory;
      closers.push(() => directory.close());
      log(
        `ingress gateway pid ${ingress.gateway.pid} on port ${ingress.gateway.port}, backend ${ingress.backend.url}, seed ${options.seed}`,
      );
    }
    let egress: EgressSide | undefined;
    if (options.families.some((f) => f.target === "egress")) {
      egress = await startEgressSide(pki, dir, options.concurrency);
      stopLater(egress);
      const fapiBank = egress.fapiBank;
      closers.push(() => fapiBank.close());
      log(
        `egress gateway pid ${egress.gateway.pid} on port ${egress.gateway.port}, backend ${egress.backend.url}`,
      );
    }
    return await new Run(options, pki, tpps, ingress, egress, started, evidenceFolderOf(dir)).execute();
  } finally {
    for (const close of closers) await close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

class Run implements Checker {
  private readonly families = new Map<string, FamilyStats>();
  private readonly violations: Violation[] = [];
  private violationCount = 0;
  private passed = 0;
  private failed = 0;
  private sent = 0;
  private readonly rssSamples: Record<string, { t: number; mb: number }[]> = {};
  private healthChecks = 0;
  private evidenceRead: FuzzReport["evidence"];
  /** Configuration reloads sent to each gateway so far (FuzzOptions.reloads). */
  private reloadsSent = 0;
  private stopped = false;
  private exited = false;
  /** FUZZ_LOG_DIR=<dir>: one line per case (end time, family.case, duration) in cases.log there. */
  private readonly traceCase = process.env["FUZZ_LOG_DIR"]
    ? (line: string) => appendFileSync(join(process.env["FUZZ_LOG_DIR"]!, "cases.log"), line)
    : undefined;
  private readonly ingress: IngressTarget | undefined;
  private readonly egress: EgressTarget | undefined;
  private readonly limits: Record<"ingress" | "egress", ListenLimits>;

  constructor(
    private readonly options: FuzzOptions,
    private readonly pki: DevPki,
    private readonly tpps: TppSet,
    ingressSide: IngressSide | undefined,
    egressSide: EgressSide | undefined,
    private readonly started: number,
    /** Where the ingress gateway keeps evidence, with FuzzOptions.evidence. */
    private readonly evidenceFolder: string,
  ) {
    for (const f of options.families)
      this.families.set(f.name, {
        sent: 0,
        refused: 0,
        forwarded: 0,
        unanswered: 0,
        violations: 0,
        cases: 0,
      });
    this.ingress = ingressSide ? new IngressTarget(this, ingressSide) : undefined;
    this.egress = egressSide ? new EgressTarget(this, egressSide, pki) : undefined;
    this.limits = {
      ingress: fuzzListenLimits("ingress", options.concurrency),
      egress: fuzzListenLimits("egress", options.concurrency),
    };
  }

  /** The gateway processes of this run. */
  private processes(): FuzzGateway[] {
    return [
      ...(this.ingress ? [this.ingress.side.gateway] : []),
      ...(this.egress ? [this.egress.side.gateway] : []),
    ];
  }

  check(ok: boolean, violation: () => Violation): boolean {
    if (ok) {
      this.passed++;
      return true;
    }
    this.failed++;
    const v = violation();
    this.violationCount++;
    const s = this.families.get(v.family);
    if (s) s.violations++;
    if (this.violations.length < MAX_VIOLATIONS_KEPT) this.violations.push(v);
    this.options.log?.(`VIOLATION ${v.kind} [${v.family} case ${v.caseIndex}] ${v.label}: ${v.got}`);
    return false;
  }

  pass(): void {
    this.passed++;
  }

  stats(family: string): FamilyStats {
    return this.families.get(family)!;
  }

  countSent(family: string, n: number): void {
    this.stats(family).sent += n;
    this.sent += n;
  }

  private monitor(): () => Promise<void> {
    let busy = false;
    const sample = async () => {
      if (busy || this.exited) return;
      busy = true;
      try {
        const t = Math.round((performance.now() - this.started) / 1000);
        for (const gateway of this.processes()) {
          const mb = rssMb(gateway.pid);
          if (mb !== undefined) {
            const samples = this.rssSamples[gateway.name] ?? [];
            this.rssSamples[gateway.name] = samples;
            samples.push({ t, mb: Math.round(mb * 10) / 10 });
            this.check(mb <= this.options.rssLimitMb, () => ({
              kind: "rss-limit",
              family: "(process)",
              caseIndex: -1,
              label: `${gateway.name} RSS sample at ${t} s`,
              expected: `VmRSS ≤ ${this.options.rssLimitMb} MB`,
              got: `${mb.toFixed(1)} MB`,
              bytes: "",
            }));
          }
          const status = await healthz(gateway.adminUrl);
          this.healthChecks++;
          if (!this.exited)
            this.check(status === 200, () => ({
              kind: "healthz",
              family: "(process)",
              caseIndex: -1,
              label: `${gateway.name} /healthz at ${t} s`,
              expected: "200",
              got: status === 0 ? "no answer within 5 s" : String(status),
              bytes: "",
            }));
        }
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(() => void sample(), 1_000);
    void sample();
    for (const gateway of this.processes()) {
      void gateway.exited.then(({ code, signal }) => {
        if (this.stopped) return;
        this.exited = true;
        this.stopped = true;
        this.check(false, () => ({
          kind: "process-exit",
          family: "(process)",
          caseIndex: -1,
          label: `the ${gateway.name} gateway process exited during the run`,
          expected: "still running",
          got: `exit code ${code} signal ${signal}; last lines:\n${gateway.lines
            .slice(-10)
            .map((l) => l.slice(0, 300))
            .join("\n")}`,
          bytes: "",
        }));
      });
    }
    return async () => {
      clearInterval(timer);
      while (busy) await new Promise((r) => setTimeout(r, 20));
      await sample();
    };
  }

  async execute(): Promise<FuzzReport> {
    const stopMonitor = this.monitor();
    const { families, seed } = this.options;
    const caseIndexes = new Map<string, number>();
    if (this.options.onlyCase !== undefined) {
      for (const family of families) await this.runCase(family, this.options.onlyCase);
    } else {
      const pick = new Rng(seed ^ 0x5eed);
      const weights = families.map((f) => [f.weight, f] as const);
      const reloads = this.options.reloads ?? 0;
      const reloadEvery = reloads > 0 ? Math.max(1, Math.floor(this.options.count / (reloads + 1))) : 0;
      const worker = async () => {
        while (!this.stopped && this.sent < this.options.count) {
          if (
            reloadEvery > 0 &&
            this.reloadsSent < reloads &&
            this.sent >= (this.reloadsSent + 1) * reloadEvery
          ) {
            const n = ++this.reloadsSent;
            const handOverAt = Math.ceil(reloads / 2);
            for (const gateway of this.processes())
              gateway.reconfigure(harmlessChange(gateway.name, n, handOverAt));
          }
          const family = pick.weighted(weights);
          const index = caseIndexes.get(family.name) ?? 0;
          caseIndexes.set(family.name, index + 1);
          await this.runCase(family, index);
        }
      };
      let lastLog = performance.now();
      let lastTick = performance.now();
      const progress = setInterval(() => {
        const now = performance.now();
        // A harness that stalls makes every exchange look late: say so, it is not the gateway's doing.
        if (now - lastTick > 2_000)
          this.options.log?.(`… the harness's event loop stalled ${Math.round(now - lastTick - 1_000)} ms`);
        lastTick = now;
        if (now - lastLog > 10_000) {
          lastLog = now;
          const rss = Object.entries(this.rssSamples)
            .map(([name, samples]) => `${name} ${samples.at(-1)?.mb}`)
            .join(", ");
          this.options.log?.(
            `… ${this.sent}/${this.options.count} requests, ${Math.round((now - this.started) / 1000)} s, RSS (MB) ${rss}, ${this.violationCount} violations`,
          );
        }
      }, 1_000);
      await Promise.all(Array.from({ length: this.options.concurrency }, worker));
      clearInterval(progress);
    }
    // Let stragglers reach the backends, then look at everything they ever received.
    await new Promise((r) => setTimeout(r, 500));
    await stopMonitor();
    await this.checkBackendPools();
    await this.checkReloads();
    this.stopped = true;
    this.ingress?.finalSweep();
    this.egress?.finalSweep();
    if (this.options.evidence && this.ingress) await this.checkEvidence();
    const gatewayWarnings = this.processes().flatMap((g) =>
      g.lines.slice(-20).map((l) => `${g.name}: ${l.slice(0, 400)}`),
    );
    return {
      seed,
      count: this.options.count,
      sent: this.sent,
      ms: performance.now() - this.started,
      families: Object.fromEntries(this.families),
      violations: this.violations,
      passed: this.passed,
      failed: this.failed,
      rssSamplesMb: this.rssSamples,
      healthChecks: this.healthChecks,
      gatewayWarnings,
      ...(this.evidenceRead ? { evidence: this.evidenceRead } : {}),
    };
  }

  /** FUZZ_EVIDENCE: once the store's queue is written (its metric at 0), the folder against the backend. */
  private async checkEvidence(): Promise<void> {
    const side = this.ingress!.side;
    let queued: number | undefined;
    for (let tries = 0; tries < 50; tries++) {
      queued = await metricSum(side.gateway.adminUrl, /^psd2_gateway_evidence_queue_depth (\d+)$/gm);
      if (queued === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // The writer empties its queue only after the batch is on disk; then give it one more turn.
    await new Promise((r) => setTimeout(r, 200));
    const { records, signedAnswers, chains } = checkEvidence(this.evidenceFolder, side.backend, this);
    this.evidenceRead = { records, chains };
    this.options.log?.(
      `evidence: ${records} request records in ${chains} chain(s) checked against the backend's, ${signedAnswers} signed answers' signed bytes`,
    );
  }

  /**
   * Every exchange has ended: no upstream request may still hold a backend connection (one left
   * behind holds it for ever, and enough of them stop every valid request). A few seconds for the
   * aborts of the last ones to land.
   */
  private async checkBackendPools(): Promise<void> {
    for (const gateway of this.processes()) {
      let open: number | undefined;
      for (let tries = 0; tries < 30; tries++) {
        open = await backendRequestsOpen(gateway.adminUrl);
        if (open === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      this.check(open === 0, () => ({
        kind: "upstream-held",
        family: "(process)",
        caseIndex: -1,
        label: `the ${gateway.name} gateway's backend requests after the run`,
        expected: "none in flight or queued once every exchange has ended (psd2_gateway_*backend_requests)",
        got: open === undefined ? "no backend_requests metric" : `${open} still in flight or queued`,
        bytes: "",
      }));
    }
  }

  /** Every reload sent was applied by each gateway, none failed (a SIGHUP may also meet a file change). */
  private async checkReloads(): Promise<void> {
    if (this.reloadsSent === 0) return;
    for (const gateway of this.processes()) {
      const metric = (outcome: string) =>
        metricSum(
          gateway.adminUrl,
          new RegExp(
            `^psd2_gateway_(?:egress_)?config_reloads_total\\{outcome="${outcome}"\\} (\\d+)$`,
            "gm",
          ),
        );
      let applied: number | undefined;
      for (let tries = 0; tries < 30; tries++) {
        applied = await metric("applied");
        if ((applied ?? 0) >= this.reloadsSent) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const failed = await metric("failed");
      this.check((applied ?? 0) >= this.reloadsSent && failed === 0, () => ({
        kind: "reload",
        family: "(process)",
        caseIndex: -1,
        label: `the ${gateway.name} gateway's configuration reloads during the run`,
        expected: `${this.reloadsSent} applied (or more: the file watch may see a change too), none failed`,
        got: `${applied ?? "no"} applied, ${failed ?? "no"} failed; last lines:\n${gateway.lines.slice(-5).join("\n")}`,
        bytes: "",
      }));
    }
  }

  private async runCase(family: AnyFamily, index: number): Promise<void> {
    const stats = this.stats(family.name);
    stats.cases++;
    let tagCounter = 0;
    const tagPrefix = `${family.name}.${index}`;
    const rng = Rng.forCase(this.options.seed, family.name, index);
    const tag = () => `${tagPrefix}.${tagCounter++}`;
    const check: FamilyCheck = (ok, kind, label, expected, got) =>
      this.check(ok, () => ({
        kind,
        family: family.name,
        caseIndex: index,
        label,
        expected,
        got: got(),
        bytes: "",
      }));
    const common = { rng, family: family.name, caseIndex: index, check, tag };
    const startedAt = performance.now();
    try {
      if (family.target === "egress") {
        const egress = this.egress!;
        const ctx: EgressCaseContext = {
          ...common,
          banks: egress.banks,
          gatewayPort: egress.side.gateway.port,
          counted: (outcome) => {
            this.countSent(family.name, 1);
            this.stats(family.name)[outcome]++;
          },
          maxBodyBytes: egress.maxBodyBytes,
          limits: this.limits.egress,
          exchange: (plan) => egress.exchange(family.name, index, plan),
        };
        await family.run(ctx);
      } else {
        const ingress = this.ingress!;
        const ctx: CaseContext = {
          ...common,
          pki: this.pki,
          tpps: this.tpps,
          maxBodyBytes: MAX_BODY_BYTES,
          keyDirectory: ingress.side.keyDirectory,
          gatewayPort: ingress.side.gateway.port,
          limits: this.limits.ingress,
          sign: async (spec) => {
            const signedTag = spec.tag ?? ctx.tag();
            const { request, requestId } = await signRequest({ ...spec, tag: signedTag });
            return { request, requestId, tag: signedTag };
          },
          exchange: (plan) => ingress.exchange(family.name, index, plan),
        };
        await family.run(ctx);
      }
    } catch (error) {
      this.check(false, () => ({
        kind: "harness-error",
        family: family.name,
        caseIndex: index,
        label: "the family threw",
        expected: "no exception in the harness",
        got: String((error as Error).stack ?? error).slice(0, 800),
        bytes: "",
      }));
    } finally {
      this.traceCase?.(
        `${new Date().toISOString()} ${family.name}.${index} ${Math.round(performance.now() - startedAt)} ms\n`,
      );
    }
  }
}
