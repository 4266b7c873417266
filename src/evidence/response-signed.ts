/**
 * What a bank signed in its answer, rebuilt from the answer as received (and, for RFC 9421's `;req`
 * components, the request as sent), for the response record and its dispute bundle: the exact bytes
 * (draft-cavage's signing string, RFC 9421's signature base, the JWS signing input), the signature
 * and the algorithm, so that openssl alone checks them. The same library functions the response
 * checks use (signature/); nothing is verified here: the record's verdict says whether it held.
 * Pure.
 */

import { createHash, type KeyObject } from "node:crypto";
import { isRejection } from "../errors.js";
import { buildSigningString, parseSignatureHeader } from "../signature/index.js";
import {
  buildHttpHeadersPayload,
  type HttpHeadersPayloadStyle,
  JWS_SIGNATURE_HEADER,
  readDetachedJws,
  signingInput,
} from "../signature/jws/index.js";
import {
  algorithmForKey,
  FAPI_RESPONSE_TAG,
  parseSignatures,
  type RequestMessage,
  selectSignature,
  signatureBase,
} from "../signature/rfc9421/index.js";
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

function rebuilt(
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  how: ResponseSigning,
): { bytes: Buffer; signature: Buffer; signedWith: string } | undefined {
  switch (how.dialect) {
    case "cavage": {
      const params = parseSignatureHeader(headers.signature);
      if (isRejection(params)) return undefined;
      // A response has no request target: (request-target) is not among its headers.
      const signing = buildSigningString(params.headers, { method: "", target: "", headers });
      if (isRejection(signing)) return undefined;
      // Header values are one char per byte (latin1), as signed.
      return {
        bytes: Buffer.from(signing, "latin1"),
        signature: params.signatureBytes,
        signedWith: params.algorithm,
      };
    }
    case "rfc9421": {
      if (!how.request) return undefined;
      const all = parseSignatures(headers["signature-input"], headers.signature);
      if (isRejection(all)) return undefined;
      const signature = selectSignature(all, { tag: FAPI_RESPONSE_TAG });
      if (isRejection(signature)) return undefined;
      const base = signatureBase(
        signature.components,
        signature.serializedParams,
        { status: how.status, headers },
        how.request,
      );
      if (isRejection(base)) return undefined;
      return {
        bytes: Buffer.from(base, "latin1"),
        signature: signature.signature,
        signedWith: `rfc9421:${signature.params.alg ?? (how.key && algorithmForKey(how.key)) ?? ""}`,
      };
    }
    case "jades":
    case "uk-ob": {
      const jws = readDetachedJws(headers[JWS_SIGNATURE_HEADER], JWS_SIGNATURE_HEADER);
      if (isRejection(jws)) return undefined;
      const alg = typeof jws.header.alg === "string" ? jws.header.alg : "";
      let payload: Buffer;
      if (how.dialect === "jades") {
        // JAdES signs the lines of the headers its sigD.pars lists (b64: false).
        const pars = (jws.header.sigD as { pars?: unknown } | undefined)?.pars;
        if (!Array.isArray(pars) || !pars.every((p) => typeof p === "string")) return undefined;
        const built = buildHttpHeadersPayload(pars, { headers }, how.payloadStyle);
        if (isRejection(built)) return undefined;
        payload = built;
      } else {
        // UK OB signs the body: base64url, or as it is with b64: false.
        payload = jws.header.b64 === false ? body : Buffer.from(body.toString("base64url"), "latin1");
      }
      return {
        bytes: signingInput(jws.protectedB64, payload),
        signature: jws.signature,
        signedWith: `${how.dialect}:${alg}`,
      };
    }
    default:
      return undefined;
  }
}
