/**
 * Revocation from the live sources (SPEC 1.5): the certificate's OCSP responder and CRL
 * distribution points, configured CRL URLs and local CRL files, asked in the configured order.
 * A status nobody can prove is not "good": it refuses, unless `softFail` lets it through with a
 * warning. Answers are cached until they expire (OCSP per certificate, bounded; CRLs per URL) and
 * refreshed in the background, so only a certificate the gateway has no fresh answer for waits on
 * the network, and then for at most `firstAnswerTimeoutMs`. As a trust source it reports the OCSP
 * responders it has asked.
 */

import { LRUCache } from "lru-cache";
import {
  CA_NOT_CHECKED,
  type ParsedCertificate,
  type RevocationChecker,
  type RevocationList,
  type RevocationStatus,
  revokedRefusal,
  statusFromCrl,
} from "../eidas/index.js";
import { reject } from "../errors.js";
import { type OnRefused, refusalOf } from "./bounds.js";
import type { CrlCache } from "./crl-cache.js";
import { buildOcspRequest, type OcspAnswer, OcspError, readOcspResponse } from "./formats/ocsp.js";
import { type DocumentFetcher, fetchDocument } from "./http-fetch.js";
import { revocationSourcesOf } from "./revocation-sources.js";
import type { TrustSource } from "./source.js";
import type { OcspCacheStatus, TrustSourceStatus } from "./source-status.js";

export type RevocationOrder = "ocsp-crl" | "crl" | "ocsp";

export interface LiveRevocationOptions {
  readonly order: RevocationOrder;
  readonly softFail: boolean;
  /** Longest a certificate without a cached answer waits for one. */
  readonly firstAnswerTimeoutMs: number;
  readonly ocsp: {
    readonly timeoutMs: number;
    /** An answer is reused at most this long, even when its nextUpdate is later. */
    readonly maxAgeMs: number;
    readonly maxEntries: number;
  };
  readonly crls: CrlCache;
  /** Lists from local files (trust.crlDir), looked up by issuer. */
  readonly localList: (issuer: ParsedCertificate) => RevocationList | undefined;
  readonly graceMs: number;
  readonly now?: () => number;
  readonly events?: RevocationEvents;
  /** Where OCSP is asked (default fetchDocument; a cluster worker asks the primary). */
  readonly fetch?: DocumentFetcher;
  /** An OCSP answer refused by its bound (MAX_OCSP_ANSWER_BYTES, a content coding): counted by app/. */
  readonly onRefused?: OnRefused;
  /** Where such a refusal is logged (other OCSP failures show in status() and refusal texts only). */
  readonly log?: (message: string, error?: boolean) => void;
}

/** What the metrics count; the composition root wires these to prom-client. */
export interface RevocationEvents {
  ocspAnswered?(outcome: "good" | "revoked" | "unknown" | "error", seconds: number): void;
  /** No source could say: refused, or let through by softFail. */
  unknownStatus?(action: "refused" | "allowed"): void;
}

/** A source's answer, or why it had none. */
type SourceAnswer = { readonly status: RevocationStatus } | { readonly reason: string };

interface CachedOcsp {
  readonly answer: OcspAnswer;
  readonly responder: string;
  /** Epoch ms past which the answer is not used. */
  readonly expiresAt: number;
  /** Epoch ms past which a use starts a refresh in the background. */
  readonly refreshAt: number;
}

interface ResponderState {
  lastSuccess?: number;
  failures: number;
  lastError?: string;
  failingSince?: number;
}

/** An OCSP answer larger than this is refused as it arrives (a real one is a few KiB). */
export const MAX_OCSP_ANSWER_BYTES = 64 * 1024;

/** Longest an OCSP answer fetched for one worker is handed to another instead of asking again. */
const OCSP_SHARE_MAX_MS = 60_000;

/** How long a softFail pass holds before the sources are asked again. */
const SOFT_FAIL_HOLD_MS = 60_000;
/** Responders tracked for status and refusal texts; certificates name them, so bounded. */
const MAX_RESPONDERS = 256;

export class LiveRevocation implements RevocationChecker, TrustSource {
  readonly name = "OCSP responders";
  private readonly ocspCache: LRUCache<string, CachedOcsp>;
  private readonly ocspInFlight = new Map<string, Promise<SourceAnswer>>();
  private readonly responders = new LRUCache<string, ResponderState>({ max: MAX_RESPONDERS });
  private readonly now: () => number;
  private ocspHits = 0;
  private ocspMisses = 0;
  private ocspEvictions = 0;

