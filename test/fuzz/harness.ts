/**
 * The fuzz harness: a real ingress gateway process over TLS on loopback in front of a recording
 * backend, with response signing on (the bank's QSealC), and — for egress families — an egress
 * gateway process on plain HTTP in front of a second recording backend (egress.ts); hostile
 * traffic from seeded families, and the invariants (issues 11 and 12) checked on every
 * exchange and once more over each backend's whole record at the end. Ingress:
 *
 * - nothing the gateway refused reached the backend;
 * - every request the backend executed was answered to the client with that answer, in order, on
 *   its own connection;
 * - no 500, no 5xx with a tppMessages body unless the family provoked it (502/503/504);
 * - no replay passes (a signed request reaches the backend at most once);
 * - the backend never sees a spoofed identity value; a forwarded request carries its signer's identity;
 * - every backend answer reaches the client signed: Signature, Digest over the exact body, Date,
 *   X-Request-ID of its request and the bank's certificate header, verified with the egress
 *   ResponseVerifier; its status and body are the backend's, and its framing too (a HEAD answer
 *   keeps the backend's Content-Length, a 204 or 304 gets none of the gateway's);
 * - a backend answer over responseSigning.maxBodyBytes is a 502 tppMessages body that carries none
 *   of the backend's bytes; nothing else leaves the gateway but signed backend answers and
 *   tppMessages refusals;
 * - /healthz on each admin listener stays 200, no process exits, each one's RSS stays under the limit.
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { get as httpGet } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "../../src/dev/pki.js";
import { ResponseVerifier } from "../../src/egress/response-verifier.js";
import { TppVerifier } from "../../src/eidas/index.js";
import { loadTrustMaterial } from "../../src/trust/trust-material.js";
import { type BackendRecord, type FuzzBackend, PAD_MARKER, startFuzzBackend } from "./backend.js";
import { type EgressSide, EgressTarget, startEgressSide } from "./egress.js";
import { type FuzzGateway, fuzzListenLimits, startFuzzGateway } from "./gateway.js";
import { Rng } from "./prng.js";
import { type ParsedResponse, RawClient } from "./raw-client.js";
import { signRequest } from "./request.js";
import { makeTpps, type TppSet } from "./tpps.js";
import type {
  AnyFamily,
  CaseContext,
  CasePlan,
  EgressCaseContext,
  ExchangeResult,
  ExpectedRequest,
  FamilyCheck,
  ListenLimits,
} from "./types.js";
import {
  type Checker,
  describe,
  type FamilyStats,
  isTppMessages,
  sha256Base64,
  shown,
  type Violation,
} from "./verdicts.js";

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
}

const MAX_VIOLATIONS_KEPT = 200;

/** What the run remembers of each tag (request) until the final sweep. */
interface TagInfo {
  readonly family: string;
  readonly caseIndex: number;
  readonly label: string;
  readonly expect: ExpectedRequest["expect"];
  readonly abandons: boolean;
  reported: boolean;
  /** Exchanges that sent this tag (replays send one signed request on several connections). */
  exchanges: number;
}

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

export const MAX_BODY_BYTES = 65_536;
/**
 * The ingress gateway's responseSigning.maxBodyBytes: smaller than the 1 MiB default so that
 * answers over it (and at it) cost the run little; the backend's large shapes are sized from it.
 */
export const RESPONSE_SIGNING_MAX_BYTES = 131_072;
/** The header the ingress gateway puts the bank's QSealC in (the config default). */
const BANK_CERTIFICATE_HEADER = "aspsp-signature-certificate";

/** The ingress side of a run: its gateway, backend, TLS client and the verifier of signed answers. */
interface IngressSide {
  readonly backend: FuzzBackend;
  readonly gateway: FuzzGateway;
  readonly client: RawClient;
  readonly verifier: ResponseVerifier;
  /** The bank QSealC as the certificate header must carry it. */
  readonly bankCertificate: string;
}

