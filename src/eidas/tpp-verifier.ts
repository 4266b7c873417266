/**
 * From a certificate header to a trusted TPP: decode → parse → PSD2 check → chain → revocation →
 * register → effective roles, cached per certificate. This is what the ingress pipeline asks. Each
 * judgement makes a validation report (validation-report.ts): a refusal is the report's.
 */

import { randomUUID } from "node:crypto";
import { isRejection, Rejection, reject } from "../errors.js";
import type { KeyIdTarget } from "../signature/keyid.js";
import { firstAttributeValue } from "../x500/name.js";
import {
  CERTIFICATE_HEADER,
  decodeCertificateHeader,
  type ParsedCertificate,
  parseCertificate,
  requirePsd2,
} from "./certificate.js";
import { reportDefect } from "./defects.js";
import type { Psd2Role, QcTypeName } from "./qcstatements.js";
import type { RegisterEntry, TppRegister, UnattendedLimitColumn } from "./register.js";
import { checkPath, type PathRevocationStatus, type RevocationChecker } from "./revocation.js";
import type { ChainPurpose, ChainResult, TrustStore } from "./trust-store.js";
import {
  clipped,
  INDICATION_OF,
  isoOf,
  pathOf,
  type RevocationEvidence,
  type SubIndication,
  summaryOf,
  type ValidationCheck,
  type ValidationReport,
} from "./validation-report.js";
import { type Verdict, VerdictCache, type VerdictCacheStats } from "./verdict-cache.js";

export interface TrustedTpp {
  readonly certificate: ParsedCertificate;
  readonly publicKey: ParsedCertificate["publicKey"];
  readonly keyIdTarget: KeyIdTarget;
  readonly identity: {
    readonly organizationId: string;
    readonly name: string;
    readonly roles: ReadonlySet<Psd2Role>;
    readonly fingerprint: string;
    /** The register's agreed unattended limit for the TPP, when its entry has one. */
    readonly agreedLimits?: UnattendedLimitColumn;
  };
  /** The validation report this verdict rests on (the access line quotes it). */
  readonly reportId: string;
}

export interface TppVerifierOptions {
  readonly trustStore: () => TrustStore;
  readonly revocation: () => RevocationChecker;
  /**
   * The TPP register; without one (a bank's certificate checked by egress mode) the name and
   * roles come from the certificate alone.
   */
  readonly register?: TppRegister;
  readonly now?: () => number;
  readonly cacheTtlMs: number;
  readonly failureTtlMs: number;
  /** Accepted certificates kept in the verdict cache. */
  readonly maxEntries: number;
  /** Refusals kept, apart from accepted certificates so garbage cannot push those out; defaults to `maxEntries`. */
  readonly maxRefusals?: number;
  /**
   * The QcTypes (ETSI EN 319 412-5) a certificate must carry one of for each use: a QSealC
   * (`eseal`) to sign, a QWAC (`web`) for TLS. Unchecked when absent (a bank's answers in egress).
   */
  readonly kinds?: Readonly<Record<ChainPurpose, readonly QcTypeName[]>>;
  /** Smallest RSA key accepted; ETSI TS 119 312 asks for 2048 bits at least. */
  readonly minRsaBits?: number;
  /** A certificate let through with an unknown revocation status (`revocation.softFail`). */
  readonly onRevocationWarning?: (certificate: ParsedCertificate, warning: string) => void;
  /** Each certificate judged (a verdict-cache miss, or `assess`): its validation report, once. */
  readonly onReport?: (report: ValidationReport) => void;
}

/**
 * Longest refusal text kept: texts quote names and serials from the certificate, and a refusal
 * is cached, so its size must not follow what the sender put in.
 */
export const MAX_REFUSAL_TEXT = 1000;

export class TppVerifier {
  private readonly cache: VerdictCache<TrustedTpp>;
  private readonly now: () => number;
  /** The register copy the cached verdicts were judged against. */
  private registerGeneration = 0;

