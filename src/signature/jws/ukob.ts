/**
 * UK Open Banking message signing: `x-jws-signature`, a detached JWS over the body (RFC 7515
 * appendix F) whose protected header carries `kid`, the critical claims
 * `http://openbanking.org.uk/iat`, `…/iss` and `…/tan`, and optionally `typ: JOSE`,
 * `cty: application/json`. From Read/Write API 3.1.4 on there is no `b64` (the payload is
 * base64url-encoded in the signing input); 3.1.3 and earlier sent `b64: false` with `b64` in crit
 * (the raw body), accepted here only when configured.
 *
 * Whether `iss` names the certificate's organisation and `tan` a trust anchor we accept is the
 * caller's: the header is returned parsed, and checkUkObClaims compares it with expected values.
 */

import { createVerify, type KeyObject, type Verify } from "node:crypto";
import { isRejection, type Rejection, reject } from "../../errors.js";
import {
  algorithmFitsKey,
  type CertificateChain,
  checkCrit,
  type DetachedJws,
  encodeHeader,
  type JwsAlgorithm,
  keyOfCertificate,
  keyOptions,
  readJwsAndAlgorithm,
  readX5c,
  signatureMismatch,
  signingInput,
  signJwsInput,
  signJwsInputAsync,
  verifyJwsSignature,
} from "./compact.js";
import { checkTime, DEFAULT_SIGT_TOLERANCE_MS, JWS_SIGNATURE_HEADER } from "./jades.js";

export const UKOB_IAT = "http://openbanking.org.uk/iat";
export const UKOB_ISS = "http://openbanking.org.uk/iss";
export const UKOB_TAN = "http://openbanking.org.uk/tan";
const UKOB_CRIT = [UKOB_IAT, UKOB_ISS, UKOB_TAN] as const;
const UKOB_CRIT_B64 = ["b64", ...UKOB_CRIT] as const;
/** Bounds for the string claims: an organisation id path or a domain name is far shorter. */
const MAX_CLAIM_LENGTH = 256;

export interface UkObHeader {
  readonly alg: JwsAlgorithm;
  readonly kid: string;
  /** Seconds since the epoch. */
  readonly iat: number;
  readonly iss: string;
  readonly tan: string;
  /** false only for a 3.1.3-style signature, when allowed. */
  readonly b64: boolean;
  readonly x5c?: CertificateChain;
  /** `x5t#S256` when sent without x5c: the thumbprint of the certificate `kid` should resolve to. */
  readonly x5tS256?: string;
}

export interface UkObReadOptions {
  readonly now: number;
  /** Default PS256 only, as the UK specification says. */
  readonly algorithms?: readonly JwsAlgorithm[];
  /** iat's allowed deviation either way; default 60 s. */
  readonly toleranceMs?: number;
  /** Accept `b64: false` (Read/Write 3.1.3 and earlier). Default false. */
  readonly allowB64False?: boolean;
}

export interface UkObVerifyOptions extends UkObReadOptions {
  /** The key `kid` resolves to; required unless the header carries x5c. */
  readonly publicKey?: KeyObject;
}

export const DEFAULT_UKOB_ALGORITHMS: readonly JwsAlgorithm[] = ["PS256"];

function claimString(header: DetachedJws["header"], name: string): string | Rejection {
  const value = header[name];
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_CLAIM_LENGTH) {
    return reject("FORMAT_ERROR", `'${name}' must be a string of 1 to ${MAX_CLAIM_LENGTH} characters`);
  }
  return value;
}

