/**
 * SPEC 1.3: requests are UTF-8, and a character the downstream system cannot process (an emoji,
 * say) is answered with 400. This scanner validates UTF-8 incrementally across chunk boundaries
 * and applies a configurable code point policy, naming the character and its byte offset.
 */

import { isUtf8 } from "node:buffer";
import { type Rejection, reject } from "../errors.js";

export interface CharacterPolicy {
  /** Highest code point accepted (0x10FFFF accepts everything valid). */
  readonly maxCodePoint: number;
  /** Inclusive ranges refused in addition. */
  readonly blockedRanges: readonly (readonly [number, number])[];
}

export const PERMISSIVE_POLICY: CharacterPolicy = { maxCodePoint: 0x10ffff, blockedRanges: [] };

function describe(cp: number): string {
  const hex = cp.toString(16).toUpperCase().padStart(4, "0");
  const printable = cp >= 0x20 && cp !== 0x7f ? ` '${String.fromCodePoint(cp)}'` : "";
  return `U+${hex}${printable}`;
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

export function codePointRefused(cp: number, policy: CharacterPolicy): boolean {
  if (cp > policy.maxCodePoint) return true;
  for (const [from, to] of policy.blockedRanges) if (cp >= from && cp <= to) return true;
  return false;
}

/**
 * Where the chunk's last whole UTF-8 sequence ends: before a lead byte whose sequence runs past the
 * chunk's end, else the chunk's length (a malformed end is left for the validator to refuse).
 */
function wholeSequencesEnd(chunk: Uint8Array): number {
  const n = chunk.length;
  for (let j = n - 1; j >= 0 && j >= n - 4; j--) {
    const b = chunk[j]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return j + length > n ? j : n;
  }
  return n;
}

/** Per policy, the ASCII code points it refuses (1) as a table: looked up once per byte, not per range. */
const ASCII_REFUSED = new WeakMap<CharacterPolicy, Uint8Array>();
function asciiRefused(policy: CharacterPolicy): Uint8Array {
  let table = ASCII_REFUSED.get(policy);
  if (!table) {
    table = new Uint8Array(128);
    for (let cp = 0; cp < 128; cp++) table[cp] = codePointRefused(cp, policy) ? 1 : 0;
    ASCII_REFUSED.set(policy, table);
  }
  return table;
}

/** Streaming UTF-8 validator and policy check for one body. */
export class Utf8Scanner {
  private offset = 0;
  /** Bytes still expected for the current sequence, the code point so far, its start and minimum. */
  private need = 0;
  private cp = 0;
  private seqStart = 0;
  private min = 0;
  /** JSON escapes: 0 none, 1 after a backslash, 2..5 reading the four hex digits of \uXXXX. */
  private escape = 0;
  private escapeValue = 0;
  private escapeStart = 0;
  /** A high surrogate written as \uD8xx, waiting for its low half. */
  private highSurrogate = -1;
  private highStart = 0;

  /** The policy refuses something beyond invalid UTF-8 (else only UTF-8 itself is checked). */
  private readonly checkPolicy: boolean;
  private readonly refusedAscii: Uint8Array;

  constructor(
    private readonly policy: CharacterPolicy,
    private readonly where: string,
    /** Also read `\uXXXX` escapes, for JSON text (never for header values). */
    private readonly jsonEscapes = false,
  ) {
    this.checkPolicy = policy.maxCodePoint < 0x10ffff || policy.blockedRanges.length > 0;
    this.refusedAscii = asciiRefused(policy);
  }

  update(chunk: Uint8Array): Rejection | undefined {
    const { checkPolicy, refusedAscii } = this;
    // Without a policy only UTF-8 itself is checked: natively (simdutf) for the chunk's whole
    // sequences; the loop below then reads only a sequence the chunk's end cuts, or finds where an
    // invalid chunk goes wrong.
    let from = 0;
    if (!checkPolicy && this.need === 0) {
      const whole = wholeSequencesEnd(chunk);
      if (isUtf8(chunk.subarray(0, whole))) from = whole;
    }
    for (let i = from; i < chunk.length; i++) {
      const b = chunk[i]!;
      const at = this.offset + i;
      if (this.need === 0) {
        if (b < 0x80) {
          if (checkPolicy) {
            if (refusedAscii[b] === 1) return this.refuse(b, at);
            if (this.jsonEscapes && (b === 0x5c || this.escape !== 0) && this.jsonEscape(b, at)) {
              return this.refuseEscaped(at);
            }
          }
          continue;
        }
        this.escape = 0;
        this.seqStart = at;
        if (b >= 0xc2 && b <= 0xdf) {
          this.need = 1;
          this.cp = b & 0x1f;
          this.min = 0x80;
        } else if (b >= 0xe0 && b <= 0xef) {
          this.need = 2;
          this.cp = b & 0x0f;
          this.min = 0x800;
        } else if (b >= 0xf0 && b <= 0xf4) {
          this.need = 3;
          this.cp = b & 0x07;
          this.min = 0x10000;
        } else {
          return this.invalid(at, b);
        }
      } else {
        if ((b & 0xc0) !== 0x80) return this.invalid(this.seqStart, b);
        this.cp = (this.cp << 6) | (b & 0x3f);
        if (--this.need === 0) {
          const cp = this.cp;
          if (cp < this.min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return this.invalid(this.seqStart, b);
          if (checkPolicy && codePointRefused(cp, this.policy)) return this.refuse(cp, this.seqStart);
        }
      }
    }
    this.offset += chunk.length;
    return undefined;
  }

  private refusedEscape = 0;

  /**
   * Follows `\uXXXX` escapes in the JSON text: after parsing, `\ud83d\ude00` is U+1F600 just
   * as the raw bytes would be. Returns true when the escaped character is refused.
   */
  private jsonEscape(b: number, at: number): boolean {
    if (this.escape === 0) {
      this.escape = 1;
      this.escapeStart = at;
      return false;
    }
    if (this.escape === 1) {
      this.escape = b === 0x75 /* u */ ? 2 : 0; // any other escape (\\, \", \n …) is one character
      this.escapeValue = 0;
      return false;
    }
    const digit = hexValue(b);
    if (digit < 0) {
      this.escape = b === 0x5c ? 1 : 0;
      if (this.escape === 1) this.escapeStart = at;
      return false;
    }
    this.escapeValue = (this.escapeValue << 4) | digit;
    if (++this.escape < 6) return false;
    this.escape = 0;
    const unit = this.escapeValue;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      this.highSurrogate = unit;
      this.highStart = this.escapeStart;
      return false;
    }
    let cp = unit;
    let start = this.escapeStart;
    if (unit >= 0xdc00 && unit <= 0xdfff && this.highSurrogate >= 0) {
      cp = 0x10000 + ((this.highSurrogate - 0xd800) << 10) + (unit - 0xdc00);
      start = this.highStart;
    }
    this.highSurrogate = -1;
    if (!codePointRefused(cp, this.policy)) return false;
    this.refusedEscape = cp;
    this.escapeStart = start;
    return true;
  }

  private refuseEscaped(at: number): Rejection {
    const cp = this.refusedEscape;
    return reject(
      "FORMAT_ERROR",
      `${this.where} holds the character ${describe(cp)}, written as a JSON escape at byte ${this.escapeStart} (up to byte ${at}), which the bank's systems cannot process; remove or replace it (SPEC 1.3)`,
    );
  }

  finish(): Rejection | undefined {
    if (this.need !== 0) {
      return reject(
        "FORMAT_ERROR",
        `${this.where} ends inside a UTF-8 sequence that starts at byte ${this.seqStart}; send valid UTF-8 (SPEC 1.3)`,
      );
    }
    return undefined;
  }

  private invalid(at: number, b: number): Rejection {
    return reject(
      "FORMAT_ERROR",
      `${this.where} is not valid UTF-8 at byte ${at} (0x${b.toString(16).padStart(2, "0")}); requests must be UTF-8 (SPEC 1.3)`,
    );
  }

  private refuse(cp: number, at: number): Rejection {
    return reject(
      "FORMAT_ERROR",
      `${this.where} holds the character ${describe(cp)} at byte ${at}, which the bank's systems cannot process; remove or replace it (SPEC 1.3)`,
    );
  }
}

/**
 * Checks header values. Node hands header bytes over as Latin-1 code units, so the original
 * bytes are recovered with `latin1` before validating them as UTF-8.
 */
export function checkHeaderCharacters(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  policy: CharacterPolicy,
): Rejection | undefined {
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === "string") {
      if (isPlainAscii(value)) continue;
      const refusal = scanValue(name, value, policy);
      if (refusal) return refusal;
      continue;
    }
    for (const v of value) {
      if (isPlainAscii(v)) continue;
      const refusal = scanValue(name, v, policy);
      if (refusal) return refusal;
    }
  }
  return undefined;
}

function scanValue(name: string, value: string, policy: CharacterPolicy): Rejection | undefined {
  const scanner = new Utf8Scanner(policy, `header ${name}`);
  return scanner.update(Buffer.from(value, "latin1")) ?? scanner.finish();
}

// One native scan per header value; the byte-wise UTF-8 check runs only when this finds something.
const BEYOND_ASCII = /[^\x00-\x7e]/;

function isPlainAscii(value: string): boolean {
  return !BEYOND_ASCII.test(value);
}
