/**
 * A small, tolerant DER reader: enough ASN.1 to walk certificates, names and extensions
 * without a schema, so that real-world encodings a strict schema refuses (a bare statement
 * where a SEQUENCE OF was due, a serial with a sign byte) can still be read the way OpenSSL
 * reads them. Every read is bounds-checked and throws `DerError`, which callers turn into
 * a rejection; it never reads past the buffer.
 */

export class DerError extends Error {}

export interface DerNode {
  /** The whole identifier octet (class, constructed bit and tag number below 31). */
  readonly tag: number;
  /** Offset of the first content byte in `buf`. */
  readonly start: number;
  /** Offset one past the last content byte. */
  readonly end: number;
  /** Offset of the identifier octet: `buf.subarray(headerStart, end)` is the whole TLV. */
  readonly headerStart: number;
  readonly buf: Uint8Array;
}

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  T61_STRING: 0x14,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  VISIBLE_STRING: 0x1a,
  UNIVERSAL_STRING: 0x1c,
  BMP_STRING: 0x1e,
  NUMERIC_STRING: 0x12,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

export const MAX_DEPTH = 32;

/** Reads the TLV that starts at `offset`; its content must end at or before `limit`. */
export function readNode(buf: Uint8Array, offset = 0, limit = buf.length): DerNode {
  if (offset >= limit) throw new DerError(`expected an ASN.1 element at byte ${offset}, found the end`);
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError(`high-tag-number form at byte ${offset} is not supported`);
  let pos = offset + 1;
  if (pos >= limit) throw new DerError(`length missing at byte ${pos}`);
  let length = buf[pos++]!;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0) throw new DerError(`indefinite length at byte ${pos - 1} is not DER`);
    if (count > 4) throw new DerError(`length of ${count} bytes at byte ${pos - 1} is too long`);
    if (pos + count > limit) throw new DerError(`length runs past the end at byte ${pos}`);
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + buf[pos++]!;
  }
  const end = pos + length;
  if (end > limit)
    throw new DerError(`element at byte ${offset} claims ${length} bytes, only ${limit - pos} remain`);
  return { tag, start: pos, end, headerStart: offset, buf };
}

/** The children of a constructed node, in order. */
export function children(node: DerNode): DerNode[] {
  const out: DerNode[] = [];
  let pos = node.start;
  while (pos < node.end) {
    const child = readNode(node.buf, pos, node.end);
    out.push(child);
    pos = child.end;
  }
  return out;
}

export function expectTag(node: DerNode, tag: number, what: string): DerNode {
  if (node.tag !== tag) {
    throw new DerError(
      `${what}: expected tag 0x${hex2(tag)}, found 0x${hex2(node.tag)} at byte ${node.headerStart}`,
    );
  }
  return node;
}

export function content(node: DerNode): Uint8Array {
  return node.buf.subarray(node.start, node.end);
}

export function whole(node: DerNode): Uint8Array {
  return node.buf.subarray(node.headerStart, node.end);
}

/** The widest arc read: 19 octets of 7 bits hold a 128-bit UUID arc (2.25.x), more is only a cost. */
const MAX_ARC_OCTETS = 19;

/**
 * Dotted form of an OBJECT IDENTIFIER. Refuses what DER and OpenSSL refuse (an arc with leading
 * 0x80 octets, which would give one OID two encodings) and arcs wider than 128 bits, whose
 * arithmetic costs grow with the square of their length. Arcs below 2^46 stay plain numbers.
 */
