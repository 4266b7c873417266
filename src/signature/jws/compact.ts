/**
 * What both JWS dialects share: the compact serialization with a detached payload
 * (`<protected>..<signature>`, RFC 7515 appendix F), the protected header read strictly, `alg`,
 * `crit`, `x5c` and `x5t#S256`, the signing input and the native crypto for RS256, PS256, ES256.
 */

import {
  constants,
  createHash,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
  X509Certificate,
} from "node:crypto";
import { isRejection, type Rejection, reject } from "../../errors.js";
import { Kept } from "../../kept.js";
import { isBase64 } from "../base64.js";
import { PROCESS_SIGNING_SLOTS } from "../signing-slots.js";
import { JsonProblem, type JsonValue, parseJsonObject } from "./json.js";

export type JwsAlgorithm = "RS256" | "PS256" | "ES256";
export const JWS_ALGORITHMS: readonly JwsAlgorithm[] = ["RS256", "PS256", "ES256"];

export type JsonObject = { readonly [name: string]: JsonValue };

/** A whole header value: an RSA-4096 signature and a header with three 2 KB certificates fit well below. */
export const MAX_JWS_LENGTH = 32 * 1024;
/** The QSealC and its issuers; a longer chain is not needed to find the key and is refused. */
export const MAX_X5C_CERTIFICATES = 4;
/** One certificate in base64: 8 KB is about 6 KB of DER, far above a QSealC's 1.5–2.5 KB. */
export const MAX_CERTIFICATE_BASE64 = 8 * 1024;

/** The parts of a detached compact JWS. `protectedB64` is kept as sent: the signing input uses it. */
export interface DetachedJws {
  readonly protectedB64: string;
  readonly header: JsonObject;
  readonly signature: Buffer;
}

/**
 * base64url without padding (RFC 7515 section 2) in canonical form, decoded; undefined otherwise.
 * Node's decoder skips what is not in the alphabet and takes `+/` as well, so re-encoding and
 * comparing checks the alphabet, the padding and the spare bits at once: one spelling per JWS, at
 * a third of a per-char loop's cost on a 2 KB header.
 */