  constructor(private readonly options: TppVerifierOptions) {
    this.now = options.now ?? Date.now;
    this.cache = new VerdictCache<TrustedTpp>({
      maxEntries: options.maxEntries,
      maxRefusals: options.maxRefusals,
      now: this.now,
    });
  }

  get stats(): VerdictCacheStats {
    return this.cache.stats;
  }

  /** Drops every verdict (after a trust store, trusted list or CRL change). */
  invalidate(): void {
    this.cache.clear();
  }

  /**
   * The verdict for a `TPP-Signature-Certificate` value. Never throws and never returns a promise
   * that rejects: whatever the bytes, the answer is a trusted TPP or a Rejection with a
   * certificate code (SERVICE_UNAVAILABLE only while the register is stale). A cached verdict is
   * a plain value.
   */
  verify(
    headerValue: string,
    purpose: ChainPurpose = "qseal",
  ): TrustedTpp | Rejection | Promise<TrustedTpp | Rejection> {
    // A stale register fails every request closed, cached verdicts included.
    const stale = this.options.register?.freshnessRefusal();
    if (stale) return stale;
    // A new register copy re-judges every certificate: a verdict never outlives the copy it read.
    const generation = this.options.register?.generation ?? 0;
    if (generation !== this.registerGeneration) {
      this.registerGeneration = generation;
      this.cache.clear();
    }
    if (typeof headerValue !== "string") return decodeCertificateHeader(undefined) as Rejection;
    // A QWAC's verdict is its own: the same bytes may pass as one kind and not the other.
    return this.cache.get(headerValue, this.judge, purpose === "qseal" ? "" : "qwac:", purpose);
  }

  /** A verdict not cached: made once, so a cached hit costs no closure. */
  private readonly judge = (headerValue: string, purpose: ChainPurpose) => {
    const judged = this.computeGuarded(headerValue, purpose);
    return judged instanceof Promise ? judged.then((j) => this.verdictOf(j)) : this.verdictOf(judged);
  };

  /**
   * A fresh judgement of a certificate, uncached and with its report: `trust status --certificate`,
   * the admin listener's /trust/certificate and `verify --json` show it. The report is told to
   * `onReport` like every other.
   */
  async assess(headerValue: string, purpose: ChainPurpose = "qseal"): Promise<ValidationReport> {
    const judged = await this.computeGuarded(headerValue, purpose);
    this.options.onReport?.(judged.report);
    return judged.report;
  }

  /** The verdict a judgement gives: the trusted TPP, or the refusal derived from its report. */
  private verdictOf(judged: Judgement): Verdict<TrustedTpp> {
    this.options.onReport?.(judged.report);
    const refusal = judged.report.refusal;
    if (refusal)
      return {
        value: new Rejection(refusal.code, refusal.text, refusal.retryAfterSeconds, judged.report.id),
        expiresAt: this.now() + this.options.failureTtlMs,
        cacheable: judged.cacheable,
      };
    return { value: judged.trusted!, expiresAt: judged.expiresAt, cacheable: true };
  }

  /**
   * The boundary: an exception here is a defect of ours, but the bytes are the sender's, so the
   * answer is still a refusal, cached like any other, so that retries do not pay again.
   */
  private computeGuarded(headerValue: string, purpose: ChainPurpose): Judgement | Promise<Judgement> {
    const report = new ReportBuilder(purpose, this.now());
    try {
      const result = this.compute(headerValue, purpose, report);
      return result instanceof Promise
        ? result.catch((error: unknown) => this.defect(report, error))
        : result;
    } catch (error) {
      return this.defect(report, error);
    }
  }

  private defect(report: ReportBuilder, error: unknown): Judgement {
    const detail = reportDefect("TppVerifier", error);
    return report.refused(
      "gateway",
      "CERTIFICATE_CHAIN_GENERAL_FAILURE",
      reject(
        "CERTIFICATE_INVALID",
        `${CERTIFICATE_HEADER} could not be checked: the gateway failed on it (${detail}); it is refused until that is fixed, report it to the bank with the certificate`,
      ),
    );
  }