/** Reads and checks the header without crypto; the caller resolves `kid` when there is no x5c. */
export function readUkObHeader(
  value: string | undefined,
  options: UkObReadOptions,
): { readonly jws: DetachedJws; readonly header: UkObHeader } | Rejection {
  const read = readJwsAndAlgorithm(
    value,
    JWS_SIGNATURE_HEADER,
    options.algorithms ?? DEFAULT_UKOB_ALGORITHMS,
  );
  if (isRejection(read)) return read;
  const { jws, alg } = read;
  const h = jws.header;
  let b64 = true;
  if (Object.hasOwn(h, "b64")) {
    if (h.b64 !== false || !options.allowB64False) {
      return reject(
        "SIGNATURE_INVALID",
        options.allowB64False
          ? `'b64' must be false when present; got ${JSON.stringify(h.b64)}`
          : "'b64' is not accepted (Read/Write API 3.1.4 and later): leave it out and sign the base64url body",
      );
    }
    b64 = false;
  }
  const crit = checkCrit(h, b64 ? UKOB_CRIT : UKOB_CRIT_B64, b64 ? UKOB_CRIT : UKOB_CRIT_B64);
  if (isRejection(crit)) return crit;
  const kid = claimString(h, "kid");
  if (isRejection(kid)) return kid;
  if (h.typ !== undefined && h.typ !== "JOSE")
    return reject("FORMAT_ERROR", "'typ' must be 'JOSE' when present");
  if (h.cty !== undefined && h.cty !== "application/json" && h.cty !== "json") {
    return reject("FORMAT_ERROR", "'cty' must be 'application/json' when present");
  }
  const iat = h[UKOB_IAT];
  if (typeof iat !== "number" || !Number.isSafeInteger(iat) || iat < 0) {
    return reject("FORMAT_ERROR", `'${UKOB_IAT}' must be a JSON number of whole seconds since the epoch`);
  }
  const time = checkTime(
    `'${UKOB_IAT}' ${iat}`,
    iat * 1000,
    options.now,
    options.toleranceMs ?? DEFAULT_SIGT_TOLERANCE_MS,
  );
  if (isRejection(time)) return time;
  const iss = claimString(h, UKOB_ISS);
  if (isRejection(iss)) return iss;
  const tan = claimString(h, UKOB_TAN);
  if (isRejection(tan)) return tan;
  const x5c = readX5c(h);
  if (isRejection(x5c)) return x5c;
  const thumbprint = x5c === undefined && typeof h["x5t#S256"] === "string" ? { x5tS256: h["x5t#S256"] } : {};
  return { jws, header: { alg, kid, iat, iss, tan, b64, ...(x5c ? { x5c } : {}), ...thumbprint } };
}

function payloadOf(body: Uint8Array | string, b64: boolean): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return b64
    ? Buffer.from(
        Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url"),
        "latin1",
      )
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Reads `x-jws-signature` and verifies it over `body` with x5c[0]'s key or `options.publicKey`. */
export function verifyUkOb(
  value: string | undefined,
  body: Uint8Array | string,
  options: UkObVerifyOptions,
): { readonly header: UkObHeader; readonly publicKey: KeyObject } | Rejection {
  const read = readUkObHeader(value, options);
  if (isRejection(read)) return read;
  const { header } = read;
  const publicKey = options.publicKey ?? (header.x5c ? keyOfCertificate(header.x5c) : undefined);
  if (publicKey === undefined) {
    return reject(
      "CERTIFICATE_MISSING",
      `no key for kid '${header.kid.slice(0, 80)}': send x5c, or register the key with the ASPSP`,
    );
  }
  if (isRejection(publicKey)) return publicKey;
  const verified = verifyUkObSignature(read, body, publicKey);
  return verified === true ? { header, publicKey } : verified;
}

/** The signature of a JWS already read (readUkObHeader) over `body`, with `publicKey`. */
export function verifyUkObSignature(
  read: { readonly jws: DetachedJws; readonly header: UkObHeader },
  body: Uint8Array | string,
  publicKey: KeyObject,
): true | Rejection {
  const { jws, header } = read;
  const fits = algorithmFitsKey(header.alg, publicKey);
  if (isRejection(fits)) return fits;
  const input = signingInput(jws.protectedB64, payloadOf(body, header.b64));
  if (verifyJwsSignature(header.alg, publicKey, input, jws.signature)) return true;
  return signatureMismatch(
    header.alg,
    header.b64
      ? "the base64url of the body as sent (RFC 7515 appendix F)"
      : "the body as sent ('b64': false)",
  );
}

/** Expected `iss` (the certificate's organisation, per the trust anchor) and `tan` values. */
export interface UkObExpectations {
  readonly iss?: string | readonly string[];
  readonly tan?: string | readonly string[];
}