  constructor(private readonly options: LiveRevocationOptions) {
    this.now = options.now ?? Date.now;
    this.ocspCache = new LRUCache({
      max: options.ocsp.maxEntries,
      dispose: (_value, _key, reason) => {
        if (reason === "evict") this.ocspEvictions++;
      },
    });
  }

  check(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    now: Date,
  ): RevocationStatus | Promise<RevocationStatus> {
    const sources = revocationSourcesOf(certificate);
    // A CA comes from the trust store, never from the sender: one that names no source the order
    // may ask, and of whose issuer no list is held, is trusted as the bank configured it.
    if (certificate.basicConstraints?.ca && this.nothingToAsk(sources, issuer)) return CA_NOT_CHECKED;
    const steps = this.steps(certificate, issuer, now, sources);
    // The fast path: every answer the order needs is in memory.
    const reasons: string[] = [];
    for (const step of steps) {
      const cached = step.cached();
      if (cached === "network") return this.withNetwork(certificate, steps);
      if ("status" in cached) return cached.status;
      reasons.push(cached.reason);
    }
    return this.unknown(certificate, reasons, steps.length === 0 || this.nothingToAsk(sources, issuer));
  }

  /** Nothing to load ahead: a responder is asked when a certificate names it. */
  async start(): Promise<void> {}

  status(): TrustSourceStatus[] {
    return this.responderStatuses;
  }

  /** Nothing runs on its own: answers are refreshed when a certificate that uses them is checked. */
  stop(): void {}

  /** OCSP responders seen, each with the answers of it held, for metrics and `trust status`. */
  get responderStatuses(): TrustSourceStatus[] {
    const held = new Map<string, number>();
    for (const cached of this.ocspCache.values())
      held.set(cached.responder, (held.get(cached.responder) ?? 0) + 1);
    return [...this.responders.entries()].map(([url, s]) => ({
      kind: "ocsp" as const,
      source: url,
      lastSuccess: s.lastSuccess,
      failures: s.failures,
      ...(s.lastError ? { lastError: s.lastError } : {}),
      ...(s.failingSince ? { failingSince: s.failingSince } : {}),
      size: held.get(url) ?? 0,
      stale: s.lastError !== undefined,
      failsReadiness: false,
    }));
  }

  get ocspCacheStatus(): OcspCacheStatus {
    return {
      entries: this.ocspCache.size,
      maxEntries: this.ocspCache.max,
      hits: this.ocspHits,
      misses: this.ocspMisses,
      evictions: this.ocspEvictions,
    };
  }

  private steps(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    now: Date,
    sources: { ocsp: string[]; crl: string[] },
  ): Step[] {
    // One hit or miss per check: the slow path looks in the cache again after the fast one.
    let counted = sources.ocsp.length === 0;
    const ocsp = (): Step => ({
      cached: () => {
        const answer = this.cachedOcsp(certificate, issuer, now, sources.ocsp);
        if (!counted) {
          counted = true;
          if (answer === "network") this.ocspMisses++;
          else this.ocspHits++;
        }
        return answer;
      },
      fetch: () => this.fetchOcsp(certificate, issuer, sources.ocsp),
    });
    const crl = (): Step => ({
      cached: () => this.cachedCrl(certificate, issuer, now, sources.crl),
      fetch: async (deadline) => {
        const fetched = Promise.all(sources.crl.map((url) => this.options.crls.ensure(url)));
        const waited = await this.before(
          deadline,
          fetched.then(() => ({ reason: "" })),
        );
        // Fetched, failed or too slow: whatever lists are in hand (a local file) answer now.
        const answer = this.cachedCrl(certificate, issuer, new Date(this.now()), sources.crl, false);
        if (answer !== "network") return answer;
        return { reason: ("reason" in waited && waited.reason) || "the CRL could not be fetched" };
      },
    });
    switch (this.options.order) {
      case "ocsp":
        return [ocsp()];
      case "crl":
        return [crl()];
      default:
        return [ocsp(), crl()];
    }
  }

  /** The slow path: each source in order, the network allowed, within one deadline. */
  private async withNetwork(certificate: ParsedCertificate, steps: Step[]): Promise<RevocationStatus> {
    const deadline = this.now() + this.options.firstAnswerTimeoutMs;
    const reasons: string[] = [];
    for (const step of steps) {
      const cached = step.cached();
      const answer = cached === "network" ? await this.before(deadline, step.fetch(deadline)) : cached;
      if ("status" in answer) return answer.status;
      reasons.push(answer.reason);
      if (this.now() >= deadline) break;
    }
    return this.unknown(certificate, reasons, false);
  }