export function readOid(node: DerNode): string {
  expectTag(node, TAG.OID, "OBJECT IDENTIFIER");
  const bytes = content(node);
  if (bytes.length === 0) throw new DerError("empty OBJECT IDENTIFIER");
  const arcs: string[] = [];
  let small = 0;
  let big: bigint | undefined;
  let arcStart = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (i === arcStart && b === 0x80) {
      throw new DerError(
        `OBJECT IDENTIFIER at byte ${node.headerStart} has an arc with a leading 0x80 octet`,
      );
    }
    if (i - arcStart >= MAX_ARC_OCTETS) {
      throw new DerError(`OBJECT IDENTIFIER at byte ${node.headerStart} has an arc wider than 128 bits`);
    }
    if (big !== undefined) big = (big << 7n) | BigInt(b & 0x7f);
    else if (small < 2 ** 46) small = small * 128 + (b & 0x7f);
    else big = (BigInt(small) << 7n) | BigInt(b & 0x7f);
    if (b & 0x80) {
      if (i === bytes.length - 1) throw new DerError("OBJECT IDENTIFIER ends inside an arc");
      continue;
    }
    if (arcs.length === 0) {
      // The first octets hold two arcs: 40 * first + second, the first being 0, 1 or 2.
      if (big === undefined) {
        const first = small < 40 ? 0 : small < 80 ? 1 : 2;
        arcs.push(String(first), String(small - first * 40));
      } else {
        arcs.push("2", (big - 80n).toString());
      }
    } else {
      arcs.push(big === undefined ? String(small) : big.toString());
    }
    small = 0;
    big = undefined;
    arcStart = i + 1;
  }
  return arcs.join(".");
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A lone surrogate: not a character, and OpenSSL refuses names holding one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Decodes any of the X.500 string types to a JavaScript string, the way OpenSSL shows it. */
export function readString(node: DerNode): string {
  const bytes = content(node);
  switch (node.tag) {
    case TAG.UTF8_STRING:
      // Strict, as OpenSSL: a lenient decode would map different bytes to the same U+FFFD text.
      try {
        return UTF8.decode(bytes);
      } catch {
        throw new DerError(`UTF8String at byte ${node.headerStart} is not valid UTF-8`);
      }
    case TAG.BMP_STRING: {
      if (bytes.length % 2 !== 0) throw new DerError("BMPString of odd length");
      const swapped = Buffer.from(bytes);
      swapped.swap16();
      const text = swapped.toString("utf16le");
      if (LONE_SURROGATE.test(text))
        throw new DerError(`BMPString at byte ${node.headerStart} holds a lone surrogate`);
      return text;
    }
    case TAG.UNIVERSAL_STRING: {
      if (bytes.length % 4 !== 0) throw new DerError("UniversalString length not a multiple of 4");
      let out = "";
      for (let i = 0; i < bytes.length; i += 4) {
        const cp = ((bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!) >>> 0;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
          throw new DerError(
            `UniversalString holds U+${cp.toString(16).toUpperCase()}, which is not a character`,
          );
        }
        out += String.fromCodePoint(cp);
      }
      return out;
    }
    case TAG.PRINTABLE_STRING:
    case TAG.IA5_STRING:
    case TAG.VISIBLE_STRING:
    case TAG.T61_STRING:
    case TAG.NUMERIC_STRING:
      // T61 is read as Latin-1, as OpenSSL does.
      return Buffer.from(bytes).toString("latin1");
    default:
      throw new DerError(`tag 0x${hex2(node.tag)} is not a string type`);
  }
}

export function isStringTag(tag: number): boolean {
  return (
    tag === TAG.UTF8_STRING ||
    tag === TAG.PRINTABLE_STRING ||
    tag === TAG.IA5_STRING ||
    tag === TAG.T61_STRING ||
    tag === TAG.VISIBLE_STRING ||
    tag === TAG.BMP_STRING ||
    tag === TAG.UNIVERSAL_STRING ||
    tag === TAG.NUMERIC_STRING
  );
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, "0");
}

// ---------------------------------------------------------------------------------------------
// Typed reads added for certificate extraction (src/eidas). Same contract: bounds-checked, throw DerError.

const STRING_TYPE_NAMES: Readonly<Record<number, string>> = {
  [TAG.UTF8_STRING]: "UTF8String",
  [TAG.PRINTABLE_STRING]: "PrintableString",
  [TAG.IA5_STRING]: "IA5String",
  [TAG.T61_STRING]: "T61String",
  [TAG.VISIBLE_STRING]: "VisibleString",
  [TAG.BMP_STRING]: "BMPString",
  [TAG.UNIVERSAL_STRING]: "UniversalString",
  [TAG.NUMERIC_STRING]: "NumericString",
};

/** The ASN.1 name of a string tag (`UTF8String`, `PrintableString`, …), or undefined for other tags. */
export function stringTypeName(tag: number): string | undefined {
  return STRING_TYPE_NAMES[tag];
}

/** A BOOLEAN; any non-zero octet is TRUE, as BER (and OpenSSL) read it, although DER wants 0xFF. */
export function readBoolean(node: DerNode): boolean {
  expectTag(node, TAG.BOOLEAN, "BOOLEAN");
  if (node.end - node.start !== 1)
    throw new DerError(`BOOLEAN at byte ${node.headerStart} is not one byte long`);
  return node.buf[node.start] !== 0;
}

