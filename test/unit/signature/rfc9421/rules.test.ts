/**
 * The module's own rules, table by table: the bounded parser, what a base refuses, signature
 * selection, the time window, FAPI coverage, Content-Digest streaming, and the algorithm table.
 */

import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import {
  algorithmForKey,
  ContentDigestVerifier,
  checkFapiRequestSignature,
  checkFapiResponseSignature,
  checkSignatureTime,
  component,
  computeContentDigest,
  fapiRequestComponents,
  fapiResponseCoverage,
  type ParsedSignature,
  parseContentDigest,
  parseSignatureInput,
  parseSignatures,
  type RequestMessage,
  resolveRfc9421Algorithm,
  selectSignature,
  sign,
  signatureBase,
} from "../../../../src/signature/rfc9421/index.js";
import {
  parseDictionary,
  parseList,
  serializeDictionary,
  serializeList,
} from "../../../../src/signature/rfc9421/structured-fields.js";

function codeOf(value: unknown): string {
  return isRejection(value) ? value.code : "ok";
}

describe("structured fields (RFC 8941)", () => {
  const dictionaries: [string, string][] = [
    ["a=1, b=2;x=1;y=2, c=(a   b   c), d", "a=1, b=2;x=1;y=2, c=(a b c), d"],
    [
      'sig1=("@method" "@target-uri");created=1;keyid="k"',
      'sig1=("@method" "@target-uri");created=1;keyid="k"',
    ],
    ["a=?0, b=:AQID:, c=-12, d=1.50, e=tok/en:1", "a=?0, b=:AQID:, c=-12, d=1.5, e=tok/en:1"],
    ['a="say \\"hi\\" \\\\ there"', 'a="say \\"hi\\" \\\\ there"'],
    ["a=1.0", "a=1.0"],
    ["  a=1  ", "a=1"],
    ["a=1,b=2", "a=1, b=2"],
    ["a=()", "a=()"],
  ];
  for (const [raw, strict] of dictionaries) {
    it(`dictionary '${raw}' → '${strict}'`, () => {
      const d = parseDictionary(raw, "test");
      if (isRejection(d)) throw new Error(d.text);
      expect(serializeDictionary(d)).toBe(strict);
    });
  }

  it("a list", () => {
    const l = parseList('abc;q=1, ("x" "y");z, ?1', "test");
    if (isRejection(l)) throw new Error(l.text);
    expect(serializeList(l)).toBe('abc;q=1, ("x" "y");z, ?1');
  });

  const malformed: [string, RegExp][] = [
    ["A=1", /key must start/],
    ["a=1,", /trailing/],
    ["a=1 b=2", /expected ','/],
    ['a="unterminated', /unterminated string/],
    ['a="bad \\x escape"', /backslash/],
    ['a="tab\there"', /printable ASCII/],
    ["a=:not base64!:", /base64/],
    ["a=:QQ:", /padded base64/],
    ["a=?2", /boolean/],
    ["a=1234567890123456", /15 digits/],
    ["a=1.2345", /fractional/],
    ["a=(1 2", /expected an item|inner list/],
    ["a=é", /expected an item/],
  ];
  for (const [raw, why] of malformed) {
    it(`refuses '${raw}'`, () => {
      const d = parseDictionary(raw, "Test header");
      expect(codeOf(d)).toBe("FORMAT_ERROR");
      expect(isRejection(d) && d.text).toMatch(why);
      expect(isRejection(d) && d.text).toMatch(/^Test header is not a valid structured field/);
    });
  }

  it("bounds: members, inner items, parameters, duplicates", () => {
    const bounds = { members: 2, innerItems: 2, params: 1, refuseDuplicates: true };
    expect(codeOf(parseDictionary("a, b", "t", bounds))).toBe("ok");
    expect(isRejection(parseDictionary("a, b, c", "t", bounds)) && "members").toBe("members");
    expect(codeOf(parseDictionary("a=(1 2 3)", "t", bounds))).toBe("FORMAT_ERROR");
    expect(codeOf(parseDictionary("a;x;y", "t", bounds))).toBe("FORMAT_ERROR");
    expect(codeOf(parseDictionary("a=1, a=2", "t", bounds))).toBe("FORMAT_ERROR");
    // RFC 8941 itself lets the last win:
    const lenient = parseDictionary("a=1, a=2", "t");
    expect(!isRejection(lenient) && serializeDictionary(lenient)).toBe("a=2");
  });
});

