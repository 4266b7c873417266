/** isBase64 against the pattern it replaced (RFC 4648 section 4 with padding), row by row and at random. */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBase64 } from "../../../src/signature/base64.js";

/** What the check was before the loop: whole quanta of the alphabet, at most two `=` at the end. */
const PATTERN = (text: string) => text.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(text);

describe("isBase64", () => {
  it.each([
    ["", true],
    ["QUJD", true],
    ["QQ==", true],
    ["QUI=", true],
    ["abc=", true],
    ["QQ=", false],
    ["ab=c", false],
    ["a===", false],
    ["====", false],
    ["=QQ=", false],
    ["Q\u00e9==", false],
    ["QU-_", false],
    ["QU J", false],
    ["QUJD\n", false],
  ])("%j is %s", (text, expected) => {
    expect(isBase64(text)).toBe(expected);
    expect(PATTERN(text)).toBe(expected);
  });

  it("agrees with the pattern on any string of the alphabet, padding and a few strangers", () => {
    const chars = fc.constantFrom(..."ABYZabyz0189+/=-_ \u00e9\u0100".split(""));
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 24 }), (list) => {
        const text = list.join("");
        expect(isBase64(text)).toBe(PATTERN(text));
      }),
      { numRuns: 5000 },
    );
  });
});
