/**
 * A small DER writer, the mirror of der.ts: enough to build certificate extensions (PSD2
 * QCStatements for dev certificates) and hand-made encodings in tests. Each function returns the
 * complete TLV. Invalid input is a programming error and throws a RangeError.
 */

import { TAG } from "./der.js";

function lengthOctets(length: number): number[] {
  if (length < 0x80) return [length];
  const out: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) out.unshift(n % 256);
  return [0x80 | out.length, ...out];
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/** Any TLV with a low tag number (the identifier octet given whole, as in der.ts's `TAG`). */
export function encodeTlv(tag: number, content: Uint8Array): Uint8Array {
  if (!Number.isInteger(tag) || tag < 0 || tag > 0xff || (tag & 0x1f) === 0x1f) {
    throw new RangeError(`tag ${tag} is not a low-tag-number identifier octet`);
  }
  const header = [tag, ...lengthOctets(content.length)];
  const out = new Uint8Array(header.length + content.length);
  out.set(header, 0);
  out.set(content, header.length);
  return out;
}

export function encodeSequence(...items: readonly Uint8Array[]): Uint8Array {
  return encodeTlv(TAG.SEQUENCE, concat(items));
}

/** A SET OF: DER sorts the encodings of the elements (X.690 11.6). */
export function encodeSetOf(...items: readonly Uint8Array[]): Uint8Array {
  const sorted = [...items].sort((a, b) => Buffer.compare(a, b));
  return encodeTlv(TAG.SET, concat(sorted));
}

/** A context-specific tag `[n]`; constructed for EXPLICIT tagging or IMPLICIT tagging of a constructed type. */
export function encodeContext(tagNumber: number, content: Uint8Array, constructed: boolean): Uint8Array {
  if (!Number.isInteger(tagNumber) || tagNumber < 0 || tagNumber > 30) {
    throw new RangeError(`context tag [${tagNumber}] is out of range`);
  }
  return encodeTlv(0x80 | (constructed ? 0x20 : 0) | tagNumber, content);
}

export function encodeOid(dotted: string): Uint8Array {
  if (!/^[0-2](\.(0|[1-9][0-9]*))+$/.test(dotted)) throw new RangeError(`'${dotted}' is not a dotted OID`);
  const arcs = dotted.split(".").map(BigInt);
  const [first, second] = arcs as [bigint, bigint];
  if (first < 2n && second > 39n) throw new RangeError(`OID ${dotted}: second arc must be below 40`);
  const bytes: number[] = [];
  for (const arc of [first * 40n + second, ...arcs.slice(2)]) {
    const group: number[] = [Number(arc & 0x7fn)];
    for (let v = arc >> 7n; v > 0n; v >>= 7n) group.unshift(Number(v & 0x7fn) | 0x80);
    bytes.push(...group);
  }
  return encodeTlv(TAG.OID, Uint8Array.from(bytes));
}

/** The minimal two's-complement encoding X.690 8.3 requires (a 00 sign byte only when needed). */
export function encodeInteger(value: bigint | number): Uint8Array {
  const v = BigInt(value);
  let width = 1;
  while (v < -(1n << BigInt(width * 8 - 1)) || v >= 1n << BigInt(width * 8 - 1)) width++;
  const unsigned = v < 0n ? (1n << BigInt(width * 8)) + v : v;
  const hex = unsigned.toString(16).padStart(width * 2, "0");
  return encodeTlv(TAG.INTEGER, Uint8Array.from(Buffer.from(hex, "hex")));
}

export function encodeBoolean(value: boolean): Uint8Array {
  return encodeTlv(TAG.BOOLEAN, Uint8Array.of(value ? 0xff : 0x00));
}

export function encodeNull(): Uint8Array {
  return encodeTlv(TAG.NULL, new Uint8Array(0));
}

export function encodeOctetString(bytes: Uint8Array): Uint8Array {
  return encodeTlv(TAG.OCTET_STRING, bytes);
}

export function encodeBitString(bytes: Uint8Array, unusedBits = 0): Uint8Array {
  if (
    !Number.isInteger(unusedBits) ||
    unusedBits < 0 ||
    unusedBits > 7 ||
    (bytes.length === 0 && unusedBits)
  ) {
    throw new RangeError(`${unusedBits} unused bits do not fit a BIT STRING of ${bytes.length} bytes`);
  }
  return encodeTlv(TAG.BIT_STRING, concat([Uint8Array.of(unusedBits), bytes]));
}

export function encodeUtf8String(text: string): Uint8Array {
  return encodeTlv(TAG.UTF8_STRING, Uint8Array.from(Buffer.from(text, "utf8")));
}

/** PrintableString: letters, digits, space and `'()+,-./:=?` only. */
export function encodePrintableString(text: string): Uint8Array {
  if (!/^[A-Za-z0-9 '()+,\-./:=?]*$/.test(text)) {
    throw new RangeError(`'${text}' has characters a PrintableString cannot hold`);
  }
  return encodeTlv(TAG.PRINTABLE_STRING, Uint8Array.from(Buffer.from(text, "latin1")));
}

export function encodeIa5String(text: string): Uint8Array {
  if (!/^[\u0000-\u007f]*$/.test(text)) throw new RangeError(`'${text}' is not ASCII (IA5String)`);
  return encodeTlv(TAG.IA5_STRING, Uint8Array.from(Buffer.from(text, "latin1")));
}
