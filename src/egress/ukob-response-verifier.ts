/**
 * A bank's response signed per UK Open Banking (what this gateway's ingress sends for a UK OB
 * request): an x-jws-signature over the body, the bank's QSealC in x5c trusted as for draft-cavage
 * responses, `iss` its organisation and `tan` one the profile accepts.
 */

import type { CertificateVerifier, TrustedCertificate } from "../checks/index.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import { headerValue } from "../signature/index.js";
import {
  checkUkObClaims,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  readUkObHeader,
  verifyUkOb,
} from "../signature/jws/index.js";
import type { ResponseToVerify } from "./response-verifier.js";

export interface UkObResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly JwsAlgorithm[];
  readonly tan: readonly string[];
  readonly now?: () => number;
}

export class UkObResponseVerifier {
  constructor(private readonly options: UkObResponseVerifierOptions) {}

  /** `true`, or a Rejection whose text says what failed. Never throws. */
  async verify(response: ResponseToVerify): Promise<true | Rejection> {
    const { options } = this;
    const value = headerValue(response.headers, JWS_SIGNATURE_HEADER);
    const read = readUkObHeader(value, { now: (options.now ?? Date.now)(), algorithms: options.algorithms });
    if (isRejection(read)) return read;
    const first = read.header.x5c?.base64[0];
    if (first === undefined) return reject("CERTIFICATE_MISSING", "the bank's JWS carries no x5c");
    const bank = await options.certificates.verify(first);
    if (isRejection(bank)) return bank;
    const trusted = bank as TrustedCertificate;
    const verified = verifyUkOb(value, response.body, {
      now: (options.now ?? Date.now)(),
      algorithms: options.algorithms,
      toleranceMs: options.dateToleranceMs,
      publicKey: trusted.publicKey,
    });
    if (isRejection(verified)) return verified;
    const organization = trusted.identity.organizationId;
    const iss = verified.header.iss.startsWith(`${organization}/`) ? organization : verified.header.iss;
    const claims = checkUkObClaims(
      { iss, tan: verified.header.tan },
      { iss: organization, tan: options.tan },
    );
    return claims;
  }
}
