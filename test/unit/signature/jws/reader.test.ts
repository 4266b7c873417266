import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import { decodeBase64Url } from "../../../../src/signature/jws/compact.js";
import {
  JsonProblem,
  MAX_JWS_LENGTH,
  parseJsonObject,
  readDetachedJws,
  readJadesHeader,
  readUkObHeader,
} from "../../../../src/signature/jws/index.js";
import { b64u } from "./material.js";

const H = b64u('{"alg":"RS256"}');
const S = Buffer.alloc(32, 7).toString("base64url");

describe("readDetachedJws", () => {
  it.each([
    ["absent", undefined, "SIGNATURE_MISSING"],
    ["empty", "", "SIGNATURE_MISSING"],
    ["one dot", `${H}.${S}`, "FORMAT_ERROR"],
    ["three dots", `${H}...${S}`, "FORMAT_ERROR"],
    ["attached payload", `${H}.${b64u("x")}.${S}`, "FORMAT_ERROR"],
    ["padding in the header", `${b64u('{"alg":"RS256"}x')}=..${S}`, "FORMAT_ERROR"],
    ["standard base64 chars", `${H}..${S.slice(0, -1)}+`, "FORMAT_ERROR"],
    ["empty signature", `${H}..`, "FORMAT_ERROR"],
    ["empty header", `..${S}`, "FORMAT_ERROR"],
    ["length 1 mod 4", `${H}..${S}AA`, "FORMAT_ERROR"],
    ["non-canonical last char", `${b64u("{}").slice(0, -1)}9..${S}`, "FORMAT_ERROR"],
    ["header not JSON", `${b64u("alg")}..${S}`, "FORMAT_ERROR"],
    ["header a JSON array", `${b64u("[1]")}..${S}`, "FORMAT_ERROR"],
    ["header not UTF-8", `${Buffer.from([0x7b, 0xff, 0x7d]).toString("base64url")}..${S}`, "FORMAT_ERROR"],
    ["duplicate alg", `${b64u('{"alg":"none","alg":"RS256"}')}..${S}`, "SIGNATURE_INVALID"],
    ["duplicate crit in sigD", `${b64u('{"sigD":{"pars":[],"pars":["x"]}}')}..${S}`, "SIGNATURE_INVALID"],
    ["duplicate by escape", `${b64u('{"alg":"a","\\u0061lg":"b"}')}..${S}`, "SIGNATURE_INVALID"],
    ["over the bound", `${"A".repeat(MAX_JWS_LENGTH)}..${S}`, "FORMAT_ERROR"],
  ])("%s → %s", (_, value, code) => {
    const r = readDetachedJws(value, "x-jws-signature");
    expect(isRejection(r) ? r.code : "accepted").toBe(code);
  });

  it("reads a well-formed value, keeping the header text as sent", () => {
    const r = readDetachedJws(`${H}..${S}`, "x-jws-signature");
    if (isRejection(r)) throw new Error(r.text);
    expect(r.protectedB64).toBe(H);
    expect(r.header).toEqual({ alg: "RS256" });
    expect(r.signature).toEqual(Buffer.alloc(32, 7));
  });
});

