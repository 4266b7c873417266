/**
 * A bank's response signed per draft-cavage as the Berlin Group profiles it (SPEC 5.10): Digest over
 * the exact body bytes, keyId, coverage, the signature over the signing string, Date, and the
 * X-Request-ID tying it to our request, in the response outline (response-outline.ts).
 */

import { isRejection, reject } from "../../errors.js";
import {
  type AlgorithmName,
  checkCoverage,
  checkDate,
  matchSignatureKeyId,
  parseSignatureHeader,
  type SignatureParams,
  verifyDigest,
  verifySignatureOver,
} from "../../signature/index.js";
import type { CertificateVerifier } from "../context.js";
import type { Step } from "../runner.js";
import { certificateIn, type ResponseCheck, responseOutline } from "./response-outline.js";

export interface CavageResponseOptions {
  readonly certificates: CertificateVerifier;
  /** Lower-case name of the header the bank sends its certificate in. */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly AlgorithmName[];
  readonly now?: () => number;
}

/** The response's Signature header, read by `signature-parameters`, in the check's dialect slot. */
const paramsOf = (c: ResponseCheck): SignatureParams => c.dialectState as SignatureParams;

/** The headers a response signature must cover when the response carries them. */
const RESPONSE_SIGNED_HEADERS = ["digest", "x-request-id", "date"];

/** The checks of a signed response, in order; each step's name is what `verify --response` prints. */
export function cavageResponseChecks(options: CavageResponseOptions): Step<ResponseCheck>[] {
  const now = options.now ?? Date.now;
  return responseOutline(options.certificates, {
    read: [
      {
        name: "signature-header",
        run: (c) =>
          c.header("signature") === undefined
            ? reject("SIGNATURE_MISSING", "the response carries no Signature header")
            : undefined,
      },
    ],
    certificate: (c) => certificateIn(c, options.certificateHeader, " with the bank's signing certificate"),
    verify: [
      {
        name: "digest",
        run: (c) => {
          const digest = c.header("digest");
          if (digest === undefined)
            return reject(
              "SIGNATURE_INVALID",
              "the response carries no Digest header, so its body is not signed",
            );
          const verified = verifyDigest(digest, c.response.body);
          return isRejection(verified) ? verified : undefined;
        },
      },
      {
        name: "signature-parameters",
        run: (c) => {
          const params = parseSignatureHeader(c.header("signature"));
          if (isRejection(params)) return params;
          c.dialectState = params;
          return undefined;
        },
      },
      {
        name: "key-id",
        run: (c) => {
          const matched = matchSignatureKeyId(paramsOf(c), c.bank!.keyIdTarget);
          return matched === true ? undefined : matched;
        },
      },
      {
        name: "coverage",
        run: (c) => {
          const coverage = checkCoverage(paramsOf(c).headers, c.response.headers, RESPONSE_SIGNED_HEADERS);
          if (coverage !== true) return coverage;
          return paramsOf(c).headers.includes("digest")
            ? undefined
            : reject("SIGNATURE_INVALID", "the response's signature does not cover its Digest header");
        },
      },
      {
        name: "signature",
        run: (c) => {
          const { request, headers } = c.response;
          const verified = verifySignatureOver(
            { method: request.method, target: request.target, headers },
            paramsOf(c),
            c.bank!.publicKey,
            options.algorithms,
          );
          return isRejection(verified) ? verified : undefined;
        },
      },
      {
        name: "date",
        run: (c) => {
          const date = c.header("date");
          if (date === undefined) return undefined;
          const checked = checkDate(date, now(), { toleranceMs: options.dateToleranceMs });
          return isRejection(checked) ? checked : undefined;
        },
      },
      {
        name: "request-id",
        run: (c) => {
          const requestId = c.header("x-request-id");
          const ours = c.response.request.requestId;
          return requestId === undefined || requestId === ours
            ? undefined
            : reject(
                "SIGNATURE_INVALID",
                `the response's X-Request-ID ${requestId.slice(0, 80)} is not the request's ${ours}: it answers another request`,
              );
        },
      },
    ],
  });
}
