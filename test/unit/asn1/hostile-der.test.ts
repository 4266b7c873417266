/**
 * The DER reader on attacker bytes: every read either returns or throws DerError (which callers
 * turn into a Rejection), and it refuses the encodings that would let one value be read two ways
 * or cost more than its size (issue 11, defect 4).
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readCertificateFields } from "../../../src/asn1/certificate.js";
import {
  children,
  DerError,
  readBitString,
  readBoolean,
  readNode,
  readOid,
  readSmallInteger,
  readString,
  readTime,
} from "../../../src/asn1/der.js";
import {
  encodeBitString,
  encodeContext,
  encodeInteger,
  encodeNull,
  encodeOid,
  encodeSequence,
  encodeTlv,
  encodeUtf8String,
} from "../../../src/asn1/writer.js";
import { readName } from "../../../src/x500/name.js";

const bytes = (h: string) => Uint8Array.from(Buffer.from(h.replace(/\s+/g, ""), "hex"));
const node = (h: string) => readNode(bytes(h));

/** Runs a read; returns "ok" or the DerError message, and fails on any other throw. */
function outcome(read: () => unknown): string {
  try {
    read();
    return "ok";
  } catch (error) {
    if (!(error instanceof DerError)) throw error;
    return error.message;
  }
}

describe("OBJECT IDENTIFIER", () => {
  it("round-trips arcs up to 128 bits, including a large second arc under 2", () => {
    const arc = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });
    const oid = fc.oneof(
      fc.tuple(
        fc.integer({ min: 0, max: 1 }),
        fc.integer({ min: 0, max: 39 }),
        fc.array(arc, { maxLength: 6 }),
      ),
      fc.tuple(
        fc.constant(2),
        fc.bigInt({ min: 0n, max: (1n << 120n) - 1n }),
        fc.array(arc, { maxLength: 6 }),
      ),
    );
    fc.assert(
      fc.property(oid, ([first, second, rest]) => {
        const dotted = [first, second, ...rest].join(".");
        expect(readOid(readNode(encodeOid(dotted)))).toBe(dotted);
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    ["0600", "empty OBJECT IDENTIFIER"],
    ["06022a86", "ends inside an arc"],
    ["06032a8001", "has an arc with a leading 0x80 octet"],
    ["0602802a", "has an arc with a leading 0x80 octet"],
    [`0615 2a ${"ff".repeat(19)} 7f`, "has an arc wider than 128 bits"],
    ["0500", "expected tag 0x06"],
  ])("refuses %s: %s", (h, message) => {
    expect(outcome(() => readOid(node(h)))).toContain(message);
  });

  it("reads a 16 KB OID of small arcs, and refuses one wide arc once it passes 128 bits", () => {
    const many = encodeTlv(0x06, new Uint8Array(16_000).fill(0x7f));
    expect(readOid(readNode(many)).split(".")).toHaveLength(16_001);
    // 4 MB in one arc: refused as soon as it is too wide. Reading it whole with BigInt arithmetic
    // would take minutes (quadratic), so a regression fails by the test's timeout, not by a clock here.
    const wideArc = new Uint8Array(4 * 1024 * 1024 + 1).fill(0xff);
    wideArc[wideArc.length - 1] = 0x7f;
    expect(outcome(() => readOid(readNode(encodeTlv(0x06, wideArc))))).toContain("wider than 128 bits");
  });
});

describe("strings", () => {
  it.each([
    ["0c03c328a1", "UTF8String at byte 0 is not valid UTF-8"],
    ["0c02c0af", "is not valid UTF-8"], // overlong "/"
    ["0c03eda080", "is not valid UTF-8"], // an encoded surrogate
    ["0c04f4908080", "is not valid UTF-8"], // above U+10FFFF
    ["1e02d800", "BMPString at byte 0 holds a lone surrogate"],
    ["1e04dc00d800", "holds a lone surrogate"],
    ["1e03004100", "BMPString of odd length"],
    ["1c040000d800", "UniversalString holds U+D800, which is not a character"],
    ["1c0400110000", "UniversalString holds U+110000"],
    ["1503414243", "tag 0x15 is not a string type"],
  ])("refuses %s: %s", (h, message) => {
    expect(outcome(() => readString(node(h)))).toContain(message);
  });

  it.each([
    ["0c04f09f9880", "😀"],
    ["1e04d83dde00", "😀"],
    ["1c040001f600", "😀"],
    ["0c03efbbbf", "\ufeff"], // a BOM is a character like any other
    ["1401ff", "ÿ"],
  ])("reads %s", (h, text) => {
    expect(readString(node(h))).toBe(text);
  });
});

describe("names", () => {
  const cn = encodeSequence(encodeOid("2.5.4.3"), encodeUtf8String("x"));

  it("refuses an empty RelativeDistinguishedName", () => {
    const name = encodeSequence(encodeTlv(0x31, cn), encodeTlv(0x31, new Uint8Array(0)));
    expect(outcome(() => readName(readNode(name)))).toBe("RelativeDistinguishedName at byte 14 is empty");
  });

  it("reads an empty name (an empty SEQUENCE) as no RDNs", () => {
    expect(readName(readNode(encodeSequence()))).toEqual([]);
  });
});

describe("TBSCertificate fields", () => {
  const algorithm = encodeSequence(encodeOid("1.2.840.113549.1.1.11"), encodeNull());
  const name = encodeSequence(encodeTlv(0x31, encodeSequence(encodeOid("2.5.4.3"), encodeUtf8String("x"))));
  const validity = encodeSequence(
    encodeTlv(0x17, Buffer.from("250101000000Z")),
    encodeTlv(0x17, Buffer.from("350101000000Z")),
  );
  const spki = encodeSequence(encodeSequence(encodeOid("1.3.101.112")), encodeBitString(new Uint8Array(32)));
  const extensions = encodeContext(
    3,
    encodeSequence(encodeSequence(encodeOid("2.5.29.14"), encodeTlv(0x04, bytes("0400")))),
    true,
  );
  const version = (v: Uint8Array) => encodeContext(0, encodeTlv(0x02, v), true);
  const certificate = (...tbs: Uint8Array[]) =>
    encodeSequence(encodeSequence(...tbs), algorithm, encodeBitString(new Uint8Array(1)));
  const core = [encodeInteger(1), algorithm, name, validity, name, spki];

  it.each([
    ["v3 with extensions", [version(bytes("02")), ...core, extensions], "ok"],
    ["v1 without the version field", core, "ok"],
    ["v1 written out", [version(bytes("00")), ...core], "ok"],
    [
      "v2 with unique identifiers",
      [version(bytes("01")), ...core, encodeTlv(0x81, bytes("00")), encodeTlv(0x82, bytes("00"))],
      "ok",
    ],
    ["version 3 (v4)", [version(bytes("03")), ...core], "version 0x03 is not v1, v2 or v3"],
    ["version -1", [version(bytes("ff")), ...core], "version 0xff is not v1, v2 or v3"],
    ["version 0002", [version(bytes("0002")), ...core], "version 0x0002 is not v1, v2 or v3"],
    ["an empty version", [version(bytes("")), ...core], "version 0x(empty) is not"],
    [
      "two INTEGERs in [0]",
      [encodeContext(0, Uint8Array.of(...encodeInteger(2), ...encodeInteger(2)), true), ...core],
      "must hold one INTEGER",
    ],
    ["v1 with extensions", [...core, extensions], "a v1 certificate carries extensions"],
    [
      "v2 with extensions",
      [version(bytes("01")), ...core, extensions],
      "a v2 certificate carries extensions",
    ],
    [
      "v1 with a unique identifier",
      [...core, encodeTlv(0x81, bytes("00"))],
      "a v1 certificate carries a unique identifier",
    ],
    [
      "[2] before [1]",
      [version(bytes("02")), ...core, encodeTlv(0x82, bytes("00")), encodeTlv(0x81, bytes("00"))],
      "unexpected element (tag 0x81)",
    ],
    [
      "extensions twice",
      [version(bytes("02")), ...core, extensions, extensions],
      "unexpected element (tag 0xa3)",
    ],
    ["a NULL after the key", [version(bytes("02")), ...core, encodeNull()], "unexpected element (tag 0x05)"],
    [
      "[4] after the key",
      [version(bytes("02")), ...core, encodeContext(4, new Uint8Array(0), true)],
      "unexpected element (tag 0xa4)",
    ],
    [
      "primitive [3]",
      [version(bytes("02")), ...core, encodeTlv(0x83, bytes("00"))],
      "unexpected element (tag 0x83)",
    ],
  ] as const)("%s: %s", (_name, tbs, expected) => {
    expect(outcome(() => readCertificateFields(certificate(...tbs)))).toContain(expected);
  });
});

describe("every read throws nothing but DerError", () => {
  const reads: ReadonlyArray<readonly [string, (b: Uint8Array) => unknown]> = [
    ["readNode", (b) => readNode(b)],
    ["children", (b) => children(readNode(b))],
    ["readOid", (b) => readOid(readNode(b))],
    ["readString", (b) => readString(readNode(b))],
    ["readTime", (b) => readTime(readNode(b))],
    ["readBitString", (b) => readBitString(readNode(b))],
    ["readBoolean", (b) => readBoolean(readNode(b))],
    ["readSmallInteger", (b) => readSmallInteger(readNode(b), "n")],
    ["readName", (b) => readName(readNode(b))],
    ["readCertificateFields", (b) => readCertificateFields(b)],
  ];

  it.each(reads)(
    "%s on arbitrary bytes and arbitrary bytes behind each string and time tag",
    (_name, read) => {
      const tagged = fc
        .tuple(
          fc.constantFrom(0x06, 0x0c, 0x12, 0x13, 0x14, 0x16, 0x17, 0x18, 0x1a, 0x1c, 0x1e, 0x30, 0x31),
          fc.uint8Array({ maxLength: 40 }),
        )
        .map(([tag, content]) => encodeTlv(tag, content));
      fc.assert(
        fc.property(fc.oneof(fc.uint8Array({ maxLength: 60 }), tagged), (b) => {
          outcome(() => read(b));
        }),
        { numRuns: 400 },
      );
    },
  );
});
