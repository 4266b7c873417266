/**
 * draft-cavage-12 (Berlin Group NextGenPSD2 1.3, STET): a `Signature` header over the headers it
 * lists, the QSealC in `TPP-Signature-Certificate`, `Date` (or, where configured, a signed
 * `(created)`) for the time, `Digest` for the body (the chain's shared `digest` step). The
 * certificate, role, replay and limits are the chain's shared steps.
 */

import { isRejection, reject } from "../../errors.js";
import {
  canonicalAlgorithm,
  checkCoverage,
  checkDate,
  headerValue,
  matchSignatureKeyId,
  parseSignatureHeader,
  type SignatureParams,
  verifySignatureOver,
} from "../../signature/index.js";
import type { CheckContext } from "../context.js";
import type { StepResult } from "../runner.js";
import { DIGEST_STEP } from "./digest-header.js";
import type { DialectUnit } from "./unit.js";

const CAVAGE = ["cavage"] as const;

export interface CavageOptions {
  /** draft-cavage-12: a signed `(created)` may stand for the Date header. */
  readonly createdForDate: boolean;
}

const signatureOf = (c: CheckContext): SignatureParams => c.signature!;

export const cavageDialect: DialectUnit<CavageOptions> = {
  name: "cavage",
  authenticates: "head",
  howToSign: "a Signature header (draft-cavage, SPEC 5.2) with TPP-Signature-Certificate",
  signatureStep: "signature",
  defaults: { createdForDate: false },
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
            c.signature = signature;
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
