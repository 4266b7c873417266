/**
 * A bank's response signed per RFC 9421 as FAPI 2.0 profiles it (what this gateway's ingress sends
 * for an RFC 9421 request): the signature tagged `fapi-2-response`, covering `@status`,
 * `content-digest` with a body, the bank's certificate header and X-Request-ID, and bound to the
 * request with `"@method";req` and `"@target-uri";req` and, in the `full` profile (FAPI 2.0 HTTP
 * Signatures draft -01), the request's `"content-digest";req` and its signature's
 * `"signature";req;key=…` and `"signature-input";req;key=…`; the certificate trusted as for
 * draft-cavage responses, its keyid the Berlin Group's. Named steps, as for draft-cavage, so that
 * `verify --response` prints the checks egress applies.
 */

import { isRejection, reject } from "../../errors.js";
import { matchKeyId } from "../../signature/index.js";
import {
  checkFapiResponseSignature,
  FAPI_RESPONSE_TAG,
  type FapiResponseProfile,
  type ParsedSignature,
  parseSignatures,
  type Rfc9421Algorithm,
  selectSignature,
  signatureBase,
  verify,
  verifyContentDigest,
} from "../../signature/rfc9421/index.js";
import type { CertificateVerifier } from "../context.js";
import type { Step } from "../runner.js";
import { certificateIn, type ResponseCheck, requestIdStep, responseOutline } from "./response-outline.js";

/** The response's `fapi-2-response` signature, read by `signature-input`, in the check's dialect slot. */
export const responseSignatureOf = (c: ResponseCheck): ParsedSignature | undefined =>
  c.dialectState as ParsedSignature | undefined;

export interface Rfc9421ResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  /** Lower-case name of the header the bank sends its certificate in. */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly Rfc9421Algorithm[];
  /** How the answer must bind the request sent; default `full`. */
  readonly profile?: FapiResponseProfile;
  readonly now?: () => number;
}

/**
 * The checks of an RFC 9421 response, in order; `content-digest` needs the body, `request-id` and
 * `signature` the request (its `;req` components).
 */
export function rfc9421ResponseChecks(options: Rfc9421ResponseVerifierOptions): Step<ResponseCheck>[] {
  const now = options.now ?? Date.now;
  const rejected = <T>(result: T) => (isRejection(result) ? result : undefined);
  return responseOutline(options.certificates, {
    read: [
      {
        name: "signature-input",
        run: (c) => {
          const { headers } = c.response;
          const all = parseSignatures(headers["signature-input"], headers.signature);
          if (isRejection(all)) return all;
          const signature = selectSignature(all, { tag: FAPI_RESPONSE_TAG });
          if (isRejection(signature)) return signature;
          c.dialectState = signature;
          return undefined;
        },
      },
      {
        name: "coverage",
        run: (c) => {
          const { response } = c;
          if (response.status === undefined)
            return reject(
              "SIGNATURE_INVALID",
              "the response's status is needed to check an RFC 9421 signature",
            );
          const coverAlways = [options.certificateHeader];
          if (c.header("x-request-id") !== undefined) coverAlways.push("x-request-id");
          return rejected(
            checkFapiResponseSignature(
              responseSignatureOf(c)!,
              { status: response.status, headers: response.headers },
              {
                coverAlways,
                hasBody: response.body.length > 0,
                profile: options.profile ?? "full",
                ...(response.request.headers ? { requestHeaders: response.request.headers } : {}),
                now: now(),
                toleranceSeconds: options.dateToleranceMs / 1000,
              },
            ),
          );
        },
      },
    ],
    beforeCertificate: [
      requestIdStep,
      {
        name: "content-digest",
        run: (c) => {
          const { body, headers } = c.response;
          if (body.length === 0) return undefined;
          return rejected(verifyContentDigest(headers["content-digest"], Buffer.from(body)));
        },
      },
    ],
    certificate: (c) => certificateIn(c, options.certificateHeader),
    verify: [
      {
        name: "key-id",
        run: (c) => {
          const keyid = responseSignatureOf(c)!.params.keyid;
          if (keyid === undefined) return undefined;
          const named = matchKeyId(keyid, c.bank!.keyIdTarget);
          return named === true ? undefined : named;
        },
      },
      {
        name: "signature",
        run: (c) => {
          const { response } = c;
          const { request } = response;
          if (request.targetUri === undefined)
            return reject(
              "SIGNATURE_INVALID",
              "the request's URI is needed to check an RFC 9421 response signature (its ;req components)",
            );
          const signature = responseSignatureOf(c)!;
          const base = signatureBase(
            signature.components,
            signature.serializedParams,
            { status: response.status!, headers: response.headers },
            { method: request.method, targetUri: request.targetUri, headers: request.headers ?? {} },
          );
          if (isRejection(base)) return base;
          return rejected(verify(signature, base, c.bank!.publicKey, options.algorithms));
        },
      },
    ],
  });
}
