/**
 * A validation report per certificate, in the manner of ETSI TS 119 102-2 (the validation report
 * of ETSI EN 319 102-1's building blocks): the indication and sub-indication, the path built,
 * each certificate's revocation evidence, the trusted-list service the path ends at and the
 * register entry the TPP was judged by. TppVerifier makes one each time it judges a certificate
 * (a verdict-cache miss), and the refusal a TPP gets is the report's `refusal`: a bank's support
 * desk reads why a TPP was refused from the report whose id the access line carries.
 *
 * Pure: plain values, dates as ISO 8601 strings, every text from the sender clipped.
 */

import type { ErrorCode } from "../errors.js";
import type { ParsedCertificate } from "./certificate.js";

/** EN 319 102-1 5.1.3 (Table 5): the main status indication. */
export type Indication = "TOTAL_PASSED" | "TOTAL_FAILED" | "INDETERMINATE";

/**
 * The sub-indications this gateway gives (EN 319 102-1 Table 5/6 names). Validation is at the
 * current time with no proof of existence, so "_NO_POE" states are final for the request.
 */
export type SubIndication =
  /** The certificate header or certificate could not be read. */
  | "FORMAT_FAILURE"
  /** The signer's certificate is revoked. */
  | "REVOKED"
  /** The signer's certificate is not valid yet. */
  | "NOT_YET_VALID"
  /** A CA of the path is revoked. */
  | "REVOKED_CA_NO_POE"
  /** A certificate of the path has expired (or a CA is not yet valid). */
  | "OUT_OF_BOUNDS_NO_POE"
  /** No path to a trust anchor the bank trusts. */
  | "NO_CERTIFICATE_CHAIN_FOUND"
  /** A path was found but a link of it does not hold (a signature that does not verify), or no revocation source exists. */
  | "CERTIFICATE_CHAIN_GENERAL_FAILURE"
  /** The bank's policy refuses the path: not a PSD2 certificate, a CA as signer, keyUsage, critical extension, trusted-list qualification, register. */
  | "CHAIN_CONSTRAINTS_FAILURE"
  /** The key is weaker than the policy allows. */
  | "CRYPTO_CONSTRAINTS_FAILURE"
  /** The revocation status (or the register) cannot be known now: a passing condition. */
  | "TRY_LATER";

/** The indication each sub-indication belongs to (EN 319 102-1 Table 5). */
export const INDICATION_OF: Readonly<Record<SubIndication, Indication>> = {
  FORMAT_FAILURE: "TOTAL_FAILED",
  REVOKED: "TOTAL_FAILED",
  NOT_YET_VALID: "TOTAL_FAILED",
  REVOKED_CA_NO_POE: "INDETERMINATE",
  OUT_OF_BOUNDS_NO_POE: "INDETERMINATE",
  NO_CERTIFICATE_CHAIN_FOUND: "INDETERMINATE",
  CERTIFICATE_CHAIN_GENERAL_FAILURE: "INDETERMINATE",
  CHAIN_CONSTRAINTS_FAILURE: "INDETERMINATE",
  CRYPTO_CONSTRAINTS_FAILURE: "INDETERMINATE",
  TRY_LATER: "INDETERMINATE",
};

/** The gateway's check that decided, in the order they run. */
export type ValidationCheck =
  | "format"
  | "psd2-profile"
  /** The certificate's kind (QcType) is not one accepted for its use (`verification.certificateKinds`). */
  | "certificate-kind"
  | "key-size"
  | "path"
  | "trusted-list"
  | "revocation"
  | "register"
  /** The gateway failed on the certificate (a defect of ours): refused, and reported. */
  | "gateway";

export interface CertificateSummary {
  readonly subject: string;
  readonly issuer: string;
  readonly serialNumber: string;
  readonly sha256: string;
  readonly notBefore: string;
  readonly notAfter: string;
}

/** What a revocation source proved about one certificate of the path. */
export interface RevocationEvidence {
  readonly status: "good" | "revoked" | "unknown" | "not-checked";
  /** `OCSP` or `CRL`; absent when no source answered. */
  readonly source?: "OCSP" | "CRL";
  /** The responder's URL, or the CRL's URL or file. */
  readonly location?: string;
  /** OCSP: when the responder signed the answer. */
  readonly producedAt?: string;
  /** OCSP or CRL thisUpdate. */
  readonly thisUpdate?: string;
  /** OCSP or CRL nextUpdate: the evidence proves nothing after it. */
  readonly nextUpdate?: string;
  readonly revokedAt?: string;
  /** The CRLReason, when the source gave one. */
  readonly revocationReason?: string;
  /** Why the status is unknown, or why it was not asked. */
  readonly reason?: string;
}