  private compute(
    headerValue: string,
    purpose: ChainPurpose,
    report: ReportBuilder,
  ): Judgement | Promise<Judgement> {
    const der = decodeCertificateHeader(headerValue);
    if (isRejection(der)) return report.refused("format", "FORMAT_FAILURE", der);
    const certificate = parseCertificate(der);
    if (isRejection(certificate)) return report.refused("format", "FORMAT_FAILURE", certificate);
    report.certificate(certificate);
    const psd2 = requirePsd2(certificate, purpose);
    if (isRejection(psd2)) return report.refused("psd2-profile", "CHAIN_CONSTRAINTS_FAILURE", psd2);
    const minBits = this.options.minRsaBits ?? 2048;
    if (certificate.keyType === "rsa" && (certificate.keyBits ?? 0) < minBits) {
      return report.refused(
        "key-size",
        "CRYPTO_CONSTRAINTS_FAILURE",
        reject(
          "CERTIFICATE_INVALID",
          `certificate SN=${certificate.serialHex} has a ${certificate.keyBits}-bit RSA key; at least ${minBits} bits are required`,
        ),
      );
    }
    const chain = this.options.trustStore().verifyChain(certificate, new Date(this.now()), purpose);
    if (isRejection(chain)) {
      report.path(chain.path, [], false);
      return report.refused(chain.check, chain.subIndication, chain);
    }
    report.anchor(chain);
    // After the path: an expired or untrusted certificate is refused for that, whatever its kind.
    const kind = this.options.kinds
      ? wrongKind(certificate, purpose, this.options.kinds[purpose])
      : undefined;
    if (kind) {
      report.path(chain.chain, [], false);
      return report.refused("certificate-kind", "CHAIN_CONSTRAINTS_FAILURE", kind);
    }
    // Every certificate of the path, each against its issuer: a revoked intermediate refuses all below it.
    const status = checkPath(this.options.revocation(), chain.chain, new Date(this.now()));
    if (status instanceof Promise) return status.then((s) => this.finish(certificate, chain, s, report));
    return this.finish(certificate, chain, status, report);
  }

  private finish(
    certificate: ParsedCertificate,
    chain: ChainResult,
    revocation: PathRevocationStatus,
    report: ReportBuilder,
  ): Judgement {
    report.path(
      chain.chain,
      revocation.each.map((s) => s.evidence),
      true,
    );
    if (revocation.refusal) {
      const revoked = revocation.each[revocation.decidedAt ?? 0]?.evidence?.status === "revoked";
      const subIndication: SubIndication = revoked
        ? (revocation.decidedAt ?? 0) === 0
          ? "REVOKED"
          : "REVOKED_CA_NO_POE"
        : revocation.transient
          ? "TRY_LATER"
          : "CERTIFICATE_CHAIN_GENERAL_FAILURE";
      return report.refused("revocation", subIndication, revocation.refusal, !revocation.transient);
    }
    if (revocation.warning) {
      report.warn(revocation.warning);
      this.options.onRevocationWarning?.(certificate, revocation.warning);
    }
    const organizationId = certificate.organizationIdentifier!;
    const register = this.options.register;
    const entry = register
      ? register.lookup(organizationId, certificate.sha256Fingerprint)
      : {
          name: firstAttributeValue(certificate.subject, "2.5.4.10") ?? organizationId,
          roles: certificate.psd2Roles,
        };
    if (register) report.register(organizationId, register.entryOf(organizationId));
    // A stale or missing register is a passing condition of the bank's: never cache it.
    if (isRejection(entry)) {
      const passing = entry.code === "SERVICE_UNAVAILABLE";
      return report.refused("register", passing ? "TRY_LATER" : "CHAIN_CONSTRAINTS_FAILURE", entry, !passing);
    }
    const roles = new Set<Psd2Role>(certificate.psd2Roles.filter((r) => entry.roles.includes(r)));
    if (register) report.effectiveRoles([...roles]);
    const now = this.now();
    const id = report.id;
    return {
      report: report.passed(),
      trusted: {
        certificate,
        publicKey: certificate.publicKey,
        keyIdTarget: { serial: certificate.serial, issuer: certificate.issuer },
        identity: {
          organizationId,
          name: entry.name,
          roles,
          fingerprint: certificate.sha256Fingerprint,
          ...("unattendedLimit" in entry && entry.unattendedLimit !== undefined
            ? { agreedLimits: entry.unattendedLimit }
            : {}),
        },
        reportId: id,
      },
      // Never past notAfter, so an expiring certificate is refused on time, nor past the
      // revocation answer it rests on.
      expiresAt: Math.min(
        now + this.options.cacheTtlMs,
        certificate.notAfter.getTime(),
        revocation.validUntil ?? Number.POSITIVE_INFINITY,
      ),
      cacheable: true,
    };
  }
}