  /** `work`'s answer, or a reason once the deadline passes (the work goes on and fills the cache). */
  private before(deadline: number, work: Promise<SourceAnswer>): Promise<SourceAnswer> {
    const wait = Math.max(deadline - this.now(), 0);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<SourceAnswer>((resolve) => {
      timer = setTimeout(
        () =>
          resolve({
            reason: `no answer within the ${this.options.firstAnswerTimeoutMs / 1000} s a first check may wait`,
          }),
        wait,
      );
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }

  private cachedOcsp(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    now: Date,
    urls: readonly string[],
  ): SourceAnswer | "network" {
    if (urls.length === 0) return { reason: "the certificate names no OCSP responder" };
    const key = ocspKey(certificate, issuer);
    const cached = this.ocspCache.get(key);
    if (!cached || cached.expiresAt <= now.getTime()) return "network";
    if (cached.refreshAt <= this.now()) void this.fetchOcsp(certificate, issuer, urls);
    return this.fromOcsp(certificate, issuer, cached);
  }

  private fromOcsp(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    cached: CachedOcsp,
  ): SourceAnswer {
    const { answer, responder } = cached;
    const evidence = {
      source: "OCSP",
      location: responder,
      producedAt: answer.producedAt.toISOString(),
      thisUpdate: answer.thisUpdate.toISOString(),
      ...(answer.nextUpdate ? { nextUpdate: answer.nextUpdate.toISOString() } : {}),
    } as const;
    if (answer.status === "good")
      return { status: { validUntil: cached.expiresAt, evidence: { ...evidence, status: "good" } } };
    if (answer.status === "revoked") {
      const revokedAt = answer.revokedAt ?? answer.thisUpdate;
      return {
        status: {
          refusal: revokedRefusal(certificate, issuer, revokedAt, `OCSP ${responder}`),
          evidence: {
            ...evidence,
            status: "revoked",
            revokedAt: revokedAt.toISOString(),
            ...(answer.revocationReason ? { revocationReason: answer.revocationReason } : {}),
          },
        },
      };
    }
    return { reason: `OCSP responder ${responder} does not know the certificate (status unknown)` };
  }

  /** One request per certificate at a time, to the first responder that answers. */
  private fetchOcsp(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    urls: readonly string[],
  ): Promise<SourceAnswer> {
    const key = ocspKey(certificate, issuer);
    let pending = this.ocspInFlight.get(key);
    if (!pending) {
      pending = this.askResponders(certificate, issuer, urls, key).finally(() =>
        this.ocspInFlight.delete(key),
      );
      this.ocspInFlight.set(key, pending);
    }
    return pending;
  }

  private async askResponders(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    urls: readonly string[],
    key: string,
  ): Promise<SourceAnswer> {
    const reasons: string[] = [];
    for (const url of urls) {
      const started = this.now();
      const state = this.responders.get(url) ?? { failures: 0 };
      this.responders.set(url, state);
      try {
        const result = await (this.options.fetch ?? fetchDocument)(url, {
          timeoutMs: this.options.ocsp.timeoutMs,
          maxBytes: MAX_OCSP_ANSWER_BYTES,
          accept: "application/ocsp-response",
          // The request carries no nonce: the same question has the same answer, which another
          // worker may reuse briefly (its own cache then keeps it at most maxAge, as if fetched now).
          shareForMs: Math.min(this.options.ocsp.maxAgeMs / 10, OCSP_SHARE_MAX_MS),
          post: { body: buildOcspRequest(certificate, issuer), contentType: "application/ocsp-request" },
        });
        if (result.status !== "fresh") throw new Error("no body");
        const answer = readOcspResponse(result.body, { certificate, issuer, now: new Date(this.now()) });
        this.options.events?.ocspAnswered?.(answer.status, (this.now() - started) / 1000);
        state.lastSuccess = this.now();
        state.lastError = undefined;
        state.failingSince = undefined;
        const cached = this.cache(key, answer, url);
        return this.fromOcsp(certificate, issuer, cached);
      } catch (error) {
        this.options.events?.ocspAnswered?.("error", (this.now() - started) / 1000);
        const message = error instanceof OcspError ? error.message : (error as Error).message;
        state.failures++;
        state.lastError = message;
        state.failingSince ??= started;
        const refused = refusalOf(error);
        if (refused) {
          this.options.onRefused?.(refused);
          this.options.log?.(`OCSP ${url}: ${message}; answer refused`, true);
        }
        reasons.push(`OCSP ${url}: ${message} (failing since ${new Date(state.failingSince).toISOString()})`);
      }
    }
    return { reason: reasons.join("; ") };
  }

  private cache(key: string, answer: OcspAnswer, responder: string): CachedOcsp {
    const fetched = this.now();
    const capped = fetched + this.options.ocsp.maxAgeMs;
    const expiresAt = Math.min(answer.nextUpdate?.getTime() ?? capped, capped);
    // Refreshed once half its life is gone, so a certificate in use never meets an expired answer.
    const cached = { answer, responder, expiresAt, refreshAt: fetched + (expiresAt - fetched) / 2 };
    if (expiresAt > fetched) this.ocspCache.set(key, cached);
    return cached;
  }

  private cachedCrl(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    now: Date,
    urls: readonly string[],
    fetchFirst = true,
  ): SourceAnswer | "network" {
    const { crls, graceMs } = this.options;
    const lists = [
      ...urls.map((url) => crls.listAt(url)),
      ...crls.pinnedLists().filter((l) => sameName(l.issuerDer, issuer.subjectDer)),
      this.options.localList(issuer),
    ].filter((l): l is RevocationList => l !== undefined && sameName(l.issuerDer, issuer.subjectDer));
    // The certificate's own distribution points are fetched once before anything else answers:
    // a local file may be older than what the QTSP publishes (after that they refresh on their own).
    const unfetched = urls.filter((url) => !crls.listAt(url) && !crls.problemOf(url));
    if (fetchFirst && unfetched.length > 0) return "network";
    // The newest list decides: a revocation it lists is final, its absence holds until nextUpdate.
    lists.sort((a, b) => b.thisUpdate.getTime() - a.thisUpdate.getTime());
    for (const list of lists) {
      const status = statusFromCrl(list, certificate, issuer, now, graceMs);
      if (status) return { status };
    }
    const stale = lists.map(
      (l) => `CRL ${l.source} is past its nextUpdate ${l.nextUpdate?.toISOString() ?? ""}`,
    );
    const failing = urls.flatMap((url) => {
      const problem = crls.problemOf(url);
      return problem ? [`CRL ${url}: ${problem}`] : [];
    });
    const reasons = [...failing, ...stale];
    if (reasons.length === 0) return { reason: `no CRL of ${issuer.subjectRfc2253} is available` };
    return { reason: reasons.join("; ") };
  }

  /** Nothing anywhere could ever answer for this certificate: a property of the certificate, not an outage. */
  private nothingToAsk(sources: { ocsp: string[]; crl: string[] }, issuer: ParsedCertificate): boolean {
    const order = this.options.order;
    const ocsp = order !== "crl" && sources.ocsp.length > 0;
    const crl =
      order !== "ocsp" &&
      (sources.crl.length > 0 ||
        this.options.localList(issuer) !== undefined ||
        this.options.crls.pinnedLists().some((l) => sameName(l.issuerDer, issuer.subjectDer)));
    return !ocsp && !crl;
  }

  private unknown(
    certificate: ParsedCertificate,
    reasons: string[],
    nothingToAsk: boolean,
  ): RevocationStatus {
    const why = reasons.join("; ");
    const which = certificate.basicConstraints?.ca
      ? `issuing CA SN=${certificate.serialHex} (${certificate.subjectRfc2253}) in the certificate's path`
      : `certificate SN=${certificate.serialHex}`;
    const subject = `the revocation status of ${which} cannot be determined`;
    const evidence = { status: "unknown", reason: why } as const;
    if (this.options.softFail) {
      this.options.events?.unknownStatus?.("allowed");
      return {
        warning: `${subject} (${why}); let through because revocation.softFail is on`,
        validUntil: this.now() + SOFT_FAIL_HOLD_MS,
        evidence,
      };
    }
    this.options.events?.unknownStatus?.("refused");
    if (nothingToAsk)
      return {
        refusal: reject(
          "CERTIFICATE_INVALID",
          `${subject}: it names no OCSP responder or CRL distribution point the bank may use (${why}); use a certificate from a QTSP that publishes revocation information`,
        ),
        evidence,
      };
    return {
      refusal: reject(
        "SERVICE_UNAVAILABLE",
        `${subject}: ${why}; requests with it are refused until a revocation source answers, try again later`,
        30,
      ),
      transient: true,
      evidence,
    };
  }
}

interface Step {
  /** The answer from memory, or "network" when only a fetch can tell. */
  cached(): SourceAnswer | "network";
  /** Asks the network, giving up on it at `deadline` (epoch ms). */
  fetch(deadline: number): Promise<SourceAnswer>;
}

function ocspKey(certificate: ParsedCertificate, issuer: ParsedCertificate): string {
  return `${issuer.sha256Fingerprint}:${Buffer.from(certificate.serial).toString("hex")}`;
}

function sameName(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
}
