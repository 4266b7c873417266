/**
 * Signing a request the way a TPP must (SPEC 5): from a private key and its certificate, the
 * headers `Date`, `Digest`, `X-Request-ID` (when absent), `Signature` and
 * `TPP-Signature-Certificate`.
 */

import { sign as cryptoSign, type KeyObject, randomUUID } from "node:crypto";
import { type AlgorithmName, defaultAlgorithmFor } from "./algorithms.js";
import { formatHttpDate } from "./date.js";
import { computeDigestHeader, type DigestAlgorithm } from "./digest.js";
import { formatSignatureHeader } from "./header.js";
import { buildKeyId, keyIdTargetFromDer } from "./keyid.js";
import { encodeIfNeeded } from "./rfc2047.js";
import { buildSigningString, ELIGIBLE_HEADERS, type HeaderMap } from "./signing-string.js";

export interface SignerOptions {
  readonly privateKey: KeyObject;
  /** The signing certificate (QSealC), DER. */
  readonly certificate: Uint8Array;
  /** Defaults to `rsa-sha256` for RSA keys, `ecdsa-sha256` for EC keys. */
  readonly algorithm?: Exclude<AlgorithmName, "hs2019">;
  /** Defaults to `SN=<serial>,CA=<issuer RFC 2253>` from the certificate. */
  readonly keyId?: string;
  /** Also sign `(request-target)` (method, path and query). Default true: SPEC 5.5 allows it and it binds the path. */
  readonly signRequestTarget?: boolean;
  readonly digestAlgorithm?: DigestAlgorithm;
  readonly clock?: () => number;
  /**
   * How a header value given as a JS string becomes bytes on the wire: `utf-8` (the default) or
   * `latin1` (one byte per char, which must be ≤ U+00FF). The signature covers those bytes.
   */
  readonly headerEncoding?: "utf-8" | "latin1";
}

export interface RequestToSign {
  readonly method: string;
  /**
   * Path and query exactly as they will be sent: each char is one byte on the wire (Node and undici
   * write the request line as Latin-1), so percent-encode anything beyond ASCII.
   */
  readonly target: string;
  /** Headers the request already carries; any name case. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly body?: Uint8Array | string;
}

/**
 * The headers a signed request must carry, in the spelling the Berlin Group uses, plus each of the
 * caller's signed headers whose value is not plain ASCII, as its wire form: a string of one char
 * per byte, which Node and undici write out byte for byte. Send these over your own headers.
 */
export interface SignedHeaders {
  Date: string;
  Digest: string;
  "X-Request-ID": string;
  Signature: string;
  "TPP-Signature-Certificate": string;
  [signedHeader: string]: string;
}

const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * A header value as the bytes it is sent as, one char per byte (how Node hands them to a
 * verifier, and how it writes a string of chars ≤ U+00FF).
 */
export function wireValue(value: string, encoding: "utf-8" | "latin1" = "utf-8"): string {
  if (!NOT_ASCII.test(value)) return value;
  if (encoding === "latin1") {
    if (/[^\x00-\xff]/.test(value)) {
      throw new Error(`header value '${value.slice(0, 40)}' has characters beyond Latin-1; sign it as utf-8`);
    }
    return value;
  }
  return Buffer.from(value, "utf8").toString("latin1");
}

const HASH_FOR: Record<Exclude<AlgorithmName, "hs2019">, "sha256" | "sha512"> = {
  "rsa-sha256": "sha256",
  "rsa-sha512": "sha512",
  "ecdsa-sha256": "sha256",
};

/**
 * Prepares everything that does not change per request (keyId, the certificate in base64,
 * the algorithm) once; `sign` then costs one digest and one signature. The RSA signature runs
 * on libuv's thread pool so that it does not stall the event loop.
 */
export class RequestSigner {
  readonly keyId: string;
  readonly certificateBase64: string;
  readonly algorithm: Exclude<AlgorithmName, "hs2019">;
  private readonly options: SignerOptions;

  constructor(options: SignerOptions) {
    this.options = options;
    this.algorithm =
      options.algorithm ?? (defaultAlgorithmFor(options.privateKey) as Exclude<AlgorithmName, "hs2019">);
    this.keyId = options.keyId ?? buildKeyId(keyIdTargetFromDer(options.certificate));
    this.certificateBase64 = Buffer.from(options.certificate).toString("base64");
  }

  /** The headers to add to the request; existing X-Request-ID and Date are kept. */
  async sign(request: RequestToSign): Promise<SignedHeaders> {
    const lower: Record<string, string> = {};
    // The caller's signed headers that are not plain ASCII, in wire form (see SignedHeaders).
    const rewritten: Record<string, string> = {};
    const encoding = this.options.headerEncoding ?? "utf-8";
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      if (value === undefined) continue;
      const wire = wireValue(value, encoding);
      lower[name.toLowerCase()] = wire;
      if (NOT_ASCII.test(value) && ELIGIBLE_HEADERS.includes(name.toLowerCase())) rewritten[name] = wire;
    }
    const now = (this.options.clock ?? Date.now)();
    lower.date ??= formatHttpDate(now);
    lower["x-request-id"] ??= randomUUID();
    lower.digest = computeDigestHeader(request.body ?? "", this.options.digestAlgorithm);

    if (/[^\x00-\xff]/.test(request.target)) {
      // Node's client refuses to send it, undici would drop each char's high byte: never what was signed.
      throw new Error(
        `target '${request.target.slice(0, 80)}' holds a character above U+00FF; percent-encode it (RFC 3986) and sign what you send`,
      );
    }
    const signed = ELIGIBLE_HEADERS.filter((name) => lower[name] !== undefined);
    if (this.options.signRequestTarget ?? true) signed.unshift("(request-target)");
    const signingString = buildSigningString(signed, {
      method: request.method,
      target: request.target,
      headers: lower as HeaderMap,
    });
    if (typeof signingString !== "string") throw new Error(signingString.text);

    // Every value is in wire form (one char per byte), so Latin-1 gives the bytes sent.
    const signature = await signAsync(
      HASH_FOR[this.algorithm],
      Buffer.from(signingString, "latin1"),
      this.options.privateKey,
    );
    const header = formatSignatureHeader({
      keyId: this.keyId,
      algorithm: this.algorithm,
      headers: signed,
      signature: signature.toString("base64"),
    });
    return {
      ...rewritten,
      Date: lower.date,
      Digest: lower.digest,
      "X-Request-ID": lower["x-request-id"],
      Signature: encodeIfNeeded(header),
      "TPP-Signature-Certificate": this.certificateBase64,
    };
  }
}

function signAsync(hash: string, data: Buffer, key: KeyObject): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    cryptoSign(hash, data, key, (error, signature) => (error ? reject(error) : resolve(signature)));
  });
}
