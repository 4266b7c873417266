/**
 * From a certificate header to a trusted TPP: decode → parse → PSD2 check → chain → revocation →
 * register → effective roles, cached per certificate. This is what the ingress pipeline asks.
 */

import { isRejection, type Rejection, reject } from "../errors.js";
import type { KeyIdTarget } from "../signature/keyid.js";
import {
  decodeCertificateHeader,
  type ParsedCertificate,
  parseCertificate,
  requirePsd2,
} from "./certificate.js";
import type { Psd2Role } from "./qcstatements.js";
import type { TppRegister } from "./register.js";
import type { RevocationChecker } from "./revocation.js";
import type { TrustStore } from "./trust-store.js";
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
  readonly register: TppRegister;
  readonly now?: () => number;
  readonly cacheTtlMs: number;
  readonly failureTtlMs: number;
  readonly maxEntries: number;
  /** Smallest RSA key accepted; ETSI TS 119 312 asks for 2048 bits at least. */
  readonly minRsaBits?: number;
}

export class TppVerifier {
  private readonly cache: VerdictCache<TrustedTpp>;
  private readonly now: () => number;

  constructor(private readonly options: TppVerifierOptions) {
    this.now = options.now ?? Date.now;
    this.cache = new VerdictCache<TrustedTpp>({ maxEntries: options.maxEntries, now: this.now });
  }

  get stats(): VerdictCacheStats {
    return this.cache.stats;
  }

  /** Drops every verdict (after a trust store or CRL reload). */
  invalidate(): void {
    this.cache.clear();
  }

  verify(headerValue: string): TrustedTpp | Rejection | Promise<TrustedTpp | Rejection> {
    // A stale register fails every request closed, cached verdicts included.
    const stale = this.options.register.freshnessRefusal();
    if (stale) return stale;
    return this.cache.get(headerValue, () => this.compute(headerValue));
  }

  private refusal(rejection: Rejection, cacheable = true): Verdict<TrustedTpp> {
    return { value: rejection, expiresAt: this.now() + this.options.failureTtlMs, cacheable };
  }

  private compute(headerValue: string): Verdict<TrustedTpp> | Promise<Verdict<TrustedTpp>> {
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
    const chain = this.options.trustStore().verifyChain(certificate, new Date(this.now()));
    if (isRejection(chain)) return this.refusal(chain);
    const revoked = this.options.revocation().check(certificate, chain.chain[1]!, new Date(this.now()));
    if (revoked instanceof Promise) return revoked.then((r) => this.finish(certificate, r));
    return this.finish(certificate, revoked);
  }

  private finish(certificate: ParsedCertificate, revoked: Rejection | undefined): Verdict<TrustedTpp> {
    if (revoked) return this.refusal(revoked);
    const organizationId = certificate.organizationIdentifier!;
    const entry = this.options.register.lookup(organizationId, certificate.sha256Fingerprint);
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
      // Never past notAfter, so an expiring certificate is refused on time.
      expiresAt: Math.min(now + this.options.cacheTtlMs, certificate.notAfter.getTime()),
      cacheable: true,
    };
  }
}
