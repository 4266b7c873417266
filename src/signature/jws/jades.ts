/**
 * Berlin Group openFinance API Framework 2.x: a JAdES detached JWS (ETSI TS 119 182-1) in
 * `x-jws-signature`, over the HTTP headers that `sigD.pars` lists (mechanism HttpHeaders), with
 * `b64: false` (RFC 7797) so the payload is those header lines as bytes.
 *
 * The payload is built as OBP-API builds it (JwsUtil.rebuildDetachedPayload), the only public
 * implementation found: for each name of `pars` in order, `<name>: <value>` and a line feed, with
 * `(request-target): <method lower-cased> <path and query>`. Where we are stricter than OBP-API
 * (it skips a listed header that is absent and always puts `(request-target)` first) we refuse
 * or follow `pars`, so that a payload we verify is one OBP-API would also sign.
 */

import { createHash, type KeyObject } from "node:crypto";
import { isRejection, type Rejection, reject } from "../../errors.js";
import { wireValue } from "../sign.js";
import {
  algorithmFitsKey,
  type CertificateChain,
  checkCrit,
  type DetachedJws,
  encodeHeader,
  type JsonObject,
  JWS_ALGORITHMS,
  type JwsAlgorithm,
  keyOfCertificate,
  readJwsAndAlgorithm,
  readX5c,
  signatureMismatch,
  signingInput,
  signJwsInput,
  signJwsInputAsync,
  verifyJwsSignature,
} from "./compact.js";

export const JWS_SIGNATURE_HEADER = "x-jws-signature";
export const HTTP_HEADERS_MID = "http://uri.etsi.org/19182/HttpHeaders";
const JADES_CRIT = ["b64", "sigT", "sigD"] as const;
export const DEFAULT_SIGT_TOLERANCE_MS = 60_000;
/** More names than any Berlin Group request has headers worth signing. */
export const MAX_PARS = 32;

/** The request pseudo-header; `(status-line)` is OBP-API's for responses (see buildHttpHeadersPayload). */
const PSEUDO = new Set(["(request-target)", "(status-line)"]);
const TOKEN = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

/** A message whose headers are signed: Node's `headers` (lower-case names) will do. */
export interface HttpHeadersMessage {
  /** The request's method: for `(request-target)`, and `(status-line)` of its response. */
  readonly method?: string;
  /** Path and query as sent (the request line's target). */
  readonly target?: string;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}

export interface JadesHeader {
  readonly alg: JwsAlgorithm;
  readonly sigT: string;
  /** sigT in milliseconds since the epoch. */
  readonly signedAt: number;
  readonly pars: readonly string[];
  readonly x5c: CertificateChain;
  readonly kid?: string;
}

export interface JadesReadOptions {
  /** The clock's now, in milliseconds. */
  readonly now: number;
  /** Default all of RS256, PS256, ES256. */
  readonly algorithms?: readonly JwsAlgorithm[];
  /** sigT's allowed deviation either way; default 60 s, as for Date. */
  readonly toleranceMs?: number;
  /** Names `pars` must include, e.g. `(request-target)` and `digest` for a request. */
  readonly requiredPars?: readonly string[];
}

export interface JadesVerifyOptions extends JadesReadOptions {
  /** The key to verify with; default x5c[0]'s (whose trust the caller checks). */
  readonly publicKey?: KeyObject;
  /** Default `obp-api`; `etsi` for peers built on DSS or the ETSI text (see HttpHeadersPayloadStyle). */
  readonly payloadStyle?: HttpHeadersPayloadStyle;
}

export interface VerifiedJades {
  readonly header: JadesHeader;
  readonly publicKey: KeyObject;
}

const SIGT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z$/;

/** An ISO 8601 UTC time (`2026-11-26T12:00:00Z`, fractions allowed) in ms, or undefined. */
export function parseSigT(value: string): number | undefined {
  // Requests signed in the same second carry the same sigT: the last one read is kept.
  if (value === lastSigT.value) return lastSigT.ms;
  const ms = sigTOf(value);
  lastSigT = { value, ms };
  return ms;
}

let lastSigT: { readonly value: string; readonly ms: number | undefined } = { value: "", ms: undefined };

function sigTOf(value: string): number | undefined {
  const m = SIGT.exec(value);
  if (!m) return undefined;
  const [year, month, day, h, min, s] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || h > 23 || min > 59 || s > 59) return undefined;
  const ms = Date.UTC(year, month - 1, day, h, min, s) + Math.floor(Number(`0${m[7] ?? ""}`) * 1000);
  // Refuse 31 Feb rather than roll it over.
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}