/** A certificate judged: its report, and the trusted TPP when it passed. */
interface Judgement {
  readonly report: ValidationReport;
  readonly trusted?: TrustedTpp;
  readonly expiresAt: number;
  readonly cacheable: boolean;
}

/** The report of one judgement, filled in as the checks run. */
class ReportBuilder {
  readonly id = randomUUID();
  private readonly fields: {
    -readonly [K in keyof ValidationReport]?: ValidationReport[K];
  };
  private readonly warnings: string[] = [];

  constructor(purpose: ChainPurpose, at: number) {
    this.fields = {
      id: this.id,
      validationTime: isoOf(new Date(at)),
      policy: purpose === "qwac" ? "QWAC" : "QSealC",
      path: [],
    };
  }

  certificate(c: ParsedCertificate): void {
    this.fields.certificate = {
      ...summaryOf(c),
      ...(c.organizationIdentifier ? { organizationIdentifier: clipped(c.organizationIdentifier) } : {}),
      psd2Roles: [...c.psd2Roles],
      qcTypes: [...(c.qcStatements?.qcType ?? [])],
    };
    this.fields.path = pathOf([c]);
  }

  path(
    chain: readonly ParsedCertificate[],
    evidence: readonly (RevocationEvidence | undefined)[],
    complete: boolean,
  ): void {
    this.fields.path = pathOf(
      chain,
      evidence.map((e) => (e?.reason ? { ...e, reason: clipped(e.reason, MAX_REFUSAL_TEXT) } : e)),
      complete,
    );
  }

  anchor(chain: ChainResult): void {
    const anchor = chain.anchor;
    this.fields.trustAnchor = anchor
      ? {
          kind: "trusted-list",
          service: clipped(anchor.source),
          ...(anchor.territory ? { territory: anchor.territory } : {}),
          ...(anchor.statusAtIssuance
            ? {
                statusAtIssuance: {
                  status: clipped(anchor.statusAtIssuance.status),
                  from: isoOf(anchor.statusAtIssuance.from),
                },
              }
            : {}),
          qualification: [
            ...(anchor.qualifiedFor.qwac ? (["QWAC"] as const) : []),
            ...(anchor.qualifiedFor.qseal ? (["QSealC"] as const) : []),
          ],
        }
      : { kind: "trust-store", subject: clipped(chain.chain[chain.chain.length - 1]!.subjectRfc2253) };
  }

  register(organizationIdentifier: string, entry: RegisterEntry | undefined): void {
    this.fields.register = {
      organizationIdentifier: clipped(organizationIdentifier),
      ...(entry
        ? {
            entry: {
              name: clipped(entry.name),
              status: clipped(entry.status, 60),
              roles: [...entry.roles],
              ...(entry.source ? { source: entry.source } : {}),
              ...(entry.withdrawnOn ? { withdrawnOn: clipped(entry.withdrawnOn, 40) } : {}),
            },
          }
        : {}),
    };
  }