describe("Signature-Input and Signature", () => {
  it("parses labels, components with parameters, typed parameters, and keeps the strict serialization", () => {
    const parsed = parseSignatureInput(
      'sig1=( "@method"  "@query-param";name="id" "x-a";req );created=1700000000;keyid="SN=1,CA=CN=x";tag="fapi-2-request";foo=bar',
    );
    if (isRejection(parsed)) throw new Error(parsed.text);
    const [s] = parsed;
    expect(s!.label).toBe("sig1");
    expect(s!.components.map((c) => c.serialized)).toEqual([
      '"@method"',
      '"@query-param";name="id"',
      '"x-a";req',
    ]);
    expect(s!.params).toEqual({ created: 1700000000, keyid: "SN=1,CA=CN=x", tag: "fapi-2-request" });
    expect(s!.serializedParams).toBe(
      '("@method" "@query-param";name="id" "x-a";req);created=1700000000;keyid="SN=1,CA=CN=x";tag="fapi-2-request";foo=bar',
    );
  });

  const refused: [string, string | undefined, string | undefined, string, RegExp][] = [
    ["both absent", undefined, undefined, "SIGNATURE_MISSING", /missing/],
    ["input absent", undefined, "sig1=:AQID:", "SIGNATURE_MISSING", /Signature-Input header is missing/],
    ["signature absent", 'sig1=("@method")', undefined, "SIGNATURE_MISSING", /Signature header is missing/],
    ["created a string", 'sig1=();created="1"', "sig1=:AQID:", "FORMAT_ERROR", /integer/],
    ["keyid a token", "sig1=();keyid=abc", "sig1=:AQID:", "FORMAT_ERROR", /quoted string/],
    ["component a token", "sig1=(date)", "sig1=:AQID:", "FORMAT_ERROR", /quoted strings/],
    ["member not an inner list", 'sig1="@method"', "sig1=:AQID:", "FORMAT_ERROR", /inner list/],
    ["labels differ", "sig1=()", "sig2=:AQID:", "FORMAT_ERROR", /label 'sig1'/],
    ["an extra signature", "sig1=()", "sig1=:AQID:, sig2=:AQID:", "FORMAT_ERROR", /label 'sig2'/],
    ["duplicate label", "sig1=(), sig1=()", "sig1=:AQID:", "FORMAT_ERROR", /twice/],
    ["five signatures", "a=(), b=(), c=(), d=(), e=()", "a=:AQID:", "FORMAT_ERROR", /at most 4 signatures/],
    [
      "33 components",
      `sig1=(${Array.from({ length: 33 }, (_, i) => `"h${i}"`).join(" ")})`,
      "sig1=:AQID:",
      "FORMAT_ERROR",
      /32 components/,
    ],
    ["input too long", `sig1=();nonce="${"x".repeat(5000)}"`, "sig1=:AQID:", "FORMAT_ERROR", /at most 4096/],
    ["signature too long", "sig1=()", `sig1=:${"A".repeat(8200)}:`, "FORMAT_ERROR", /at most 8192/],
    ["signature empty", "sig1=()", "sig1=::", "FORMAT_ERROR", /0 bytes/],
    ["signature not bytes", "sig1=()", "sig1=abc", "FORMAT_ERROR", /byte sequence/],
  ];
  for (const [what, input, signature, code, text] of refused) {
    it(`refuses: ${what} (${code})`, () => {
      const result = parseSignatures(input, signature);
      expect(codeOf(result)).toBe(code);
      expect(isRejection(result) && result.text).toMatch(text);
    });
  }

  it("Node's arrays of repeated headers are joined as one dictionary", () => {
    const result = parseSignatures(["a=()", "b=()"], ["a=:AQID:", "b=:AQID:"]);
    expect(isRejection(result) ? result.text : result.map((s) => s.label)).toEqual(["a", "b"]);
  });
});

