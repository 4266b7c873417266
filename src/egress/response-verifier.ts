/**
 * Checking a bank's signed response (SPEC 5.10: "it may sign response bodies and the TPP should
 * verify them") with the same functions ingress uses on requests: the certificate through a
 * verdict-cached TppVerifier without a register, Digest over the exact body bytes, keyId, coverage,
 * the signature over the signing string, Date, and the X-Request-ID tying it to our request.
 */

import type { TppVerifier } from "../eidas/index.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import {
  type AlgorithmName,
  checkCoverage,
  checkDate,
  type HeaderMap,
  headerValue,
  matchSignatureKeyId,
  parseSignatureHeader,
  verifyDigest,
  verifySignatureOver,
} from "../signature/index.js";

export interface ResponseVerifierOptions {
  readonly certificates: TppVerifier;
  /** Lower-case name of the header the bank sends its certificate in. */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly AlgorithmName[];
  readonly now?: () => number;
}

export interface ResponseToVerify {
  /** Lower-case names; values as received (Latin-1 strings, one char per byte). */
  readonly headers: HeaderMap;
  readonly body: Uint8Array;
  /** The request it answers: its X-Request-ID must come back, and (request-target) is the request's. */
  readonly request: { readonly method: string; readonly target: string; readonly requestId: string };
}

/** The headers a response signature must cover when the response carries them. */
const RESPONSE_SIGNED_HEADERS = ["digest", "x-request-id", "date"];

export class ResponseVerifier {
  private readonly now: () => number;

  constructor(private readonly options: ResponseVerifierOptions) {
    this.now = options.now ?? Date.now;
  }

  /** `true`, or a Rejection whose text says what failed. Never throws. */
  async verify(response: ResponseToVerify): Promise<true | Rejection> {
    const { headers } = response;
    const signatureHeader = headerValue(headers, "signature");
    if (signatureHeader === undefined)
      return reject("SIGNATURE_MISSING", "the response carries no Signature header");
    const certificateValue = headerValue(headers, this.options.certificateHeader);
    if (certificateValue === undefined)
      return reject(
        "CERTIFICATE_MISSING",
        `the response carries no ${this.options.certificateHeader} header with the bank's signing certificate`,
      );
    const bank = await this.options.certificates.verify(certificateValue);
    if (isRejection(bank)) return bank;
    if (headerValue(headers, "digest") === undefined)
      return reject("SIGNATURE_INVALID", "the response carries no Digest header, so its body is not signed");
    const digest = verifyDigest(headerValue(headers, "digest"), response.body);
    if (isRejection(digest)) return digest;
    const params = parseSignatureHeader(signatureHeader);
    if (isRejection(params)) return params;
    const keyId = matchSignatureKeyId(params, bank.keyIdTarget);
    if (keyId !== true) return keyId;
    const coverage = checkCoverage(params.headers, headers, RESPONSE_SIGNED_HEADERS);
    if (coverage !== true) return coverage;
    if (!params.headers.includes("digest"))
      return reject("SIGNATURE_INVALID", "the response's signature does not cover its Digest header");
    const request = { method: response.request.method, target: response.request.target, headers };
    const verified = verifySignatureOver(request, params, bank.publicKey, this.options.algorithms);
    if (isRejection(verified)) return verified;
    if (headerValue(headers, "date") !== undefined) {
      const date = checkDate(headerValue(headers, "date"), this.now(), {
        toleranceMs: this.options.dateToleranceMs,
      });
      if (isRejection(date)) return date;
    }
    const requestId = headerValue(headers, "x-request-id");
    if (requestId !== undefined && requestId !== response.request.requestId)
      return reject(
        "SIGNATURE_INVALID",
        `the response's X-Request-ID ${requestId.slice(0, 80)} is not the request's ${response.request.requestId}: it answers another request`,
      );
    return true;
  }
}
