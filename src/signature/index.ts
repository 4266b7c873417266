/**
 * The HTTP signature library: pure functions over header values and bytes, no servers, no config.
 * Every failure is returned as a `Rejection` carrying a Berlin Group code and a text for the TPP.
 * The package publishes this module as `psd2-gateway/signature`, so it also exports what a caller
 * needs to tell a rejection apart and answer it (errors.ts).
 */

export {
  type ErrorCode,
  isRejection,
  Rejection,
  type StatusProfile,
  statusFor,
  type TppMessage,
  type TppMessagesBody,
  tppMessagesBody,
} from "../errors.js";

export {
  type AlgorithmName,
  canonicalAlgorithm,
  DEFAULT_ALGORITHMS,
  resolveAlgorithm,
} from "./algorithms.js";
export {
  type Clock,
  checkDate,
  DEFAULT_DATE_TOLERANCE_MS,
  formatHttpDate,
  parseHttpDate,
} from "./date.js";
export {
  computeDigestHeader,
  type DigestAlgorithm,
  type DigestValue,
  DigestVerifier,
  parseDigestHeader,
  verifyDigest,
} from "./digest.js";
export {
  formatSignatureHeader,
  type ParseOptions,
  parseSignatureHeader,
  type SignatureParams,
} from "./header.js";
/** Detached JWS in x-jws-signature: JAdES (Berlin Group openFinance 2.x) and UK Open Banking. */
export * as jws from "./jws/index.js";
export {
  buildKeyId,
  expectedKeyId,
  type KeyIdOptions,
  type KeyIdSpelling,
  type KeyIdTarget,
  keyIdTargetFromDer,
  matchKeyId,
  matchSignatureKeyId,
  parseKeyId,
  serialMatches,
} from "./keyid.js";
export { type VerifyRequestOptions, verifyRequestSignature, verifySignatureOver } from "./request.js";
export { decodeEncodedWords, encodeIfNeeded } from "./rfc2047.js";
/** RFC 9421 HTTP Message Signatures and RFC 9530 Content-Digest, as FAPI 2.0 profiles them. */
export * as rfc9421 from "./rfc9421/index.js";
export {
  CERTIFICATE_HEADER_NAME,
  type CertificateHeaderFormat,
  formatCertificateHeader,
  RequestSigner,
  type RequestToSign,
  type SignedHeaders,
  type SignerOptions,
  wireValue,
} from "./sign.js";
export {
  buildSigningString,
  checkCoverage,
  ELIGIBLE_HEADERS,
  type HeaderMap,
  headerValue,
  lowerCasedHeaders,
  type RequestParts,
  signingStringBytes,
} from "./signing-string.js";
export { verifySigningString } from "./verify.js";
