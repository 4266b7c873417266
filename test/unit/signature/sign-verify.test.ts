import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import {
  decodeEncodedWords,
  keyIdTargetFromDer,
  parseSignatureHeader,
  RequestSigner,
  resolveAlgorithm,
  verifyDigest,
  verifyRequestSignature,
  verifySigningString,
} from "../../../src/signature/index.js";
import { selfSignedCertificate } from "../../helpers/self-signed.js";

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const ed = generateKeyPairSync("ed25519");

describe("algorithms (SPEC 5.4: must fit the certificate)", () => {
  it("accepts rsa-sha256 and its Java alias SHA256withRSA for RSA keys", () => {
    for (const name of ["rsa-sha256", "SHA256withRSA", "RSA-SHA256"]) {
      const r = resolveAlgorithm(name, rsa.publicKey);
      expect(isRejection(r) ? r.text : r.name).toBe("rsa-sha256");
    }
  });

  it("refuses algorithms that are not configured, listing the accepted ones", () => {
    const r = resolveAlgorithm("rsa-sha512", rsa.publicKey);
    expect(isRejection(r) && r.text).toContain("use 'rsa-sha256'");
    expect(isRejection(resolveAlgorithm("hmac-sha256", rsa.publicKey))).toBe(true);
  });

  it("accepts rsa-sha512 and ecdsa-sha256 when configured, only for the key type they fit", () => {
    const all = ["rsa-sha256", "rsa-sha512", "ecdsa-sha256"] as const;
    expect(isRejection(resolveAlgorithm("rsa-sha512", rsa.publicKey, all))).toBe(false);
    expect(isRejection(resolveAlgorithm("ecdsa-sha256", ec.publicKey, all))).toBe(false);
    const misfit = resolveAlgorithm("rsa-sha256", ec.publicKey, all);
    expect(isRejection(misfit) && misfit.text).toContain("does not fit the certificate's EC key");
    expect(isRejection(resolveAlgorithm("ecdsa-sha256", rsa.publicKey, all))).toBe(true);
  });

  it("treats hs2019 as refused by default and, when allowed, as RSASSA-PSS/SHA-512, ECDSA/SHA-512 or Ed25519 by key", () => {
    expect(isRejection(resolveAlgorithm("hs2019", rsa.publicKey))).toBe(true);
    const data = Buffer.from("date: x");
    const pss = sign("sha512", data, { key: rsa.privateKey, padding: 6, saltLength: 64 });
    const rsaAlg = resolveAlgorithm("hs2019", rsa.publicKey, ["hs2019"]);
    if (isRejection(rsaAlg)) throw new Error(rsaAlg.text);
    expect(verifySigningString(rsaAlg, "date: x", pss, rsa.publicKey)).toBe(true);
    // A PKCS#1 v1.5 signature is not what hs2019 means for RSA.
    expect(
      isRejection(
        verifySigningString(rsaAlg, "date: x", sign("sha256", data, rsa.privateKey), rsa.publicKey),
      ),
    ).toBe(true);

    const ecAlg = resolveAlgorithm("hs2019", ec.publicKey, ["hs2019"]);
    if (isRejection(ecAlg)) throw new Error(ecAlg.text);
    expect(verifySigningString(ecAlg, "date: x", sign("sha512", data, ec.privateKey), ec.publicKey)).toBe(
      true,
    );

    const edAlg = resolveAlgorithm("hs2019", ed.publicKey, ["hs2019"]);
    if (isRejection(edAlg)) throw new Error(edAlg.text);
    expect(verifySigningString(edAlg, "date: x", sign(null, data, ed.privateKey), ed.publicKey)).toBe(true);
  });

  it("verifies ECDSA signatures in DER and in IEEE P1363 (r||s) form", () => {
    const alg = resolveAlgorithm("ecdsa-sha256", ec.publicKey, ["ecdsa-sha256"]);
    if (isRejection(alg)) throw new Error(alg.text);
    const data = Buffer.from("date: x");
    const der = sign("sha256", data, ec.privateKey);
    const p1363 = sign("sha256", data, { key: ec.privateKey, dsaEncoding: "ieee-p1363" });
    expect(verifySigningString(alg, "date: x", der, ec.publicKey)).toBe(true);
    expect(verifySigningString(alg, "date: x", p1363, ec.publicKey)).toBe(true);
    expect(isRejection(verifySigningString(alg, "date: y", p1363, ec.publicKey))).toBe(true);
  });
});

async function signerFor(
  privateKey: KeyObject,
  der: Uint8Array,
  extra: Partial<ConstructorParameters<typeof RequestSigner>[0]> = {},
) {
  return new RequestSigner({
    privateKey,
    certificate: der,
    clock: () => Date.UTC(2026, 10, 22, 12, 0, 0),
    ...extra,
  });
}

