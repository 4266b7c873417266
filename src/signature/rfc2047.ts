/**
 * RFC 2047 encoded words (SPEC 5.7): a Signature header holding non-ASCII characters is sent as
 * `=?utf-8?B?…?=` or `=?iso-8859-1?Q?…?=`. Decoding happens before the header is parsed.
 */

import { isUtf8 } from "node:buffer";
import { type Rejection, reject } from "../errors.js";
import { isBase64 } from "./base64.js";

const ENCODED_WORD = /^=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=$/;

const CHARSETS: Record<string, BufferEncoding> = {
  "utf-8": "utf8",
  utf8: "utf8",
  "iso-8859-1": "latin1",
  "iso8859-1": "latin1",
  latin1: "latin1",
  "us-ascii": "latin1",
};

/** True when the value is (or starts like) an RFC 2047 encoded word. */
export function looksEncoded(value: string): boolean {
  return value.charCodeAt(0) === 0x3d /* = */ && value.charCodeAt(1) === 0x3f; /* ? */
}

function decodeQ(text: string): Buffer | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "_") bytes.push(0x20);
    else if (ch === "=") {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      const code = ch.charCodeAt(0);
      if (code > 0x7e || code < 0x21) return undefined;
      bytes.push(code);
    }
  }
  return Buffer.from(bytes);
}

/**
 * Decodes a header that consists of one or more encoded words separated by white space
 * (the white space between adjacent encoded words is dropped, RFC 2047 section 6.2).
 * A value that is not encoded is returned as it is.
 */
export function decodeEncodedWords(value: string, headerName = "Signature"): string | Rejection {
  const trimmed = value.trim();
  if (!looksEncoded(trimmed)) return value;
  let out = "";
  for (const word of trimmed.split(/\s+/)) {
    const m = ENCODED_WORD.exec(word);
    if (!m) {
      return reject(
        "SIGNATURE_INVALID",
        `${headerName} header starts like an RFC 2047 encoded word but '${truncate(word)}' is not one; expected =?utf-8?B?<base64>?=`,
      );
    }
    const charset = CHARSETS[m[1]!.toLowerCase()];
    if (!charset) {
      return reject(
        "SIGNATURE_INVALID",
        `${headerName} header is RFC 2047 encoded in charset '${m[1]}'; only utf-8 and iso-8859-1 are accepted`,
      );
    }
    let bytes: Buffer | undefined;
    if (m[2]!.toUpperCase() === "B") {
      bytes = isBase64(m[3]!) ? Buffer.from(m[3]!, "base64") : undefined;
    } else {
      bytes = decodeQ(m[3]!);
    }
    if (!bytes) {
      return reject(
        "SIGNATURE_INVALID",
        `${headerName} header: the RFC 2047 encoded word '${truncate(word)}' has invalid ${m[2]!.toUpperCase() === "B" ? "base64" : "Q-encoding"}`,
      );
    }
    if (charset === "utf8" && !isUtf8(bytes)) {
      return reject(
        "SIGNATURE_INVALID",
        `${headerName} header: the RFC 2047 encoded word is not valid UTF-8`,
      );
    }
    out += bytes.toString(charset);
  }
  return out;
}

/** Encodes a header value as one UTF-8 B encoded word when it holds anything beyond printable ASCII. */
export function encodeIfNeeded(value: string): string {
  // Plain text that starts like an encoded word is encoded too, or it would be decoded on arrival.
  if (/^[\x20-\x7e]*$/.test(value) && !looksEncoded(value)) return value;
  return `=?utf-8?B?${Buffer.from(value, "utf8").toString("base64")}?=`;
}

function truncate(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