describe("parseJsonObject", () => {
  it.each([
    [
      '{"a":1,"b":[true,false,null],"c":{"d":"e\\n\\u00e9"}}',
      { a: 1, b: [true, false, null], c: { d: "e\né" } },
    ],
    [' { "x5t#S256" : "q" } ', { "x5t#S256": "q" }],
    ['{"n":-1.5e3}', { n: -1500 }],
    ['{"a":"\\"a\\":","b":"\\\\","c":1}', { a: '"a":', b: "\\", c: 1 }],
    [
      '{"o":{"a":1},"p":{"a":2},"l":[{"a":1},{"a":2}]}',
      { o: { a: 1 }, p: { a: 2 }, l: [{ a: 1 }, { a: 2 }] },
    ],
  ])("%s", (text, expected) => {
    expect(parseJsonObject(text)).toEqual(expected);
  });

  it.each([
    ['{"a":1,"a":1}', "duplicate"],
    ['{"o":{"a":1,"a":2}}', "duplicate"],
    ['{"l":[{"a":1,"a":2}]}', "duplicate"],
    ['{"a":1,}', "syntax"],
    ['{"a":01}', "syntax"],
    ["{'a':1}", "syntax"],
    ['{"a":"\t"}', "syntax"],
    ['{"a":1} x', "syntax"],
    ['{"a":tru}', "syntax"],
    ['{"a":"\\x"}', "syntax"],
    [`${"[".repeat(20)}`, "syntax"],
    [`{"a":${"[".repeat(20)}1${"]".repeat(20)}}`, "depth"],
    [`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}`, "depth"],
    ['{"a":"x\\\\","a":1}', "duplicate"],
    ['{"a\\"":1,"a\\"":2}', "duplicate"],
  ])("%s is refused (%s)", (text, kind) => {
    const r = parseJsonObject(text);
    expect(r).toBeInstanceOf(JsonProblem);
    expect((r as JsonProblem).kind).toBe(kind);
  });

  it("keeps __proto__ as data", () => {
    const r = parseJsonObject('{"__proto__":{"alg":"none"}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(r.alg).toBeUndefined();
    expect(Object.keys(r)).toEqual(["__proto__"]);
  });

  it("agrees with JSON.parse on objects without duplicate members", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })), (object) => {
        const text = JSON.stringify(object);
        const parsed = parseJsonObject(text);
        // -0 becomes 0 in JSON.stringify; compare through JSON.
        expect(JSON.stringify(parsed)).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 300 },
    );
  });

  it("finds a repeated name wherever it is and however it is escaped", () => {
    const unicodeEscaped = (name: string) =>
      name
        .split("")
        .map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`)
        .join("");
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1 }),
        fc.nat(),
        fc.boolean(),
        (object, pick, escaped) => {
          const names = Object.keys(object);
          const name = names[pick % names.length]!;
          const text = JSON.stringify(object);
          const again = escaped ? `"${unicodeEscaped(name)}"` : JSON.stringify(name);
          const doubled = `${text.slice(0, -1)},${again}:0}`;
          const nested = `{"outer":${doubled}}`;
          for (const t of [doubled, nested]) {
            const r = parseJsonObject(t);
            expect(r instanceof JsonProblem && r.kind, t).toBe("duplicate");
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refuses what JSON.parse refuses", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        let valid = true;
        try {
          const v = JSON.parse(text);
          valid = typeof v === "object" && v !== null && !Array.isArray(v);
        } catch {
          valid = false;
        }
        const r = parseJsonObject(text);
        if (!valid) expect(r).toBeInstanceOf(JsonProblem);
      }),
      { numRuns: 500 },
    );
  });
});

describe("decodeBase64Url", () => {
  it("round-trips exactly the canonical spelling", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), (bytes) => {
        const text = Buffer.from(bytes).toString("base64url");
        expect(decodeBase64Url(text)).toEqual(Buffer.from(bytes));
      }),
    );
  });
});

describe("the readers never throw", () => {
  const read = (value: string) => {
    readDetachedJws(value, "x-jws-signature");
    readJadesHeader(value, { now: 0 });
    readUkObHeader(value, { now: 0, allowB64False: true });
  };

  it("on arbitrary strings", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => read(s)),
      { numRuns: 500 },
    );
  });

  it("on arbitrary headers and signatures in the compact form", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.uint8Array().map((b) => Buffer.from(b).toString("latin1")),
        ),
        fc.uint8Array({ maxLength: 80 }),
        (header, sig) => {
          read(
            `${Buffer.from(header, "utf8").toString("base64url")}..${Buffer.from(sig).toString("base64url")}`,
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it("on JSON objects with header-like members", () => {
    const member = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom("RS256", "none", false, ["b64", "sigT", "sigD"], { mId: "x", pars: [] }),
    );
    const header = fc.record(
      {
        alg: member,
        b64: member,
        crit: member,
        sigT: member,
        sigD: member,
        x5c: member,
        "x5t#S256": member,
        kid: member,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(header, (h) => read(`${b64u(JSON.stringify(h))}..${S}`)),
      { numRuns: 500 },
    );
  });
});
