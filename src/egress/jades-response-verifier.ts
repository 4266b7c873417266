/**
 * A bank's response signed in JAdES (what this gateway's ingress sends for a JAdES request): an
 * x-jws-signature over the response headers its sigD.pars lists, which must include Digest (checked
 * against the body) and X-Request-ID (the request's); the bank's QSealC in x5c, trusted as for
 * draft-cavage responses.
 */

import type { CertificateVerifier, TrustedCertificate } from "../checks/index.js";
import { isRejection, type Rejection } from "../errors.js";
import { headerValue, verifyDigest } from "../signature/index.js";
import {
  algorithmFitsKey,
  buildHttpHeadersPayload,
  type HttpHeadersPayloadStyle,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  readJadesHeader,
  signatureMismatch,
  signingInput,
  verifyJwsSignature,
} from "../signature/jws/index.js";
import { otherRequestId, type ResponseToVerify } from "./response-verifier.js";

export interface JadesResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly JwsAlgorithm[];
  readonly payloadStyle?: HttpHeadersPayloadStyle;
  readonly now?: () => number;
}

export class JadesResponseVerifier {
  constructor(private readonly options: JadesResponseVerifierOptions) {}

  /** `true`, or a Rejection whose text says what failed. Never throws. */
  async verify(response: ResponseToVerify): Promise<true | Rejection> {
    const { options } = this;
    const { headers, request } = response;
    const read = readJadesHeader(headerValue(headers, JWS_SIGNATURE_HEADER), {
      now: (options.now ?? Date.now)(),
      algorithms: options.algorithms,
      toleranceMs: options.dateToleranceMs,
      requiredPars: ["digest", "x-request-id"],
    });
    if (isRejection(read)) return read;
    const requestId = headerValue(headers, "x-request-id");
    const other = otherRequestId(requestId, request);
    if (other) return other;
    const digest = verifyDigest(headerValue(headers, "digest"), response.body);
    if (isRejection(digest)) return digest;
    const bank = await options.certificates.verify(read.header.x5c.base64[0]!);
    if (isRejection(bank)) return bank;
    const key = (bank as TrustedCertificate).publicKey;
    const fits = algorithmFitsKey(read.header.alg, key);
    if (isRejection(fits)) return fits;
    const payload = buildHttpHeadersPayload(read.header.pars, { headers }, options.payloadStyle);
    if (isRejection(payload)) return payload;
    if (
      !verifyJwsSignature(
        read.header.alg,
        key,
        signingInput(read.jws.protectedB64, payload),
        read.jws.signature,
      )
    ) {
      return signatureMismatch(
        read.header.alg,
        `the response headers of sigD.pars '${read.header.pars.join(" ")}'`,
      );
    }
    return true;
  }
}
