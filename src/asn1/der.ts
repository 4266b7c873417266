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

export function readOid(node: DerNode): string {
  expectTag(node, TAG.OID, "OBJECT IDENTIFIER");
  const bytes = content(node);
  if (bytes.length === 0) throw new DerError("empty OBJECT IDENTIFIER");
  const arcs: string[] = [];
  let value = 0n;
  let first = true;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    value = (value << 7n) | BigInt(b & 0x7f);
    if (b & 0x80) {
      if (i === bytes.length - 1) throw new DerError("OBJECT IDENTIFIER ends inside an arc");
      continue;
    }
    if (first) {
      const firstArc = value < 40n ? 0n : value < 80n ? 1n : 2n;
      arcs.push(firstArc.toString(), (value - firstArc * 40n).toString());
      first = false;
    } else {
      arcs.push(value.toString());
    }
    value = 0n;
  }
  return arcs.join(".");
}

/** Decodes any of the X.500 string types to a JavaScript string, the way OpenSSL shows it. */
export function readString(node: DerNode): string {
  const bytes = content(node);
  switch (node.tag) {
    case TAG.UTF8_STRING:
      return Buffer.from(bytes).toString("utf8");
    case TAG.BMP_STRING: {
      if (bytes.length % 2 !== 0) throw new DerError("BMPString of odd length");
      const swapped = Buffer.from(bytes);
      swapped.swap16();
      return swapped.toString("utf16le");
    }
    case TAG.UNIVERSAL_STRING: {
      if (bytes.length % 4 !== 0) throw new DerError("UniversalString length not a multiple of 4");
      let out = "";
      for (let i = 0; i < bytes.length; i += 4) {
        const cp = ((bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!) >>> 0;
        if (cp > 0x10ffff) throw new DerError("UniversalString holds a code point above U+10FFFF");
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
