/**
 * RFC 9421 HTTP Message Signatures and RFC 9530 Content-Digest, as profiled by FAPI 2.0 HTTP
 * Signatures. Pure: no I/O, node:crypto only.
 */

export {
  type AlgorithmSpec,
  algorithmForKey,
  algorithmSpec,
  DEFAULT_RFC9421_ALGORITHMS,
  RFC9421_ALGORITHMS,
  type Rfc9421Algorithm,
  resolveRfc9421Algorithm,
} from "./algorithms.js";
export {
  type HttpMessage,
  isRequest,
  type MessageHeaders,
  type RequestMessage,
  type ResponseMessage,
  signatureBase,
} from "./base.js";
export {
  CONTENT_DIGEST_MAX_LENGTH,
  type ContentDigestAlgorithm,
  type ContentDigestValue,
  ContentDigestVerifier,
  computeContentDigest,
  parseContentDigest,
  verifyContentDigest,
} from "./content-digest.js";
export {
  checkFapiRequestSignature,
  checkFapiResponseSignature,
  checkSignatureTime,
  FAPI_REQUEST_TAG,
  FAPI_RESPONSE_PROFILES,
  FAPI_RESPONSE_TAG,
  type FapiCoverageOptions,
  type FapiResponseBinding,
  type FapiResponseOptions,
  type FapiResponseProfile,
  type FapiSignOptions,
  type FapiVerifyOptions,
  fapiRequestComponents,
  fapiRequestSigning,
  fapiResponseComponents,
  fapiResponseCoverage,
  fapiResponseSigning,
  hasBody,
  requestSignatureLabel,
  type SelectOptions,
  selectSignature,
  signatureAcceptedUntil,
  signFapiRequest,
  signFapiResponse,
  type TimeWindow,
  type VerifiedSignature,
  verifyFapiRequest,
  verifyFapiResponse,
} from "./fapi.js";
export { type SignedHeaders, type SignOptions, type SignParams, sign } from "./sign.js";
export { signAsync } from "./sign-async.js";
export {
  type ComponentId,
  component,
  MAX_COMPONENTS,
  MAX_SIGNATURES,
  type ParsedSignature,
  parseSignatureHeader,
  parseSignatureInput,
  parseSignatures,
  SIGNATURE_INPUT_MAX_LENGTH,
  SIGNATURE_MAX_LENGTH,
  type SignatureInput,
  type SignatureParams,
} from "./signature-input.js";
export { verify } from "./verify.js";
