/**
 * Signing a request the way a TPP must (SPEC 5): from a private key and its certificate, the
 * headers `Date`, `Digest`, `X-Request-ID` (when absent), `Signature` and
 * `TPP-Signature-Certificate`.
 */

import { constants, createPublicKey, sign as cryptoSign, type KeyObject, randomUUID } from "node:crypto";
import { isRejection } from "../errors.js";
import {
  type AlgorithmName,
  canonicalAlgorithm,
  defaultAlgorithmFor,
  resolveAlgorithm,
} from "./algorithms.js";
import { formatHttpDate } from "./date.js";
import { computeDigestHeader, type DigestAlgorithm } from "./digest.js";
import { formatSignatureHeader } from "./header.js";
import { buildKeyId, type KeyIdSpelling, keyIdTargetFromDer } from "./keyid.js";
import { encodeIfNeeded } from "./rfc2047.js";
import { PROCESS_SIGNING_SLOTS } from "./signing-slots.js";
import { buildSigningString, ELIGIBLE_HEADERS, type HeaderMap } from "./signing-string.js";

export interface SignerOptions {
  readonly privateKey: KeyObject;
  /** The signing certificate (QSealC), DER. */
  readonly certificate: Uint8Array;
  /** Defaults to `rsa-sha256` for RSA keys, `ecdsa-sha256` for EC keys. */
  readonly algorithm?: Exclude<AlgorithmName, "hs2019">;
  /** Defaults to `SN=<serial>,CA=<issuer RFC 2253>` from the certificate, spelt per `keyIdSpelling`. */
  readonly keyId?: string;
  readonly keyIdSpelling?: KeyIdSpelling;
  /** Also sign `(request-target)` (method, path and query). Default true: SPEC 5.5 allows it and it binds the path. */
  readonly signRequestTarget?: boolean;
  /**
   * The headers to sign, in signing order; each is signed when the request carries it, and
   * `(request-target)` always when listed. Default: `(request-target)` (see signRequestTarget)
   * and then SPEC 5.5's eligible headers.
   */
  readonly headers?: readonly string[];
  /** The algorithm as written in the Signature header (`SHA256withRSA`, `hs2019`); default the algorithm's name. */
  readonly algorithmToken?: string;
  readonly digestAlgorithm?: DigestAlgorithm;
  /** Several values (`SHA-256=…,SHA-512=…`); overrides digestAlgorithm. */
  readonly digestAlgorithms?: readonly DigestAlgorithm[];
  /** `SHA-256` (RFC 3230, the default) or `sha-256`, as some banks' documentation writes it. */
  readonly digestToken?: "upper" | "lower";
  /** A request without a body: Digest of zero bytes (Berlin Group, the default) or no Digest at all. */
  readonly digestOnEmptyBody?: "hash" | "omit";
  /** The certificate header: its name and how the certificate is written in it. */
  readonly certificateHeader?: { readonly name?: string; readonly format?: CertificateHeaderFormat };
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
 * How the certificate is written in its header: base64 of the DER (Berlin Group, the default),
 * the PEM text on one line (BEGIN/END lines kept, no line breaks), or base64 of the PEM text.
 */
export type CertificateHeaderFormat = "base64-der" | "pem" | "base64-pem";

/**
 * The headers a signed request must carry, in the spelling the Berlin Group uses, plus each of the
 * caller's signed headers whose value is not plain ASCII, as its wire form: a string of one char
 * per byte, which Node and undici write out byte for byte. Send these over your own headers.
 * `Digest` and `TPP-Signature-Certificate` are there under the default options; signing rules may
 * leave Digest out for an empty body or name the certificate header otherwise.
 */
export interface SignedHeaders {
  Date: string;
  Digest: string;
  "X-Request-ID": string;
  Signature: string;
  "TPP-Signature-Certificate": string;
  [signedHeader: string]: string;
}

export const CERTIFICATE_HEADER_NAME = "TPP-Signature-Certificate";

/** The certificate header's value in one of the forms banks ask for. */
export function formatCertificateHeader(der: Uint8Array, format: CertificateHeaderFormat): string {
  const base64 = Buffer.from(der).toString("base64");
  if (format === "base64-der") return base64;
  if (format === "pem") return `-----BEGIN CERTIFICATE-----${base64}-----END CERTIFICATE-----`;
  const lines = base64.match(/.{1,64}/g) ?? [];
  const pem = `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
  return Buffer.from(pem).toString("base64");
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
  private readonly order: readonly string[];
  private readonly certificateHeaderName: string;
  private readonly certificateHeaderValue: string;
  private readonly digestAlgorithms: readonly DigestAlgorithm[];
  /** Hash and padding: the algorithm's, or what the written token means to a verifier (hs2019). */
  private readonly how: SignatureScheme;

  constructor(options: SignerOptions) {
    this.options = options;
    this.algorithm =
      options.algorithm ?? (defaultAlgorithmFor(options.privateKey) as Exclude<AlgorithmName, "hs2019">);
    this.keyId = options.keyId ?? buildKeyId(keyIdTargetFromDer(options.certificate), options.keyIdSpelling);
    this.certificateBase64 = Buffer.from(options.certificate).toString("base64");
    this.order = (
      options.headers ?? [
        ...((options.signRequestTarget ?? true) ? ["(request-target)"] : []),
        ...ELIGIBLE_HEADERS,
      ]
    ).map((name) => name.toLowerCase());
    this.certificateHeaderName = options.certificateHeader?.name ?? CERTIFICATE_HEADER_NAME;
    this.certificateHeaderValue = formatCertificateHeader(
      options.certificate,
      options.certificateHeader?.format ?? "base64-der",
    );
    this.digestAlgorithms = options.digestAlgorithms ?? [options.digestAlgorithm ?? "sha-256"];
    this.how = { hash: HASH_FOR[this.algorithm] };
    if (options.algorithmToken !== undefined && canonicalAlgorithm(options.algorithmToken) === "hs2019") {
      // A verifier derives hs2019's scheme from the key (RSASSA-PSS/SHA-512 for RSA): sign that, or it never verifies.
      const scheme = resolveAlgorithm("hs2019", createPublicKey(options.privateKey), ["hs2019"]);
      if (isRejection(scheme)) throw new Error(scheme.text);
      this.how = {
        hash: scheme.hash,
        ...(scheme.padding !== undefined
          ? { padding: scheme.padding, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
          : {}),
      };
    }
  }

  /** The Digest header for these bytes under the signer's rules; undefined when it is left out. */
  digestFor(body: Uint8Array | string): string | undefined {
    if (body.length === 0 && this.options.digestOnEmptyBody === "omit") return undefined;
    const value = this.digestAlgorithms.map((a) => computeDigestHeader(body, a)).join(",");
    // Only the algorithm token changes case: base64 is case-sensitive.
    return this.options.digestToken === "lower" ? value.replace(/SHA-(256|512)=/g, "sha-$1=") : value;
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
      if (NOT_ASCII.test(value) && this.order.includes(name.toLowerCase())) rewritten[name] = wire;
    }
    const now = (this.options.clock ?? Date.now)();
    lower.date ??= formatHttpDate(now);
    lower["x-request-id"] ??= randomUUID();
    const digest = this.digestFor(request.body ?? "");
    if (digest === undefined) delete lower.digest;
    else lower.digest = digest;

    if (/[^\x00-\xff]/.test(request.target)) {
      // Node's client refuses to send it, undici would drop each char's high byte: never what was signed.
      throw new Error(
        `target '${request.target.slice(0, 80)}' holds a character above U+00FF; percent-encode it (RFC 3986) and sign what you send`,
      );
    }
    const signed = this.order.filter((name) => name === "(request-target)" || lower[name] !== undefined);
    const signingString = buildSigningString(signed, {
      method: request.method,
      target: request.target,
      headers: lower as HeaderMap,
    });
    if (typeof signingString !== "string") throw new Error(signingString.text);

    // Every value is in wire form (one char per byte), so Latin-1 gives the bytes sent.
    const signature = await signAsync(
      this.how,
      Buffer.from(signingString, "latin1"),
      this.options.privateKey,
    );
    const header = formatSignatureHeader({
      keyId: this.keyId,
      algorithm: this.options.algorithmToken ?? this.algorithm,
      headers: signed,
      signature: signature.toString("base64"),
    });
    const out: Record<string, string> = {
      ...rewritten,
      Date: lower.date,
      ...(lower.digest !== undefined ? { Digest: lower.digest } : {}),
      "X-Request-ID": lower["x-request-id"],
      Signature: encodeIfNeeded(header),
    };
    out[this.certificateHeaderName] = this.certificateHeaderValue;
    return out as SignedHeaders;
  }
}

interface SignatureScheme {
  readonly hash: string | null;
  readonly padding?: number;
  readonly saltLength?: number;
}

function signAsync(how: SignatureScheme, data: Buffer, key: KeyObject): Promise<Buffer> {
  const keyWithScheme =
    how.padding !== undefined ? { key, padding: how.padding, saltLength: how.saltLength ?? 0 } : key;
  return PROCESS_SIGNING_SLOTS.run(
    () =>
      new Promise<Buffer>((resolve, reject) => {
        cryptoSign(how.hash, data, keyWithScheme, (error, signature) =>
          error ? reject(error) : resolve(signature),
        );
      }),
  );
}
