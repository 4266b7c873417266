/**
 * RFC 9421 Appendix B (and the section 2.4, 3 and 4.3 examples): our signature base equals the RFC's
 * byte for byte, the RFC's signatures verify with our code, deterministic algorithms (Ed25519,
 * RSA v1.5) reproduce the RFC's signature exactly, randomized ones (PSS, ECDSA) round-trip.
 * RFC 9530's Content-Digest examples check the digest module.
 */

import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import {
  component,
  isRequest,
  parseContentDigest,
  parseSignatures,
  RFC9421_ALGORITHMS,
  type Rfc9421Algorithm,
  sign,
  signatureBase,
  verify,
  verifyContentDigest,
} from "../../../../src/signature/rfc9421/index.js";
import { caseMessage, caseRequest, privateKey, publicKey, RFC9421, RFC9530 } from "./vectors.js";

const ALL: readonly Rfc9421Algorithm[] = RFC9421_ALGORITHMS;

function parsedCase(id: string) {
  const c = RFC9421.cases.find((x) => x.id === id)!;
  const message = caseMessage(c);
  const all = parseSignatures(message.headers["signature-input"], message.headers.signature);
  if (isRejection(all)) throw new Error(`${id}: ${all.text}`);
  const signature = all.find((s) => s.label === c.label)!;
  return { c, message, signature, request: caseRequest(c) };
}

describe("RFC 9421 examples: signature base and signature", () => {
  for (const c of RFC9421.cases) {
    it(`${c.id} (${c.source}): ${c.expect}`, () => {
      const { message, signature, request } = parsedCase(c.id);
      expect(signature).toBeDefined();
      const base = signatureBase(signature.components, signature.serializedParams, message, request);
      if (isRejection(base)) throw new Error(base.text);
      if (c.base !== null) expect(base).toBe(c.base);
      const result = verify(signature, base, publicKey(c.key), ALL);
      if (c.expect === "verifies") expect(result).toBe(true);
      else {
        expect(isRejection(result) && result.code).toBe("SIGNATURE_INVALID");
        if (c.expect === "refused") expect(isRejection(result) && result.text).toMatch(/shared-secret|hmac/i);
      }
    });
  }

  it("B.2.5: hmac-sha256 named outright is refused with its own text", () => {
    const { signature, message } = parsedCase("B.2.5");
    const withAlg = { ...signature, params: { ...signature.params, alg: "hmac-sha256" } };
    const base = signatureBase(signature.components, signature.serializedParams, message) as string;
    const result = verify(withAlg, base, publicKey("test-key-ed25519"), ALL);
    expect(isRejection(result) && result.text).toMatch(/'hmac-sha256' is not accepted/);
  });

  for (const c of RFC9421.cases.filter((x) => x.expect === "verifies" && x.base !== null)) {
    it(`${c.id}: signing the same components and parameters gives the same base${c.deterministic ? " and signature" : ", and our signature verifies"}`, () => {
      const { message, signature, request } = parsedCase(c.id);
      const params: Record<string, string | number> = {};
      // Keep the RFC's parameter order: sign() serializes in key order.
      for (const [k, v] of signatureParamsInOrder(signature.serializedParams)) params[k] = v;
      const unsigned = { ...message, headers: { ...message.headers } };
      delete unsigned.headers["signature-input"];
      delete unsigned.headers.signature;
      const signed = sign({
        components: signature.components,
        params,
        message: unsigned,
        request,
        privateKey: privateKey(c.key),
        label: c.label,
      });
      if (isRejection(signed)) throw new Error(signed.text);
      expect(signed.base).toBe(c.base);
      const sent = message.headers["signature-input"] as string;
      expect(sent.split(", ").map((m) => m.trim())).toContain(signed.signatureInput);
      if (c.deterministic) {
        const expected = `${c.label}=:${signature.signature.toString("base64")}:`;
        expect(signed.signature).toBe(expected);
      }
      const again = parseSignatures(signed.signatureInput, signed.signature);
      if (isRejection(again)) throw new Error(again.text);
      expect(verify(again[0]!, signed.base, publicKey(c.key), ALL)).toBe(true);
      expect(isRequest(message) || request !== undefined || !c.id.startsWith("2.4")).toBe(true);
    });
  }
});

/** The parameters of a serialized `(…);a=1;b="x"` in order, decoded. */
function signatureParamsInOrder(serialized: string): [string, string | number][] {
  const tail = serialized.slice(serialized.lastIndexOf(")") + 1);
  const out: [string, string | number][] = [];
  for (const m of tail.matchAll(/;([a-z]+)=("(?:[^"\\]|\\.)*"|-?\d+)/g)) {
    const raw = m[2]!;
    out.push([m[1]!, raw.startsWith('"') ? raw.slice(1, -1) : Number(raw)]);
  }
  return out;
}

