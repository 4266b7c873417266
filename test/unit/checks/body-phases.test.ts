/**
 * The inspectors a request body passes on its way to the backend, fed real bytes in chunks: the
 * Digest against a real DigestVerifier (values parsed from real headers), the size bound, and the
 * character policy with UTF-8 sequences and JSON escapes split across chunks.
 */

import { describe, expect, it } from "vitest";
import type { CharacterPolicy } from "../../../src/checks/index.js";
import type { Rejection } from "../../../src/errors.js";
import type { BodyInspector } from "../../../src/forward/body.js";
import { computeDigestHeader, type DigestValue, parseDigestHeader } from "../../../src/signature/index.js";
import { characterInspector, digestInspector, sizeInspector } from "../../helpers/body-steps.js";
import { named } from "../../helpers/named-rows.js";

/** Feeds the chunks in order, then finishes: where the inspector refused, and with what. */
function feed(
  inspector: BodyInspector,
  chunks: readonly (string | Buffer)[],
): { at: number | "finish"; rejection: Rejection } | undefined {
  for (const [i, chunk] of chunks.entries()) {
    const rejection = inspector.update(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, "utf8"));
    if (rejection) return { at: i, rejection };
  }
  const rejection = inspector.finish();
  return rejection ? { at: "finish", rejection } : undefined;
}

const digestOf = (header: string): DigestValue[] => {
  const values = parseDigestHeader(header);
  if (!Array.isArray(values)) throw new Error(values.text);
  return values;
};

const BODY = '{"instructedAmount":{"amount":"100.00","currency":"NOK"},"creditorName":"Kari Nordmann"}';
const SHA256 = computeDigestHeader(BODY, "sha-256");
const SHA512 = computeDigestHeader(BODY, "sha-512");

describe("digestInspector", () => {
  it("is the digest step", () => {
    expect(digestInspector(digestOf(SHA256)).step).toBe("digest");
  });

  it.each(
    named([
      { name: "SHA-256, one chunk", header: SHA256, chunks: [BODY] },
      {
        name: "SHA-256, byte by byte",
        header: SHA256,
        chunks: [...Buffer.from(BODY)].map((b) => Buffer.of(b)),
      },
      {
        name: "SHA-512, three chunks",
        header: SHA512,
        chunks: [BODY.slice(0, 5), BODY.slice(5, 40), BODY.slice(40)],
      },
      { name: "both values, both right", header: `${SHA256}, ${SHA512}`, chunks: [BODY] },
      { name: "an empty body", header: computeDigestHeader(""), chunks: [] },
    ]),
  )("accepts the body its Digest names: %s", (_name, { header, chunks }) => {
    expect(feed(digestInspector(digestOf(header)), chunks)).toBeUndefined();
  });

  const WRONG_512 = computeDigestHeader("x", "sha-512");
  it.each(
    named([
      { name: "one byte changed", header: SHA256, body: BODY.replace("100.00", "900.00"), sent: SHA256 },
      { name: "one byte more", header: SHA256, body: `${BODY} `, sent: SHA256 },
      { name: "one byte less", header: SHA256, body: BODY.slice(0, -1), sent: SHA256 },
      {
        name: "the SHA-512 value wrong beside a right SHA-256",
        header: `${SHA256}, ${WRONG_512}`,
        body: BODY,
        sent: WRONG_512,
      },
      { name: "an empty body against a non-empty one's Digest", header: SHA256, body: "", sent: SHA256 },
    ]),
  )("refuses at the end, never before, when %s", (_name, { header, body, sent }) => {
    const chunks = body === "" ? [] : [body.slice(0, 10), body.slice(10)];
    const refused = feed(digestInspector(digestOf(header)), chunks);
    expect(refused?.at).toBe("finish");
    expect(refused?.rejection.code).toBe("SIGNATURE_INVALID");
    // It names the value sent, the byte count and what the bytes really hash to.
    const algorithm = sent.startsWith("SHA-512=") ? "sha-512" : "sha-256";
    expect(refused?.rejection.text).toContain(
      `Digest header is ${sent}, but the ${Buffer.byteLength(body)}-byte body hashes to ${computeDigestHeader(body, algorithm)}`,
    );
  });
});

