/**
 * One call that verifies a request's Signature header against a known public key: parse,
 * keyId, coverage, signing string, algorithm, signature. The ingress gateway runs the same steps
 * one by one, interleaved with its other checks; this is the whole of it for library users.
 */

import type { KeyObject } from "node:crypto";
import { isRejection, type Rejection } from "../errors.js";
import { type AlgorithmName, resolveAlgorithm } from "./algorithms.js";
import { type ParseOptions, parseSignatureHeader, type SignatureParams } from "./header.js";
import { type KeyIdOptions, type KeyIdTarget, matchKeyId } from "./keyid.js";
import {
  buildSigningString,
  checkCoverage,
  ELIGIBLE_HEADERS,
  headerValue,
  type RequestParts,
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
    const keyId = matchKeyId(params.keyId, options.keyIdTarget, options);
    if (keyId !== true) return keyId;
  }
  const coverage = checkCoverage(
    params.headers,
    request.headers,
    options.eligibleHeaders ?? ELIGIBLE_HEADERS,
  );
  if (coverage !== true) return coverage;
  const signingString = buildSigningString(params.headers, request, params);
  if (isRejection(signingString)) return signingString;
  const algorithm = resolveAlgorithm(params.algorithm, options.publicKey, options.algorithms);
  if (isRejection(algorithm)) return algorithm;
  const verified = verifySigningString(algorithm, signingString, params.signatureBytes, options.publicKey);
  return verified === true ? params : verified;
}