  effectiveRoles(roles: readonly string[]): void {
    if (this.fields.register) this.fields.register = { ...this.fields.register, effectiveRoles: roles };
  }

  warn(warning: string): void {
    this.warnings.push(clipped(warning, MAX_REFUSAL_TEXT));
  }

  passed(): ValidationReport {
    return this.done({ indication: "TOTAL_PASSED" });
  }

  /** The report of a refusal; the refusal's text bounded, as it is cached and logged. */
  refused(
    check: ValidationCheck,
    subIndication: SubIndication,
    rejection: Rejection,
    cacheable = true,
  ): Judgement {
    const text = bounded(rejection.text);
    const report = this.done({
      indication: INDICATION_OF[subIndication],
      subIndication,
      check,
      refusal: {
        code: rejection.code,
        text,
        ...(rejection.retryAfterSeconds === undefined
          ? {}
          : { retryAfterSeconds: rejection.retryAfterSeconds }),
      },
    });
    return { report, expiresAt: 0, cacheable };
  }

  private done(
    outcome: Pick<ValidationReport, "indication" | "subIndication" | "check" | "refusal">,
  ): ValidationReport {
    // One shape, in reading order: what was judged, the outcome, then how it was reached.
    const f = this.fields;
    return {
      id: this.id,
      validationTime: f.validationTime!,
      policy: f.policy!,
      indication: outcome.indication,
      ...(outcome.subIndication ? { subIndication: outcome.subIndication } : {}),
      ...(outcome.check ? { check: outcome.check } : {}),
      ...(outcome.refusal ? { refusal: outcome.refusal } : {}),
      ...(f.certificate ? { certificate: f.certificate } : {}),
      path: f.path ?? [],
      ...(f.trustAnchor ? { trustAnchor: f.trustAnchor } : {}),
      ...(f.register ? { register: f.register } : {}),
      warnings: this.warnings,
    };
  }
}

/**
 * A refusal text of at most MAX_REFUSAL_TEXT characters and a string of its own: a slice of a
 * longer string (a subject DN, a header) would keep the whole of that alive in the cache.
 */
function bounded(text: string): string {
  const clippedText = text.length > MAX_REFUSAL_TEXT ? `${text.slice(0, MAX_REFUSAL_TEXT - 1)}…` : text;
  return Buffer.from(clippedText, "utf16le").toString("utf16le");
}

/** What each QcType is called, and what it is for. */
const KIND: Readonly<Record<QcTypeName, string>> = {
  eseal: "a QSealC (QcType eseal)",
  web: "a QWAC (QcType web)",
  esign: "a qualified certificate for electronic signatures (QcType esign)",
};

/** A refusal naming the kind found and the kind wanted, or undefined when the certificate fits. */
function wrongKind(
  certificate: ParsedCertificate,
  purpose: ChainPurpose,
  wanted: readonly QcTypeName[],
): Rejection | undefined {
  const found = certificate.qcStatements?.qcType ?? [];
  if (found.some((t) => wanted.includes(t))) return undefined;
  const use = purpose === "qwac" ? "the TLS client certificate" : "the signing certificate";
  const is =
    found.length === 0 ? "carries no QcType statement" : `is ${found.map((t) => KIND[t]).join(" and ")}`;
  const fix =
    purpose === "qwac"
      ? "connect with your QWAC; your QSealC signs, it does not authenticate TLS"
      : "sign with your QSealC (and send it as the signing certificate); your QWAC is for TLS";
  return reject(
    "CERTIFICATE_INVALID",
    `${use} (SN=${certificate.serialHex}) ${is}; ${wanted.map((t) => KIND[t]).join(" or ")} is wanted here: ${fix}`,
  );
}
