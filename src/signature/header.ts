/**
 * The Signature header (draft-cavage-http-signatures, Berlin Group NextGenPSD2 section 12):
 * `keyId="…",algorithm="…",headers="…",signature="…"`, read in one linear pass.
 */

import { isRejection, type Rejection, reject } from "../errors.js";
import { detached, Kept } from "../kept.js";
import { isBase64 } from "./base64.js";
import { decodeEncodedWords } from "./rfc2047.js";

export interface SignatureParams {
  readonly keyId: string;
  /** As sent, lower-cased: `rsa-sha256`, `sha256withrsa`, `hs2019`, … (see algorithms.ts). */
  readonly algorithm: string;
  /** Lower-cased header names in signing order. */
  readonly headers: readonly string[];
  /**
   * The keyId's characters between the quotes exactly as written, present only when they held
   * `\"` or `\\`. Most signers copy the RFC 2253 issuer into the quotes unchanged, so there these
   * are the DN's own escapes; others escape the quoted string (RFC 7230 quoted-pair), which
   * `keyId` reads. keyId matching (matchSignatureKeyId) tries `keyId`, then this.
   */
  readonly keyIdAsWritten?: string;
  /** The base64 text as sent. */
  readonly signature: string;
  /** The decoded signature bytes. */
  readonly signatureBytes: Buffer;
  /** draft-cavage-12 `created` / `expires` parameters (Unix seconds), when present. */
  readonly created?: number;
  readonly expires?: number;
  /** `expires` as written when it has a fraction: what `(expires)` signs. */
  readonly expiresText?: string;
}

export interface ParseOptions {
  /**
   * Berlin Group requires the `headers` parameter. draft-cavage lets it default to `date`
   * (drafts up to -10; `(created)` from -11); turn this off only for plain draft-cavage peers.
   */
  readonly requireHeaders?: boolean;
  /** Upper bound on the header's length; a longer value is refused before any work. */
  readonly maxLength?: number;
}

const DEFAULT_MAX_LENGTH = 16 * 1024;

function invalid(text: string): Rejection {
  return reject("SIGNATURE_INVALID", `Signature header ${text}`);
}

