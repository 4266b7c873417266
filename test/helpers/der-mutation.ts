/**
 * Structure-aware mutation of DER for property tests: a real certificate is read into a TLV tree
 * (OCTET STRING and BIT STRING contents that hold DER — extension values, the public key — are
 * opened too), one element is changed (tag, content, length form, removed, duplicated, swapped,
 * replaced by an awkward encoding) and the tree is written back. Byte flips mostly break the
 * outer framing; these reach the readers behind it. Independent of src/asn1 on purpose, so that
 * a bug in the reader under test cannot hide in the mutator.
 */

import fc from "fast-check";

export interface Tlv {
  tag: number;
  /** Set for constructed elements and for OCTET/BIT STRINGs that hold DER. */
  children?: Tlv[];
  /** The content of a primitive element. */
  content?: Uint8Array;
  /** A BIT STRING that holds DER: the unused-bits octet that comes before its children. */
  bitStringPrefix?: boolean;
  length?: LengthForm;
  /** Written as it is, instead of tag, length and content: for bytes that are not one TLV. */
  raw?: Uint8Array;
}

/** How the length octets are written; minimal definite form unless set. */
export type LengthForm =
  | { readonly kind: "nonMinimal"; readonly extraOctets: number }
  | { readonly kind: "indefinite" }
  | { readonly kind: "delta"; readonly delta: number }
  | { readonly kind: "huge" }
  | { readonly kind: "tooManyOctets" };

function readTlvs(bytes: Uint8Array, depth: number): Tlv[] | undefined {
  const out: Tlv[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const tag = bytes[pos]!;
    if ((tag & 0x1f) === 0x1f || pos + 1 >= bytes.length) return undefined;
    let length = bytes[pos + 1]!;
    let start = pos + 2;
    if (length & 0x80) {
      const count = length & 0x7f;
      if (count === 0 || count > 3 || start + count > bytes.length) return undefined;
      length = 0;
      for (let i = 0; i < count; i++) length = length * 256 + bytes[start + i]!;
      start += count;
    }
    const end = start + length;
    if (end > bytes.length) return undefined;
    out.push(toTlv(tag, bytes.subarray(start, end), depth));
    pos = end;
  }
  return out;
}

function toTlv(tag: number, content: Uint8Array, depth: number): Tlv {
  if (depth < 24) {
    if (tag & 0x20) {
      const children = readTlvs(content, depth + 1);
      if (children) return { tag, children };
    } else if (tag === 0x04 && content[0] === 0x30) {
      const children = readTlvs(content, depth + 1);
      if (children?.length === 1) return { tag, children };
    } else if (tag === 0x03 && content[0] === 0x00 && content[1] === 0x30) {
      const children = readTlvs(content.subarray(1), depth + 1);
      if (children?.length === 1) return { tag, children, bitStringPrefix: true };
    }
  }
  return { tag, content: Uint8Array.from(content) };
}

/** Reads one DER element into a tree; throws when the bytes are not one well-framed element. */
export function parseTlv(der: Uint8Array): Tlv {
  const [root, extra] = readTlvs(der, 0) ?? [];
  if (!root || extra) throw new Error("not one DER element");
  return root;
}

function lengthOctets(length: number): number[] {
  if (length < 0x80) return [length];
  const out: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) out.unshift(n % 256);
  return [0x80 | out.length, ...out];
}

export function encodeTlvTree(node: Tlv): Uint8Array {
  if (node.raw) return node.raw;
  const inner = node.children
    ? Buffer.concat([
        ...(node.bitStringPrefix ? [Uint8Array.of(0)] : []),
        ...node.children.map(encodeTlvTree),
      ])
    : (node.content ?? new Uint8Array(0));
  const form = node.length;
  let header: number[];
  let trailer: number[] = [];
  if (!form) header = lengthOctets(inner.length);
  else if (form.kind === "nonMinimal") {
    const minimal = lengthOctets(inner.length);
    const value = minimal.length === 1 ? minimal : minimal.slice(1);
    const octets = [...new Array<number>(form.extraOctets).fill(0), ...value];
    header = [0x80 | octets.length, ...octets];
  } else if (form.kind === "indefinite") {
    header = [0x80];
    trailer = [0, 0];
  } else if (form.kind === "delta") header = lengthOctets(Math.max(0, inner.length + form.delta));
  else if (form.kind === "huge") header = [0x84, 0xff, 0xff, 0xff, 0xf0];
  else header = [0x89, 0, 0, 0, 0, 0, 0, 0, 0, inner.length & 0xff];
  return Buffer.concat([Uint8Array.of(node.tag, ...header), inner, Uint8Array.from(trailer)]);
}

interface Located {
  readonly node: Tlv;
  readonly parent: Tlv | undefined;
  readonly index: number;
}