/** sigT as we write it: seconds, `Z`. */
export function formatSigT(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/** A time claim against the clock: the rejection says how far off and what is accepted. */
export function checkTime(what: string, at: number, now: number, toleranceMs: number): true | Rejection {
  const offset = at - now;
  if (Math.abs(offset) <= toleranceMs) return true;
  return reject(
    "TIMESTAMP_INVALID",
    `${what} is ${Math.round(Math.abs(offset) / 1000)} s ${offset < 0 ? "behind" : "ahead of"} the gateway clock (${formatSigT(now)}); at most ${Math.round(toleranceMs / 1000)} s either way is accepted`,
  );
}

function readPars(sigD: unknown): readonly string[] | Rejection {
  if (typeof sigD !== "object" || sigD === null || Array.isArray(sigD)) {
    return reject("FORMAT_ERROR", `'sigD' must be an object { "mId": "${HTTP_HEADERS_MID}", "pars": [...] }`);
  }
  const { mId, pars, ...rest } = sigD as JsonObject;
  if (mId !== HTTP_HEADERS_MID) {
    return reject(
      "SIGNATURE_INVALID",
      `'sigD.mId' ${JSON.stringify(mId)?.slice(0, 80)} is not supported; sign the HTTP headers with mId '${HTTP_HEADERS_MID}'`,
    );
  }
  const extra = Object.keys(rest);
  if (extra.length > 0) {
    return reject(
      "FORMAT_ERROR",
      `'sigD' has '${extra[0]!.slice(0, 40)}', which the HttpHeaders mechanism does not use; send only mId and pars`,
    );
  }
  if (!Array.isArray(pars) || pars.length === 0 || pars.length > MAX_PARS) {
    return reject("FORMAT_ERROR", `'sigD.pars' must list 1 to ${MAX_PARS} header names`);
  }
  const seen = new Set<string>();
  for (const name of pars) {
    if (typeof name !== "string" || !(PSEUDO.has(name) || TOKEN.test(name))) {
      return reject(
        "FORMAT_ERROR",
        `'sigD.pars' entry ${JSON.stringify(name)?.slice(0, 60)} is not a lower-case header name or '(request-target)'`,
      );
    }
    if (seen.has(name)) return reject("FORMAT_ERROR", `'sigD.pars' lists '${name}' twice`);
    seen.add(name);
  }
  return pars as string[];
}

/**
 * Reads and checks `x-jws-signature` without crypto: the compact form, `alg`, `b64: false`,
 * `crit` exactly b64/sigT/sigD, `sigT` in the window, `sigD`, `x5c` and `x5t#S256`.
 */
export function readJadesHeader(
  value: string | undefined,
  options: JadesReadOptions,
): { readonly jws: DetachedJws; readonly header: JadesHeader } | Rejection {
  const read = readJadesHeaderParts(value, options);
  if (isRejection(read)) return read;
  const { x5c, x5tS256: _, ...rest } = read.header;
  if (x5c === undefined) {
    return reject(
      "CERTIFICATE_MISSING",
      "the JWS protected header has no 'x5c'; send the QSealC (base64 DER) first in x5c",
    );
  }
  return { jws: read.jws, header: { ...rest, x5c } };
}

/** A JAdES header that may name its certificate (`x5t#S256`, `kid`) instead of carrying it in x5c. */
export type JadesHeaderParts = Omit<JadesHeader, "x5c"> & {
  readonly x5c?: CertificateChain;
  /** `x5t#S256` when sent without x5c: the thumbprint of the certificate it names. */
  readonly x5tS256?: string;
};

/** readJadesHeader without requiring x5c: the caller resolves `x5t#S256` / `kid` when there is none. */
export function readJadesHeaderParts(
  value: string | undefined,
  options: JadesReadOptions,
): { readonly jws: DetachedJws; readonly header: JadesHeaderParts } | Rejection {
  const read = readJwsAndAlgorithm(value, JWS_SIGNATURE_HEADER, options.algorithms ?? JWS_ALGORITHMS);
  if (isRejection(read)) return read;
  const { jws, alg } = read;
  const h = jws.header;
  if (h.b64 !== false) {
    return reject(
      "SIGNATURE_INVALID",
      `JAdES HttpHeaders signatures need "b64": false (RFC 7797), listed in crit; got ${JSON.stringify(h.b64) ?? "none"}`,
    );
  }
  const crit = checkCrit(h, JADES_CRIT, JADES_CRIT);
  if (isRejection(crit)) return crit;
  if (typeof h.sigT !== "string")
    return reject("FORMAT_ERROR", "'sigT' must be a string such as '2026-11-26T12:00:00Z'");
  const signedAt = parseSigT(h.sigT);
  if (signedAt === undefined) {
    return reject(
      "FORMAT_ERROR",
      `'sigT' '${h.sigT.slice(0, 40)}' is not an ISO 8601 UTC time such as '${formatSigT(options.now)}'`,
    );
  }
  const time = checkTime(
    `sigT '${h.sigT}'`,
    signedAt,
    options.now,
    options.toleranceMs ?? DEFAULT_SIGT_TOLERANCE_MS,
  );
  if (isRejection(time)) return time;
  const pars = readPars(h.sigD);
  if (isRejection(pars)) return pars;
  for (const name of options.requiredPars ?? []) {
    if (!pars.includes(name)) {
      return reject("SIGNATURE_INVALID", `'sigD.pars' must include '${name}'; it lists ${pars.join(" ")}`);
    }
  }
  if (h.kid !== undefined && typeof h.kid !== "string")
    return reject("FORMAT_ERROR", "'kid' must be a string");
  const x5c = readX5c(h);
  if (isRejection(x5c)) return x5c;
  const thumbprint = x5c === undefined && typeof h["x5t#S256"] === "string" ? { x5tS256: h["x5t#S256"] } : {};
  return {
    jws,
    header: {
      alg,
      sigT: h.sigT,
      signedAt,
      pars,
      ...(x5c ? { x5c } : {}),
      ...thumbprint,
      ...(typeof h.kid === "string" ? { kid: h.kid } : {}),
    },
  };
}

/**
 * How the HttpHeaders payload is laid out. `obp-api` (the default): every line ends in LF, the last
 * one too, values as received (OBP-API's JwsUtil, signing and verifying). `etsi`: lines joined by
 * LF with none after the last, values without leading or trailing spaces and tabs: draft-cavage's
 * signing string, which ETSI TS 119 182-1's HttpHeaders mechanism refers to, as the European
 * Commission's DSS library (HttpHeadersPayloadBuilder) builds it. The two never verify each other.
 */
export type HttpHeadersPayloadStyle = "obp-api" | "etsi";

const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * The HttpHeaders payload: per name of `pars`, `<name>: <value>`, lines per `style`. Values are the
 * bytes received (Node's strings, one char per byte); a header sent twice is joined with ", ".
 * `(request-target)` is `<method lower-cased> <target>`; `(status-line)`, which OBP-API lists in its
 * responses, is the same line of the request answered (OBP-API signs its responses that way, not
 * with the status code). A listed header that is absent is refused: OBP-API would drop the line.
 */
export function buildHttpHeadersPayload(
  pars: readonly string[],
  message: HttpHeadersMessage,
  style: HttpHeadersPayloadStyle = "obp-api",
): Buffer | Rejection {
  const lines: string[] = [];
  for (const name of pars) {
    let value: string | readonly string[] | undefined;
    if (PSEUDO.has(name)) {
      if (message.method === undefined || message.target === undefined) {
        return reject(
          "SIGNATURE_INVALID",
          `'sigD.pars' lists '${name}', which this message has no request line for`,
        );
      }
      value = `${message.method.toLowerCase()} ${message.target}`;
    } else {
      value = message.headers[name];
    }
    if (value === undefined) {
      return reject(
        "SIGNATURE_INVALID",
        `'sigD.pars' lists '${name}' but the message has no such header; send it or do not list it`,
      );
    }
    let text = typeof value === "string" ? value : value.join(", ");
    if (style === "etsi") text = text.replace(OWS, "");
    lines.push(`${name}: ${text}`);
  }
  const text = style === "etsi" ? lines.join("\n") : `${lines.join("\n")}\n`;
  if (/[^\x00-\xff]/.test(text)) {
    return reject(
      "SIGNATURE_INVALID",
      "a signed header value holds a char above U+00FF, which is not a byte",
    );
  }
  return Buffer.from(text, "latin1");
}

/** Reads `x-jws-signature`, builds the payload from `message` and verifies the signature. */
export function verifyJades(
  value: string | undefined,
  message: HttpHeadersMessage,
  options: JadesVerifyOptions,
): VerifiedJades | Rejection {
  const read = readJadesHeader(value, options);
  if (isRejection(read)) return read;
  const { jws, header } = read;
  const publicKey = options.publicKey ?? keyOfCertificate(header.x5c);
  if (isRejection(publicKey)) return publicKey;
  const fits = algorithmFitsKey(header.alg, publicKey);
  if (isRejection(fits)) return fits;
  const payload = buildHttpHeadersPayload(header.pars, message, options.payloadStyle);
  if (isRejection(payload)) return payload;
  if (!verifyJwsSignature(header.alg, publicKey, signingInput(jws.protectedB64, payload), jws.signature)) {
    return signatureMismatch(
      header.alg,
      `the lines of sigD.pars '${header.pars.join(" ")}'; send '<name>: <value>' ${options.payloadStyle === "etsi" ? "joined by LF" : "each ending in LF"}, '(request-target)' as '<method lower-case> <path?query>', with the values sent`,
    );
  }
  return { header, publicKey };
}

export interface JadesSignInput {
  readonly key: KeyObject;
  /** DER, the signing certificate (QSealC) first. */
  readonly certificateChain: readonly Uint8Array[];
  /** Default RS256 for an RSA key, ES256 for an EC key. */
  readonly alg?: JwsAlgorithm;
  /** Lower-case names to sign, in order; `(request-target)` for a request. */
  readonly pars: readonly string[];
  /** The signing time: ms or an ISO 8601 UTC string. */
  readonly sigT: number | string;
  readonly kid?: string;
  /** Also send `x5t#S256` (default true). */
  readonly thumbprint?: boolean;
  /** Name the certificate by `x5t#S256` alone, without x5c (the verifier knows it already). */
  readonly byReference?: boolean;
  /** The request (or the response, with the request's method and target for `(status-line)`). */
  readonly message: HttpHeadersMessage;
  /** Default `obp-api`. */
  readonly payloadStyle?: HttpHeadersPayloadStyle;
}

/** The `x-jws-signature` value for a request or a response; throws on a programming error only. */
export function signJades(input: JadesSignInput): string {
  const { alg, protectedB64, input: toSign } = prepareJades(input);
  const signature = signJwsInput(alg, input.key, toSign);
  return `${protectedB64}..${signature.toString("base64url")}`;
}

/**
 * signJades with the private-key operation on libuv's thread pool, in the process's signing slots
 * (signature/signing-slots.ts): for a gateway signing every request or response.
 */
export async function signJadesAsync(input: JadesSignInput): Promise<string> {
  const { alg, protectedB64, input: toSign } = prepareJades(input);
  const signature = await signJwsInputAsync(alg, input.key, toSign);
  return `${protectedB64}..${signature.toString("base64url")}`;
}

/** The protected header and the signing input of a JAdES signature: all but the private-key operation. */
function prepareJades(input: JadesSignInput): { alg: JwsAlgorithm; protectedB64: string; input: Buffer } {
  const alg = input.alg ?? (input.key.asymmetricKeyType === "ec" ? "ES256" : "RS256");
  const first = input.certificateChain[0];
  if (first === undefined)
    throw new Error("signJades needs the signing certificate first in certificateChain");
  const header: Record<string, unknown> = {
    alg,
    b64: false,
    crit: [...JADES_CRIT],
    sigT: typeof input.sigT === "number" ? formatSigT(input.sigT) : input.sigT,
    sigD: { mId: HTTP_HEADERS_MID, pars: [...input.pars] },
    ...(input.byReference
      ? {}
      : { x5c: input.certificateChain.map((der) => Buffer.from(der).toString("base64")) }),
  };
  if (input.byReference || (input.thumbprint ?? true)) {
    header["x5t#S256"] = createHashBase64Url(first);
  }
  if (input.kid !== undefined) header.kid = input.kid;
  const lower: Record<string, string | readonly string[] | undefined> = {};
  for (const [name, value] of Object.entries(input.message.headers)) {
    if (value !== undefined)
      lower[name.toLowerCase()] =
        typeof value === "string" ? wireValue(value) : value.map((v) => wireValue(v));
  }
  const payload = buildHttpHeadersPayload(
    input.pars,
    { ...input.message, headers: lower },
    input.payloadStyle,
  );
  if (isRejection(payload)) throw new Error(payload.text);
  const protectedB64 = encodeHeader(header);
  return { alg, protectedB64, input: signingInput(protectedB64, payload) };
}

function createHashBase64Url(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("base64url");
}

/** The parsed JWS, its protected header read (the chain's jades steps check its time and signature apart). */
export interface JadesSignature {
  readonly jws: DetachedJws;
  readonly header: JadesHeader;
}