export interface BitString {
  /** Unused bits in the last byte (0–7). */
  readonly unusedBits: number;
  readonly bytes: Uint8Array;
}

export function readBitString(node: DerNode): BitString {
  expectTag(node, TAG.BIT_STRING, "BIT STRING");
  if (node.end === node.start)
    throw new DerError(`BIT STRING at byte ${node.headerStart} has no unused-bits octet`);
  const unusedBits = node.buf[node.start]!;
  if (unusedBits > 7)
    throw new DerError(`BIT STRING at byte ${node.headerStart} claims ${unusedBits} unused bits`);
  const bytes = node.buf.subarray(node.start + 1, node.end);
  if (bytes.length === 0 && unusedBits !== 0) throw new DerError("empty BIT STRING with unused bits");
  return { unusedBits, bytes };
}

/** A non-negative INTEGER that fits a JavaScript number exactly (lengths, counters, pathLen). */
export function readSmallInteger(node: DerNode, what: string): number {
  const bytes = content(expectTag(node, TAG.INTEGER, what));
  if (bytes.length === 0) throw new DerError(`${what}: empty INTEGER`);
  if (bytes[0]! & 0x80) throw new DerError(`${what}: negative INTEGER`);
  let value = 0;
  for (const b of bytes) {
    value = value * 256 + b;
    if (value > Number.MAX_SAFE_INTEGER) throw new DerError(`${what}: INTEGER too large`);
  }
  return value;
}

const UTC_TIME = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?(Z|[+-]\d{4})$/;
const GENERALIZED_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?(?:[.,](\d{1,9}))?(Z|[+-]\d{4})$/;

/**
 * A UTCTime or GeneralizedTime as a Date. DER wants seconds and `Z`; like OpenSSL, this also
 * accepts the BER forms seen in old certificates (no seconds, an offset, fractional seconds),
 * but refuses a time without a zone and any field out of range.
 */
export function readTime(node: DerNode): Date {
  const text = Buffer.from(content(node)).toString("latin1");
  let year: number;
  let rest: (string | undefined)[];
  let fraction: string | undefined;
  let zone: string;
  if (node.tag === TAG.UTC_TIME) {
    const m = UTC_TIME.exec(text);
    if (!m) throw new DerError(`UTCTime '${printable(text)}' is not YYMMDDHHMM[SS]Z`);
    const yy = Number(m[1]);
    year = yy >= 50 ? 1900 + yy : 2000 + yy; // RFC 5280 4.1.2.5.1
    rest = m.slice(2, 7);
    zone = m[7]!;
  } else if (node.tag === TAG.GENERALIZED_TIME) {
    const m = GENERALIZED_TIME.exec(text);
    if (!m) throw new DerError(`GeneralizedTime '${printable(text)}' is not YYYYMMDDHHMM[SS[.f]]Z`);
    year = Number(m[1]);
    rest = m.slice(2, 7);
    fraction = m[7];
    zone = m[8]!;
  } else {
    throw new DerError(
      `expected a UTCTime or GeneralizedTime at byte ${node.headerStart}, found tag 0x${hex2(node.tag)}`,
    );
  }
  const [month, day, hour, minute, second] = rest.map((f) => Number(f ?? "0")) as [
    number,
    number,
    number,
    number,
    number,
  ];
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    throw new DerError(`time '${printable(text)}' has a field out of range`);
  }
  let offsetMinutes = 0;
  if (zone !== "Z") {
    const hh = Number(zone.slice(1, 3));
    const mm = Number(zone.slice(3, 5));
    if (hh > 23 || mm > 59) throw new DerError(`time '${printable(text)}' has an offset out of range`);
    offsetMinutes = (zone[0] === "-" ? -1 : 1) * (hh * 60 + mm);
  }
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to the 1900s.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offsetMinutes, second, Number(`${fraction ?? ""}000`.slice(0, 3)));
  return date;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Shows attacker-controlled text in an error message: short, control characters escaped. */
function printable(text: string): string {
  const short = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return short.replace(/[\u0000-\u001f\u007f-\u00ff]/g, (c) => `\\x${hex2(c.charCodeAt(0))}`);
}
