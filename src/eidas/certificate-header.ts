/**
 * The `TPP-Signature-Certificate` header as it really arrives. SPEC 5.2 says base64 DER; TPPs and
 * TLS terminators also send base64 of a PEM, a PEM with or without armour, line breaks or spaces
 * inside, and URL-encoded PEM (nginx `$ssl_client_escaped_cert`: `%0A`, `%2B`, `%2F`, `%3D`).
 * All of those are accepted; anything else is refused with a text saying what was found. The
 * result is checked only for DER framing (one SEQUENCE spanning every byte); parseCertificate
 * reads the rest.
 */

import { DerError, readNode, TAG } from "../asn1/der.js";
import { type Rejection, reject } from "../errors.js";

export const CERTIFICATE_HEADER = "TPP-Signature-Certificate";

/** A certificate with a few intermediates' worth of extensions stays well below this; a chain or junk does not. */
export const DEFAULT_MAX_CERTIFICATE_HEADER_BYTES = 16 * 1024;

export interface DecodeCertificateHeaderOptions {
  /** Upper bound of the header text, checked before any work (Node gives header values as latin1, one char a byte). */
  readonly maxBytes?: number;
}

const PEM_LABELS = new Set(["CERTIFICATE", "X509 CERTIFICATE"]);

/** Decodes the header value to DER, or says why it is not a certificate. */
export function decodeCertificateHeader(
  raw: string | undefined,
  options: DecodeCertificateHeaderOptions = {},
): Uint8Array | Rejection {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_CERTIFICATE_HEADER_BYTES;
  if (raw === undefined || raw.length === 0) return missing();
  if (raw.length > maxBytes) {
    return reject(
      "CERTIFICATE_INVALID",
      `${CERTIFICATE_HEADER} is ${raw.length} bytes, more than the ${maxBytes} allowed; send only the signing certificate, base64 DER`,
    );
  }
  const text = raw.trim();
  if (text.length === 0) return missing();
  const decoded = decodeText(text, true);
  return typeof decoded === "string" ? notACertificate(decoded) : decoded;
}

function missing(): Rejection {
  return reject(
    "CERTIFICATE_MISSING",
    `${CERTIFICATE_HEADER} header is missing or empty; send the signing certificate (QSealC) as base64 DER (SPEC 5.2)`,
  );
}

function notACertificate(why: string): Rejection {
  return reject("CERTIFICATE_INVALID", `${CERTIFICATE_HEADER} is not base64 DER or PEM: ${why}`);
}

/**
 * One layer: URL-decoding, PEM armour, base64. When the base64 turns out to hold text (a PEM, or
 * base64 again) and `mayNest`, that text is decoded once more. Returns DER or the reason it failed.
 */
function decodeText(input: string, mayNest: boolean): Uint8Array | string {
  let text = input;
  if (text.includes("%")) {
    const unescaped = percentDecode(text);
    if (unescaped === undefined) return "it has a '%' not followed by two hex digits";
    text = unescaped.trim();
  }
  const body = unwrapPem(text);
  if (body.error !== undefined) return body.error;
  const compact = body.base64.replace(/\s+/g, "");
  const problem = base64Problem(compact);
  if (problem) return problem;
  const bytes = Buffer.from(compact, "base64");
  if (bytes.length === 0) return "it holds no base64 data";
  if (bytes[0] === TAG.SEQUENCE) return derFraming(bytes);
  if (mayNest && isAsciiText(bytes)) {
    const inner = decodeText(bytes.toString("latin1").trim(), false);
    return typeof inner === "string" ? `it is base64 of text that is not a certificate (${inner})` : inner;
  }
  return `it decodes to ${bytes.length} bytes starting with 0x${hex2(bytes[0]!)}, not a DER certificate (which starts with 0x30) nor a PEM`;
}

/** `%XX` → byte; `+` stays `+` (it is a base64 character, never a space here). undefined on a stray `%`. */
function percentDecode(text: string): string | undefined {
  let out = "";
  let from = 0;
  for (let i = text.indexOf("%"); i >= 0; i = text.indexOf("%", from)) {
    const hex = text.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
    out += text.slice(from, i) + String.fromCharCode(Number.parseInt(hex, 16));
    from = i + 3;
  }
  return out + text.slice(from);
}

