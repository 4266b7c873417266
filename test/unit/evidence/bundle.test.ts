/** The dispute bundle's openssl commands and signature encoding (src/evidence/bundle.ts). */

import { generateKeyPairSync, sign, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { opensslCheck, rawEcdsaToDer } from "../../../src/evidence/bundle.js";

describe("opensslCheck", () => {
  it.each([
    ["rsa-sha256", "rsa", "-sha256", false],
    ["rsa-sha512", "rsa", "-sha512", false],
    ["hs2019", "rsa", "-sha512", true],
    ["rfc9421:rsa-pss-sha512", "rsa", "-sha512", true],
    ["rfc9421:rsa-v1_5-sha256", "rsa", "-sha256", false],
    ["jades:PS256", "rsa", "-sha256", true],
    ["uk-ob:PS256", "rsa", "-sha256", true],
    ["jades:RS256", "rsa", "-sha256", false],
    ["jades:ES256", "ec", "-sha256", false],
    ["rfc9421:ecdsa-p256-sha256", "ec", "-sha256", false],
  ] as const)("%s with a %s key: openssl dgst %s (PSS: %s)", (signedWith, keyType, digest, pss) => {
    const { command, derFromRaw } = opensslCheck(signedWith, keyType);
    expect(command.slice(0, 3)).toEqual(["openssl", "dgst", digest]);
    expect(command.includes("rsa_padding_mode:pss")).toBe(pss);
    expect(derFromRaw).toBe(keyType === "ec");
  });

  it("Ed25519 is checked with pkeyutl -rawin", () => {
    expect(opensslCheck("rfc9421:ed25519", "ed25519").command.slice(0, 3)).toEqual([
      "openssl",
      "pkeyutl",
      "-verify",
    ]);
  });
});

describe("rawEcdsaToDer", () => {
  it("turns a JWS / RFC 9421 r||s signature into the DER openssl and node read", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    for (let i = 0; i < 50; i++) {
      const data = Buffer.from(`message ${i}`);
      const raw = sign("sha256", data, { key: privateKey, dsaEncoding: "ieee-p1363" });
      expect(verify("sha256", data, { key: publicKey, dsaEncoding: "der" }, rawEcdsaToDer(raw))).toBe(true);
    }
  });
});
