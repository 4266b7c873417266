/**
 * draft-cavage-12 (Berlin Group NextGenPSD2 1.3, STET): a `Signature` header over the headers it
 * lists, the QSealC in `TPP-Signature-Certificate`, `Date` (or, where configured, a signed
 * `(created)`) for the time, `Digest` for the body (the chain's shared `digest` step). The
 * certificate, role, replay and limits are the chain's shared steps.
 */

import type { IncomingHttpHeaders } from "node:http";
import { z } from "zod";
import { isRejection, reject } from "../../errors.js";
import {
  type AlgorithmName,
  buildSigningString,
  canonicalAlgorithm,
  checkCoverage,
  checkDate,
  computeDigestHeader,
  headerValue,
  type KeyIdSpelling,
  matchSignatureKeyId,
  parseDigestHeader,
  parseSignatureHeader,
  RequestSigner,
  type SignatureParams,
  type SignerOptions,
  verifySignatureOver,
} from "../../signature/index.js";
import type { CheckContext } from "../context.js";
import { certificateHeaderMissing, digestHeaderMissing } from "../required-headers.js";
import type { StepResult } from "../runner.js";
import { cavageResponseChecks } from "./cavage-response.js";
import { DIGEST_STEP } from "./digest-header.js";
import {
  type DialectExplanation,
  type DialectUnit,
  readable,
  type SignedResponseInput,
  type SignedResponseParts,
} from "./unit.js";

const CAVAGE = ["cavage"] as const;

export interface CavageOptions {
  /** draft-cavage-12: a signed `(created)` may stand for the Date header. */
  readonly createdForDate: boolean;
}

/** draft-cavage-12 as signers send it today (`hs2019` is `verification.algorithms`'): `verification.dialects.cavage`. */
const cavageConfig = z
  .object({
    /**
     * A signed `(created)` (with its `created` parameter) may stand for the Date header. `created`
     * and `expires`, when sent, are judged against the clock whatever this says.
     */
    createdForDate: z.boolean().default(false),
  })
  .strict();

/** A bank profile's draft-cavage signing rules (config `banks[].signing`: every key applies). */
export interface CavageSigningRules {
  readonly algorithm?: SignerOptions["algorithm"] | undefined;
  readonly algorithmToken?: string | undefined;
  readonly keyId: KeyIdSpelling & { readonly value?: string | undefined };
  readonly headers: readonly string[];
  readonly digest: {
    readonly algorithms: SignerOptions["digestAlgorithms"];
    readonly token: SignerOptions["digestToken"];
    readonly emptyBody: SignerOptions["digestOnEmptyBody"];
  };
  readonly certificateHeader: SignerOptions["certificateHeader"];
}

/** The parsed Signature header, in the context's dialect slot. */
const signatureOf = (c: CheckContext): SignatureParams => c.dialectState as SignatureParams;

