/**
 * Distinguished names: read from DER, written as RFC 2253 (the way OpenSSL's `-nameopt RFC2253`
 * writes them), read back from the many string forms real TPPs and banks produce, and compared
 * after normalisation.
 */

import {
  children,
  DerError,
  type DerNode,
  expectTag,
  isStringTag,
  readNode,
  readOid,
  readString,
  TAG,
  whole,
} from "../asn1/der.js";
import { encodeUtf8String } from "../asn1/writer.js";
import { NAME_TO_OID, OID_TO_NAME } from "./attributes.js";

export interface Attribute {
  readonly oid: string;
  /** The decoded value, or `undefined` when the value is not a string type (then see `der`). */
  readonly value: string | undefined;
  /** The whole DER encoding of the value, for types that are not strings. */
  readonly der?: Uint8Array;
}

/** One relative distinguished name: usually one attribute, several when multi-valued (`+`). */
export type Rdn = readonly Attribute[];

/** A name in DER order (the order of the RDNSequence, which RFC 2253 writes in reverse). */
export type DistinguishedName = readonly Rdn[];

/** Reads an X.501 Name (SEQUENCE OF SET OF AttributeTypeAndValue). */
export function readName(node: DerNode): DistinguishedName {
  expectTag(node, TAG.SEQUENCE, "Name");
  return children(node).map((set) => {
    expectTag(set, TAG.SET, "RelativeDistinguishedName");
    const avas = children(set);
    // SET SIZE (1..MAX): an empty RDN would print as an empty part between two commas.
    if (avas.length === 0)
      throw new DerError(`RelativeDistinguishedName at byte ${set.headerStart} is empty`);
    return avas.map((ava) => {
      const [typeNode, valueNode, extra] = children(expectTag(ava, TAG.SEQUENCE, "AttributeTypeAndValue"));
      if (!typeNode || !valueNode || extra)
        throw new DerError("AttributeTypeAndValue must hold a type and a value");
      const oid = readOid(typeNode);
      if (!isStringTag(valueNode.tag)) return { oid, value: undefined, der: whole(valueNode) };
      // Types without a name are written as #<BER> (RFC 2253 2.4): keep the encoding for that.
      if (OID_TO_NAME[oid] === undefined) return { oid, value: readString(valueNode), der: whole(valueNode) };
      return { oid, value: readString(valueNode) };
    });
  });
}

export function readNameFromDer(der: Uint8Array): DistinguishedName {
  return readName(readNode(der));
}

// ---------------------------------------------------------------------------------------------
// Writing RFC 2253

const HEX = "0123456789ABCDEF";

/** Escapes an attribute value as RFC 2253 says, with control characters as `\XX` like OpenSSL. */
function escapeValue(value: string): string {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) {
      out += "\\" + HEX[code >> 4] + HEX[code & 15];
    } else if (
      ch === "," ||
      ch === "+" ||
      ch === '"' ||
      ch === "\\" ||
      ch === "<" ||
      ch === ">" ||
      ch === ";" ||
      (ch === "#" && i === 0) ||
      (ch === " " && (i === 0 || i === value.length - 1))
    ) {
      out += "\\" + ch;
    } else {
      out += ch;
    }
  }
  return out;
}

function formatAttribute(attr: Attribute): string {
  const name = OID_TO_NAME[attr.oid];
  if (name && attr.value !== undefined) return `${name}=${escapeValue(attr.value)}`;
  // Unknown types and non-string values: dotted OID and the hex of the value's BER, per RFC 2253
  // (a string without its original encoding is written as a UTF8String).
  const der = attr.der ?? encodeUtf8String(attr.value ?? "");
  return `${name ?? attr.oid}=#${Buffer.from(der).toString("hex")}`;
}

/**
 * RFC 2253 form: RDNs in reverse DER order, joined by `,`; multi-valued RDNs joined by `+`.
 * `separator` `, ` gives the spelling Java's X500Principal prints, which some banks compare as text.
 */
export function formatRfc2253(name: DistinguishedName, separator: "," | ", " = ","): string {
  const parts: string[] = [];
  for (let i = name.length - 1; i >= 0; i--) parts.push(name[i]!.map(formatAttribute).join("+"));
  return parts.join(separator);
}

// ---------------------------------------------------------------------------------------------
// Reading DN strings

export class DnSyntaxError extends Error {}

