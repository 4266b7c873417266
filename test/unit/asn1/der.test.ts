/**
 * The DER writer (src/asn1/writer.ts) and the typed reads added to src/asn1/der.ts for certificate
 * extraction. They live here beside their first user; move them to test/unit/asn1/ when that exists.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { serialToBigInt } from "../../../src/asn1/certificate.js";
import {
  DerError,
  readBitString,
  readBoolean,
  readNode,
  readOid,
  readSmallInteger,
  readString,
  readTime,
  TAG,
} from "../../../src/asn1/der.js";
import {
  encodeBitString,
  encodeBoolean,
  encodeContext,
  encodeIa5String,
  encodeInteger,
  encodeNull,
  encodeOctetString,
  encodeOid,
  encodePrintableString,
  encodeSequence,
  encodeSetOf,
  encodeTlv,
  encodeUtf8String,
} from "../../../src/asn1/writer.js";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");
const node = (h: string) => readNode(Buffer.from(h, "hex"));

describe("DER writer", () => {
  it.each([
    [0, "020100"],
    [127, "02017f"],
    [128, "02020080"],
    [256, "02020100"],
    [-1, "0201ff"],
    [-128, "020180"],
    [-129, "0202ff7f"],
    [-257, "0202feff"],
  ])("encodes INTEGER %i minimally", (value, want) => {
    expect(hex(encodeInteger(value))).toBe(want);
  });

  it("round-trips any INTEGER through serialToBigInt", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(1n << 200n), max: 1n << 200n }), (v) => {
        const encoded = encodeInteger(v);
        const n = readNode(encoded);
        expect(serialToBigInt(encoded.subarray(n.start, n.end))).toBe(v);
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ["1.2.840.113549.1.1.11", "06092a864886f70d01010b"],
    ["2.5.4.97", "0603550461"],
    ["0.4.0.19495.2", "06060400819827" + "02"],
    ["2.999.3", "0603883703"],
  ])("encodes OID %s", (oid, want) => {
    expect(hex(encodeOid(oid))).toBe(want);
    expect(readOid(readNode(encodeOid(oid)))).toBe(oid);
  });

  it("round-trips arbitrary OIDs through readOid", () => {
    const arc = fc.bigInt({ min: 0n, max: 1n << 70n });
    const oid = fc
      .tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 39 }), fc.array(arc, { maxLength: 8 }))
      .map(([a, b, rest]) => [a, b, ...rest].join("."));
    fc.assert(
      fc.property(oid, (o) => {
        expect(readOid(readNode(encodeOid(o)))).toBe(o);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses what is not an OID", () => {
    for (const bad of ["", "1", "3.1", "1.40", "1.2.03", "1..2", "a.b"])
      expect(() => encodeOid(bad), bad).toThrow(RangeError);
  });

  it("writes short and long lengths", () => {
    expect(hex(encodeOctetString(new Uint8Array(127))).slice(0, 4)).toBe("047f");
    expect(hex(encodeOctetString(new Uint8Array(128))).slice(0, 6)).toBe("048180");
    expect(hex(encodeOctetString(new Uint8Array(256))).slice(0, 8)).toBe("04820100");
    const big = encodeOctetString(new Uint8Array(70_000));
    expect(readNode(big).end).toBe(big.length);
  });

  it("writes the simple types and strings the reader reads back", () => {
    expect(hex(encodeBoolean(true))).toBe("0101ff");
    expect(hex(encodeNull())).toBe("0500");
    expect(hex(encodeBitString(Uint8Array.of(0x06), 1))).toBe("03020106");
    expect(hex(encodeContext(0, Uint8Array.of(1), false))).toBe("800101");
    expect(hex(encodeContext(3, encodeSequence(), true))).toBe("a3023000");
    expect(readString(readNode(encodeUtf8String("Ærø – ok")))).toBe("Ærø – ok");
    expect(readString(readNode(encodePrintableString("NO")))).toBe("NO");
    expect(readString(readNode(encodeIa5String("a@b.no")))).toBe("a@b.no");
    expect(() => encodePrintableString("a_b")).toThrow(RangeError);
    expect(() => encodeIa5String("Ærø")).toThrow(RangeError);
    expect(() => encodeBitString(new Uint8Array(0), 3)).toThrow(RangeError);
    expect(() => encodeTlv(0x1f, new Uint8Array(0))).toThrow(RangeError);
  });

  it("sorts the elements of a SET OF", () => {
    expect(hex(encodeSetOf(encodeInteger(2), encodeInteger(1)))).toBe("3106020101020102");
  });
});

describe("typed DER reads", () => {
  it("reads BOOLEAN as BER does: any non-zero octet is TRUE", () => {
    expect(readBoolean(node("0101ff"))).toBe(true);
    expect(readBoolean(node("010101"))).toBe(true);
    expect(readBoolean(node("010100"))).toBe(false);
    expect(() => readBoolean(node("01020000"))).toThrow(DerError);
    expect(() => readBoolean(node("020100"))).toThrow(DerError);
  });

  it("reads BIT STRING with its unused bits", () => {
    const bits = readBitString(node("03020106"));
    expect([bits.unusedBits, hex(bits.bytes)]).toEqual([1, "06"]);
    expect(() => readBitString(node("0300"))).toThrow("no unused-bits octet");
    expect(() => readBitString(node("03020806"))).toThrow("claims 8 unused bits");
  });

  it("reads small non-negative INTEGERs and refuses others", () => {
    expect(readSmallInteger(node("020100"), "n")).toBe(0);
    expect(readSmallInteger(node("02020100"), "n")).toBe(256);
    expect(() => readSmallInteger(node("0201ff"), "pathLen")).toThrow("pathLen: negative INTEGER");
    expect(() => readSmallInteger(node(`0209${"7f".repeat(9)}`), "n")).toThrow("too large");
  });

  const time = (tag: number, text: string) => readTime(readNode(encodeTlv(tag, Buffer.from(text, "latin1"))));

  it.each([
    [TAG.UTC_TIME, "491231235959Z", "2049-12-31T23:59:59.000Z"],
    [TAG.UTC_TIME, "500101000000Z", "1950-01-01T00:00:00.000Z"],
    [TAG.UTC_TIME, "2402291200Z", "2024-02-29T12:00:00.000Z"],
    [TAG.UTC_TIME, "240101120000+0130", "2024-01-01T10:30:00.000Z"],
    [TAG.UTC_TIME, "240101120000-0100", "2024-01-01T13:00:00.000Z"],
    [TAG.GENERALIZED_TIME, "20500101000000Z", "2050-01-01T00:00:00.000Z"],
    [TAG.GENERALIZED_TIME, "99991231235959Z", "9999-12-31T23:59:59.000Z"],
    [TAG.GENERALIZED_TIME, "20240101120000.5Z", "2024-01-01T12:00:00.500Z"],
    [TAG.GENERALIZED_TIME, "20240101120000.123456Z", "2024-01-01T12:00:00.123Z"],
    [TAG.GENERALIZED_TIME, "00500101000000Z", "0050-01-01T00:00:00.000Z"],
  ])("reads time tag 0x%s '%s'", (tag, text, iso) => {
    expect(time(tag, text).toISOString()).toBe(iso);
  });

  it.each([
    [TAG.UTC_TIME, "230229000000Z", "out of range"],
    [TAG.UTC_TIME, "241301000000Z", "out of range"],
    [TAG.UTC_TIME, "240101240000Z", "out of range"],
    [TAG.UTC_TIME, "240101000060Z", "out of range"],
    [TAG.UTC_TIME, "240101000000", "is not YYMMDDHHMM[SS]Z"],
    [TAG.UTC_TIME, "240101000000+2400", "offset out of range"],
    [TAG.GENERALIZED_TIME, "20240101000000", "is not YYYYMMDDHHMM[SS[.f]]Z"],
    [TAG.GENERALIZED_TIME, "2024010100\u0000000Z", "\\x00"],
    [TAG.INTEGER, "1", "expected a UTCTime or GeneralizedTime"],
  ])("refuses time tag 0x%s '%s'", (tag, text, message) => {
    expect(() => time(tag, text)).toThrow(DerError);
    expect(() => time(tag, text)).toThrow(message);
  });
});