interface PemBody {
  readonly base64: string;
  readonly error?: string;
}

/**
 * Strips `-----BEGIN CERTIFICATE-----` … `-----END CERTIFICATE-----` when present. Words in the
 * armour may be separated by a space or a `+` (form-encoded). Only white space may stand outside
 * the armour, and only one certificate may be inside: the header names one signing certificate.
 */
function unwrapPem(text: string): PemBody {
  const begin = text.indexOf("-----BEGIN");
  if (begin < 0) {
    return text.includes("-----END")
      ? { base64: "", error: "it has an END line but no BEGIN line" }
      : { base64: text };
  }
  if (text.slice(0, begin).trim() !== "")
    return { base64: "", error: "text stands before the PEM BEGIN line" };
  const labelEnd = text.indexOf("-----", begin + 10);
  if (labelEnd < 0) return { base64: "", error: "the PEM BEGIN line is not closed with '-----'" };
  const label = armourLabel(text.slice(begin + 10, labelEnd));
  if (!PEM_LABELS.has(label))
    return { base64: "", error: `the PEM block is '${printable(label)}', not 'CERTIFICATE'` };
  const bodyStart = labelEnd + 5;
  const end = text.indexOf("-----END", bodyStart);
  if (end < 0) return { base64: "", error: "the PEM has a BEGIN line but no END line" };
  const endLabelEnd = text.indexOf("-----", end + 8);
  if (endLabelEnd < 0 || armourLabel(text.slice(end + 8, endLabelEnd)) !== label) {
    return { base64: "", error: `the PEM END line does not match 'BEGIN ${label}'` };
  }
  const after = text.slice(endLabelEnd + 5);
  if (after.includes("-----BEGIN")) {
    return { base64: "", error: "it holds more than one PEM block; send only the signing certificate" };
  }
  if (after.trim() !== "") return { base64: "", error: "text follows the PEM END line" };
  return { base64: text.slice(bodyStart, end) };
}

function armourLabel(raw: string): string {
  return raw.replace(/[\s+]+/g, " ").trim();
}

/** Standard alphabet; padding optional but only at the end. Returns what is wrong, or undefined. */
function base64Problem(text: string): string | undefined {
  let dataLength = text.length;
  while (dataLength > 0 && text.charCodeAt(dataLength - 1) === 0x3d) dataLength--;
  const padding = text.length - dataLength;
  for (let i = 0; i < dataLength; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3d) return `'=' at offset ${i} comes before the end of the base64 text`;
    const isBase64 =
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x2b ||
      c === 0x2f;
    if (!isBase64) {
      return `character '${printable(text[i]!)}' (0x${hex2(c)}) at offset ${i} of the base64 text is not base64`;
    }
  }
  if (padding > 2 || (padding > 0 && text.length % 4 !== 0))
    return `the base64 text ends with ${padding} '=' that do not fit`;
  if (dataLength % 4 === 1)
    return `the base64 text has ${dataLength} characters, a length no base64 encoding has`;
  return undefined;
}

function derFraming(bytes: Buffer): Uint8Array | string {
  try {
    const node = readNode(bytes);
    if (node.end !== bytes.length) {
      return `its DER certificate ends at byte ${node.end} but ${bytes.length - node.end} more bytes follow`;
    }
  } catch (error) {
    if (error instanceof DerError) return `its DER is cut or malformed (${error.message})`;
    throw error;
  }
  // A copy with its own ArrayBuffer: a cache holding it must not pin Node's shared 8 KiB pool.
  return new Uint8Array(bytes);
}

function isAsciiText(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b > 0x7e || (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d)) return false;
  return true;
}

function printable(text: string): string {
  const short = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return short.replace(/[^\x20-\x7e]/g, (c) => `\\x${hex2(c.charCodeAt(0))}`);
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, "0");
}