export function decodeBase64Url(text: string): Buffer | undefined {
  if (text.length === 0) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Reads `<base64url header>..<base64url signature>`: exactly two dots, nothing between them, both
 * parts canonical base64url, the header UTF-8 JSON with no duplicate member. Never throws.
 */
export function readDetachedJws(value: string | undefined, headerName: string): DetachedJws | Rejection {
  if (value === undefined || value.length === 0) {
    return reject("SIGNATURE_MISSING", `${headerName} header is missing; sign the request as a detached JWS`);
  }
  if (value.length > MAX_JWS_LENGTH) {
    return reject(
      "FORMAT_ERROR",
      `${headerName} is ${value.length} characters long; at most ${MAX_JWS_LENGTH} are accepted (send fewer certificates in x5c)`,
    );
  }
  const first = value.indexOf(".");
  const second = first < 0 ? -1 : value.indexOf(".", first + 1);
  if (first < 0 || second < 0 || value.indexOf(".", second + 1) >= 0) {
    return reject(
      "FORMAT_ERROR",
      `${headerName} is not a compact JWS: expected '<protected header>..<signature>' with exactly two dots`,
    );
  }
  if (second !== first + 1) {
    return reject(
      "FORMAT_ERROR",
      `${headerName} carries a payload between the dots; send it detached: '<protected header>..<signature>'`,
    );
  }
  const protectedB64 = value.slice(0, first);
  const headerBytes = decodeBase64Url(protectedB64);
  if (headerBytes === undefined) {
    return reject(
      "FORMAT_ERROR",
      `${headerName}'s protected header is not base64url without padding (RFC 7515 section 2)`,
    );
  }
  const signature = decodeBase64Url(value.slice(second + 1));
  if (signature === undefined) {
    return reject(
      "FORMAT_ERROR",
      `${headerName}'s signature is not base64url without padding (RFC 7515 section 2)`,
    );
  }
  let text: string;
  try {
    text = UTF8.decode(headerBytes);
  } catch {
    return reject("FORMAT_ERROR", `${headerName}'s protected header is not UTF-8`);
  }
  const header = parseJsonObject(text);
  if (header instanceof JsonProblem) {
    // Two members of one name are a way to make two verifiers read two headers: a signature game.
    return reject(
      header.kind === "duplicate" ? "SIGNATURE_INVALID" : "FORMAT_ERROR",
      `${headerName}'s protected header is not one JSON object without duplicate members: ${header.text}`,
    );
  }
  return { protectedB64, header, signature };
}

/** The detached JWS `headerName` carries and its `alg`, checked against `allowed` (both JWS dialects read it so). */
export function readJwsAndAlgorithm(
  value: string | undefined,
  headerName: string,
  allowed: readonly JwsAlgorithm[],
): { readonly jws: DetachedJws; readonly alg: JwsAlgorithm } | Rejection {
  const jws = readDetachedJws(value, headerName);
  if (isRejection(jws)) return jws;
  const alg = checkAlgorithm(jws.header, allowed);
  return isRejection(alg) ? alg : { jws, alg };
}

/** `alg`: a string among the allowed; `none` and the HMAC family are refused whatever is allowed. */
export function checkAlgorithm(
  header: JsonObject,
  allowed: readonly JwsAlgorithm[],
): JwsAlgorithm | Rejection {
  const alg = header.alg;
  if (typeof alg !== "string") {
    return reject("FORMAT_ERROR", "the JWS protected header has no 'alg' string");
  }
  const wanted = `use ${allowed.map((a) => `'${a}'`).join(" or ")}`;
  if (alg.toLowerCase() === "none" || /^HS/i.test(alg)) {
    return reject(
      "SIGNATURE_INVALID",
      `JWS alg '${alg.slice(0, 20)}' is refused: a signature with the certificate's private key is required; ${wanted}`,
    );
  }
  if (!(allowed as readonly string[]).includes(alg)) {
    return reject("SIGNATURE_INVALID", `JWS alg '${alg.slice(0, 20)}' is not accepted; ${wanted}`);
  }
  return alg as JwsAlgorithm;
}

/** Whether `alg` can be computed with this key: RSA for RS256/PS256, P-256 for ES256. */
export function algorithmFitsKey(alg: JwsAlgorithm, key: KeyObject): true | Rejection {
  const type = key.asymmetricKeyType;
  const fits =
    alg === "ES256"
      ? type === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1"
      : type === "rsa" || (alg === "PS256" && type === "rsa-pss");
  if (fits) return true;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return reject(
    "SIGNATURE_INVALID",
    `JWS alg '${alg}' does not fit the certificate's ${(type ?? "unknown").toUpperCase()}${curve ? ` ${curve}` : ""} key; ${alg === "ES256" ? "ES256 needs a P-256 key" : `${alg} needs an RSA key`}`,
  );
}

/**
 * `crit` (RFC 7515 section 4.1.11): an array of distinct names, each one this dialect understands
 * and present in the header, and each of `required` listed. An unknown name means the sender
 * relies on a rule we would not apply.
 */
export function checkCrit(
  header: JsonObject,
  understood: readonly string[],
  required: readonly string[],
): true | Rejection {
  const crit = header.crit;
  if (!Array.isArray(crit) || crit.length === 0 || crit.length > understood.length) {
    return reject(
      "SIGNATURE_INVALID",
      `the JWS protected header must carry 'crit' listing ${required.map((n) => `'${n}'`).join(", ")}`,
    );
  }
  const seen = new Set<string>();
  for (const name of crit) {
    if (typeof name !== "string" || !understood.includes(name)) {
      return reject(
        "SIGNATURE_INVALID",
        `'crit' lists ${JSON.stringify(name).slice(0, 60)}, which this gateway does not understand; list only ${understood.map((n) => `'${n}'`).join(", ")}`,
      );
    }
    if (seen.has(name)) return reject("SIGNATURE_INVALID", `'crit' lists '${name}' twice`);
    if (!Object.hasOwn(header, name)) {
      return reject(
        "SIGNATURE_INVALID",
        `'crit' lists '${name}' but the protected header has no such member`,
      );
    }
    seen.add(name);
  }
  for (const name of required) {
    if (!seen.has(name)) {
      return reject("SIGNATURE_INVALID", `'crit' must list '${name}'; it lists ${JSON.stringify(crit)}`);
    }
  }
  return true;
}

/** `x5c` decoded (RFC 7515 section 4.1.6: standard base64 of DER, not base64url) and `x5t#S256` checked. */
export interface CertificateChain {
  /** As sent: x5c[0] is also what TPP-Signature-Certificate would carry (base64 DER). */
  readonly base64: readonly string[];
  readonly der: readonly Buffer[];
  readonly thumbprint?: string;
}

export function readX5c(header: JsonObject): CertificateChain | undefined | Rejection {
  const x5c = header.x5c;
  const thumbprint = header["x5t#S256"];
  if (
    thumbprint !== undefined &&
    (typeof thumbprint !== "string" || decodeBase64Url(thumbprint)?.length !== 32)
  ) {
    return reject(
      "CERTIFICATE_INVALID",
      "'x5t#S256' must be the base64url SHA-256 of the certificate's DER (43 chars)",
    );
  }
  if (x5c === undefined) return undefined;
  if (!Array.isArray(x5c) || x5c.length === 0 || x5c.length > MAX_X5C_CERTIFICATES) {
    return reject(
      "CERTIFICATE_INVALID",
      `'x5c' must be an array of 1 to ${MAX_X5C_CERTIFICATES} certificates, the signing certificate first`,
    );
  }
  const base64: string[] = [];
  const der: Buffer[] = [];
  for (const [i, entry] of x5c.entries()) {
    const decoded =
      typeof entry === "string" && entry.length <= MAX_CERTIFICATE_BASE64
        ? decodeCertificate(entry)
        : undefined;
    if (typeof entry !== "string" || decoded === undefined) {
      return reject(
        "CERTIFICATE_INVALID",
        `x5c[${i}] must be a certificate's DER in standard base64 with padding (not base64url, no PEM lines), at most ${MAX_CERTIFICATE_BASE64} characters`,
      );
    }
    base64.push(entry);
    der.push(decoded.der);
  }
  if (thumbprint !== undefined) {
    const actual = decodeCertificate(base64[0]!)!.sha256;
    if (actual !== thumbprint) {
      return reject(
        "CERTIFICATE_INVALID",
        `'x5t#S256' ${thumbprint} is not the SHA-256 of x5c[0] (${actual}); send the thumbprint of the signing certificate`,
      );
    }
    return { base64, der, thumbprint };
  }
  return { base64, der };
}

/** x5c entries seen recently: one TPP sends the same certificates on every request. */
const CERTIFICATES = new Kept<string, { readonly der: Buffer; readonly sha256: string } | null>(1024);

/** Standard base64 with padding, canonical (isBase64 and a round trip), its DER and thumbprint. */
function decodeCertificate(entry: string): { readonly der: Buffer; readonly sha256: string } | undefined {
  const known = CERTIFICATES.get(entry);
  if (known !== undefined) return known ?? undefined;
  const der = Buffer.from(entry, "base64");
  // isBase64 refuses base64url and line breaks, which Node's decoder would skip or take.
  const ok = entry.length > 0 && isBase64(entry) && der.toString("base64") === entry;
  const decoded = ok ? { der, sha256: createHash("sha256").update(der).digest("base64url") } : null;
  return CERTIFICATES.keep(entry, decoded) ?? undefined;
}

/** Keys of recently seen signing certificates: one TPP sends the same x5c[0] on every request. */
const KEYS = new Kept<string, KeyObject | Rejection>(512);

/** The public key of x5c[0]; the chain and trust are the caller's (TppVerifier takes x5c[0] as is). */
export function keyOfCertificate(chain: CertificateChain): KeyObject | Rejection {
  const first = chain.base64[0]!;
  const known = KEYS.get(first);
  if (known !== undefined) return known;
  let key: KeyObject | Rejection;
  try {
    key = new X509Certificate(chain.der[0]!).publicKey;
  } catch {
    key = reject("CERTIFICATE_INVALID", "x5c[0] is not a DER X.509 certificate");
  }
  return KEYS.keep(first, key);
}

/** ASCII(BASE64URL(protected)) || '.' || payload (RFC 7515 section 5.1, RFC 7797 section 3). */
export function signingInput(protectedB64: string, payload: Uint8Array): Buffer {
  const input = Buffer.allocUnsafe(protectedB64.length + 1 + payload.length);
  input.write(protectedB64, 0, "latin1");
  input[protectedB64.length] = 0x2e;
  input.set(payload, protectedB64.length + 1);
  return input;
}

/** RS256 passes the KeyObject itself (PKCS#1 v1.5 is the default): Node reads no options then. */
export function keyOptions(alg: JwsAlgorithm, key: KeyObject) {
  if (alg === "PS256") return { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 };
  if (alg === "ES256") return { key, dsaEncoding: "ieee-p1363" as const };
  return key;
}

/** RS256, PS256 (MGF1 SHA-256, salt 32 bytes) or ES256 (r||s, 64 bytes) over `input`. */
export function verifyJwsSignature(
  alg: JwsAlgorithm,
  key: KeyObject,
  input: Uint8Array,
  signature: Uint8Array,
): boolean {
  if (alg === "ES256" && signature.length !== 64) return false;
  try {
    return cryptoVerify("sha256", input, keyOptions(alg, key), signature);
  } catch {
    return false;
  }
}

export function signJwsInput(alg: JwsAlgorithm, key: KeyObject, input: Uint8Array): Buffer {
  return cryptoSign("sha256", input, keyOptions(alg, key));
}

/** signJwsInput off the event loop, in the process's signing slots. */
export function signJwsInputAsync(alg: JwsAlgorithm, key: KeyObject, input: Uint8Array): Promise<Buffer> {
  return PROCESS_SIGNING_SLOTS.run(
    () =>
      new Promise<Buffer>((resolve, reject) =>
        cryptoSign("sha256", input, keyOptions(alg, key), (error, signature) =>
          error ? reject(error) : resolve(signature),
        ),
      ),
  );
}

/** The compact serialization of a header object and a signature, payload detached. */
export function encodeHeader(header: object): string {
  return Buffer.from(JSON.stringify(header), "utf8").toString("base64url");
}

/** A failed signature check, saying what was signed so the sender can compare. */
export function signatureMismatch(alg: JwsAlgorithm, what: string): Rejection {
  return reject(
    "SIGNATURE_INVALID",
    `the ${alg} signature does not verify with the certificate's public key over ${what}${alg === "PS256" ? PS256_SALT : ""}`,
  );
}

/**
 * OpenSSL before 3.1 signs `dgst -sigopt rsa_padding_mode:pss` with the longest salt, which
 * PS256 does not allow: the commonest cause of a PS256 refusal, named where it applies.
 */
const PS256_SALT =
  " (PS256 uses a 32-byte salt, RFC 7518 3.5: with OpenSSL add -sigopt rsa_pss_saltlen:digest)";
