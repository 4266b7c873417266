/**
 * One call that verifies a request's Signature header against a known public key: parse,
 * keyId, coverage, signature. The gateway's checks (src/checks/steps.ts) call the same functions
 * as named steps, interleaved with its other checks; this is the whole of it for library users.
 */

import type { KeyObject } from "node:crypto";
import { isRejection, type Rejection } from "../errors.js";
import type { ResolvedAlgorithm } from "./algorithms.js";
import { type AlgorithmName, resolveAlgorithm } from "./algorithms.js";
import { type ParseOptions, parseSignatureHeader, type SignatureParams } from "./header.js";
import { type KeyIdOptions, type KeyIdTarget, matchSignatureKeyId } from "./keyid.js";
import {
  checkCoverage,
  ELIGIBLE_HEADERS,
  headerValue,
  type RequestParts,
  signingStringBytes,
} from "./signing-string.js";
import { verifySigningString } from "./verify.js";

export interface VerifyRequestOptions extends ParseOptions, KeyIdOptions {
  readonly publicKey: KeyObject;
  /** The certificate's serial and issuer: keyId must name them. Omit only for non-certificate keyIds. */
  readonly keyIdTarget?: KeyIdTarget;
  readonly algorithms?: readonly AlgorithmName[];
  /** Headers that must be signed when present (SPEC 5.5); `[]` turns the rule off. */
  readonly eligibleHeaders?: readonly string[];
}

export function verifyRequestSignature(
  request: RequestParts,
  options: VerifyRequestOptions,
): SignatureParams | Rejection {
  const params = parseSignatureHeader(headerValue(request.headers, "signature"), options);
  if (isRejection(params)) return params;
  if (options.keyIdTarget) {
    const keyId = matchSignatureKeyId(params, options.keyIdTarget, options);
    if (keyId !== true) return keyId;
  }
  const coverage = checkCoverage(
    params.headers,
    request.headers,
    options.eligibleHeaders ?? ELIGIBLE_HEADERS,
  );
  if (coverage !== true) return coverage;
  const verified = verifySignatureOver(request, params, options.publicKey, options.algorithms);
  return isRejection(verified) ? verified : params;
}

/**
 * The signature itself: the signing string rebuilt from the request as the bytes that were sent,
 * the algorithm the header names (allowed and fitting the key), the signature over those bytes.
 * Returns the signing-string bytes (what replay protection keys on).
 */
export function verifySignatureOver(
  request: RequestParts,
  params: SignatureParams,
  publicKey: KeyObject,
  algorithms?: readonly AlgorithmName[],
): Buffer | Rejection {
  const bytes = signingStringBytes(params.headers, request, params);
  if (isRejection(bytes)) return bytes;
  const algorithm: ResolvedAlgorithm | Rejection = resolveAlgorithm(params.algorithm, publicKey, algorithms);
  if (isRejection(algorithm)) return algorithm;
  const verified = verifySigningString(algorithm, bytes, params.signatureBytes, publicKey);
  return isRejection(verified) ? verified : bytes;
}
