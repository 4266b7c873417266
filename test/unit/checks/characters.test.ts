/**
 * The streaming UTF-8 and character-policy scanner (SPEC 1.3) against an independent judge:
 * WHATWG's fatal TextDecoder for UTF-8 itself, the policy applied to what it decodes. However a
 * body is cut into chunks, the verdict and the byte it names are those of the body whole.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type CharacterPolicy, PERMISSIVE_POLICY, Utf8Scanner } from "../../../src/checks/characters.js";

const STRICT: CharacterPolicy = {
  maxCodePoint: 0xffff,
  blockedRanges: [
    [0x00, 0x08],
    [0x0e, 0x1f],
    [0x7f, 0x9f],
  ],
};

/** The scanner's verdict on `body` cut at `cuts` (offsets, any order): undefined or the refusal's text. */
function scan(body: Uint8Array, policy: CharacterPolicy, cuts: readonly number[] = []): string | undefined {
  const scanner = new Utf8Scanner(policy, "the body");
  const at = [...new Set(cuts.filter((c) => c > 0 && c < body.length))].sort((a, b) => a - b);
  let from = 0;
  for (const cut of [...at, body.length]) {
    const refusal = scanner.update(body.subarray(from, cut));
    if (refusal) return refusal.text;
    from = cut;
  }
  return scanner.finish()?.text;
}

/** The independent judge: valid UTF-8 (WHATWG, fatal) whose every code point the policy accepts. */
function acceptable(body: Uint8Array, policy: CharacterPolicy): boolean {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    return false;
  }
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp > policy.maxCodePoint) return false;
    if (policy.blockedRanges.some(([from, to]) => cp >= from && cp <= to)) return false;
  }
  return true;
}

/** Bytes that make UTF-8 interesting: ASCII, whole sequences of each length, and the broken kinds. */
const piece = fc.oneof(
  fc.constantFrom(...'{"a":"Kari Nordmann"}'.split("").map((c) => [c.charCodeAt(0)])),
  fc.constantFrom([0xc3, 0xa6], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xef, 0xbf, 0xbf]),
  fc.constantFrom(
    [0x80],
    [0xc3],
    [0xe2, 0x82],
    [0xc0, 0xaf],
    [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0xff],
  ),
  fc.constantFrom([0x01], [0x7f], [0xc2, 0x85]),
);
const bodies = fc.array(piece, { maxLength: 40 }).map((parts) => Uint8Array.from(parts.flat()));
const cuts = fc.array(fc.nat({ max: 160 }), { maxLength: 6 });

describe("Utf8Scanner", () => {
  it.each([
    ["valid UTF-8", [0x7b, 0xc3, 0xa6, 0xe2, 0x82, 0xac, 0x7d], undefined],
    ["a stray continuation byte", [0x61, 0x80], "not valid UTF-8 at byte 1"],
    ["an overlong slash", [0x61, 0xc0, 0xaf], "not valid UTF-8 at byte 1"],
    ["a surrogate", [0xed, 0xa0, 0x80], "not valid UTF-8 at byte 0"],
    ["a sequence cut by the end", [0x61, 0xe2, 0x82], "ends inside a UTF-8 sequence that starts at byte 1"],
  ])("%s (permissive policy)", (_name, bytes, expected) => {
    const text = scan(Uint8Array.from(bytes), PERMISSIVE_POLICY);
    if (expected === undefined) expect(text).toBeUndefined();
    else expect(text).toContain(expected);
  });

  it("names an emoji above maxCodePoint at its first byte", () => {
    const body = Uint8Array.from([0x61, 0xf0, 0x9f, 0x98, 0x80]);
    expect(scan(body, STRICT)).toContain("U+1F600 '😀' at byte 1");
  });

  for (const [name, policy] of [
    ["permissive", PERMISSIVE_POLICY],
    ["strict", STRICT],
  ] as const) {
    it(`agrees with the WHATWG decoder, and cut anywhere says what it says whole (${name} policy)`, () => {
      fc.assert(
        fc.property(bodies, cuts, (body, at) => {
          const whole = scan(body, policy);
          expect(whole === undefined).toBe(acceptable(body, policy));
          expect(scan(body, policy, at)).toBe(whole);
        }),
        { numRuns: 3000 },
      );
    });
  }
});
