/**
 * Detached JWS in `x-jws-signature` for two signing dialects: the Berlin Group openFinance API
 * Framework's JAdES over HTTP headers (jades.ts) and UK Open Banking's over the body (ukob.ts).
 * Pure functions; every failure a Rejection with a Berlin Group code.
 */

export {
  algorithmFitsKey,
  type CertificateChain,
  type DetachedJws,
  JWS_ALGORITHMS,
  type JwsAlgorithm,
  keyOptions,
  MAX_CERTIFICATE_BASE64,
  MAX_JWS_LENGTH,
  MAX_X5C_CERTIFICATES,
  readDetachedJws,
  signatureMismatch,
  signingInput,
  verifyJwsSignature,
} from "./compact.js";
export {
  buildHttpHeadersPayload,
  checkTime,
  DEFAULT_SIGT_TOLERANCE_MS,
  formatSigT,
  HTTP_HEADERS_MID,
  type HttpHeadersMessage,
  type HttpHeadersPayloadStyle,
  type JadesHeader,
  type JadesHeaderParts,
  type JadesReadOptions,
  type JadesSignature,
  type JadesSignInput,
  type JadesVerifyOptions,
  JWS_SIGNATURE_HEADER,
  parseSigT,
  readJadesHeader,
  readJadesHeaderParts,
  signJades,
  signJadesAsync,
  type VerifiedJades,
  verifyJades,
} from "./jades.js";
export { JsonProblem, type JsonValue, parseJsonObject } from "./json.js";
export { JadesRequestSigner, type JadesSignerOptions } from "./request-signer.js";
export {
  checkUkObClaims,
  DEFAULT_UKOB_ALGORITHMS,
  readUkObHeader,
  signUkOb,
  signUkObAsync,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
  type UkObExpectations,
  type UkObHeader,
  type UkObReadOptions,
  UkObSignature,
  type UkObSignInput,
  type UkObVerifyOptions,
  verifyUkOb,
  verifyUkObSignature,
} from "./ukob.js";
export { UkObRequestSigner, type UkObSignerOptions } from "./ukob-request-signer.js";
