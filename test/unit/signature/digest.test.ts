import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import {
  computeDigestHeader,
  DigestVerifier,
  parseDigestHeader,
  verifyDigest,
} from "../../../src/signature/index.js";

const body = Buffer.from('{"hello": "world"}');
const sha256 = createHash("sha256").update(body).digest("base64");
const sha512 = createHash("sha512").update(body).digest("base64");

describe("Digest header (RFC 3230 / RFC 5843)", () => {
  it("computes SHA-256 and SHA-512 headers", () => {
    expect(computeDigestHeader(body)).toBe("SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");
    expect(computeDigestHeader(body, "sha-512")).toBe(`SHA-512=${sha512}`);
  });

  it("accepts algorithm tokens in any case", () => {
    for (const token of ["SHA-256", "sha-256", "Sha-256"])
      expect(verifyDigest(`${token}=${sha256}`, body)).toBe(true);
    expect(verifyDigest(`SHA-512=${sha512}`, body)).toBe(true);
  });

  it("checks every supported value of a multi-valued header and skips unknown algorithms", () => {
    expect(verifyDigest(`MD5=Q2hlY2sgSW50ZWdyaXR5IQ==, SHA-256=${sha256}, SHA-512=${sha512}`, body)).toBe(
      true,
    );
    const wrong512 = createHash("sha512").update("other").digest("base64");
    const r = verifyDigest(`SHA-256=${sha256},SHA-512=${wrong512}`, body);
    expect(isRejection(r) && r.text).toContain("SHA-512");
  });

  it("hashes a body streamed in chunks exactly as in one piece", () => {
    const big = Buffer.alloc(64 * 1024, 7);
    const values = parseDigestHeader(computeDigestHeader(big));
    if (isRejection(values)) throw new Error(values.text);
    const verifier = new DigestVerifier(values);
    for (let i = 0; i < big.length; i += 1000) verifier.update(big.subarray(i, i + 1000));
    expect(verifier.finish()).toBe(true);
    expect(verifier.bytesReceived).toBe(big.length);
  });

  it("refuses a mismatch with both values and the byte count in the text", () => {
    const r = verifyDigest(`SHA-256=${sha256}`, Buffer.from('{"hello": "World"}'));
    expect(isRejection(r)).toBe(true);
    if (isRejection(r)) {
      expect(r.code).toBe("SIGNATURE_INVALID");
      expect(r.text).toContain(`SHA-256=${sha256}`);
      expect(r.text).toContain(
        `SHA-256=${createHash("sha256").update('{"hello": "World"}').digest("base64")}`,
      );
      expect(r.text).toContain("18-byte body");
    }
  });

  it("requires the digest of zero bytes on a body-less request that carries a Digest", () => {
    const empty = computeDigestHeader(Buffer.alloc(0));
    expect(empty).toBe("SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    expect(verifyDigest(empty, Buffer.alloc(0))).toBe(true);
    expect(isRejection(verifyDigest(`SHA-256=${sha256}`, Buffer.alloc(0)))).toBe(true);
  });

  it("refuses malformed headers with FORMAT_ERROR, saying what is wrong", () => {
    const cases: [string | undefined, string][] = [
      [undefined, "missing"],
      ["SHA-256", "<algorithm>=<base64>"],
      ["SHA-256=!!!", "not valid base64"],
      ["SHA-256=AAAA", "decodes to 3 bytes"],
      ["MD5=Q2hlY2sgSW50ZWdyaXR5IQ==", "no SHA-256 or SHA-512"],
      [`SHA-256=${sha256},sha-256=${sha256}`, "twice"],
    ];
    for (const [raw, text] of cases) {
      const r = parseDigestHeader(raw);
      expect(isRejection(r), String(raw)).toBe(true);
      if (isRejection(r)) {
        expect(r.code).toBe("FORMAT_ERROR");
        expect(r.text).toContain(text);
      }
    }
  });
});