/** Every element in pre-order, with where it sits. */
function locate(root: Tlv): Located[] {
  const out: Located[] = [];
  const walk = (node: Tlv, parent: Tlv | undefined, index: number) => {
    out.push({ node, parent, index });
    for (const [i, child] of (node.children ?? []).entries()) walk(child, node, i);
  };
  walk(root, undefined, 0);
  return out;
}

function clone(node: Tlv): Tlv {
  return {
    ...node,
    children: node.children?.map(clone),
    content: node.content ? Uint8Array.from(node.content) : undefined,
    raw: node.raw ? Uint8Array.from(node.raw) : undefined,
  };
}

const hex = (h: string) => Uint8Array.from(Buffer.from(h.replace(/\s+/g, ""), "hex"));

/** Encodings that readers get wrong: odd string types and contents, odd integers, times and OIDs. */
export const AWKWARD_ELEMENTS: readonly Uint8Array[] = [
  hex("0200"), // INTEGER of zero length
  hex("0201ff"), // -1
  hex("020900ffffffffffffffff"), // sign byte before a large value
  hex("0281ff" + "7f".repeat(255)), // a 2040-bit INTEGER
  hex("0500"), // NULL
  hex("050101"), // NULL with content
  hex("3000"), // empty SEQUENCE
  hex("3100"), // empty SET
  hex("0101ff"), // TRUE
  hex("01020000"), // BOOLEAN two bytes long
  hex("0600"), // empty OID
  hex("060180"), // OID ending inside an arc
  hex("06092a864886f70d01010b"), // sha256WithRSAEncryption, no parameters
  hex("06082a8648ce3d040302"), // ecdsa-with-SHA256
  hex("0603 2a0304"), // 1.2.3.4
  hex("060b 2a ffffffffffffffffffff7f"), // an arc far above 2^64
  hex("0605 8080808001"), // an arc with leading 0x80 octets
  hex("0c03 c328a1"), // UTF8String with invalid UTF-8
  hex("0c02 c0af"), // overlong UTF-8
  hex("0c03 efbfbd"), // U+FFFD
  hex("1e03 004100"), // BMPString of odd length
  hex("1e02 d800"), // BMPString with a lone surrogate
  hex("1c04 00110000"), // UniversalString above U+10FFFF
  hex("1c03 000041"), // UniversalString not a multiple of 4
  hex("1c04 0000d800"), // UniversalString holding a surrogate
  hex("1301 00"), // PrintableString holding NUL
  hex("1401 ff"), // T61String
  hex("1a00"), // empty VisibleString
  hex("1500"), // VideotexString: not a type the reader knows
  hex("1900"), // GraphicString
  hex("1b00"), // GeneralString
  hex("170d 393931323331323335393630 5a".replace(/ /g, "")), // UTCTime with second 60
  hex("170d 3030303232393030303030305a"), // UTCTime 2000-02-29
  hex("170b 303030313031303030305a"), // UTCTime without seconds
  hex("1711 3030303130313030303030302b32333539"), // UTCTime with an offset
  hex("180f 30303030303130313030303030305a"), // GeneralizedTime year 0
  hex("1813 39393939313233313233353935392e3939395a"), // GeneralizedTime 9999-12-31 with a fraction
  hex("180e 3230323630313031303030303030"), // GeneralizedTime without a zone
  hex("06032b6570"), // Ed25519: a signature algorithm native TBS verification does not take
  hex("06092a864886f70d01010a"), // RSASSA-PSS
  hex("06072a8648ce3d0201"), // id-ecPublicKey
  hex("06052b8104000a"), // secp256k1
  hex("03020000"), // BIT STRING holding one zero octet (an EC point at infinity)
  hex("0300"), // BIT STRING without the unused-bits octet
  hex("030108"), // BIT STRING claiming 8 unused bits
  hex("030107"), // empty BIT STRING with unused bits
  hex("0400"), // empty OCTET STRING
  hex("a000"), // empty [0]
  hex("a303 3001 00".replace(/ /g, "")), // [3] holding a broken SEQUENCE
  hex("1f8101 00"), // high-tag-number form
  hex("3080 0500 0000"), // indefinite-length SEQUENCE
];

export type Mutation =
  | { readonly kind: "tag"; readonly at: number; readonly tag: number }
  | { readonly kind: "content"; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: "truncate"; readonly at: number; readonly keep: number }
  | { readonly kind: "append"; readonly at: number; readonly bytes: Uint8Array }
  | { readonly kind: "remove"; readonly at: number }
  | { readonly kind: "duplicate"; readonly at: number }
  | { readonly kind: "swap"; readonly at: number }
  | { readonly kind: "length"; readonly at: number; readonly form: LengthForm }
  | { readonly kind: "replace"; readonly at: number; readonly element: Uint8Array }
  | { readonly kind: "wrap"; readonly at: number; readonly tag: number }
  | { readonly kind: "flip"; readonly at: number; readonly offset: number; readonly mask: number };

