/**
 * The eIDAS layer's public surface: certificate parsing (QCStatements, PSD2 roles,
 * organizationIdentifier), the trust store and chain building, CRL revocation, the TPP register
 * and the cached TPP verifier. Pure and cached: no file or network I/O (that is src/trust/, which
 * also reads the documents only its sources fetch: trusted lists, OCSP, register files). Code
 * outside eidas/ imports from here, never from a file beside it.
 */

export {
  type BasicConstraints,
  type Extension,
  isPsd2Certificate,
  type KeyUsage,
  type ParseCertificateOptions,
  type ParsedCertificate,
  parseCertificate,
  requirePsd2,
} from "./certificate.js";
export {
  CERTIFICATE_HEADER,
  DEFAULT_MAX_CERTIFICATE_HEADER_BYTES,
  decodeCertificateHeader,
} from "./certificate-header.js";
export { DEFECT_CHANNEL, type DefectEvent, reportDefect } from "./defects.js";
export {
  type KeyReference,
  type KeyResolver,
  missingKey,
  noKeyResolver,
  onResolved,
  type ResolvedKey,
} from "./key-reference.js";
export { parsePsdOrganizationIdentifier } from "./organization-identifier.js";
export {
  encodeQcStatements,
  PSD2_ROLES,
  type Psd2Role,
  type QcStatementsSpec,
  type QcTypeName,
} from "./qcstatements.js";
export {
  type RegisterEntry,
  type RegisterSink,
  type RegisterStats,
  TppRegister,
  type UnattendedLimitColumn,
} from "./register.js";
export {
  CA_NOT_CHECKED,
  CrlRevocationChecker,
  checkPath,
  crlsFromFile,
  NOT_REVOKED,
  type PathRevocationStatus,
  type RevocationChecker,
  type RevocationList,
  type RevocationStatus,
  revokedRefusal,
  serialKey,
  statusFromCrl,
  verifiedCrl,
} from "./revocation.js";
export { verifyTbs } from "./signature-algorithms.js";
export { MAX_REFUSAL_TEXT, TppVerifier, type TppVerifierOptions, type TrustedTpp } from "./tpp-verifier.js";
export {
  type ChainPurpose,
  ChainRefusal,
  type ChainResult,
  certificatesFromFile,
  type QualifiedAnchor,
  shortStatus,
  TrustStore,
} from "./trust-store.js";
export type {
  CertificateSummary,
  Indication,
  PathElement,
  RegisterReport,
  RevocationEvidence,
  SubIndication,
  TrustAnchorReport,
  ValidationCheck,
  ValidationReport,
} from "./validation-report.js";
export type { VerdictCacheStats } from "./verdict-cache.js";
