/**
 * The signing string (draft-cavage section 2.3, SPEC 5.6) and the coverage rule (SPEC 5.5).
 */

import { isRejection, type Rejection, reject } from "../errors.js";

/** Header values keyed by lower-case name, as Node's `IncomingMessage#headers` holds them. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface RequestParts {
  readonly method: string;
  /** The path and query exactly as received on the request line, never re-encoded. */
  readonly target: string;
  readonly headers: HeaderMap;
}

export interface SignatureTimes {
  readonly created?: number;
  readonly expires?: number;
  /** `expires` as written when it has a fraction (draft-cavage-12 2.1.5): signed as written. */
  readonly expiresText?: string;
}

/** A header's value, repeated headers joined with `, ` (RFC 7230 section 3.2.2). */
export function headerValue(headers: HeaderMap, name: string): string | undefined {
  // Own properties only: a signed header named "constructor" must not find Object's.
  if (!Object.hasOwn(headers, name)) return undefined;
  const value = headers[name];
  if (value === undefined) return undefined;
  return typeof value === "string" ? value : value.join(", ");
}

/**
 * One `name: value` line per listed header, in listed order, joined by `\n`, no trailing newline.
 * `(request-target)` is the lower-case method, a space and the raw target.
 */
export function buildSigningString(
  signed: readonly string[],
  request: RequestParts,
  times: SignatureTimes = {},
): string | Rejection {
  let out = "";
  for (let i = 0; i < signed.length; i++) {
    const name = signed[i]!.toLowerCase();
    const value = signedValue(name, request, times);
    if (isRejection(value)) return value;
    out += i === 0 ? `${name}: ${value}` : `\n${name}: ${value}`;
  }
  return out;
}

/** The value a signed name stands for, or a rejection saying what is missing. */
function signedValue(name: string, request: RequestParts, times: SignatureTimes): string | Rejection {
  let value: string | undefined;
  if (name === "(request-target)") value = `${request.method.toLowerCase()} ${request.target}`;
  else if (name === "(created)") value = times.created?.toString();
  else if (name === "(expires)") value = times.expiresText ?? times.expires?.toString();
  else value = headerValue(request.headers, name);
  if (value !== undefined) return value;
  return reject(
    "SIGNATURE_INVALID",
    name.startsWith("(")
      ? `Signature header lists '${name}' but has no '${name.slice(1, -1)}' parameter`
      : `Signature header lists '${name}' in 'headers', but the request has no ${name} header; send it or do not list it`,
  );
}

const BEYOND_A_BYTE = /[^\x00-\xff]/;

/**
 * The signing string as the bytes that were sent. Node hands header values (and the target) over
 * as Latin-1 strings, one char per wire byte, so Latin-1 gives those bytes back exactly; a UTF-8
 * value arrives as its bytes and stays them. Never re-encoded: encoding the rebuilt string as
 * UTF-8 turned every byte above 0x7F into two, and no such header ever verified. A char above
 * U+00FF cannot have come off the wire (a caller passed decoded text): refused, not truncated.
 * Written straight into one buffer, line by line: no joined string is built on the hot path.
 */
export function signingStringBytes(
  signed: readonly string[],
  request: RequestParts,
  times: SignatureTimes = {},
): Buffer | Rejection {
  const names: string[] = new Array(signed.length);
  const values: string[] = new Array(signed.length);
  let length = Math.max(0, signed.length - 1); // the line feeds
  for (let i = 0; i < signed.length; i++) {
    const name = signed[i]!.toLowerCase();
    const value = signedValue(name, request, times);
    if (isRejection(value)) return value;
    const beyond = BEYOND_A_BYTE.exec(value) ?? BEYOND_A_BYTE.exec(name);
    if (beyond) {
      return reject(
        "SIGNATURE_INVALID",
        `the signed '${name}' value holds '${beyond[0]}' (U+${beyond[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}), which is not one byte; pass header values as received (one Latin-1 char per byte), not decoded`,
      );
    }
    names[i] = name;
    values[i] = value;
    length += name.length + 2 + value.length;
  }
  const bytes = Buffer.allocUnsafe(length);
  let at = 0;
  for (let i = 0; i < names.length; i++) {
    if (i > 0) bytes[at++] = 0x0a;
    at += bytes.write(names[i]!, at, "latin1");
    bytes[at++] = 0x3a; // ':'
    bytes[at++] = 0x20;
    at += bytes.write(values[i]!, at, "latin1");
  }
  return bytes;
}

/** The headers SPEC 5.5 makes eligible: each that the request carries must be signed. */
export const ELIGIBLE_HEADERS: readonly string[] = [
  "date",
  "digest",
  "x-request-id",
  "psu-id",
  "psu-corporate-id",
  "tpp-redirect-uri",
];

/**
 * Every eligible header present in the request must be listed in `headers`; otherwise an
 * unsigned PSU-ID (say) could be swapped in transit.
 */
export function checkCoverage(
  signed: readonly string[],
  headers: HeaderMap,
  eligible: readonly string[] = ELIGIBLE_HEADERS,
): true | Rejection {
  for (const name of eligible) {
    if (headers[name] !== undefined && !signed.includes(name)) {
      return reject(
        "SIGNATURE_INVALID",
        `the request carries a ${name} header that the signature does not cover; add '${name}' to the Signature 'headers' parameter and sign it (SPEC 5.5)`,
      );
    }
  }
  return true;
}

/**
 * Header values by lower-case name, repeated values joined with ", " and absent ones left out: the
 * shape the dialects' signers and verifiers read (RFC 9421 and JAdES name fields in lower case).
 */
export function lowerCasedHeaders(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name.toLowerCase()] = typeof value === "string" ? value : value.join(", ");
  }
  return out;
}