const BLANK = {
  children: undefined,
  content: undefined,
  bitStringPrefix: undefined,
  length: undefined,
  raw: undefined,
};

/** Applies mutations in order to a copy of the tree; `at` picks an element in pre-order, modulo their count. */
export function mutateTree(root: Tlv, mutations: readonly Mutation[]): Tlv {
  const tree = clone(root);
  for (const m of mutations) {
    const all = locate(tree);
    const { node, parent, index } = all[m.at % all.length]!;
    switch (m.kind) {
      case "tag":
        node.tag = m.tag;
        break;
      case "content":
        Object.assign(node, BLANK, { tag: node.tag, content: m.bytes });
        break;
      case "truncate":
        if (node.children) node.children = node.children.slice(0, m.keep % (node.children.length + 1));
        else if (node.content) node.content = node.content.subarray(0, m.keep % (node.content.length + 1));
        break;
      case "append":
        if (node.children) node.children.push({ tag: m.bytes[0] ?? 0x05, content: m.bytes.subarray(1) });
        else node.content = Buffer.concat([node.content ?? new Uint8Array(0), m.bytes]);
        break;
      case "remove":
        parent?.children?.splice(index, 1);
        break;
      case "duplicate":
        parent?.children?.splice(index, 0, clone(node));
        break;
      case "swap": {
        const siblings = parent?.children;
        if (siblings && index + 1 < siblings.length) {
          siblings[index] = siblings[index + 1]!;
          siblings[index + 1] = node;
        }
        break;
      }
      case "length":
        node.length = m.form;
        break;
      case "replace": {
        const [element] = readTlvs(m.element, 0) ?? [];
        Object.assign(node, BLANK, element ?? { raw: m.element });
        break;
      }
      case "wrap":
        if (parent?.children) parent.children[index] = { tag: m.tag, children: [node] };
        break;
      case "flip": {
        const bytes = encodeTlvTree(node);
        if (bytes.length === 0) break;
        const copy = Uint8Array.from(bytes);
        copy[m.offset % copy.length]! ^= m.mask;
        const [flipped, extra] = readTlvs(copy, 0) ?? [];
        Object.assign(node, BLANK, flipped && !extra ? flipped : { raw: copy });
        break;
      }
    }
  }
  return tree;
}

const INTERESTING_TAGS = [
  0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0c, 0x13, 0x14, 0x16, 0x17, 0x18, 0x1a, 0x1c, 0x1e, 0x30, 0x31, 0x80,
  0x81, 0xa0, 0xa1, 0xa3, 0x00, 0x1f, 0xff,
];

const lengthForm: fc.Arbitrary<LengthForm> = fc.oneof(
  fc.record({ kind: fc.constant("nonMinimal" as const), extraOctets: fc.integer({ min: 1, max: 3 }) }),
  fc.constant({ kind: "indefinite" as const }),
  fc.record({ kind: fc.constant("delta" as const), delta: fc.integer({ min: -3, max: 3 }) }),
  fc.constant({ kind: "huge" as const }),
  fc.constant({ kind: "tooManyOctets" as const }),
);

export const mutationArbitrary: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant("tag" as const),
    at: fc.nat(),
    tag: fc.oneof(fc.constantFrom(...INTERESTING_TAGS), fc.integer({ min: 0, max: 255 })),
  }),
  fc.record({ kind: fc.constant("content" as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 24 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat(), keep: fc.nat() }),
  fc.record({
    kind: fc.constant("append" as const),
    at: fc.nat(),
    bytes: fc.oneof(fc.constantFrom(...AWKWARD_ELEMENTS), fc.uint8Array({ minLength: 1, maxLength: 8 })),
  }),
  fc.record({ kind: fc.constant("remove" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("duplicate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("swap" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("length" as const), at: fc.nat(), form: lengthForm }),
  fc.record({
    kind: fc.constant("replace" as const),
    at: fc.nat(),
    element: fc.constantFrom(...AWKWARD_ELEMENTS),
  }),
  fc.record({
    kind: fc.constant("wrap" as const),
    at: fc.nat(),
    tag: fc.constantFrom(0x30, 0x31, 0x04, 0xa0),
  }),
  fc.record({
    kind: fc.constant("flip" as const),
    at: fc.nat(),
    offset: fc.nat(),
    mask: fc.integer({ min: 1, max: 255 }),
  }),
);

export const mutationsArbitrary = (max = 3): fc.Arbitrary<Mutation[]> =>
  fc.array(mutationArbitrary, { minLength: 1, maxLength: max });
