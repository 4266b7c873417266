import { describe, expect, it } from "vitest";
import { isRejection, type Rejection } from "../../../src/errors.js";
import {
  buildSigningString,
  formatSignatureHeader,
  parseSignatureHeader,
  type SignatureParams,
} from "../../../src/signature/index.js";

const SIG = "dGVzdA==";

function ok(raw: string, options = {}): SignatureParams {
  const result = parseSignatureHeader(raw, options);
  if (isRejection(result)) throw new Error(`unexpected rejection: ${result.text}`);
  return result;
}

function refused(raw: string | undefined, options = {}): Rejection {
  const result = parseSignatureHeader(raw, options);
  if (!isRejection(result)) throw new Error("expected a rejection");
  return result;
}

describe("Signature header parsing", () => {
  it("reads the four Berlin Group parameters", () => {
    const p = ok(
      `keyId="SN=1A,CA=CN=Foo",algorithm="rsa-sha256",headers="digest x-request-id date",signature="${SIG}"`,
    );
    expect(p.keyId).toBe("SN=1A,CA=CN=Foo");
    expect(p.algorithm).toBe("rsa-sha256");
    expect(p.headers).toEqual(["digest", "x-request-id", "date"]);
    expect(p.signature).toBe(SIG);
    expect(p.signatureBytes.toString()).toBe("test");
  });

  it("keeps commas, '=' and escaped quotes inside quoted values", () => {
    const p = ok(
      `keyId="SN=1A,CA=CN=Foo, O=Bar \\"Baz\\"",algorithm="rsa-sha256",headers="date",signature="${SIG}"`,
    );
    expect(p.keyId).toBe('SN=1A,CA=CN=Foo, O=Bar "Baz"');
  });

  it("matches parameter names case-insensitively and in any order", () => {
    const p = ok(`Signature="${SIG}", HEADERS="Date Digest", KeyID="k", Algorithm="RSA-SHA256"`);
    expect(p.keyId).toBe("k");
    expect(p.algorithm).toBe("rsa-sha256");
    expect(p.headers).toEqual(["date", "digest"]);
  });

  it("lower-cases a mixed-case header list, as the Berlin Group's own example has it", () => {
    const p = ok(
      `keyId="SN=9FA1,CA=CN=D-TRUST%20CA%202-1%202015,O=D-Trust%20GmbH,C=DE",algorithm="rsa-sha256", headers="Digest X-Request-ID PSU-ID TPP-Redirect-URI Date", signature="${SIG}"`,
    );
    expect(p.headers).toEqual(["digest", "x-request-id", "psu-id", "tpp-redirect-uri", "date"]);
  });

  it("ignores unknown parameters", () => {
    const p = ok(`keyId="k",algorithm="rsa-sha256",headers="date",extension="x,y",signature="${SIG}"`);
    expect(p.keyId).toBe("k");
  });

  it("accepts the optional 'Signature ' scheme word", () => {
    expect(ok(`Signature keyId="k",algorithm="rsa-sha256",headers="date",signature="${SIG}"`).keyId).toBe(
      "k",
    );
    expect(ok(`signature  keyId="k",algorithm="rsa-sha256",headers="date",signature="${SIG}"`).keyId).toBe(
      "k",
    );
  });

  it("reads unquoted token values and draft-12 created/expires", () => {
    const p = ok(
      `keyId="k",algorithm="hs2019",created=1402170695,expires=1402170699,headers="(created)",signature="${SIG}"`,
    );
    expect(p.created).toBe(1402170695);
    expect(p.expires).toBe(1402170699);
  });

  it("created is whole seconds only (draft-cavage-12 2.1.4); expires may have a fraction, signed as written (2.1.5)", () => {
    const base = `keyId="k",algorithm=hs2019,headers="(created) (expires)",signature="${SIG}"`;
    for (const created of ["1402170695.5", "-1", "1e9", "0x10", '"1402170695.5"', ""])
      expect(refused(`${base},created=${created}`).code).toBe("SIGNATURE_INVALID");
    const p = ok(`${base},created=1402170695,expires=1402170699.25`);
    expect([p.created, p.expires, p.expiresText]).toEqual([1402170695, 1402170699, "1402170699.25"]);
    expect(buildSigningString(p.headers, { method: "GET", target: "/", headers: {} }, p)).toBe(
      "(created): 1402170695\n(expires): 1402170699.25",
    );
    expect(ok(`${base},expires=1402170699`).expiresText).toBeUndefined();
  });

  it("decodes an RFC 2047 encoded header before parsing", () => {
    const plain = `keyId="SN=1,CA=O=Bank Ærø",algorithm="rsa-sha256",headers="date",signature="${SIG}"`;
    const encoded = `=?utf-8?B?${Buffer.from(plain).toString("base64")}?=`;
    expect(ok(encoded).keyId).toBe("SN=1,CA=O=Bank Ærø");
  });

  it.each([
    ["keyId", `algorithm="rsa-sha256",headers="date",signature="${SIG}"`],
    ["signature", `keyId="k",algorithm="rsa-sha256",headers="date"`],
    ["headers", `keyId="k",algorithm="rsa-sha256",signature="${SIG}"`],
    ["algorithm", `keyId="k",headers="date",signature="${SIG}"`],
  ])("refuses a header without '%s', naming it", (name, raw) => {
    const r = refused(raw);
    expect(r.code).toBe("SIGNATURE_INVALID");
    expect(r.text).toContain(`'${name}'`);
  });

  it("lets draft-cavage peers omit headers (default: date) when asked", () => {
    expect(
      ok(`keyId="k",algorithm="rsa-sha256",signature="${SIG}"`, { requireHeaders: false }).headers,
    ).toEqual(["date"]);
  });

  it.each([
    ["a known one in two spellings", `keyId="a",KEYID="b",algorithm="rsa-sha256"`, "keyid"],
    ["a known one, the same spelling", `keyId="a",algorithm="rsa-sha256",algorithm="hs2019"`, "algorithm"],
    ["one it does not read", `keyId="a",algorithm="rsa-sha256",nonce="1",Nonce="2"`, "nonce"],
  ])("refuses a duplicate parameter: %s", (_, start, name) => {
    expect(refused(`${start},headers="date",signature="${SIG}"`).text).toContain(`'${name}' twice`);
  });

  it.each([
    ["KeyId", "ALGORITHM", "Headers", "SIGNATURE"],
    ["keyid", "algorithm", "headers", "signature"],
    ["kEyId", "aLgOrItHm", "hEaDeRs", "sIgNaTuRe"],
  ])("reads the parameter names without case: %s, %s, %s, %s", (k, a, h, s) => {
    const params = ok(`${k}="k",${a}="RSA-SHA256",${h}="Date Digest",${s}="${SIG}",nonce="x"`);
    expect(params).toMatchObject({ keyId: "k", algorithm: "rsa-sha256", headers: ["date", "digest"] });
    expect(params.signature).toBe(SIG);
  });

  it("does not take a look-alike name for a known one", () => {
    // Names are compared by folding case (OR 0x20): '_' folds onto no letter, so 'keyi_' is not 'keyid'.
    expect(refused(`keyi_="k",algorithm="rsa-sha256",headers="date",signature="${SIG}"`).text).toContain(
      "no 'keyId'",
    );
  });

  it("refuses empty values, naming the parameter", () => {
    expect(refused(`keyId="",algorithm="rsa-sha256",headers="date",signature="${SIG}"`).text).toContain(
      "empty 'keyId'",
    );
    expect(refused(`keyId="k",algorithm="rsa-sha256",headers=" ",signature="${SIG}"`).text).toContain(
      "empty 'headers'",
    );
  });

  it("refuses a signature that is not base64", () => {
    const r = refused(`keyId="k",algorithm="rsa-sha256",headers="date",signature="not base64!"`);
    expect(r.text).toContain("not valid base64");
  });

  it("refuses a header list naming a header twice", () => {
    expect(refused(`keyId="k",algorithm="rsa-sha256",headers="date Date",signature="${SIG}"`).text).toContain(
      "'date' twice",
    );
  });

  // Header lists are kept once read (a signer sends the same one every time): the kept list must
  // give the same answer as a fresh read, and a refused one must stay refused.
  it.each([
    ["a list read before", "digest x-request-id date", ["digest", "x-request-id", "date"]],
    ["a list with a name twice", "date Date", "lists 'date' twice"],
    ["a list too long to be kept", Array.from({ length: 120 }, (_, i) => `x-h${i}`).join(" "), 120],
  ])("reads %s the same every time", (_what, list, expected) => {
    const raw = `keyId="k",algorithm="rsa-sha256",headers="${list}",signature="${SIG}"`;
    for (let i = 0; i < 3; i++) {
      if (typeof expected === "string") expect(refused(raw).text).toContain(expected);
      else if (typeof expected === "number") expect(ok(raw).headers).toHaveLength(expected);
      else expect(ok(raw).headers).toEqual(expected);
    }
  });

  it("hands out kept header lists that nobody can change", () => {
    const raw = `keyId="k",algorithm="rsa-sha256",headers="date digest",signature="${SIG}"`;
    const first = ok(raw).headers;
    expect(() => (first as string[]).push("psu-id")).toThrow(TypeError);
    expect(ok(raw).headers).toEqual(["date", "digest"]);
  });

  it("refuses an unterminated quoted value and stray characters", () => {
    expect(refused(`keyId="k,algorithm="rsa-sha256`).code).toBe("SIGNATURE_INVALID");
    expect(refused(`keyId="k" x,algorithm="rsa-sha256",headers="date",signature="${SIG}"`).text).toContain(
      "instead of ','",
    );
    expect(refused(`keyId`).text).toContain("no '='");
  });

  it("answers a missing header with SIGNATURE_MISSING", () => {
    expect(refused(undefined).code).toBe("SIGNATURE_MISSING");
    expect(refused("  ").code).toBe("SIGNATURE_MISSING");
  });

  it("refuses an over-long header before parsing it", () => {
    expect(refused("a".repeat(20_000)).text).toContain("at most");
  });

  it("formats what it parses", () => {
    const params = {
      keyId: 'SN=1,CA=CN="x", O=y',
      algorithm: "rsa-sha256",
      headers: ["date", "digest"],
      signature: SIG,
    };
    const p = ok(formatSignatureHeader(params));
    expect({ keyId: p.keyId, algorithm: p.algorithm, headers: p.headers, signature: p.signature }).toEqual(
      params,
    );
  });
});
