/**
 * A bank's response signed per UK Open Banking (what this gateway's ingress sends for a UK OB
 * request): an x-jws-signature over the body, the bank's QSealC in x5c trusted as for draft-cavage
 * responses, `iss` its organisation and `tan` one the profile accepts. Named steps, as for
 * draft-cavage, so that `verify --response` prints the checks egress applies.
 */

import { isRejection, reject } from "../../errors.js";
import {
  checkUkObClaims,
  type DetachedJws,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  readUkObHeader,
  type UkObHeader,
  verifyUkObSignature,
} from "../../signature/jws/index.js";
import type { CertificateVerifier } from "../context.js";
import type { Step } from "../runner.js";
import { type ResponseCheck, responseOutline } from "./response-outline.js";

/** The response's JWS and its protected header, read by `jws-header`, in the check's dialect slot. */
export const ukObResponseOf = (c: ResponseCheck): UkObResponseSignature | undefined =>
  c.dialectState as UkObResponseSignature | undefined;

interface UkObResponseSignature {
  readonly jws: DetachedJws;
  readonly header: UkObHeader;
}

export interface UkObResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly JwsAlgorithm[];
  readonly tan: readonly string[];
  /** Accept `b64: false` (a bank on Read/Write API 3.1.3 or earlier). */
  readonly allowB64False?: boolean;
  readonly now?: () => number;
}

/** The checks of a UK OB response, in order; `signature` needs the body. */
export function ukObResponseChecks(options: UkObResponseVerifierOptions): Step<ResponseCheck>[] {
  const now = options.now ?? Date.now;
  return responseOutline(options.certificates, {
    read: [
      {
        name: "jws-header",
        run: (c) => {
          const read = readUkObHeader(c.header(JWS_SIGNATURE_HEADER), {
            now: now(),
            algorithms: options.algorithms,
            toleranceMs: options.dateToleranceMs,
            allowB64False: options.allowB64False ?? false,
          });
          if (isRejection(read)) return read;
          c.dialectState = read;
          return undefined;
        },
      },
    ],
    certificate: (c) =>
      ukObResponseOf(c)!.header.x5c?.base64[0] ??
      reject("CERTIFICATE_MISSING", "the bank's JWS carries no x5c"),
    verify: [
      {
        name: "signature",
        run: (c) => {
          // The JWS the jws-header step read (time and algorithm checked there), not read again.
          const verified = verifyUkObSignature(ukObResponseOf(c)!, c.response.body, c.bank!.publicKey);
          return verified === true ? undefined : verified;
        },
      },
      {
        name: "claims",
        run: (c) => {
          const organization = c.bank!.identity.organizationId;
          const { header } = ukObResponseOf(c)!;
          const iss = header.iss.startsWith(`${organization}/`) ? organization : header.iss;
          const claims = checkUkObClaims({ iss, tan: header.tan }, { iss: organization, tan: options.tan });
          return claims === true ? undefined : claims;
        },
      },
    ],
  });
}
