/**
 * From a certificate header to a trusted TPP: decode → parse → PSD2 check → chain → revocation →
 * register → effective roles, cached per certificate. This is what the ingress pipeline asks.
 */

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
import type { Psd2Role } from "./qcstatements.js";
import type { TppRegister } from "./register.js";
import { checkPath, type RevocationChecker, type RevocationStatus } from "./revocation.js";
import type { ChainPurpose, TrustStore } from "./trust-store.js";
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
  };
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
  /** Smallest RSA key accepted; ETSI TS 119 312 asks for 2048 bits at least. */
  readonly minRsaBits?: number;
  /** A certificate let through with an unknown revocation status (`revocation.softFail`). */
  readonly onRevocationWarning?: (certificate: ParsedCertificate, warning: string) => void;
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
    return this.cache.get(
      headerValue,
      () => this.computeGuarded(headerValue, purpose),
      purpose === "qseal" ? "" : "qwac:",
    );
  }

  private refusal(rejection: Rejection, cacheable = true): Verdict<TrustedTpp> {
    return { value: bounded(rejection), expiresAt: this.now() + this.options.failureTtlMs, cacheable };
  }

  /**
   * The boundary: an exception here is a defect of ours, but the bytes are the sender's, so the
   * answer is still a refusal, cached like any other, so that retries do not pay again.
   */
  private computeGuarded(
    headerValue: string,
    purpose: ChainPurpose,
  ): Verdict<TrustedTpp> | Promise<Verdict<TrustedTpp>> {
    try {
      const result = this.compute(headerValue, purpose);
      return result instanceof Promise ? result.catch((error: unknown) => this.defect(error)) : result;
    } catch (error) {
      return this.defect(error);
    }
  }

  private defect(error: unknown): Verdict<TrustedTpp> {
    const detail = reportDefect("TppVerifier", error);
    return this.refusal(
      reject(
        "CERTIFICATE_INVALID",
        `${CERTIFICATE_HEADER} could not be checked: the gateway failed on it (${detail}); it is refused until that is fixed, report it to the bank with the certificate`,
      ),
    );
  }

  private compute(
    headerValue: string,
    purpose: ChainPurpose,
  ): Verdict<TrustedTpp> | Promise<Verdict<TrustedTpp>> {
    const der = decodeCertificateHeader(headerValue);
    if (isRejection(der)) return this.refusal(der);
    const certificate = parseCertificate(der);
    if (isRejection(certificate)) return this.refusal(certificate);
    const psd2 = requirePsd2(certificate);
    if (isRejection(psd2)) return this.refusal(psd2);
    const minBits = this.options.minRsaBits ?? 2048;
    if (certificate.keyType === "rsa" && (certificate.keyBits ?? 0) < minBits) {
      return this.refusal(
        reject(
          "CERTIFICATE_INVALID",
          `certificate SN=${certificate.serialHex} has a ${certificate.keyBits}-bit RSA key; at least ${minBits} bits are required`,
        ),
      );
    }
    const chain = this.options.trustStore().verifyChain(certificate, new Date(this.now()), purpose);
    if (isRejection(chain)) return this.refusal(chain);
    // Every certificate of the path, each against its issuer: a revoked intermediate refuses all below it.
    const status = checkPath(this.options.revocation(), chain.chain, new Date(this.now()));
    if (status instanceof Promise) return status.then((s) => this.finish(certificate, s));
    return this.finish(certificate, status);
  }

  private finish(certificate: ParsedCertificate, revocation: RevocationStatus): Verdict<TrustedTpp> {
    if (revocation.refusal) return this.refusal(revocation.refusal, !revocation.transient);
    if (revocation.warning) this.options.onRevocationWarning?.(certificate, revocation.warning);
    const organizationId = certificate.organizationIdentifier!;
    const entry = this.options.register
      ? this.options.register.lookup(organizationId, certificate.sha256Fingerprint)
      : {
          name: firstAttributeValue(certificate.subject, "2.5.4.10") ?? organizationId,
          roles: certificate.psd2Roles,
        };
    // A stale or missing register is a passing condition of the bank's: never cache it.
    if (isRejection(entry)) return this.refusal(entry, entry.code !== "SERVICE_UNAVAILABLE");
    const roles = new Set<Psd2Role>(certificate.psd2Roles.filter((r) => entry.roles.includes(r)));
    const now = this.now();
    return {
      value: {
        certificate,
        publicKey: certificate.publicKey,
        keyIdTarget: { serial: certificate.serial, issuer: certificate.issuer },
        identity: { organizationId, name: entry.name, roles, fingerprint: certificate.sha256Fingerprint },
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

/**
 * A refusal whose text is at most MAX_REFUSAL_TEXT characters and a string of its own: a slice of
 * a longer string (a subject DN, a header) would keep the whole of that alive in the cache.
 */
function bounded(rejection: Rejection): Rejection {
  const text =
    rejection.text.length > MAX_REFUSAL_TEXT
      ? `${rejection.text.slice(0, MAX_REFUSAL_TEXT - 1)}…`
      : rejection.text;
  const own = Buffer.from(text, "utf16le").toString("utf16le");
  return new Rejection(rejection.code, own, rejection.retryAfterSeconds);
}