/** Compares the claims with what the caller expects; a missing expectation is not checked. */
export function checkUkObClaims(
  header: Pick<UkObHeader, "iss" | "tan">,
  expected: UkObExpectations,
): true | Rejection {
  const one = (want: string | readonly string[] | undefined, got: string, name: string, hint: string) => {
    if (want === undefined) return true;
    const list = typeof want === "string" ? [want] : want;
    if (list.includes(got)) return true;
    return reject(
      "SIGNATURE_INVALID",
      `'${name}' '${got.slice(0, 80)}' is not ${hint}; expected ${list.map((v) => `'${v}'`).join(" or ")}`,
    );
  };
  const iss = one(expected.iss, header.iss, UKOB_ISS, "the signing certificate's organisation");
  if (iss !== true) return iss;
  return one(expected.tan, header.tan, UKOB_TAN, "a trust anchor this gateway accepts");
}

export interface UkObSignInput {
  readonly key: KeyObject;
  readonly kid: string;
  readonly iss: string;
  readonly tan: string;
  /** Seconds since the epoch. */
  readonly iat: number;
  readonly body: Uint8Array | string;
  /** Default PS256. */
  readonly alg?: JwsAlgorithm;
  /** Sign 3.1.3-style: `b64: false`, raw body. */
  readonly b64False?: boolean;
  /** DER certificates to send in x5c (UK OB normally resolves kid instead). */
  readonly certificateChain?: readonly Uint8Array[];
}

/** The `x-jws-signature` value for a UK OB request or response body. */
export function signUkOb(input: UkObSignInput): string {
  const { alg, protectedB64, input: toSign } = prepareUkOb(input);
  return `${protectedB64}..${signJwsInput(alg, input.key, toSign).toString("base64url")}`;
}

/** signUkOb with the private-key operation in the process's signing slots, off the event loop. */
export async function signUkObAsync(input: UkObSignInput): Promise<string> {
  const { alg, protectedB64, input: toSign } = prepareUkOb(input);
  return `${protectedB64}..${(await signJwsInputAsync(alg, input.key, toSign)).toString("base64url")}`;
}

function prepareUkOb(input: UkObSignInput): { alg: JwsAlgorithm; protectedB64: string; input: Buffer } {
  const alg = input.alg ?? "PS256";
  const header: Record<string, unknown> = {
    alg,
    kid: input.kid,
    ...(input.b64False ? { b64: false } : {}),
    [UKOB_IAT]: input.iat,
    [UKOB_ISS]: input.iss,
    [UKOB_TAN]: input.tan,
    crit: input.b64False ? [...UKOB_CRIT_B64] : [...UKOB_CRIT],
    typ: "JOSE",
    cty: "application/json",
  };
  if (input.certificateChain?.length) {
    header.x5c = input.certificateChain.map((der) => Buffer.from(der).toString("base64"));
  }
  const protectedB64 = encodeHeader(header);
  return { alg, protectedB64, input: signingInput(protectedB64, payloadOf(input.body, !input.b64False)) };
}

/** The JWS read, and the body's signature check as it streams. */
export class UkObSignature {
  private verifier: Verify | undefined;
  /** Bytes of the body not yet base64url-encoded (fewer than 3). */
  private pending = Buffer.alloc(0);

  constructor(
    readonly jws: DetachedJws,
    readonly header: UkObHeader,
  ) {}

  /** The signing input's start: ASCII(BASE64URL(protected)) || '.'. */
  private started(): Verify {
    if (!this.verifier) {
      this.verifier = createVerify("sha256");
      this.verifier.update(`${this.jws.protectedB64}.`, "latin1");
    }
    return this.verifier;
  }

  /** One chunk of the body into the signing input: raw with b64 false, base64url otherwise. */
  update(chunk: Buffer): void {
    const verifier = this.started();
    if (!this.header.b64) {
      verifier.update(chunk);
      return;
    }
    const bytes = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const whole = bytes.length - (bytes.length % 3);
    if (whole > 0) verifier.update(bytes.subarray(0, whole).toString("base64url"), "latin1");
    this.pending = Buffer.from(bytes.subarray(whole));
  }

  /** The body has ended: whether the signature holds over all of it. */
  finish(key: KeyObject): boolean {
    const verifier = this.started();
    if (this.header.b64 && this.pending.length > 0)
      verifier.update(this.pending.toString("base64url"), "latin1");
    try {
      return verifier.verify(keyOptions(this.header.alg, key), this.jws.signature);
    } catch {
      return false;
    }
  }
}