describe("signature base refusals", () => {
  const request: RequestMessage = {
    method: "GET",
    targetUri: "https://bank.example/a?x=1&x=2&y=%C3%A9",
    headers: { "x-a": "1", "x-dict": "a=1", "x-latin": "caf\u00e9", "x-ctl": "a\u0001b" },
  };
  const rows: [string, ReturnType<typeof component>[], string, RegExp][] = [
    ["a header absent", [component("x-missing")], "SIGNATURE_INVALID", /absent from the request/],
    ["listed twice", [component("x-a"), component("x-a")], "FORMAT_ERROR", /twice/],
    [";bs", [component("x-a", { bs: true })], "SIGNATURE_INVALID", /'bs' parameter is not supported/],
    [";tr", [component("x-a", { tr: true })], "SIGNATURE_INVALID", /'tr' parameter is not supported/],
    [
      "unknown parameter",
      [component("x-a", { foo: true })],
      "SIGNATURE_INVALID",
      /unknown component parameter/,
    ],
    [";req on a request", [component("@method", { req: true })], "SIGNATURE_INVALID", /response's signature/],
    ["@status on a request", [component("@status")], "SIGNATURE_INVALID", /only in a response/],
    ["unknown derived", [component("@foo")], "SIGNATURE_INVALID", /not supported/],
    ["upper-case name", [component("X-A")], "FORMAT_ERROR", /lower-case/],
    ["@signature-params listed", [component("@signature-params")], "FORMAT_ERROR", /must not be listed/],
    [
      "@query-param repeated",
      [component("@query-param", { name: "x" })],
      "SIGNATURE_INVALID",
      /occurs 2 times/,
    ],
    ["@query-param absent", [component("@query-param", { name: "z" })], "SIGNATURE_INVALID", /absent/],
    ["@query-param without name", [component("@query-param")], "FORMAT_ERROR", /needs a name/],
    ["non-ASCII value", [component("x-latin")], "FORMAT_ERROR", /printable ASCII/],
    ["control char", [component("x-ctl")], "FORMAT_ERROR", /printable ASCII/],
    [
      ";sf on an unknown field",
      [component("x-a", { sf: true })],
      "SIGNATURE_INVALID",
      /not a structured field known/,
    ],
    [
      ";key on a field with a non-ASCII value (refused before it is parsed as a dictionary)",
      [component("x-latin", { key: "a" })],
      "FORMAT_ERROR",
      /outside printable ASCII/,
    ],
    [
      ";key on a non-dictionary",
      [component("x-a", { key: "a" })],
      "FORMAT_ERROR",
      /not a valid structured field/,
    ],
    [";key member absent", [component("x-dict", { key: "b" })], "SIGNATURE_INVALID", /has no member 'b'/],
  ];
  for (const [what, components, code, text] of rows) {
    it(`${what}: ${code}`, () => {
      const base = signatureBase(components, "()", request);
      expect(codeOf(base)).toBe(code);
      expect(isRejection(base) && base.text).toMatch(text);
    });
  }

  it("a response's ;req components need the request", () => {
    const base = signatureBase([component("@method", { req: true })], "()", { status: 200, headers: {} });
    expect(isRejection(base) && base.text).toMatch(/not at hand/);
  });

  it("a response cannot cover @method without ;req", () => {
    const base = signatureBase([component("@method")], "()", { status: 200, headers: {} });
    expect(isRejection(base) && base.text).toMatch(/"@method";req/);
  });

  it("a relative target URI is refused, for @target-uri too", () => {
    for (const name of ["@path", "@target-uri"]) {
      const base = signatureBase([component(name)], "()", { method: "GET", targetUri: "/a", headers: {} });
      expect(isRejection(base) && base.text).toMatch(/not absolute/);
    }
  });

  it(";sf re-serializes a known dictionary strictly; ;key selects one member", () => {
    const message = { status: 200, headers: { "content-digest": "sha-256=:AQID:,   sha-512=:BAUG:" } };
    expect(signatureBase([component("content-digest", { sf: true })], "()", message)).toBe(
      '"content-digest";sf: sha-256=:AQID:, sha-512=:BAUG:\n"@signature-params": ()',
    );
    expect(signatureBase([component("content-digest", { key: "sha-512" })], "()", message)).toBe(
      '"content-digest";key="sha-512": :BAUG:\n"@signature-params": ()',
    );
  });

  it("sign fails, like the base, when a component is missing, and checks its parameters", () => {
    const { privateKey } = generateKeyPairSync("ed25519");
    const missing = sign({ components: ["x-missing"], params: { created: 1 }, message: request, privateKey });
    expect(codeOf(missing)).toBe("SIGNATURE_INVALID");
    const badNonce = sign({ components: [], params: { nonce: "a\nb" }, message: request, privateKey });
    expect(isRejection(badNonce) && badNonce.text).toMatch(/printable ASCII/);
    const badCreated = sign({ components: [], params: { created: 1.5 }, message: request, privateKey });
    expect(isRejection(badCreated) && badCreated.text).toMatch(/whole number/);
    const badLabel = sign({ components: [], params: {}, message: request, privateKey, label: "Sig" });
    expect(isRejection(badLabel) && badLabel.text).toMatch(/label/);
  });
});

function parsedOne(input: string): ParsedSignature {
  const all = parseSignatures(input, input.replace(/=.*$/, "=:AQID:"));
  if (isRejection(all)) throw new Error(all.text);
  return all[0]!;
}

describe("selection, time window, FAPI coverage", () => {
  const signatures = (() => {
    const all = parseSignatures(
      'a=();tag="other", b=();tag="fapi-2-request", c=();tag="fapi-2-request"',
      "a=:AQID:, b=:AQID:, c=:AQID:",
    );
    if (isRejection(all)) throw new Error(all.text);
    return all;
  })();

  it("selects by tag, then prefers the label, else the first", () => {
    expect((selectSignature(signatures, { tag: "fapi-2-request" }) as ParsedSignature).label).toBe("b");
    expect(
      (selectSignature(signatures, { tag: "fapi-2-request", label: "c" }) as ParsedSignature).label,
    ).toBe("c");
    expect(
      (selectSignature(signatures, { tag: "fapi-2-request", label: "a" }) as ParsedSignature).label,
    ).toBe("b");
    const none = selectSignature(signatures, { tag: "fapi-2-response" });
    expect(codeOf(none)).toBe("SIGNATURE_MISSING");
    expect(isRejection(none) && none.text).toMatch(/labels sent: a, b, c/);
  });

  const NOW = 1_800_000_000_000;
  const t = NOW / 1000;
  const times: [string, string, string][] = [
    ["created now", `sig1=();created=${t}`, "ok"],
    ["created 299 s ago", `sig1=();created=${t - 299}`, "ok"],
    ["created 20 s ahead (within tolerance)", `sig1=();created=${t + 20}`, "ok"],
    ["created absent", "sig1=()", "TIMESTAMP_INVALID"],
    ["created 400 s ago", `sig1=();created=${t - 400}`, "TIMESTAMP_INVALID"],
    ["created 60 s ahead", `sig1=();created=${t + 60}`, "TIMESTAMP_INVALID"],
    ["expires passed", `sig1=();created=${t - 100};expires=${t - 60}`, "TIMESTAMP_INVALID"],
    ["expires before created", `sig1=();created=${t};expires=${t - 1}`, "TIMESTAMP_INVALID"],
    ["expires ahead", `sig1=();created=${t};expires=${t + 60}`, "ok"],
  ];
  for (const [what, input, expected] of times) {
    it(`time: ${what}: ${expected}`, () => {
      expect(codeOf(checkSignatureTime(parsedOne(input), { now: NOW }))).toBe(expected);
    });
  }

  const request: RequestMessage = {
    method: "POST",
    targetUri: "https://bank.example/v1/payments",
    headers: {
      authorization: "Bearer x",
      "content-length": "2",
      "content-digest": computeContentDigest("{}"),
      "x-request-id": "1",
      "tpp-signature-certificate": "MII…",
    },
  };

  it("the components a FAPI request must cover follow the message", () => {
    expect(
      fapiRequestComponents(request, { coverAlways: ["x-request-id"], coverWhenPresent: ["psu-id"] }),
    ).toEqual(["@method", "@target-uri", "authorization", "x-request-id", "content-digest"]);
    expect(fapiRequestComponents({ ...request, headers: {} })).toEqual(["@method", "@target-uri"]);
    expect(
      fapiRequestComponents({ ...request, headers: { "transfer-encoding": "chunked", dpop: "x" } }),
    ).toEqual(["@method", "@target-uri", "dpop", "content-digest"]);
  });

  const full = `sig1=("@method" "@target-uri" "authorization" "content-digest" "x-request-id" "tpp-signature-certificate");created=${t};tag="fapi-2-request"`;
  const coverage: [string, string, string][] = [
    ["everything covered", full, "ok"],
    ["wrong tag", full.replace("fapi-2-request", "fapi-2-response"), "SIGNATURE_INVALID"],
    ["authorization not covered", full.replace(' "authorization"', ""), "SIGNATURE_INVALID"],
    ["content-digest not covered", full.replace(' "content-digest"', ""), "SIGNATURE_INVALID"],
    [
      "a Berlin Group header not covered",
      full.replace(' "tpp-signature-certificate"', ""),
      "SIGNATURE_INVALID",
    ],
    ["@method only with ;req", full.replace('"@method"', '"@method";req'), "SIGNATURE_INVALID"],
    ["created too old", full.replace(`created=${t}`, `created=${t - 1000}`), "TIMESTAMP_INVALID"],
  ];
  for (const [what, input, expected] of coverage) {
    it(`FAPI request: ${what}: ${expected}`, () => {
      const result = checkFapiRequestSignature(parsedOne(input), request, {
        now: NOW,
        coverAlways: ["x-request-id", "tpp-signature-certificate"],
      });
      expect(codeOf(result), isRejection(result) ? result.text : "").toBe(expected);
    });
  }

  it("FAPI response: @status, the request's @method and @target-uri, content-digest", () => {
    const response = {
      status: 200,
      headers: { "content-length": "2", "content-digest": computeContentDigest("{}") },
    };
    const good = `sig1=("@method";req "@target-uri";req "@status" "content-digest");created=${t};tag="fapi-2-response"`;
    expect(codeOf(checkFapiResponseSignature(parsedOne(good), response, { now: NOW }))).toBe("ok");
    const unbound = good.replace('"@target-uri";req ', "");
    const result = checkFapiResponseSignature(parsedOne(unbound), response, { now: NOW });
    expect(isRejection(result) && result.text).toMatch(/"@target-uri";req/);
  });

  // The full profile (FAPI 2.0 HTTP Signatures draft -01) against the request it answers.
  const answered = {
    ...request.headers,
    "signature-input": `other=("@method");tag="x", sig7=("@method" "@target-uri");created=${t};tag="fapi-2-request"`,
    signature: "other=:AAAA:, sig7=:AAAA:",
  };
  const response = {
    status: 201,
    headers: { "content-length": "2", "content-digest": computeContentDigest("{}") },
  };
  const bound = `"@method";req "@target-uri";req "content-digest";req "signature";req;key="sig7" "signature-input";req;key="sig7"`;
  const fullOk = `sig1=(${bound} "@status" "content-digest");created=${t};tag="fapi-2-response"`;
  const profileRows: [string, string, Record<string, unknown>, string][] = [
    ["everything bound", fullOk, {}, "ok"],
    [
      "parameters in another order (;key before ;req)",
      fullOk.replace('"signature";req;key="sig7"', '"signature";key="sig7";req'),
      {},
      "ok",
    ],
    [
      "the request's content-digest not bound",
      fullOk.replace(' "content-digest";req', ""),
      {},
      '"content-digest";req',
    ],
    [
      "the request's signature not bound",
      fullOk.replace(' "signature";req;key="sig7"', ""),
      {},
      '"signature";req;key="sig7"',
    ],
    [
      "the request's signature-input not bound",
      fullOk.replace(' "signature-input";req;key="sig7"', ""),
      {},
      '"signature-input";req;key="sig7"',
    ],
    [
      "another signature of the request bound",
      fullOk.replaceAll("sig7", "other"),
      {},
      '"signature";req;key="sig7", "signature-input";req;key="sig7"',
    ],
    [
      "the whole Signature header bound instead of the member",
      fullOk.replace('"signature";req;key="sig7"', '"signature";req'),
      {},
      '"signature";req;key="sig7"',
    ],
    [
      "the response's signature instead of the request's",
      fullOk.replace('"signature";req;key="sig7"', '"signature";key="sig7"'),
      {},
      '"signature";req;key="sig7"',
    ],
    [
      "a label given by the caller wins",
      fullOk,
      { requestSignatureLabel: "other" },
      '"signature";req;key="other", "signature-input";req;key="other"',
    ],
    [
      "an unsigned request: nothing of its signature to bind",
      fullOk.replace(/ "signature[^"]*";req;key="sig7"/g, ""),
      { requestHeaders: request.headers },
      "ok",
    ],
    [
      "a request without content-digest: none to bind",
      fullOk.replace(' "content-digest";req', ""),
      { requestHeaders: { ...answered, "content-digest": undefined } },
      "ok",
    ],
    [
      "method-target: @method and @target-uri suffice",
      `sig1=("@method";req "@target-uri";req "@status" "content-digest");created=${t};tag="fapi-2-response"`,
      { profile: "method-target" },
      "ok",
    ],
    [
      "full: @method and @target-uri do not",
      `sig1=("@method";req "@target-uri";req "@status" "content-digest");created=${t};tag="fapi-2-response"`,
      {},
      '"content-digest";req, "signature";req;key="sig7", "signature-input";req;key="sig7"',
    ],
    [
      "the request's Signature-Input does not parse",
      fullOk,
      { requestHeaders: { ...answered, "signature-input": "sig7=(" } },
      "FORMAT_ERROR",
    ],
  ];
  for (const [what, input, extra, expected] of profileRows) {
    it(`FAPI response, full profile: ${what}: ${expected}`, () => {
      const result = checkFapiResponseSignature(parsedOne(input), response, {
        now: NOW,
        requestHeaders: answered,
        ...extra,
      });
      if (expected === "ok" || expected === "FORMAT_ERROR")
        expect(codeOf(result), isRejection(result) ? result.text : "").toBe(expected);
      else {
        expect(codeOf(result)).toBe("SIGNATURE_INVALID");
        // Only a signature bound as method-target binds is told about that profile.
        const hint = what.startsWith("full: @method")
          ? ' (profile full; a signer that binds the request by "@method";req and "@target-uri";req only is profile method-target)'
          : "";
        expect(isRejection(result) && result.text).toBe(
          `Signature sig1 does not cover ${expected}; a FAPI 2.0 response signature must${hint}`,
        );
      }
    });
  }

  it("the full profile's coverage, in signing order", () => {
    const covered = fapiResponseCoverage(response, {
      requestHeaders: answered,
      coverAlways: ["x-request-id"],
    });
    if (isRejection(covered)) throw new Error(covered.text);
    expect(covered.map((c) => c.serialized)).toEqual([
      '"@method";req',
      '"@target-uri";req',
      '"content-digest";req',
      '"signature";req;key="sig7"',
      '"signature-input";req;key="sig7"',
      '"@status"',
      '"x-request-id"',
      '"content-digest"',
    ]);
  });
});

describe("Content-Digest", () => {
  const body = Buffer.from('{"hello": "world"}');
  it("streams chunk by chunk and compares every value", () => {
    const values = parseContentDigest(
      `${computeContentDigest(body, "sha-256")}, ${computeContentDigest(body, "sha-512")}`,
    );
    if (isRejection(values)) throw new Error(values.text);
    const verifier = new ContentDigestVerifier(values);
    for (let i = 0; i < body.length; i += 5) verifier.update(body.subarray(i, i + 5));
    expect(verifier.bytesReceived).toBe(body.length);
    expect(verifier.finish()).toBe(true);
  });

  it("a body changed by one byte is SIGNATURE_INVALID, naming both values", () => {
    const values = parseContentDigest(computeContentDigest(body));
    if (isRejection(values)) throw new Error(values.text);
    const verifier = new ContentDigestVerifier(values);
    verifier.update(Buffer.from('{"hello": "World"}'));
    const result = verifier.finish();
    expect(codeOf(result)).toBe("SIGNATURE_INVALID");
    expect(isRejection(result) && result.text).toMatch(/hashes to sha-256=:/);
  });

  const refused: [string, string | string[] | undefined, RegExp][] = [
    ["absent", undefined, /missing/],
    ["empty", " ", /missing/],
    ["too long", `sha-256=:${"A".repeat(1100)}:`, /at most 1024/],
    [
      "upper-case key (RFC 8941 keys are lower-case)",
      "SHA-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:",
      /key must start/,
    ],
    ["a token value", "sha-256=abc", /not a byte sequence/],
    ["a short hash", "sha-256=:AQID:", /decodes to 3 bytes/],
    ["the same algorithm twice", "sha-256=:AQID:, sha-256=:AQID:", /twice/],
    [
      "the RFC 3230 Digest syntax",
      "SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=",
      /not a valid structured field/,
    ],
  ];
  for (const [what, raw, text] of refused) {
    it(`refuses ${what}: FORMAT_ERROR`, () => {
      const result = parseContentDigest(raw);
      expect(codeOf(result)).toBe("FORMAT_ERROR");
      expect(isRejection(result) && result.text).toMatch(text);
    });
  }
});

describe("algorithms", () => {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey;
  const p256 = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey;
  const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey;
  const ed = generateKeyPairSync("ed25519").publicKey;
  const ALL = ["rsa-pss-sha512", "rsa-v1_5-sha256", "ecdsa-p256-sha256", "ed25519"] as const;

  it("alg absent: derived from the key (RSA → rsa-pss-sha512)", () => {
    expect(algorithmForKey(rsa)).toBe("rsa-pss-sha512");
    expect(algorithmForKey(p256)).toBe("ecdsa-p256-sha256");
    expect(algorithmForKey(ed)).toBe("ed25519");
    expect(algorithmForKey(p384)).toBeUndefined();
  });

  const rows: [string | undefined, typeof rsa, string, RegExp | null][] = [
    [undefined, rsa, "rsa-pss-sha512", null],
    ["rsa-v1_5-sha256", rsa, "rsa-v1_5-sha256", null],
    ["rsa-v1_5-sha256", p256, "SIGNATURE_INVALID", /does not fit an EC prime256v1 key/],
    ["ecdsa-p256-sha256", p384, "SIGNATURE_INVALID", /does not fit an EC secp384r1 key/],
    ["ed25519", rsa, "SIGNATURE_INVALID", /does not fit an RSA key/],
    ["hmac-sha256", rsa, "SIGNATURE_INVALID", /no shared secrets/],
    ["ecdsa-p384-sha384", p384, "SIGNATURE_INVALID", /not known/],
    ["RSA-PSS-SHA512", rsa, "SIGNATURE_INVALID", /not known/],
    [undefined, p384, "SIGNATURE_INVALID", /no RFC 9421 algorithm fits/],
  ];
  for (const [alg, key, expected, text] of rows) {
    it(`alg ${alg ?? "(absent)"} with ${key.asymmetricKeyType} ${key.asymmetricKeyDetails?.namedCurve ?? ""}: ${expected}`, () => {
      const result = resolveRfc9421Algorithm(alg, key, ALL);
      if (text === null) expect(isRejection(result) ? result.text : result.name).toBe(expected);
      else {
        expect(codeOf(result)).toBe(expected);
        expect(isRejection(result) && result.text).toMatch(text);
      }
    });
  }

  it("v1.5 is not among the defaults: configured subsets decide", () => {
    const result = resolveRfc9421Algorithm("rsa-v1_5-sha256", rsa);
    expect(isRejection(result) && result.text).toMatch(/not accepted here/);
  });
});
