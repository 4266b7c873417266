import { describe, expect, it } from "vitest";
import {
  type Attribute,
  canonicalKey,
  canonicalKeyOfName,
  type DistinguishedName,
  dnStringMatches,
  formatRfc2253,
  parseDnString,
} from "../../../src/x500/name.js";

const a = (oid: string, value: string): Attribute => ({ oid, value });

// DER order: C, ST, L, O (with a trailing line feed, as a real adorsys issuer has it), OU.
const ISSUER: DistinguishedName = [
  [a("2.5.4.6", "DE")],
  [a("2.5.4.8", "BAVARIA")],
  [a("2.5.4.7", "Nuremberg")],
  [a("2.5.4.10", "Trust Service Provider AG\n")],
  [a("2.5.4.11", "Information Technology")],
];

describe("RFC 2253 formatting", () => {
  it("writes RDNs in reverse DER order with OpenSSL's names and escapes", () => {
    expect(formatRfc2253(ISSUER)).toBe(
      "OU=Information Technology,O=Trust Service Provider AG\\0A,L=Nuremberg,ST=BAVARIA,C=DE",
    );
  });

  it("escapes special characters, leading '#', leading/trailing spaces, and keeps UTF-8", () => {
    const name: DistinguishedName = [[a("2.5.4.3", ' #a,b+c"d\\e<f>g;h ')], [a("2.5.4.10", "Bank Ærø")]];
    expect(formatRfc2253(name)).toBe('O=Bank Ærø,CN=\\ #a\\,b\\+c\\"d\\\\e\\<f\\>g\\;h\\ ');
    expect(formatRfc2253([[a("2.5.4.3", "#x")]])).toBe("CN=\\#x");
  });

  it("writes organizationIdentifier, multi-valued RDNs and unknown OIDs", () => {
    const name: DistinguishedName = [
      [a("2.5.4.97", "PSDNO-FSA-123456")],
      [a("2.5.4.3", "x"), a("2.5.4.5", "42")],
      [{ oid: "1.2.3.4", value: undefined, der: new Uint8Array([0x02, 0x01, 0x05]) }],
    ];
    expect(formatRfc2253(name)).toBe(
      "1.2.3.4=#020105,CN=x+serialNumber=42,organizationIdentifier=PSDNO-FSA-123456",
    );
  });
});

describe("DN string parsing and matching", () => {
  it("round-trips what it formats", () => {
    expect(canonicalKey(parseDnString(formatRfc2253(ISSUER)))).toBe(canonicalKeyOfName(ISSUER));
  });

  const variants: [string, string][] = [
    [
      "exact RFC 2253",
      "OU=Information Technology,O=Trust Service Provider AG\\0A,L=Nuremberg,ST=BAVARIA,C=DE",
    ],
    [
      "%20 for spaces and the line feed dropped",
      "OU=Information%20Technology,O=Trust%20Service%20Provider%20AG,L=Nuremberg,ST=BAVARIA,C=DE",
    ],
    [
      "attribute-name case",
      "ou=Information Technology,o=Trust Service Provider AG,l=Nuremberg,st=BAVARIA,c=DE",
    ],
    [
      "spaces after commas",
      "OU=Information Technology, O=Trust Service Provider AG, L=Nuremberg, ST=BAVARIA, C=DE",
    ],
    [
      "insignificant whitespace",
      "OU=Information  Technology ,O= Trust Service Provider AG ,L=Nuremberg,ST=BAVARIA,C=DE",
    ],
    [
      "RDNs in reverse (DER) order",
      "C=DE,ST=BAVARIA,L=Nuremberg,O=Trust Service Provider AG,OU=Information Technology",
    ],
    [
      "S= and OID.2.5.4.11= aliases",
      "OID.2.5.4.11=Information Technology,O=Trust Service Provider AG,L=Nuremberg,S=BAVARIA,C=DE",
    ],
    ["value case", "OU=INFORMATION TECHNOLOGY,O=trust service provider ag,L=Nuremberg,ST=Bavaria,C=de"],
  ];
  it.each(variants)("matches %s", (_label, dn) => {
    expect(dnStringMatches(dn, ISSUER)).toBe(true);
  });

  it("treats organizationIdentifier=, OID.2.5.4.97=, 2.5.4.97= and 2.5.4.97=#<hex> as one attribute", () => {
    const name: DistinguishedName = [[a("2.5.4.6", "DE")], [a("2.5.4.97", "FAKECA-111111")]];
    const hex = Buffer.concat([Buffer.from([0x0c, 13]), Buffer.from("FAKECA-111111")]).toString("hex");
    for (const type of ["organizationIdentifier", "ORGANIZATIONIDENTIFIER", "OID.2.5.4.97", "2.5.4.97"]) {
      expect(dnStringMatches(`${type}=FAKECA-111111,C=DE`, name), type).toBe(true);
    }
    expect(dnStringMatches(`2.5.4.97=#${hex},C=DE`, name)).toBe(true);
  });

  it("does not match a different name", () => {
    expect(dnStringMatches("OU=Information Technology,O=Other AG,L=Nuremberg,ST=BAVARIA,C=DE", ISSUER)).toBe(
      false,
    );
    expect(dnStringMatches("O=Trust Service Provider AG,L=Nuremberg,ST=BAVARIA,C=DE", ISSUER)).toBe(false);
    expect(
      dnStringMatches(
        "L=Nuremberg,OU=Information Technology,O=Trust Service Provider AG,ST=BAVARIA,C=DE",
        ISSUER,
      ),
    ).toBe(false);
    expect(dnStringMatches("not a dn", ISSUER)).toBe(false);
  });

  it("reads quoted values, hex escapes for UTF-8 bytes and multi-valued RDNs", () => {
    expect(parseDnString('CN="a, b",O=Bank \\C3\\86r\\C3\\B8')).toEqual([
      [a("2.5.4.3", "a, b")],
      [a("2.5.4.10", "Bank Ærø")],
    ]);
    expect(parseDnString("CN=x+serialNumber=42")).toEqual([[a("2.5.4.3", "x"), a("2.5.4.5", "42")]]);
  });

  it("throws DnSyntaxError on nonsense, naming the problem", () => {
    expect(() => parseDnString("FOO=bar")).toThrow("unknown attribute type 'FOO'");
    expect(() => parseDnString("CN")).toThrow("has no '='");
    expect(() => parseDnString('CN="open')).toThrow("not closed");
  });
});