/** Checks the bank's signed answers as a TPP would: egress mode's ResponseVerifier on the dev trust dir. */
function bankResponseVerifier(pki: DevPki): ResponseVerifier {
  const trust = loadTrustMaterial(pki.paths.trustDir);
  return new ResponseVerifier({
    certificates: new TppVerifier({
      trustStore: () => trust.store,
      revocation: () => trust.revocation,
      cacheTtlMs: 300_000,
      failureTtlMs: 10_000,
      maxEntries: 100,
    }),
    certificateHeader: BANK_CERTIFICATE_HEADER,
    dateToleranceMs: 60_000,
    algorithms: ["rsa-sha256"],
  });
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
    let ingress: IngressSide | undefined;
    if (options.families.some((f) => f.target !== "egress")) {
      const backend = await startFuzzBackend({ boundBytes: RESPONSE_SIGNING_MAX_BYTES });
      closers.push(() => backend.close());
      const gateway = await startFuzzGateway({
        pki,
        dir,
        backendUrl: backend.url,
        concurrency: options.concurrency,
        config: {
          verification: {
            algorithms: ["rsa-sha256", "ecdsa-sha256"],
            maxBodyBytes: MAX_BODY_BYTES,
          },
          backend: { timeoutSeconds: 3 },
          store: { type: "memory" },
          // As config/default.yaml: the backend's answers signed with the bank's QSealC.
          responseSigning: {
            qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey },
            maxBodyBytes: RESPONSE_SIGNING_MAX_BYTES,
          },
        },
      });
      closers.unshift(() => gateway.stop(5_000));
      const client = new RawClient({
        host: "127.0.0.1",
        port: gateway.port,
        tls: { ca: pki.root.pem, servername: "localhost" },
      });
      ingress = {
        backend,
        gateway,
        client,
        verifier: bankResponseVerifier(pki),
        bankCertificate: pki.bankQseal.headerValue,
      };
      log(
        `ingress gateway pid ${gateway.pid} on port ${gateway.port}, backend ${backend.url}, seed ${options.seed}`,
      );
    }
    let egress: EgressSide | undefined;
    if (options.families.some((f) => f.target === "egress")) {
      egress = await startEgressSide(pki, dir, options.concurrency);
      const side = egress;
      closers.unshift(
        () => side.gateway.stop(5_000),
        () => side.backend.close(),
      );
      log(
        `egress gateway pid ${egress.gateway.pid} on port ${egress.gateway.port}, backend ${egress.backend.url}`,
      );
    }
    return await new Run(options, pki, tpps, ingress, egress, started).execute();
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
  private readonly tags = new Map<string, TagInfo>();
  /** X-Request-IDs the gateway refused (count), and those answered by the backend (count). */
  private readonly refusedIds = new Map<string, number>();
  private readonly backendAnsweredIds = new Map<string, number>();
  private readonly rssSamples: Record<string, { t: number; mb: number }[]> = {};
  private healthChecks = 0;
  private stopped = false;
  private exited = false;
  private sentinelCounter = 0;
  private readonly egress: EgressTarget | undefined;
  private readonly limits: Record<"ingress" | "egress", ListenLimits>;

  constructor(
    private readonly options: FuzzOptions,
    private readonly pki: DevPki,
    private readonly tpps: TppSet,
    private readonly ingress: IngressSide | undefined,
    egressSide: EgressSide | undefined,
    private readonly started: number,
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
    this.egress = egressSide ? new EgressTarget(this, egressSide, pki) : undefined;
    this.limits = {
      ingress: fuzzListenLimits("ingress", options.concurrency),
      egress: fuzzListenLimits("egress", options.concurrency),
    };
  }

  private side(): IngressSide {
    if (!this.ingress) throw new Error("no ingress gateway in this run");
    return this.ingress;
  }

  private get backend(): FuzzBackend {
    return this.side().backend;
  }

  /** The gateway processes of this run. */
  private processes(): FuzzGateway[] {
    return [
      ...(this.ingress ? [this.ingress.gateway] : []),
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
      const worker = async () => {
        while (!this.stopped && this.sent < this.options.count) {
          const family = pick.weighted(weights);
          const index = caseIndexes.get(family.name) ?? 0;
          caseIndexes.set(family.name, index + 1);
          await this.runCase(family, index);
        }
      };
      let lastLog = performance.now();
      const progress = setInterval(() => {
        const now = performance.now();
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
    this.stopped = true;
    if (this.ingress) this.finalSweep();
    this.egress?.finalSweep();
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
    };
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
    try {
      if (family.target === "egress") {
        const egress = this.egress!;
        const ctx: EgressCaseContext = {
          rng,
          family: family.name,
          caseIndex: index,
          banks: egress.banks,
          maxBodyBytes: egress.maxBodyBytes,
          limits: this.limits.egress,
          check,
          tag,
          exchange: (plan) => egress.exchange(family.name, index, plan),
        };
        await family.run(ctx);
      } else {
        const ctx: CaseContext = {
          rng,
          family: family.name,
          caseIndex: index,
          pki: this.pki,
          tpps: this.tpps,
          maxBodyBytes: MAX_BODY_BYTES,
          gatewayPort: this.side().gateway.port,
          limits: this.limits.ingress,
          check,
          tag,
          sign: async (spec) => {
            const signedTag = spec.tag ?? ctx.tag();
            const { request, requestId } = await signRequest({ ...spec, tag: signedTag });
            return { request, requestId, tag: signedTag };
          },
          exchange: (plan) => this.exchange(family.name, index, plan),
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
    }
  }

  private async exchange(family: string, caseIndex: number, plan: CasePlan): Promise<ExchangeResult> {
    const stats = this.stats(family);
    const abandons = plan.abandons === true || plan.after === "cut";
    const requests = [...plan.requests];
    const writes = [...plan.writes];
    let sentinelId: string | undefined;
    // Over plain TCP to the TLS listener nothing can answer a sentinel.
    const useSentinel =
      plan.transport !== "tcp" && (plan.sentinel ?? (plan.after === undefined || plan.after === "read"));
    if (useSentinel) {
      sentinelId = `fuzz-sentinel-${++this.sentinelCounter}`;
      const tag = `sentinel.${this.sentinelCounter}`;
      requests.push({ tag, requestId: sentinelId, label: "sentinel", expect: "refuse" });
      writes.push({
        data: Buffer.from(
          `GET /v1/accounts?fz=${tag} HTTP/1.1\r\nHost: localhost\r\nX-Request-ID: ${sentinelId}\r\n\r\n`,
          "latin1",
        ),
      });
    }
    const seenHere = new Set<string>();
    for (const r of requests) {
      const known = this.tags.get(r.tag);
      if (!known)
        this.tags.set(r.tag, {
          family,
          caseIndex,
          label: r.label,
          expect: r.expect,
          abandons,
          reported: false,
          exchanges: 1,
        });
      else if (!seenHere.has(r.tag)) known.exchanges++;
      seenHere.add(r.tag);
    }
    this.countSent(family, plan.requests.length);

    const bodiless = new Set(plan.bodiless ?? []);
    const outcome = await this.side().client.exchange({
      writes,
      ...(bodiless.size > 0 ? { bodiless } : {}),
      ...(plan.after !== undefined ? { after: plan.after } : {}),
      ...(plan.afterMs !== undefined ? { afterMs: plan.afterMs } : {}),
      ...(sentinelId !== undefined ? { sentinelId } : {}),
      deadlineMs: plan.deadlineMs ?? 15_000,
      ...(plan.readAfterWrites ? { readAfterWrites: true } : {}),
      ...(plan.transport !== undefined ? { transport: plan.transport } : {}),
      ...(plan.localAddress !== undefined ? { localAddress: plan.localAddress } : {}),
      ...(plan.onConnected !== undefined ? { onConnected: plan.onConnected } : {}),
    });
    const bytes = Buffer.concat(plan.writes.map((w) => w.data));
    const v = (kind: string, label: string, expected: string, got: string): Violation => ({
      kind,
      family,
      caseIndex,
      label,
      expected,
      got,
      bytes: shown(bytes),
      exchange: `sent ${requests.map((r, i) => `#${i} ${r.label.slice(0, 90)}`).join(" | ")}; read ${outcome.responses
        .map(describe)
        .map((d) => d.slice(0, 60))
        .join(
          " | ",
        )}; ended by ${outcome.endedBy}${outcome.error ? ` (${outcome.error})` : ""} after ${Math.round(outcome.ms)} ms`,
    });
    const labels = plan.requests.map((r) => r.label).join(" | ");

    const indexOfTag = new Map<string, number>();
    requests.forEach((r, i) => {
      if (!indexOfTag.has(r.tag)) indexOfTag.set(r.tag, i);
    });
    const idCounts = new Map<string, number>();
    for (const r of requests)
      if (r.requestId) idCounts.set(r.requestId, (idCounts.get(r.requestId) ?? 0) + 1);
    const indexOfId = new Map<string, number>();
    requests.forEach((r, i) => {
      if (r.requestId && idCounts.get(r.requestId) === 1) indexOfId.set(r.requestId, i);
    });
    const allowed5xx = new Set(requests.flatMap((r) => r.allow5xx ?? []));

    const answers = new Map<string, ParsedResponse>();
    const refusals = new Map<string, ParsedResponse>();
    const signatureChecks: Promise<void>[] = [];
    let lastIndex = -1;
    let lastWasFinal: ParsedResponse | undefined;
    for (const [position, r] of outcome.responses.entries()) {
      const tpp = isTppMessages(r);
      const seqText = r.headers["x-backend-seq"];
      const rid = r.headers["x-request-id"];
      // A 502 that stands in for a backend answer too large to sign, on this connection.
      const replaced =
        seqText === undefined && r.status === 502 && tpp && rid !== undefined
          ? this.backend
              .byRequestId(rid)
              .find(
                (x) =>
                  x.answer?.overBound === true && !x.answered && x.tag !== undefined && indexOfTag.has(x.tag),
              )
          : undefined;
      // 5xx of the gateway's own.
      this.check(r.status !== 500, () =>
        v("gateway-500", labels, "no 500 from the gateway", `response #${position}: ${describe(r)}`),
      );
      if (seqText === undefined && r.status >= 500 && r.status !== 500)
        this.check(allowed5xx.has(r.status) || replaced !== undefined, () =>
          v(
            "gateway-5xx",
            labels,
            "no 5xx unless the family provoked it",
            `response #${position}: ${describe(r)}`,
          ),
        );
      // Nothing but signed backend answers and tppMessages refusals leaves the gateway (a refusal
      // of a HEAD request has no body to hold them).
      if (seqText === undefined)
        this.check(
          tpp !== undefined ||
            (bodiless.has(position) && r.status >= 400 && /json/.test(r.headers["content-type"] ?? "")),
          () =>
            v(
              "unsigned-answer",
              labels,
              "every answer is the backend's (signed) or a tppMessages refusal",
              `response #${position}: ${describe(r)}`,
            ),
        );
      this.check(lastWasFinal === undefined, () =>
        v(
          "answer-after-close",
          labels,
          "nothing after an answer that closes the connection",
          `response #${position} (${describe(r)}) after ${describe(lastWasFinal)}`,
        ),
      );
      let index: number | undefined;
      if (seqText !== undefined) {
        const record = this.backend.bySeq(Number(seqText));
        const ok = this.check(record !== undefined, () =>
          v("answer-mismatch", labels, "x-backend-seq names a backend record", `x-backend-seq ${seqText}`),
        );
        if (!ok || !record) continue;
        this.check(!record.answered, () =>
          v("answer-twice", labels, "each backend answer delivered once", `x-backend-seq ${seqText} twice`),
        );
        record.answered = true;
        if (rid !== undefined) this.backendAnsweredIds.set(rid, (this.backendAnsweredIds.get(rid) ?? 0) + 1);
        index = record.tag !== undefined ? indexOfTag.get(record.tag) : undefined;
        this.check(index !== undefined, () =>
          v(
            "answer-wrong-connection",
            labels,
            "the backend's answer on the connection its request came from",
            `x-backend-seq ${seqText} answers tag ${record.tag} (${record.method} ${record.target.slice(0, 120)}), not sent on this connection`,
          ),
        );
        const expected = record.answer;
        this.check(
          expected !== undefined &&
            !expected.overBound &&
            r.status === expected.status &&
            sha256Base64(r.body) === expected.sha256,
          () =>
            v(
              "answer-mismatch",
              labels,
              expected === undefined
                ? "no answer from a backend that never answered"
                : expected.overBound
                  ? `a 502 instead of the backend's ${expected.shape} answer over ${RESPONSE_SIGNING_MAX_BYTES} bytes`
                  : `${expected.status} with the backend's ${expected.shape} body for seq ${record.seq} (${expected.bodyBytes} bytes)`,
              `${r.status} ${r.body.length} bytes: ${r.body.toString("latin1").slice(0, 160)}`,
            ),
        );
        this.checkFraming(r, record, bodiless.has(position), (got) =>
          v(
            "answer-framing",
            labels,
            `the backend's framing: ${
              bodiless.has(position)
                ? `a HEAD answer's Content-Length is the backend's (${expected?.contentLength ?? "none"})`
                : `no Content-Length on a ${r.status}`
            }`,
            `response #${position} ${got}`,
          ),
        );
        signatureChecks.push(this.checkSignedAnswer(r, record, position, labels, v));
        if (record.tag !== undefined && !answers.has(record.tag)) answers.set(record.tag, r);
        stats.forwarded++;
      } else if (replaced) {
        replaced.answered = true;
        this.backendAnsweredIds.set(rid!, (this.backendAnsweredIds.get(rid!) ?? 0) + 1);
        index = indexOfTag.get(replaced.tag!);
        this.check(
          tpp!.code === "BAD_GATEWAY" &&
            tpp!.text.includes("responseSigning.maxBodyBytes") &&
            !r.body.includes(PAD_MARKER) &&
            !r.body.includes(`"seq":${replaced.seq},`) &&
            r.headers[BANK_CERTIFICATE_HEADER] === undefined &&
            r.headers["signature"] === undefined,
          () =>
            v(
              "over-bound-answer",
              labels,
              `a 502 BAD_GATEWAY tppMessages body naming responseSigning.maxBodyBytes, none of the backend's ${replaced.answer!.bodyBytes} bytes`,
              `response #${position}: ${describe(r)} (${r.body.length} bytes)`,
            ),
        );
        if (!answers.has(replaced.tag!)) answers.set(replaced.tag!, r);
        stats.forwarded++;
      } else {
        if (tpp && rid !== undefined) {
          this.refusedIds.set(rid, (this.refusedIds.get(rid) ?? 0) + 1);
          if (!refusals.has(rid)) refusals.set(rid, r);
          index = indexOfId.get(rid);
          if (rid !== sentinelId) stats.refused++;
        } else if (tpp) {
          stats.refused++;
        }
        // An answer without an id that closes the connection (Node's parser gave up): nothing may follow.
        if (rid === undefined && /close/i.test(r.headers["connection"] ?? "")) lastWasFinal = r;
      }
      if (index !== undefined) {
        const at = index;
        this.check(at >= lastIndex, () =>
          v(
            "order",
            labels,
            "answers in the order the requests were sent",
            `response #${position} answers request #${at} (${requests[at]?.label}) after one for request #${lastIndex} (${requests[lastIndex]?.label}): ${describe(r)}`,
          ),
        );
        lastIndex = Math.max(lastIndex, at);
      }
    }
    await Promise.all(signatureChecks);
    this.check(outcome.malformed === undefined, () =>
      v("malformed-response", labels, "well-formed HTTP responses", String(outcome.malformed)),
    );

    // Per request: what reached the backend.
    for (const r of requests) {
      const records = this.backend.byTag(r.tag);
      const info = this.tags.get(r.tag)!;
      if (r.expect === "refuse") {
        const ok = this.check(records.length === 0, () =>
          v(
            "refused-reached-backend",
            r.label,
            "never reaches the backend",
            `the backend received it: ${records.map((x) => `${x.method} ${x.target.slice(0, 160)} (seq ${x.seq}, ${x.complete ? "whole body" : "partial"})`).join("; ")}; client got ${describe(answers.get(r.tag) ?? (r.requestId ? refusals.get(r.requestId) : undefined))}`,
          ),
        );
        if (!ok) info.reported = true;
      } else if (r.expect === "no-execute") {
        const whole = records.filter((x) => x.complete);
        const ok = this.check(whole.length === 0, () =>
          v(
            "bad-body-executed",
            r.label,
            "the backend never receives the whole of a body that fails a check",
            `the backend received the whole body: ${whole.map((x) => `${x.method} ${x.target.slice(0, 160)} (seq ${x.seq}, ${x.bodyBytes} bytes)`).join("; ")}`,
          ),
        );
        if (!ok) info.reported = true;
      } else if (r.expect === "forward") {
        const answer = answers.get(r.tag);
        // Executed but its answer lost is reported once, as executed-unanswered, below.
        const executed = records.some((x) => x.complete && !x.answered);
        this.check(answer !== undefined || executed, () =>
          v(
            "valid-refused",
            r.label,
            "a valid request is forwarded and answered by the backend",
            `${describe(r.requestId ? refusals.get(r.requestId) : undefined)} (ended by ${outcome.endedBy}${outcome.error ? `: ${outcome.error}` : ""})`,
          ),
        );
      }
      const distinct = new Set(records.map((x) => x.seq));
      if (records.length > 0) {
        const ok = this.check(distinct.size <= 1, () =>
          v(
            "replay-passed",
            r.label,
            "the same signed request executed at most once",
            `the backend received it ${records.length} times (seq ${[...distinct].join(", ")})`,
          ),
        );
        if (!ok) info.reported = true;
      }
      for (const record of records) this.checkRecord(record, r, v);
      if (!answers.has(r.tag) && !(r.requestId && refusals.has(r.requestId)) && r.label !== "sentinel")
        stats.unanswered++;
    }
    // Executed but not answered: only what this exchange sent, once the exchange is over.
    if (!abandons) {
      for (const r of requests) {
        for (const record of this.backend.byTag(r.tag)) {
          if (!record.complete || record.provoked || record.answered) continue;
          const info = this.tags.get(r.tag)!;
          // Sent on several connections (concurrent replays): the answer may be read on another
          // one, later; the final sweep checks it.
          if (info.reported || info.exchanges > 1) continue;
          info.reported = true;
          this.check(false, () =>
            v(
              "executed-unanswered",
              r.label,
              "every request the backend executed is answered to the client",
              `backend seq ${record.seq} (${record.method} ${record.target.slice(0, 160)}) executed, the client read ${outcome.responses.length} answer(s): ${outcome.responses.map(describe).join(" / ")}; ended by ${outcome.endedBy}`,
            ),
          );
        }
      }
    }
    return {
      outcome,
      backendAnswer: (tag) => answers.get(tag),
      refusal: (id) => refusals.get(id),
      backendSaw: (tag) => this.backend.byTag(tag).length,
    };
  }

  /**
   * A backend answer keeps the framing the backend gave it: an answer to HEAD carries the
   * backend's Content-Length (the length a GET would have), a 204 none, a 304 none unless the
   * backend's; anything else a Content-Length (if any) equal to its body.
   */
  private checkFraming(
    r: ParsedResponse,
    record: BackendRecord,
    head: boolean,
    violation: (got: string) => Violation,
  ): void {
    const declared = r.headers["content-length"];
    const backend = record.answer?.contentLength;
    let ok: boolean;
    if (head) ok = declared === undefined || declared === String(backend);
    else if (r.status === 204) ok = declared === undefined && r.headers["transfer-encoding"] === undefined;
    else if (r.status === 304) ok = declared === undefined || declared === String(backend);
    else ok = declared === undefined || declared === String(r.body.length);
    this.check(ok, () =>
      violation(
        `${r.status} with content-length: ${declared ?? "(none)"} (the backend declared ${backend ?? "none"})`,
      ),
    );
  }

  /** A backend answer as the client got it: signed by the bank's QSealC, over these bytes, for this request. */
  private async checkSignedAnswer(
    r: ParsedResponse,
    record: BackendRecord,
    position: number,
    labels: string,
    v: (kind: string, label: string, expected: string, got: string) => Violation,
  ): Promise<void> {
    const { verifier, bankCertificate } = this.side();
    const requestId = record.requestId ?? "";
    const verdict = await verifier.verify({
      headers: r.headers,
      body: r.body,
      request: { method: record.method, target: record.target, requestId },
    });
    this.check(verdict === true, () =>
      v(
        "response-signature",
        labels,
        "every backend answer signed with the bank QSealC: Signature, Digest, Date, X-Request-ID and the certificate header, verifying",
        `response #${position} (${r.status}, ${r.body.length} bytes): ${verdict === true ? "" : `${verdict.code}: ${verdict.text}`}`,
      ),
    );
    this.check(
      r.headers[BANK_CERTIFICATE_HEADER] === bankCertificate && r.headers["x-request-id"] === requestId,
      () =>
        v(
          "response-signature",
          labels,
          `${BANK_CERTIFICATE_HEADER}: the bank QSealC, x-request-id: ${requestId}`,
          `response #${position}: ${BANK_CERTIFICATE_HEADER} ${r.headers[BANK_CERTIFICATE_HEADER] === undefined ? "absent" : "another certificate"}, x-request-id ${r.headers["x-request-id"]}`,
        ),
    );
  }

  /** Identity and spoofed headers of one backend record; then its headers are dropped. */
  private checkRecord(
    record: BackendRecord,
    r: ExpectedRequest,
    v: (kind: string, label: string, expected: string, got: string) => Violation,
  ): void {
    const raw = record.rawHeaders;
    const headers = record.headers;
    if (!raw || !headers) return;
    for (const value of r.spoofed ?? []) {
      const leaked: string[] = [];
      for (let i = 0; i + 1 < raw.length; i += 2)
        if (raw[i + 1]!.includes(value)) leaked.push(`${raw[i]}: ${raw[i + 1]!.slice(0, 120)}`);
      this.check(leaked.length === 0, () =>
        v("spoof-reached-backend", r.label, `the backend never sees '${value}'`, leaked.join("; ")),
      );
    }
    for (const [name, expected] of Object.entries(r.backendHeaders ?? {})) {
      const got = headers[name];
      const text = Array.isArray(got) ? got.join(", ") : got;
      this.check(text === expected, () =>
        v("backend-header", r.label, `${name}: ${expected}`, `${name}: ${text ?? "(absent)"}`),
      );
    }
    if (r.backendTarget !== undefined)
      this.check(record.target === r.backendTarget, () =>
        v(
          "backend-target",
          r.label,
          `the backend receives the target as sent and checked: ${r.backendTarget}`,
          record.target,
        ),
      );
    if (r.tpp?.good) {
      const org = headers["x-tpp-organization-id"];
      const roles = headers["x-tpp-roles"];
      this.check(org === r.tpp.organizationId && roles === r.tpp.roles.join(","), () =>
        v(
          "identity",
          r.label,
          `x-tpp-organization-id: ${r.tpp!.organizationId}, x-tpp-roles: ${r.tpp!.roles.join(",")}`,
          `x-tpp-organization-id: ${String(org)}, x-tpp-roles: ${String(roles)}`,
        ),
      );
    }
    record.headers = undefined;
    record.rawHeaders = undefined;
    record.body = undefined;
  }

  /** Everything the backend ever received, against what the run expected. */
  private finalSweep(): void {
    const sweep = (record: BackendRecord, kind: string, expected: string, got: string) => {
      const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
      this.check(false, () => ({
        kind,
        family: info?.family ?? "(unknown)",
        caseIndex: info?.caseIndex ?? -1,
        label: info?.label ?? "(untagged)",
        expected,
        got,
        bytes: "",
      }));
    };
    for (const record of this.backend.records) {
      const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
      const where = `seq ${record.seq}: ${record.method} ${record.target.slice(0, 160)} X-Request-ID ${record.requestId}`;
      if (!info) {
        sweep(record, "untagged-at-backend", "only requests the run sent reach the backend", where);
        continue;
      }
      if (info.reported) continue;
      if (info.expect === "refuse") {
        info.reported = true;
        sweep(record, "refused-reached-backend", "never reaches the backend", `${where} (late)`);
      } else if (info.expect === "no-execute" && record.complete) {
        info.reported = true;
        sweep(record, "bad-body-executed", "never executed with its whole body", `${where} (late)`);
      } else if (record.complete && !record.provoked && !record.answered && !info.abandons) {
        info.reported = true;
        sweep(
          record,
          "executed-unanswered",
          "every request the backend executed is answered",
          `${where} (completed after its exchange ended)`,
        );
      } else this.passed++;
    }
    // A refusal's X-Request-ID is not among what the backend executed, unless another send of it
    // was answered by the backend (a replay's first send).
    for (const [id, refused] of this.refusedIds) {
      const executed = this.backend
        .byRequestId(id)
        .filter((r) => r.complete && !r.provoked && !this.tags.get(r.tag ?? "")?.abandons).length;
      const answered = this.backendAnsweredIds.get(id) ?? 0;
      if (executed <= answered) {
        this.passed++;
        continue;
      }
      const record = this.backend.byRequestId(id)[0]!;
      const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
      if (info?.reported) continue;
      if (info) info.reported = true;
      sweep(
        record,
        "refused-but-executed",
        "a request the gateway refused never reached the backend",
        `X-Request-ID ${id} refused ${refused}×, executed by the backend ${executed}×, backend answers delivered ${answered}×`,
      );
    }
  }
}