export const cavageDialect: DialectUnit<CavageOptions, CavageSigningRules> = {
  name: "cavage",
  title: "draft-cavage (Signature, Berlin Group NextGenPSD2 1.3)",
  authenticates: "head",
  howToSign: "a Signature header (draft-cavage, SPEC 5.2) with TPP-Signature-Certificate",
  signatureStep: "signature",
  defaults: cavageConfig.parse({}),
  config: { key: "cavage", verification: cavageConfig },
  // RFC 9421 also sends a Signature header, always beside Signature-Input.
  detect: (headers) => headers.signature !== undefined && headers["signature-input"] === undefined,
  requiredHeaders: (headers, withBody) =>
    certificateHeaderMissing(headers) ?? (withBody ? digestHeaderMissing(headers) : undefined),
  signatureBytes: (c) => (c.dialectState as SignatureParams | undefined)?.signatureBytes ?? Buffer.alloc(0),
  explain: (c, body) => ({
    certificateHeader: "TPP-Signature-Certificate",
    certificate: headerValue(c.headers, "tpp-signature-certificate"),
    ...describeCavage({ method: c.method, target: c.target, headers: c.headers, body }),
  }),
  responseSigned: cavageResponseSigned,
  responseChecks: ({ responses, ...common }) =>
    cavageResponseChecks({ ...common, algorithms: responses["algorithms"] as readonly AlgorithmName[] }),
  responseExplaining: {
    needsBody: ["digest"],
    bodyCheckedAgainst: "Digest",
    withoutRequest: (headers) => {
      const signed = parseSignatureHeader(headerValue(headers, "signature"));
      return !isRejection(signed) && signed.headers.includes("(request-target)")
        ? [
            "the signature covers (request-target), which is the request's: without --request it is rebuilt from an empty target and fails",
          ]
        : [];
    },
    explain: (check, { method, target, body, certificateHeader }) => ({
      certificateHeader,
      certificate: check.header(certificateHeader.toLowerCase()),
      ...describeCavage({ method, target, headers: check.response.headers as IncomingHttpHeaders, body }),
    }),
  },
  // An answer (SPEC 5.10): its Digest, Date and X-Request-ID as `responseSigning.headers` lists them.
  responseSigner: ({ privateKey, certificateDer, certificateHeader, rules }) => {
    const signer = new RequestSigner({
      privateKey,
      certificate: certificateDer,
      headers: rules["headers"] as readonly string[],
      certificateHeader: { name: certificateHeader },
      // Header values from undici are one char per byte: keep those bytes.
      headerEncoding: "latin1",
    });
    return (body, headers) => signer.sign({ method: "", target: "", headers, body });
  },
  signer: ({ privateKey, certificateDer, rules, headerEncoding }) =>
    new RequestSigner({
      privateKey,
      certificate: certificateDer,
      ...(rules.algorithm ? { algorithm: rules.algorithm } : {}),
      ...(rules.algorithmToken ? { algorithmToken: rules.algorithmToken } : {}),
      ...(rules.keyId.value ? { keyId: rules.keyId.value } : {}),
      keyIdSpelling: rules.keyId,
      headers: rules.headers,
      digestAlgorithms: rules.digest.algorithms,
      digestToken: rules.digest.token,
      digestOnEmptyBody: rules.digest.emptyBody,
      certificateHeader: rules.certificateHeader,
      headerEncoding,
    }),
  steps(shared, own) {
    const dateOptions = { toleranceMs: shared.dateToleranceMs };
    return {
      time: [
        {
          name: "date",
          dialects: CAVAGE,
          run: (c) => {
            // A signed (created) may stand for Date, where configured (judged by signature-times).
            if (c.headers.date === undefined && own.createdForDate && signsCreated(c)) return undefined;
            const date = checkDate(c.headers.date, shared.now(), dateOptions);
            if (isRejection(date)) return date;
            c.acceptUntil(date + shared.dateToleranceMs);
            return undefined;
          },
        },
      ],
      // The body through the Digest header, which the signature covers.
      digest: [DIGEST_STEP],
      parse: [
        {
          name: "signature-header",
          dialects: CAVAGE,
          run: (c) => {
            const signature = parseSignatureHeader(headerValue(c.headers, "signature"));
            if (isRejection(signature)) return signature;
            c.dialectState = signature;
            c.signedHeaders = signature.headers;
            return undefined;
          },
        },
        {
          // draft-cavage-12's `created` and `expires` parameters, when sent, against the clock (as Date).
          name: "signature-times",
          dialects: CAVAGE,
          run: (c) => {
            const signature = signatureOf(c);
            // The date step let a request without Date on only for this: a signed, present `created`.
            if (
              c.headers.date === undefined &&
              !(signature.headers.includes("(created)") && signature.created !== undefined)
            ) {
              return reject(
                "FORMAT_ERROR",
                "Date header is missing; send the current time as an RFC 7231 IMF-fixdate, or sign (created) with a created parameter",
              );
            }
            const times = checkSignatureTimes(signature, shared.now(), shared.dateToleranceMs);
            if (times) return times;
            const { created, expires } = signature;
            if (created !== undefined) c.acceptUntil(created * 1000 + shared.dateToleranceMs);
            if (expires !== undefined) c.acceptUntil(expires * 1000 + shared.dateToleranceMs);
            return undefined;
          },
        },
      ],
      keyId:
        shared.keyIdPolicy === "strict"
          ? [
              {
                name: "key-id",
                dialects: CAVAGE,
                run: (c) => {
                  const keyId = matchSignatureKeyId(signatureOf(c), c.certificate!.keyIdTarget, {
                    allowDecimalSerial: shared.allowDecimalSerial,
                  });
                  return isRejection(keyId) ? keyId : undefined;
                },
              },
            ]
          : [],
      verify: [
        {
          // Every eligible header present is signed (SPEC 5.5).
          name: "coverage",
          dialects: CAVAGE,
          run: (c) => {
            const coverage = checkCoverage(signatureOf(c).headers, c.headers);
            return isRejection(coverage) ? coverage : undefined;
          },
        },
        {
          name: "signature",
          dialects: CAVAGE,
          run: (c) => {
            const signature = signatureOf(c);
            const bytes = verifySignatureOver(c, signature, c.certificate!.publicKey, shared.algorithms);
            if (isRejection(bytes)) return bytes;
            c.signingString = bytes;
            // The algorithm's identity, not the spelling sent: the name is not signed.
            c.signedWith = canonicalAlgorithm(signature.algorithm) ?? signature.algorithm;
            return undefined;
          },
        },
      ],
      // Date (or created) up to the tolerance ahead, and as long behind.
      longestAcceptanceMs: 2 * shared.dateToleranceMs,
    };
  },
};

