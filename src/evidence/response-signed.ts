/**
 * What a bank signed in its answer, rebuilt from the answer as received (and, for RFC 9421's `;req`
 * components, the request as sent), for the response record and its dispute bundle: the exact bytes
 * (draft-cavage's signing string, RFC 9421's signature base, the JWS signing input), the signature
 * and the algorithm, so that openssl alone checks them. Each dialect's unit rebuilds its own
 * (`responseSigned`, with the signature/ functions its checks use); nothing is verified here: the
 * record's verdict says whether it held. Pure.
 */

import { createHash, type KeyObject } from "node:crypto";
import { dialectUnit } from "../checks/index.js";
import type { HttpHeadersPayloadStyle } from "../signature/jws/index.js";
import type { RequestMessage } from "../signature/rfc9421/index.js";
import { SIGNED_BYTES_INLINE } from "./record.js";

/** What the answer's dialect needs beyond its headers and body. */
export interface ResponseSigning {
  readonly dialect: string;
  readonly status: number;
  /** RFC 9421: the request as sent (its `;req` components). */
  readonly request?: RequestMessage;
  /** JAdES: how the profile builds the sigD.pars payload (default `obp-api`). */
  readonly payloadStyle?: HttpHeadersPayloadStyle;
  /** The signer's public key: RFC 9421's algorithm when the signature names none (as its verifier takes it). */
  readonly key?: KeyObject;
}

export interface SignedParts {
  /** The signed bytes, base64, when at most SIGNED_BYTES_INLINE … */
  readonly signedBytes?: string;
  /** … otherwise their SHA-256, lower-case hex. */
  readonly signedBytesSha256?: string;
  /** The signature as sent, decoded, base64 (ECDSA as r||s, as JWS and RFC 9421 send it). */
  readonly signature: string;
  /** The dialect and algorithm, as request records name them (`rfc9421:rsa-pss-sha512`, `jades:PS256`). */
  readonly signedWith: string;
}

/** The signed parts of an answer, or undefined when its signature cannot be read (an invalid answer). */
export function responseSigned(
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  how: ResponseSigning,
): SignedParts | undefined {
  const made = rebuilt(headers, body, how);
  if (!made) return undefined;
  const { bytes, signature, signedWith } = made;
  return {
    ...(bytes.length <= SIGNED_BYTES_INLINE
      ? { signedBytes: bytes.toString("base64") }
      : { signedBytesSha256: createHash("sha256").update(bytes).digest("hex") }),
    signature: signature.toString("base64"),
    signedWith,
  };
}

/** What the answer's dialect's unit rebuilds of it (`DialectUnit.responseSigned`). */
function rebuilt(
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  how: ResponseSigning,
): { bytes: Buffer; signature: Buffer; signedWith: string } | undefined {
  return dialectUnit(how.dialect)?.responseSigned?.({
    headers,
    body,
    status: how.status,
    request: how.request,
    payloadStyle: how.payloadStyle,
    key: how.key,
  });
}