export interface PathElement extends CertificateSummary {
  /** `signer` (the certificate judged), `ca` (an intermediate) or `trust-anchor` (a root, or a CA a trusted list names). */
  readonly role: "signer" | "ca" | "trust-anchor";
  /** Absent for the trust anchor (its trust is the bank's, not a CA's). */
  readonly revocation?: RevocationEvidence;
}

/** Where the path ends: a CA from the bank's trust folder, or a service on an EU trusted list. */
export type TrustAnchorReport =
  | { readonly kind: "trust-store"; readonly subject: string }
  | {
      readonly kind: "trusted-list";
      /** The list and service, as the trusted list names them. */
      readonly service: string;
      readonly territory?: string;
      /** The service's status when the certificate was issued, and since when. */
      readonly statusAtIssuance?: { readonly status: string; readonly from: string };
      /** What the service is qualified for (its ForWebSiteAuthentication / ForeSeals extensions). */
      readonly qualification: readonly ("QWAC" | "QSealC")[];
    };

export interface RegisterReport {
  readonly organizationIdentifier: string;
  /** The entry the register holds, from its first layer that has it; absent when none does. */
  readonly entry?: {
    readonly name: string;
    readonly status: string;
    readonly roles: readonly string[];
    /** The register layer (source) it came from. */
    readonly source?: string;
    readonly withdrawnOn?: string;
  };
  /** The roles the request may use: the certificate's, as far as the register grants them. */
  readonly effectiveRoles?: readonly string[];
}

export interface ValidationReport {
  /** Quoted in the access line (`trustReport`) of every request judged by this verdict. */
  readonly id: string;
  readonly validationTime: string;
  /** What the certificate had to be: a QSealC (signing certificate) or a QWAC (TLS client certificate). */
  readonly policy: "QSealC" | "QWAC";
  readonly indication: Indication;
  readonly subIndication?: SubIndication;
  /** The check that decided, when one refused. */
  readonly check?: ValidationCheck;
  /** The certificate judged, when it could be read. */
  readonly certificate?: CertificateSummary & {
    readonly organizationIdentifier?: string;
    readonly psd2Roles: readonly string[];
    /** The QcType statements (`eseal`, `web`, `esign`). */
    readonly qcTypes: readonly string[];
  };
  /** The path built, signer first; as far as it was built when a link failed. */
  readonly path: readonly PathElement[];
  readonly trustAnchor?: TrustAnchorReport;
  /** Absent where no register is kept (egress judging a bank's certificate, `verify` without one). */
  readonly register?: RegisterReport;
  /** What the TPP was told: the Berlin Group code and text (the refusal is this). */
  readonly refusal?: { readonly code: ErrorCode; readonly text: string; readonly retryAfterSeconds?: number };
  /** A status let through by `revocation.softFail`, and the like. */
  readonly warnings: readonly string[];
}

/** Longest text from a certificate kept in a report: reports are logged and kept. */
const MAX_NAME = 300;

/** `text` cut to `max` characters and marked `…` when longer (refusal texts and reports alike). */
export function clipped(text: string, max = MAX_NAME): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export function summaryOf(certificate: ParsedCertificate): CertificateSummary {
  return {
    subject: clipped(certificate.subjectRfc2253),
    issuer: clipped(certificate.issuerRfc2253),
    serialNumber: clipped(certificate.serialHex, 80),
    sha256: certificate.sha256Fingerprint,
    notBefore: isoOf(certificate.notBefore),
    notAfter: isoOf(certificate.notAfter),
  };
}

/** An invalid Date (a certificate's odd time) is not a reason to throw while reporting. */
export function isoOf(date: Date): string {
  return Number.isNaN(date.getTime()) ? "invalid" : date.toISOString();
}

/** The path's elements, each with the revocation evidence given for it (none for the anchor). */
export function pathOf(
  chain: readonly ParsedCertificate[],
  evidence: readonly (RevocationEvidence | undefined)[] = [],
  complete = true,
): PathElement[] {
  return chain.map((certificate, i) => {
    const role = i === 0 ? "signer" : complete && i === chain.length - 1 ? "trust-anchor" : "ca";
    const revocation = evidence[i];
    return { ...summaryOf(certificate), role, ...(revocation ? { revocation } : {}) };
  });
}
