import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import { decodeEncodedWords, encodeIfNeeded } from "../../../src/signature/index.js";

describe("RFC 2047 encoded words (SPEC 5.7)", () => {
  it("leaves a plain value alone", () => {
    expect(decodeEncodedWords('keyId="k"')).toBe('keyId="k"');
  });

  it("decodes a UTF-8 B word", () => {
    expect(decodeEncodedWords(`=?utf-8?B?${Buffer.from("CA=O=Bank æøå").toString("base64")}?=`)).toBe(
      "CA=O=Bank æøå",
    );
  });

  it("decodes an ISO-8859-1 Q word, with _ for space and =XX bytes", () => {
    expect(decodeEncodedWords("=?iso-8859-1?Q?O=3DBank_=E6=F8=E5?=")).toBe("O=Bank æøå");
  });

  it("treats charset and encoding case-insensitively and joins adjacent words without the space between", () => {
    expect(decodeEncodedWords("=?UTF-8?b?YWI=?= =?Utf-8?q?c_d?=")).toBe("abc d");
  });

  it("refuses an unknown charset, bad base64, a bad Q escape and invalid UTF-8, saying which", () => {
    const cases: [string, string][] = [
      ["=?koi8-r?B?YQ==?=", "charset 'koi8-r'"],
      ["=?utf-8?B?Y*Q==?=", "invalid base64"],
      ["=?utf-8?Q?a=ZZ?=", "invalid Q-encoding"],
      [`=?utf-8?B?${Buffer.from([0xc3, 0x28]).toString("base64")}?=`, "not valid UTF-8"],
      ["=?utf-8?B?YQ==", "not one"],
    ];
    for (const [input, text] of cases) {
      const r = decodeEncodedWords(input);
      expect(isRejection(r), input).toBe(true);
      if (isRejection(r)) expect(r.text).toContain(text);
    }
  });

  it("encodes only when the value holds non-ASCII characters, and round-trips", () => {
    expect(encodeIfNeeded('keyId="SN=1,CA=O=Bank"')).toBe('keyId="SN=1,CA=O=Bank"');
    const value = 'keyId="SN=1,CA=O=Bank Ærø",signature="x"';
    const encoded = encodeIfNeeded(value);
    expect(encoded).toMatch(/^=\?utf-8\?B\?[A-Za-z0-9+/=]+\?=$/);
    expect(decodeEncodedWords(encoded)).toBe(value);
  });
});
