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
}

export interface RequestToSign {
  readonly method: string;
  /** Path and query exactly as they will be sent. */
  readonly target: string;
  /** Headers the request already carries; any name case. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly body?: Uint8Array | string;
}

/** The headers a signed request must carry, in the spelling the Berlin Group uses. */
export interface SignedHeaders {
  Date: string;
  Digest: string;
  "X-Request-ID": string;
  Signature: string;
  "TPP-Signature-Certificate": string;
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
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      if (value !== undefined) lower[name.toLowerCase()] = value;
    }
    const now = (this.options.clock ?? Date.now)();
    lower.date ??= formatHttpDate(now);
    lower["x-request-id"] ??= randomUUID();
    lower.digest = computeDigestHeader(request.body ?? "", this.options.digestAlgorithm);

    const signed = ELIGIBLE_HEADERS.filter((name) => lower[name] !== undefined);
    if (this.options.signRequestTarget ?? true) signed.unshift("(request-target)");
    const signingString = buildSigningString(signed, {
      method: request.method,
      target: request.target,
      headers: lower as HeaderMap,
    });
    if (typeof signingString !== "string") throw new Error(signingString.text);

    const signature = await signAsync(
      HASH_FOR[this.algorithm],
      Buffer.from(signingString, "utf8"),
      this.options.privateKey,
    );
    const header = formatSignatureHeader({
      keyId: this.keyId,
      algorithm: this.algorithm,
      headers: signed,
      signature: signature.toString("base64"),
    });
    return {
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