describe("sizeInspector", () => {
  it("is the body-size step", () => {
    expect(sizeInspector(10).step).toBe("body-size");
  });

  it.each(
    named([
      { name: "nothing", chunks: [], at: undefined },
      { name: "exactly the limit, in pieces", chunks: ["1234", "56", "7890"], at: undefined },
      { name: "one byte over, in the last chunk", chunks: ["1234", "56", "78901"], at: 2 },
      { name: "over in the first chunk", chunks: ["12345678901", "2"], at: 0 },
      // Bytes, not characters: five 2-byte letters are 10 bytes, six are 12.
      { name: "multi-byte characters counted as bytes", chunks: ["æøåæø", "æ"], at: 1 },
    ]),
  )("at 10 bytes: %s", (_name, { chunks, at }) => {
    const refused = feed(sizeInspector(10), chunks);
    expect(refused?.at).toBe(at);
    if (at !== undefined) {
      expect(refused?.rejection.code).toBe("PAYLOAD_TOO_LARGE");
      expect(refused?.rejection.text).toContain("exceeds 10 bytes");
    }
  });
});

describe("characterInspector", () => {
  const NO_EMOJI: CharacterPolicy = { maxCodePoint: 0xffff, blockedRanges: [] };
  const NO_SNOWMAN: CharacterPolicy = { maxCodePoint: 0x10ffff, blockedRanges: [[0x2603, 0x2603]] };
  const EVERYTHING: CharacterPolicy = { maxCodePoint: 0x10ffff, blockedRanges: [] };
  const grin = Buffer.from("\u{1F600}", "utf8");

  it("is the body-characters step", () => {
    expect(characterInspector(NO_EMOJI).step).toBe("body-characters");
  });

  it.each(
    named([
      { name: "plain ASCII", policy: NO_EMOJI, chunks: ['{"a":"b"}'] },
      { name: "BMP letters", policy: NO_EMOJI, chunks: ['{"creditorName":"Ærlig Øye Åse"}'] },
      {
        name: "a 3-byte character split across chunks",
        policy: NO_EMOJI,
        chunks: [Buffer.from('"\u2603"').subarray(0, 2), Buffer.from('"\u2603"').subarray(2)],
      },
      { name: "an emoji where the policy allows it", policy: EVERYTHING, chunks: [`"${"\u{1F600}"}"`] },
      { name: "an escaped snowman's neighbour", policy: NO_SNOWMAN, chunks: ['"\\u2604"'] },
      { name: "an escaped backslash before u2603", policy: NO_SNOWMAN, chunks: ['"\\\\u2603"'] },
    ]),
  )("accepts %s", (_name, { policy, chunks }) => {
    expect(feed(characterInspector(policy), chunks)).toBeUndefined();
  });

  it.each(
    named([
      {
        name: "an emoji above maxCodePoint",
        policy: NO_EMOJI,
        chunks: [Buffer.concat([Buffer.from('{"n":"'), grin, Buffer.from('"}')])],
        at: 0,
        text: ["U+1F600", "at byte 6"],
      },
      {
        name: "an emoji split across chunks, byte offset counted over the whole body",
        policy: NO_EMOJI,
        chunks: [Buffer.from('{"n":"'), grin.subarray(0, 2), grin.subarray(2)],
        at: 2,
        text: ["U+1F600", "at byte 6"],
      },
      {
        name: "the emoji written as a JSON escape pair",
        policy: NO_EMOJI,
        chunks: ['{"n":"\\ud83d', '\\ude00"}'],
        at: 1,
        text: ["U+1F600", "JSON escape at byte 6"],
      },
      {
        name: "a blocked range",
        policy: NO_SNOWMAN,
        chunks: ['"\u2603"'],
        at: 0,
        text: ["U+2603"],
      },
      {
        name: "bytes that are not UTF-8",
        policy: EVERYTHING,
        chunks: [Buffer.from([0x22, 0xff, 0x22])],
        at: 0,
        text: ["not valid UTF-8 at byte 1 (0xff)"],
      },
      {
        name: "a body that ends inside a UTF-8 sequence",
        policy: EVERYTHING,
        chunks: [Buffer.from('"a'), grin.subarray(0, 3)],
        at: "finish",
        text: ["ends inside a UTF-8 sequence that starts at byte 2"],
      },
    ]),
  )("refuses %s", (_name, { policy, chunks, at, text }) => {
    const refused = feed(characterInspector(policy), chunks);
    expect(refused?.at).toBe(at);
    expect(refused?.rejection.code).toBe("FORMAT_ERROR");
    for (const part of text) expect(refused?.rejection.text).toContain(part);
  });
});