describe("RFC 9421 section 2.1 field examples", () => {
  const request = {
    method: "GET",
    targetUri: "https://www.example.com/",
    headers: {
      host: "www.example.com",
      date: "Tue, 20 Apr 2021 02:07:56 GMT",
      "x-ows-header": "   Leading and trailing whitespace.   ",
      "x-obs-fold-header": "Obsolete\r\n    line folding.",
      "cache-control": ["max-age=60", "   must-revalidate"],
      "example-dict": " a=1,    b=2;x=1;y=2,   c=(a   b   c)",
      "x-empty-header": "",
    },
  };
  const rows: [string, Record<string, string | boolean>, string][] = [
    ["host", {}, "www.example.com"],
    ["date", {}, "Tue, 20 Apr 2021 02:07:56 GMT"],
    ["x-ows-header", {}, "Leading and trailing whitespace."],
    ["x-obs-fold-header", {}, "Obsolete line folding."],
    ["cache-control", {}, "max-age=60, must-revalidate"],
    ["example-dict", {}, "a=1,    b=2;x=1;y=2,   c=(a   b   c)"],
    ["x-empty-header", {}, ""],
    ["example-dict", { key: "a" }, "1"],
    ["example-dict", { key: "b" }, "2;x=1;y=2"],
    ["example-dict", { key: "c" }, "(a b c)"],
  ];
  for (const [name, params, value] of rows) {
    it(`${component(name, params).serialized}: '${value}'`, () => {
      const c = component(name, params);
      const base = signatureBase([c], "()", request);
      expect(base).toBe(`${c.serialized}: ${value}\n"@signature-params": ()`);
    });
  }

  it('"example-dict";key="d" of the 2.1.2 field is ?1', () => {
    const base = signatureBase([component("example-dict", { key: "d" })], "()", {
      ...request,
      headers: { "example-dict": "  a=1, b=2;x=1;y=2, c=(a   b    c), d" },
    });
    expect(base).toBe(`"example-dict";key="d": ?1\n"@signature-params": ()`);
  });
});

describe("RFC 9421 section 2.2 derived component examples", () => {
  const rows: [string, string, Record<string, string>, string][] = [
    [
      "https://www.example.com/path?param=value",
      "@target-uri",
      {},
      "https://www.example.com/path?param=value",
    ],
    ["https://www.example.com/path?param=value", "@authority", {}, "www.example.com"],
    ["http://www.example.com/path?param=value", "@scheme", {}, "http"],
    ["https://www.example.com/path?param=value", "@request-target", {}, "/path?param=value"],
    ["https://www.example.com/path?param=value", "@path", {}, "/path"],
    [
      "https://www.example.com/path?param=value&foo=bar&baz=bat%2Dman",
      "@query",
      {},
      "?param=value&foo=bar&baz=bat%2Dman",
    ],
    ["https://www.example.com/path?queryString", "@query", {}, "?queryString"],
    ["https://www.example.com/path", "@query", {}, "?"],
    [
      "https://www.example.com/path?param=value&foo=bar&baz=batman&qux=",
      "@query-param",
      { name: "baz" },
      "batman",
    ],
    ["https://www.example.com/path?param=value&foo=bar&baz=batman&qux=", "@query-param", { name: "qux" }, ""],
    [
      "https://www.example.com/path?param=value&foo=bar&baz=batman&qux=",
      "@query-param",
      { name: "param" },
      "value",
    ],
    [
      "https://www.example.com/parameters?var=this%20is%20a%20big%0Amultiline%20value&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something",
      "@query-param",
      { name: "var" },
      "this%20is%20a%20big%0Amultiline%20value",
    ],
    [
      "https://www.example.com/parameters?var=x&bar=with+plus+whitespace",
      "@query-param",
      { name: "bar" },
      "with%20plus%20whitespace",
    ],
    [
      "https://www.example.com/parameters?fa%C3%A7ade%22%3A%20=something",
      "@query-param",
      { name: "fa%C3%A7ade%22%3A%20" },
      "something",
    ],
    ["HTTPS://WWW.Example.COM:443", "@authority", {}, "www.example.com"],
    ["https://www.example.com:8443/", "@authority", {}, "www.example.com:8443"],
    ["https://www.example.com", "@path", {}, "/"],
  ];
  for (const [uri, name, params, value] of rows) {
    it(`${uri} ${component(name, params).serialized} → '${value}'`, () => {
      const c = component(name, params);
      const base = signatureBase([c], "()", { method: "POST", targetUri: uri, headers: {} });
      expect(base).toBe(`${c.serialized}: ${value}\n"@signature-params": ()`);
    });
  }

  it("@method is the method as sent; @status is the response's", () => {
    expect(
      signatureBase([component("@method")], "()", { method: "POST", targetUri: "https://a/", headers: {} }),
    ).toBe('"@method": POST\n"@signature-params": ()');
    expect(signatureBase([component("@status")], "()", { status: 200, headers: {} })).toBe(
      '"@status": 200\n"@signature-params": ()',
    );
  });
});

describe("RFC 9530 Content-Digest examples", () => {
  for (const c of RFC9530.cases) {
    it(`${c.id}: ${c.expect}`, () => {
      const result = verifyContentDigest(c.header, Buffer.from(c.body, "utf8"));
      if (c.expect === "verifies") expect(result).toBe(true);
      else if (c.expect === "mismatch") {
        expect(Array.isArray(parseContentDigest(c.header))).toBe(true);
        expect(isRejection(result) && result.code).toBe("SIGNATURE_INVALID");
      } else expect(isRejection(result) && result.code).toBe("FORMAT_ERROR");
    });
  }
});
