/**
 * A bank's response signed per RFC 9421 as FAPI 2.0 profiles it (what this gateway's ingress sends
 * for an RFC 9421 request): the signature tagged `fapi-2-response`, covering `@status`,
 * `content-digest` with a body, the bank's certificate header and X-Request-ID, and bound to the
 * request with `"@method";req` and `"@target-uri";req`; the certificate trusted as for
 * draft-cavage responses, its keyid the Berlin Group's.
 */

import type { CertificateVerifier, TrustedCertificate } from "../checks/index.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import { headerValue, matchKeyId } from "../signature/index.js";
import {
  checkFapiResponseSignature,
  FAPI_RESPONSE_TAG,
  parseSignatures,
  type Rfc9421Algorithm,
  selectSignature,
  signatureBase,
  verify,
  verifyContentDigest,
} from "../signature/rfc9421/index.js";
import { otherRequestId, type ResponseToVerify } from "./response-verifier.js";

export interface Rfc9421ResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  /** Lower-case name of the header the bank sends its certificate in. */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly Rfc9421Algorithm[];
  readonly now?: () => number;
}

export class Rfc9421ResponseVerifier {
  constructor(private readonly options: Rfc9421ResponseVerifierOptions) {}

  /** `true`, or a Rejection whose text says what failed. Never throws. */
  async verify(response: ResponseToVerify): Promise<true | Rejection> {
    const { options } = this;
    const { headers, request } = response;
    if (response.status === undefined || request.targetUri === undefined) {
      return reject(
        "SIGNATURE_INVALID",
        "the response's status and request are needed to check an RFC 9421 signature",
      );
    }
    const all = parseSignatures(headers["signature-input"], headers.signature);
    if (isRejection(all)) return all;
    const signature = selectSignature(all, { tag: FAPI_RESPONSE_TAG });
    if (isRejection(signature)) return signature;
    const message = { status: response.status, headers };
    const requestId = headerValue(headers, "x-request-id");
    const profile = checkFapiResponseSignature(signature, message, {
      coverAlways: [options.certificateHeader, ...(requestId === undefined ? [] : ["x-request-id"])],
      hasBody: response.body.length > 0,
      now: (options.now ?? Date.now)(),
      toleranceSeconds: options.dateToleranceMs / 1000,
    });
    if (isRejection(profile)) return profile;
    const other = otherRequestId(requestId, request);
    if (other) return other;
    if (response.body.length > 0) {
      const digest = verifyContentDigest(headers["content-digest"], Buffer.from(response.body));
      if (isRejection(digest)) return digest;
    }
    const certificateValue = headerValue(headers, options.certificateHeader);
    if (certificateValue === undefined) {
      return reject("CERTIFICATE_MISSING", `the response carries no ${options.certificateHeader} header`);
    }
    const bank = await options.certificates.verify(certificateValue);
    if (isRejection(bank)) return bank;
    const keyid = signature.params.keyid;
    const named = keyid === undefined ? true : matchKeyId(keyid, (bank as TrustedCertificate).keyIdTarget);
    if (named !== true) return named;
    const base = signatureBase(signature.components, signature.serializedParams, message, {
      method: request.method,
      targetUri: request.targetUri,
      headers: request.headers ?? {},
    });
    if (isRejection(base)) return base;
    return verify(signature, base, (bank as TrustedCertificate).publicKey, options.algorithms);
  }
}
