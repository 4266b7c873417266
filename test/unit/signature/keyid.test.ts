import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import {
  buildKeyId,
  type KeyIdTarget,
  matchKeyId,
  parseKeyId,
  serialMatches,
} from "../../../src/signature/index.js";

const ISSUER = [
  [{ oid: "2.5.4.6", value: "NO" }],
  [{ oid: "2.5.4.10", value: "Demo QTSP AS" }],
  [{ oid: "2.5.4.97", value: "NTRNO-987654321" }],
  [{ oid: "2.5.4.3", value: "Demo Qualified CA" }],
];
// DER serial with a sign byte: the number is 0x8E5C660AD95E4DBF.
const HIGH_BIT: KeyIdTarget = { serial: Buffer.from("008e5c660ad95e4dbf", "hex"), issuer: ISSUER };
const CA = "CN=Demo Qualified CA,organizationIdentifier=NTRNO-987654321,O=Demo QTSP AS,C=NO";

describe("keyId building (SPEC 5.3)", () => {
  it("writes SN as upper-case hex without the sign byte and CA as RFC 2253", () => {
    expect(buildKeyId(HIGH_BIT)).toBe(`SN=8E5C660AD95E4DBF,CA=${CA}`);
  });

  it("writes a negative serial with a minus sign, as OpenSSL does", () => {
    expect(buildKeyId({ serial: Buffer.from("ff7f", "hex"), issuer: ISSUER })).toBe(`SN=-81,CA=${CA}`);
  });
});

describe("keyId matching", () => {
  it.each([
    ["upper-case hex", "8E5C660AD95E4DBF"],
    ["lower-case hex", "8e5c660ad95e4dbf"],
    ["leading zeros / the DER sign byte", "008E5C660AD95E4DBF"],
    ["0x prefix", "0x8e5c660ad95e4dbf"],
    ["colon-separated bytes", "8e:5c:66:0a:d9:5e:4d:bf"],
  ])("matches the serial written as %s", (_label, sn) => {
    expect(matchKeyId(`SN=${sn},CA=${CA}`, HIGH_BIT)).toBe(true);
  });

  it("reads decimal serials only when allowed", () => {
    const decimal = "10258186248025689535";
    expect(serialMatches(decimal, HIGH_BIT.serial)).toBe(false);
    expect(serialMatches(decimal, HIGH_BIT.serial, { allowDecimalSerial: true })).toBe(true);
  });

  it("matches a negative serial written signed or as its raw bytes", () => {
    const negative = Buffer.from("ff7f", "hex");
    expect(serialMatches("-81", negative)).toBe(true);
    expect(serialMatches("FF7F", negative)).toBe(true);
    expect(serialMatches("81", negative)).toBe(false);
  });

  it("matches the issuer after normalisation, in either RDN order, and with CA= first", () => {
    expect(
      matchKeyId(
        "sn=8e5c660ad95e4dbf, ca=cn=demo qualified ca, 2.5.4.97=NTRNO-987654321, o=Demo%20QTSP%20AS, c=NO",
        HIGH_BIT,
      ),
    ).toBe(true);
    expect(
      matchKeyId(
        "SN=8E5C660AD95E4DBF,CA=C=NO,O=Demo QTSP AS,OID.2.5.4.97=NTRNO-987654321,CN=Demo Qualified CA",
        HIGH_BIT,
      ),
    ).toBe(true);
    expect(matchKeyId(`CA=${CA},SN=8E5C660AD95E4DBF`, HIGH_BIT)).toBe(true);
  });

  it("refuses a wrong serial, naming both values", () => {
    const r = matchKeyId(`SN=8E5C660AD95E4DB0,CA=${CA}`, HIGH_BIT);
    expect(isRejection(r)).toBe(true);
    if (isRejection(r)) {
      expect(r.code).toBe("SIGNATURE_INVALID");
      expect(r.text).toContain("SN=8E5C660AD95E4DB0");
      expect(r.text).toContain("8E5C660AD95E4DBF");
    }
  });

  it("refuses a wrong issuer, naming both values", () => {
    const r = matchKeyId("SN=8E5C660AD95E4DBF,CA=CN=Other CA,O=Demo QTSP AS,C=NO", HIGH_BIT);
    expect(isRejection(r) && r.text).toContain("CA=CN=Other CA");
    expect(isRejection(r) && r.text).toContain(CA);
  });

  it("refuses a keyId that is not SN=…,CA=… (an OAuth client id, say), showing the expected one", () => {
    const r = matchKeyId("5ca1ab1e-c0ca-c01a-cafe-154deadbea75", HIGH_BIT);
    expect(isRejection(r) && r.text).toContain(`SN=8E5C660AD95E4DBF,CA=${CA}`);
    expect(parseKeyId("5ca1ab1e-c0ca-c01a-cafe-154deadbea75")).toBeUndefined();
  });
});