/** RFC 7230 tchar, as a lookup table: this runs once per character of every Signature header. */
const TCHAR = new Uint8Array(128);
for (const ch of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
  TCHAR[ch.charCodeAt(0)] = 1;

function isTokenChar(code: number): boolean {
  return code < 128 && TCHAR[code] === 1;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** The parameters a Signature header is read for: one object of one shape per request, no Map. */
interface Params {
  keyid: string | undefined;
  algorithm: string | undefined;
  headers: string | undefined;
  signature: string | undefined;
  created: string | undefined;
  expires: string | undefined;
  /** Any other parameter's lower-cased name, to refuse one sent twice; made only when one comes (rare). */
  others: Set<string> | undefined;
  /** The text between the quotes, for quoted values that held an escape; made only then (rare). */
  asWritten: Map<string, string> | undefined;
}

type KnownParam = "keyid" | "algorithm" | "headers" | "signature" | "created" | "expires";
const KNOWN_PARAMS: readonly KnownParam[] = [
  "keyid",
  "algorithm",
  "headers",
  "signature",
  "created",
  "expires",
];

/**
 * The known parameter `text[start, end)` names, compared without case, or undefined: the name is
 * not sliced and lower-cased on every request (issue 42).
 */
function knownParam(text: string, start: number, end: number): KnownParam | undefined {
  const length = end - start;
  for (const known of KNOWN_PARAMS) {
    if (known.length !== length) continue;
    let i = 0;
    // The names are lower-case letters: OR-ing 0x20 folds an upper-case ASCII letter onto them
    // and maps no other token character onto a letter.
    while (i < length && (text.charCodeAt(start + i) | 0x20) === known.charCodeAt(i)) i++;
    if (i === length) return known;
  }
  return undefined;
}

/**
 * Reads the parameter list into the known parameters by lower-cased name. Linear in the input.
 *
 * Quoted values are read as signers write them: only `\"` and `\\` are escapes. Any other
 * backslash stays, because signers put RFC 2253 DNs into keyId as they are (`CA=O=Bank\, Köln`,
 * `\0A`, `\+`); reading every backslash as a quoted-pair (RFC 7230) would drop the DN's escapes.
 */
function readParams(text: string): Params | Rejection {
  const params: Params = {
    keyid: undefined,
    algorithm: undefined,
    headers: undefined,
    signature: undefined,
    created: undefined,
    expires: undefined,
    others: undefined,
    asWritten: undefined,
  };
  const n = text.length;
  // The next backslash at or after the value being read, searched again only once passed.
  let backslash = text.indexOf("\\");
  let i = 0;
  while (i < n) {
    while (i < n && (isSpace(text.charCodeAt(i)) || text[i] === ",")) i++;
    if (i >= n) break;
    const nameStart = i;
    while (i < n && isTokenChar(text.charCodeAt(i))) i++;
    if (i === nameStart) return invalid(`has an unexpected character '${text[i]}' at position ${i}`);
    const known = knownParam(text, nameStart, i);
    const name = known ?? text.slice(nameStart, i).toLowerCase();
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    if (text[i] !== "=") return invalid(`parameter '${name}' has no '=' and value`);
    i++;
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    let value: string;
    if (text[i] === '"') {
      i++;
      const start = i;
      // Most values hold no backslash: their end is found natively, not character by character.
      const close = text.indexOf('"', i);
      if (backslash >= 0 && backslash < i) backslash = text.indexOf("\\", i);
      if (close >= 0 && (backslash < 0 || backslash > close)) {
        value = text.slice(start, close);
        i = close;
      } else {
        let out = "";
        let segment = i;
        let escaped = false;
        for (;;) {
          if (i >= n) return invalid(`parameter '${name}' has an unterminated quoted value`);
          const ch = text.charCodeAt(i);
          if (ch === 0x22 /* " */) break;
          if (ch === 0x5c /* \ */) {
            const next = text.charCodeAt(i + 1);
            if (next === 0x22 || next === 0x5c) {
              out += text.slice(segment, i);
              segment = i + 1; // the escaped character starts the next segment
              escaped = true;
              i += 2;
              continue;
            }
          }
          i++;
        }
        value = out + text.slice(segment, i);
        if (escaped) {
          params.asWritten ??= new Map();
          params.asWritten.set(name, text.slice(start, i));
        }
      }
      i++;
    } else {
      const start = i;
      while (i < n && isTokenChar(text.charCodeAt(i))) i++;
      value = text.slice(start, i);
    }
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    if (i < n && text[i] !== ",")
      return invalid(`parameter '${name}' is followed by '${text[i]}' instead of ','`);
    if (known !== undefined) {
      if (params[known] !== undefined) return invalid(`has the parameter '${name}' twice`);
      params[known] = value;
    } else {
      params.others ??= new Set();
      if (params.others.has(name)) return invalid(`has the parameter '${name}' twice`);
      params.others.add(name);
    }
  }
  return params;
}

/**
 * The lower-cased names of a `headers` parameter. A signer sends the same list on every request,
 * so the lists read last are kept (frozen: callers share them), at most 64 of them.
 */
function signedHeaderList(value: string): readonly string[] | Rejection {
  const kept = listsRead.get(value);
  if (kept) return kept;
  const headers = value
    .split(/[ \t]+/)
    .filter((h) => h.length > 0)
    .map((h) => h.toLowerCase());
  if (headers.length === 0) return invalid("has an empty 'headers' parameter");
  const seen = new Set<string>();
  for (const h of headers) {
    if (seen.has(h)) return invalid(`lists '${h}' twice in 'headers'`);
    seen.add(h);
  }
  if (value.length > MAX_LIST_KEPT_LENGTH) return headers;
  // Detached: the value is a slice of the whole Signature header, which the key would keep alive.
  return listsRead.keep(detached(value), Object.freeze(headers));
}

const listsRead = new Kept<string, readonly string[]>(64);
const MAX_LIST_KEPT_LENGTH = 512;

/**
 * draft-cavage-12 2.1.4: `created` is a Unix timestamp integer; 2.1.5: `expires` too, with subsecond
 * precision allowed in decimal notation (kept as written: `(expires)` signs the parameter's text).
 */
function readTimestamp(
  name: "created" | "expires",
  value: string | undefined,
): number | undefined | Rejection {
  if (value === undefined) return undefined;
  const pattern = name === "created" ? /^[0-9]{1,12}$/ : /^[0-9]{1,12}(\.[0-9]{1,9})?$/;
  if (!pattern.test(value))
    return invalid(
      `parameter '${name}' must be ${name === "created" ? "whole Unix seconds (draft-cavage-12 2.1.4)" : "Unix seconds"}, got '${value.slice(0, 40)}'`,
    );
  return Math.floor(Number(value));
}

/** Parses a Signature header value (RFC 2047 encoded or not, with or without the `Signature ` scheme word). */
export function parseSignatureHeader(
  raw: string | undefined,
  options: ParseOptions = {},
): SignatureParams | Rejection {
  if (raw === undefined || raw.trim().length === 0) {
    return reject(
      "SIGNATURE_MISSING",
      "Signature header is missing; every request must be signed (SPEC 5.2)",
    );
  }
  const maxLength = options.maxLength ?? DEFAULT_MAX_LENGTH;
  if (raw.length > maxLength)
    return invalid(`is ${raw.length} characters long; at most ${maxLength} are accepted`);
  const decoded = decodeEncodedWords(raw);
  if (typeof decoded !== "string") return decoded;
  let text = decoded.trim();
  if (/^signature\s/i.test(text)) text = text.slice(10).trimStart();

  const params = readParams(text);
  if (isRejection(params)) return params;

  for (const name of ["keyid", "signature", "algorithm"] as const) {
    const value = params[name];
    const label = name === "keyid" ? "keyId" : name;
    if (value === undefined) return invalid(`has no '${label}' parameter`);
    if (value.length === 0) return invalid(`has an empty '${label}' parameter`);
  }
  const headersValue = params.headers;
  let headers: readonly string[];
  if (headersValue === undefined) {
    if (options.requireHeaders ?? true)
      return invalid(
        "has no 'headers' parameter; list the signed headers, e.g. headers=\"digest x-request-id date\"",
      );
    headers = ["date"];
  } else {
    const list = signedHeaderList(headersValue);
    if (isRejection(list)) return list;
    headers = list;
  }

  const signature = params.signature!;
  if (!isBase64(signature))
    return invalid("'signature' parameter is not valid base64 (RFC 4648, with padding)");
  const created = readTimestamp("created", params.created);
  if (isRejection(created)) return created;
  const expires = readTimestamp("expires", params.expires);
  if (isRejection(expires)) return expires;

  // Built field by field, not spread: one object per request, the rare fields added when present.
  const result: { -readonly [K in keyof SignatureParams]: SignatureParams[K] } = {
    keyId: params.keyid!,
    algorithm: params.algorithm!.toLowerCase(),
    headers,
    signature,
    signatureBytes: Buffer.from(signature, "base64"),
  };
  const keyIdAsWritten = params.asWritten?.get("keyid");
  if (keyIdAsWritten !== undefined) result.keyIdAsWritten = keyIdAsWritten;
  if (created !== undefined) result.created = created;
  if (expires !== undefined) {
    result.expires = expires;
    const text = params.expires!;
    if (text.includes(".")) result.expiresText = text;
  }
  return result;
}

/**
 * Escapes for a quoted value as little as the reader above needs: `"` always, a backslash only
 * before `"` or `\` or at the end (where it would swallow the closing quote). An RFC 2253 keyId
 * such as `CA=O=Bank\, Köln` is thus written as it is, which is also what verifiers that do not
 * unescape at all (joyent's http-signature, most hand-written ones) read; doubling every
 * backslash would break those.
 */
function quote(value: string): string {
  if (!/["\\]/.test(value)) return value;
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") {
      const next = value[i + 1];
      out += next === undefined || next === '"' || next === "\\" ? "\\\\" : "\\";
    } else out += ch;
  }
  return out;
}

/** Writes a Signature header value: always the four Berlin Group parameters, in the usual order. */
export function formatSignatureHeader(params: {
  keyId: string;
  algorithm: string;
  headers: readonly string[];
  signature: string;
}): string {
  return (
    `keyId="${quote(params.keyId)}",algorithm="${quote(params.algorithm)}",` +
    `headers="${params.headers.join(" ")}",signature="${params.signature}"`
  );
}