describe("signing (the TPP side)", async () => {
  const cert = await selfSignedCertificate({ subject: "C=NO,O=Demo TPP AS,CN=Demo TPP", keys: rsa });
  const target = keyIdTargetFromDer(cert.der);

  it("produces every header a TPP sends, and they verify", async () => {
    const signer = await signerFor(rsa.privateKey, cert.der);
    const body = '{"instructedAmount":{"amount":"10.00","currency":"NOK"}}';
    const headers = await signer.sign({
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      headers: {
        "PSU-ID": "b3a2c0c4-6f7f-4b55-9c0e-6f3f2d0c1a11",
        "TPP-Redirect-URI": "https://tpp.example/cb",
      },
      body,
    });
    expect(headers.Date).toBe("Sun, 22 Nov 2026 12:00:00 GMT");
    expect(headers["X-Request-ID"]).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(verifyDigest(headers.Digest, Buffer.from(body))).toBe(true);
    expect(Buffer.from(headers["TPP-Signature-Certificate"], "base64")).toEqual(Buffer.from(cert.der));
    const params = parseSignatureHeader(headers.Signature);
    if (isRejection(params)) throw new Error(params.text);
    expect(params.keyId).toBe(`SN=${cert.serialHex},CA=CN=Demo TPP,O=Demo TPP AS,C=NO`);
    expect(params.headers).toEqual([
      "(request-target)",
      "date",
      "digest",
      "x-request-id",
      "psu-id",
      "tpp-redirect-uri",
    ]);

    const request = {
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      headers: {
        "psu-id": "b3a2c0c4-6f7f-4b55-9c0e-6f3f2d0c1a11",
        "tpp-redirect-uri": "https://tpp.example/cb",
        date: headers.Date,
        digest: headers.Digest,
        "x-request-id": headers["X-Request-ID"],
        signature: headers.Signature,
      },
    };
    expect(
      isRejection(verifyRequestSignature(request, { publicKey: cert.publicKey, keyIdTarget: target })),
    ).toBe(false);

    // Any change to a signed header breaks it.
    const tampered = {
      ...request,
      headers: { ...request.headers, "psu-id": "00000000-0000-4000-8000-000000000000" },
    };
    const r = verifyRequestSignature(tampered, { publicKey: cert.publicKey, keyIdTarget: target });
    expect(isRejection(r) && r.code).toBe("SIGNATURE_INVALID");
    // So does another path.
    expect(
      isRejection(
        verifyRequestSignature(
          { ...request, target: "/v1/payments/x" },
          { publicKey: cert.publicKey, keyIdTarget: target },
        ),
      ),
    ).toBe(true);
  });

  it("keeps an existing X-Request-ID and Date, and signs a body-less request with the digest of zero bytes", async () => {
    const signer = await signerFor(rsa.privateKey, cert.der, { signRequestTarget: false });
    const headers = await signer.sign({
      method: "GET",
      target: "/v1/accounts",
      headers: {
        "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
        Date: "Sun, 22 Nov 2026 11:59:30 GMT",
      },
    });
    expect(headers["X-Request-ID"]).toBe("99391c7e-ad88-49ec-a2ad-99ddcb1f7721");
    expect(headers.Date).toBe("Sun, 22 Nov 2026 11:59:30 GMT");
    expect(headers.Digest).toBe("SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    const params = parseSignatureHeader(headers.Signature);
    expect(isRejection(params) ? params.text : params.headers).toEqual(["date", "digest", "x-request-id"]);
  });

  it("RFC 2047-encodes the Signature header when the issuer DN holds non-ASCII characters", async () => {
    const nordic = await selfSignedCertificate({
      subject: "C=NO,O=Sparebank Ålesund,CN=Bank Ærø",
      keys: rsa,
    });
    const signer = await signerFor(rsa.privateKey, nordic.der);
    const headers = await signer.sign({ method: "GET", target: "/v1/accounts" });
    expect(headers.Signature).toMatch(/^=\?utf-8\?B\?/);
    const decoded = decodeEncodedWords(headers.Signature);
    expect(decoded).toContain("CA=CN=Bank Ærø,O=Sparebank Ålesund,C=NO");
    const params = parseSignatureHeader(headers.Signature);
    if (isRejection(params)) throw new Error(params.text);
    const request = {
      method: "GET",
      target: "/v1/accounts",
      headers: {
        date: headers.Date,
        digest: headers.Digest,
        "x-request-id": headers["X-Request-ID"],
        signature: headers.Signature,
      },
    };
    expect(
      isRejection(
        verifyRequestSignature(request, {
          publicKey: nordic.publicKey,
          keyIdTarget: keyIdTargetFromDer(nordic.der),
        }),
      ),
    ).toBe(false);
  });

  it("signs with ECDSA for an EC key, and the verifier accepts it when ecdsa-sha256 is configured", async () => {
    const ecCert = await selfSignedCertificate({ subject: "CN=EC TPP", keys: ec });
    const signer = await signerFor(ec.privateKey, ecCert.der);
    expect(signer.algorithm).toBe("ecdsa-sha256");
    const headers = await signer.sign({ method: "GET", target: "/v1/accounts" });
    const request = {
      method: "GET",
      target: "/v1/accounts",
      headers: {
        date: headers.Date,
        digest: headers.Digest,
        "x-request-id": headers["X-Request-ID"],
        signature: headers.Signature,
      },
    };
    const options = { publicKey: ecCert.publicKey, keyIdTarget: keyIdTargetFromDer(ecCert.der) };
    expect(isRejection(verifyRequestSignature(request, options))).toBe(true);
    expect(
      isRejection(
        verifyRequestSignature(request, { ...options, algorithms: ["rsa-sha256", "ecdsa-sha256"] }),
      ),
    ).toBe(false);
  });
});