/** Whether the Signature header lists `(created)` (read before it is parsed: only without Date). */
function signsCreated(c: CheckContext): boolean {
  return headerValue(c.headers, "signature")?.includes("(created)") ?? false;
}

/**
 * draft-cavage-12: `created` within the Date tolerance of the clock, `expires` not passed and not
 * before `created`. A request without Date must have signed `(created)` (the date step let it on).
 */
function checkSignatureTimes(signature: SignatureParams, now: number, toleranceMs: number): StepResult {
  const { created, expires } = signature;
  if (created !== undefined) {
    const offset = created * 1000 - now;
    if (Math.abs(offset) > toleranceMs) {
      return reject(
        "TIMESTAMP_INVALID",
        `Signature 'created' ${created} is ${Math.round(Math.abs(offset) / 1000)} s ${offset < 0 ? "behind" : "ahead of"} the gateway clock (${Math.floor(now / 1000)}); at most ${Math.round(toleranceMs / 1000)} s either way is accepted`,
      );
    }
  }
  if (expires !== undefined) {
    if (created !== undefined && expires < created) {
      return reject("TIMESTAMP_INVALID", `Signature 'expires' ${expires} is before its 'created' ${created}`);
    }
    if (expires * 1000 < now - toleranceMs) {
      return reject(
        "TIMESTAMP_INVALID",
        `Signature 'expires' ${expires} has passed (the gateway clock is ${Math.floor(now / 1000)}); sign the request afresh`,
      );
    }
  }
  return undefined;
}

/** The signed message: for a response, method and target are those of the request it answers. */
export interface SignedParts {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | undefined;
}

/** A draft-cavage signature's keyId, headers and signing string rebuilt, and the body's digest. */
export function describeCavage(
  parts: SignedParts,
): Pick<DialectExplanation, "keyId" | "signedHeaders" | "signingString" | "digest"> {
  const out: { keyId?: string; signedHeaders?: string[]; signingString?: string; digest?: string } = {};
  const digestHeader = headerValue(parts.headers, "digest");
  if (
    digestHeader !== undefined &&
    parts.body !== undefined &&
    !isRejection(parseDigestHeader(digestHeader))
  ) {
    out.digest = `${computeDigestHeader(parts.body)} (${parts.body.length} bytes)`;
  }
  const signature = parseSignatureHeader(headerValue(parts.headers, "signature"));
  if (isRejection(signature)) return out;
  out.keyId = signature.keyId;
  out.signedHeaders = [...signature.headers];
  const signingString = buildSigningString(signature.headers, parts, signature);
  if (!isRejection(signingString)) out.signingString = readable(signingString);
  return out;
}

/** A signed answer's signing string: a response has no request target, so no (request-target). */
function cavageResponseSigned({ headers }: SignedResponseInput): SignedResponseParts | undefined {
  const params = parseSignatureHeader(headers.signature);
  if (isRejection(params)) return undefined;
  const signing = buildSigningString(params.headers, { method: "", target: "", headers });
  if (isRejection(signing)) return undefined;
  // Header values are one char per byte (latin1), as signed.
  return {
    bytes: Buffer.from(signing, "latin1"),
    signature: params.signatureBytes,
    signedWith: params.algorithm,
  };
}