/** Percent-decodes `%XX` sequences (some signers URL-encode the CA part); anything else stays as it is. */
function percentDecode(text: string): string {
  if (!text.includes("%")) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (
      ch === 0x25 &&
      i + 2 < text.length &&
      isHex(text.charCodeAt(i + 1)) &&
      isHex(text.charCodeAt(i + 2))
    ) {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      const chunk = String.fromCodePoint(text.codePointAt(i)!);
      for (const b of Buffer.from(chunk, "utf8")) bytes.push(b);
      i += chunk.length - 1;
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

function resolveType(raw: string): string {
  const type = raw.trim();
  if (type.length === 0) throw new DnSyntaxError("an attribute has no type before '='");
  const upper = type.toUpperCase();
  const dotted = upper.startsWith("OID.") ? type.slice(4) : type;
  if (/^[0-9]+(\.[0-9]+)+$/.test(dotted)) return dotted;
  const oid = NAME_TO_OID[upper];
  if (!oid) throw new DnSyntaxError(`unknown attribute type '${type}'`);
  return oid;
}

/** Decodes `#hex` (the BER of the value) to the string inside, or keeps the bytes. */
function decodeHexValue(hex: string): Attribute["value"] | Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new DnSyntaxError(`'#${hex}' is not hex`);
  const bytes = Buffer.from(hex, "hex");
  try {
    const node = readNode(bytes);
    if (node.end === bytes.length && isStringTag(node.tag)) return readString(node);
  } catch {
    // Not a string TLV: compare the bytes as they are.
  }
  return bytes;
}

/**
 * Parses a DN string in RFC 2253 / RFC 4514 form and the variants seen in keyIds: `OID.x.y=`,
 * `x.y=#hex`, `%20` for spaces, spaces around separators, `;` as separator, quoted values.
 * Returns RDNs in the order written (RFC 2253 order, the reverse of DER).
 */
export function parseDnString(input: string, options: { percentDecode?: boolean } = {}): Attribute[][] {
  const text = options.percentDecode ? percentDecode(input) : input;
  const rdns: Attribute[][] = [];
  let current: Attribute[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    // type
    const eq = text.indexOf("=", i);
    if (eq < 0) throw new DnSyntaxError(`'${text.slice(i).trim()}' has no '='`);
    const oid = resolveType(text.slice(i, eq));
    i = eq + 1;
    while (i < n && text[i] === " ") i++;
    // value
    let value: string | undefined;
    let der: Uint8Array | undefined;
    if (text[i] === "#") {
      let j = i + 1;
      while (j < n && isHex(text.charCodeAt(j))) j++;
      const decoded = decodeHexValue(text.slice(i + 1, j));
      if (typeof decoded === "string") value = decoded;
      else der = decoded as Uint8Array;
      i = j;
    } else if (text[i] === '"') {
      let j = i + 1;
      let out = "";
      while (j < n && text[j] !== '"') {
        if (text[j] === "\\" && j + 1 < n) j++;
        out += text[j];
        j++;
      }
      if (j >= n) throw new DnSyntaxError("a quoted value is not closed");
      value = out;
      i = j + 1;
    } else {
      const bytes: number[] = [];
      while (i < n) {
        const ch = text[i]!;
        if (ch === "," || ch === "+" || ch === ";") break;
        if (ch === "\\") {
          if (i + 1 >= n) throw new DnSyntaxError("the DN ends with a lone backslash");
          if (i + 2 < n && isHex(text.charCodeAt(i + 1)) && isHex(text.charCodeAt(i + 2))) {
            bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
            i += 3;
          } else {
            for (const b of Buffer.from(text[i + 1]!, "utf8")) bytes.push(b);
            i += 2;
          }
          continue;
        }
        // Consume a whole code point, so surrogate pairs stay intact.
        const cp = text.codePointAt(i)!;
        const chunk = String.fromCodePoint(cp);
        for (const b of Buffer.from(chunk, "utf8")) bytes.push(b);
        i += chunk.length;
      }
      value = Buffer.from(bytes).toString("utf8");
    }
    current.push(der ? { oid, value: undefined, der } : { oid, value });
    while (i < n && text[i] === " ") i++;
    if (i >= n) break;
    const sep = text[i]!;
    i++;
    if (sep === "+") continue;
    if (sep === "," || sep === ";") {
      rdns.push(current);
      current = [];
      continue;
    }
    throw new DnSyntaxError(`unexpected '${sep}' after a value`);
  }
  if (current.length > 0) rdns.push(current);
  if (rdns.length === 0) throw new DnSyntaxError("the DN is empty");
  return rdns;
}

// ---------------------------------------------------------------------------------------------
// Comparing

/**
 * Folds a value for comparison: control characters and runs of white space become one space,
 * the ends are trimmed, letters compared without case (X.520 caseIgnoreMatch, RFC 4518).
 */
export function foldValue(value: string): string {
  return value
    .replace(/[\s\u0000-\u001f\u007f]+/g, " ")
    .trim()
    .normalize("NFKC")
    .toLowerCase();
}

function attributeKey(attr: Attribute): string {
  const v =
    attr.value !== undefined ? foldValue(attr.value) : `#${Buffer.from(attr.der ?? []).toString("hex")}`;
  return `${attr.oid}=${v}`;
}

function rdnKey(rdn: Rdn): string {
  return rdn.map(attributeKey).sort().join("+");
}

/** A canonical string of a DN in RFC 2253 order, for equality tests and cache keys. */
export function canonicalKey(rdnsInRfc2253Order: readonly Rdn[]): string {
  return rdnsInRfc2253Order.map(rdnKey).join(",");
}

/** The RFC 2253-ordered canonical key of a name read from DER. */
export function canonicalKeyOfName(name: DistinguishedName): string {
  return canonicalKey([...name].reverse());
}

/**
 * True when a DN string names the same entity as `name` (read from DER), whether the string
 * lists RDNs in RFC 2253 order or in DER order (some Java and .NET signers do the latter).
 */
export function dnStringMatches(dn: string, name: DistinguishedName): boolean {
  const inRfc2253Order = canonicalKeyOfName(name);
  const inDerOrder = canonicalKey(name);
  const matches = (percentDecode: boolean) => {
    try {
      const given = canonicalKey(parseDnString(dn, { percentDecode }));
      return given === inRfc2253Order || given === inDerOrder;
    } catch {
      return false;
    }
  };
  // As written first; then with %XX decoded, for signers that URL-encode the CA part (%20).
  return matches(false) || (dn.includes("%") && matches(true));
}

// ---------------------------------------------------------------------------------------------
// Looking up attributes

/**
 * The string value of the first attribute of type `oid`, in DER order, or undefined. This is the
 * one OpenSSL's X509_NAME_get_index_by_NID finds first. undefined too when that one is not a string.
 */
export function firstAttributeValue(name: DistinguishedName, oid: string): string | undefined {
  for (const rdn of name) for (const attr of rdn) if (attr.oid === oid) return attr.value;
  return undefined;
}
