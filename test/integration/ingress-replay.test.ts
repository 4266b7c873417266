/**
 * Replay and byte-exactness through the real gateway over TLS: the same signed content is refused
 * however its signature is encoded or re-made (ECDSA DER ↔ IEEE P1363, s ↔ n−s, a fresh RSA-PSS
 * signature), and a signed header holding UTF-8 verifies byte for byte.
 */

import { createPrivateKey, generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { describe, expect, it } from "vitest";
import {
  buildSigningString,
  formatSignatureHeader,
  parseSignatureHeader,
} from "../../src/signature/index.js";
import { parseTlv } from "../helpers/der-mutation.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { prepareSignedCall, send } from "../helpers/gateway-fixture.js";
import { base64, rebuild, TBS } from "../helpers/rebuilt-certificate.js";

/** TPP A's QSealC with an EC P-256 key instead of its RSA key, signed again by the demo issuing CA. */
function ecSealOf(pki: DevPki): { der: Uint8Array; privateKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = publicKey.export({ format: "der", type: "spki" });
  const der = rebuild(
    pki.tppA.qseal.der,
    ({ tbs }) => {
      tbs.children![TBS.subjectPublicKeyInfo] = parseTlv(new Uint8Array(spki));
    },
    createPrivateKey(pki.issuingCa.keyPem),
  );
  return { der, privateKey };
}

const N_P256 = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

/** DER ECDSA signature → IEEE P1363 r||s (32 bytes each for P-256). */
function toP1363(der: Buffer): Buffer {
  const { r, s } = readDer(der);
  return Buffer.concat([fixed(r), fixed(s)]);
}

/** The same signature with s replaced by n − s: also valid, other bytes. */
function negateS(der: Buffer): Buffer {
  const { r, s } = readDer(der);
  return writeDer(r, N_P256 - s);
}

function readDer(der: Buffer): { r: bigint; s: bigint } {
  let at = 2;
  const int = () => {
    const length = der[at + 1]!;
    const value = BigInt(`0x${der.subarray(at + 2, at + 2 + length).toString("hex")}`);
    at += 2 + length;
    return value;
  };
  return { r: int(), s: int() };
}

function fixed(n: bigint): Buffer {
  return Buffer.from(n.toString(16).padStart(64, "0"), "hex");
}

function writeDer(r: bigint, s: bigint): Buffer {
  const int = (n: bigint) => {
    let bytes = Buffer.from(n.toString(16).padStart(64, "0"), "hex");
    while (bytes.length > 1 && bytes[0] === 0 && (bytes[1]! & 0x80) === 0) bytes = bytes.subarray(1);
    if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.of(0), bytes]);
    return Buffer.concat([Buffer.of(0x02, bytes.length), bytes]);
  };
  const body = Buffer.concat([int(r), int(s)]);
  return Buffer.concat([Buffer.of(0x30, body.length), body]);
}

/** The request's Signature header with another signature value (and algorithm, when given). */
function withSignature(headers: Record<string, string>, signature: Buffer, algorithm?: string) {
  const params = parseSignatureHeader(headers.Signature);
  if (!("keyId" in params)) throw new Error("unsigned");
  return {
    ...headers,
    Signature: formatSignatureHeader({
      keyId: params.keyId,
      algorithm: algorithm ?? params.algorithm,
      headers: [...params.headers],
      signature: signature.toString("base64"),
    }),
  };
}

describe("replay is keyed on what was signed", () => {
  const env = useGatewayAndBackend({
    config: { verification: { algorithms: ["rsa-sha256", "ecdsa-sha256", "hs2019"] } },
  });

  it("an ECDSA request re-sent as IEEE P1363 or with s ↔ n−s is refused; the backend saw it once", async () => {
    const ec = ecSealOf(env.gw.pki);
    const signer = {
      ...env.gw.pki.tppA.qseal,
      der: ec.der,
      privateKey: ec.privateKey,
    } as typeof env.gw.pki.tppA.qseal;
    const call = await prepareSignedCall({ signer, target: "/v1/accounts" });
    const headers: Record<string, string> = { ...call.headers, "TPP-Signature-Certificate": base64(ec.der) };
    const first = await send(env.gw, "GET", call.target, headers);
    expect(first.status, first.text).toBe(200);

    const params = parseSignatureHeader(headers.Signature);
    if (!("signatureBytes" in params)) throw new Error("unsigned");
    const der = params.signatureBytes;
    for (const [what, signature] of [
      ["the same bytes", der],
      ["IEEE P1363", toP1363(der)],
      ["s ↔ n−s", negateS(der)],
    ] as const) {
      const again = await send(env.gw, "GET", call.target, withSignature(headers, signature));
      expect(again.status, `${what}: ${again.text}`).toBe(400);
      expect(again.json.tppMessages?.[0]?.code).toBe("SIGNATURE_INVALID");
      expect(again.json.tppMessages?.[0]?.text).toContain("already used");
    }
    expect(env.backend.requests).toHaveLength(1);
  });

  it("the same request with its keyId respelled or its algorithm written SHA256withRSA is refused", async () => {
    const call = await prepareSignedCall({ signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
    const first = await send(env.gw, "GET", call.target, call.headers);
    expect(first.status, first.text).toBe(200);
    const params = parseSignatureHeader(call.headers.Signature);
    if (!("keyId" in params)) throw new Error("unsigned");
    const respelled = params.keyId.replace(/^SN=([0-9A-F]+)/, (_m, sn: string) => `sn=00${sn.toLowerCase()}`);
    expect(respelled).not.toBe(params.keyId);
    for (const [what, keyId, algorithm] of [
      ["keyId respelled", respelled, params.algorithm],
      ["algorithm as Java names it", params.keyId, "SHA256withRSA"],
    ] as const) {
      const headers = {
        ...call.headers,
        Signature: formatSignatureHeader({
          keyId,
          algorithm,
          headers: [...params.headers],
          signature: params.signature,
        }),
      };
      const again = await send(env.gw, "GET", call.target, headers);
      expect(again.status, `${what}: ${again.text}`).toBe(400);
      expect(again.json.tppMessages?.[0]?.text).toContain("already used");
    }
    expect(env.backend.requests).toHaveLength(1);
  });

  it("a fresh RSA-PSS signature (hs2019) over the same signing string is refused", async () => {
    const call = await prepareSignedCall({ signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
    const params = parseSignatureHeader(call.headers.Signature);
    if (!("headers" in params)) throw new Error("unsigned");
    const lower = Object.fromEntries(Object.entries(call.headers).map(([n, v]) => [n.toLowerCase(), v]));
    const signingString = buildSigningString(params.headers, {
      method: "get",
      target: call.target,
      headers: lower,
    });
    if (typeof signingString !== "string") throw new Error(signingString.text);
    const pss = () =>
      sign("sha512", Buffer.from(signingString, "latin1"), {
        key: env.gw.pki.tppA.qseal.privateKey,
        padding: 6, // RSA_PKCS1_PSS_PADDING
        saltLength: 64,
      });
    const one = pss();
    const two = pss();
    expect(one.equals(two)).toBe(false); // PSS is randomised: other bytes every time
    const first = await send(env.gw, "GET", call.target, withSignature(call.headers, one, "hs2019"));
    expect(first.status, first.text).toBe(200);
    const second = await send(env.gw, "GET", call.target, withSignature(call.headers, two, "hs2019"));
    expect(second.status, second.text).toBe(400);
    expect(second.json.tppMessages?.[0]?.text).toContain("already used");
    expect(env.backend.requests).toHaveLength(1);
  });
});

describe("a signed header holding UTF-8 verifies byte for byte", () => {
  const PSU = "Ærøskøbing-é-Köln-😀";

  describe("with the character policy off (every code point allowed)", () => {
    const env = useGatewayAndBackend();
    it("is accepted, and the backend receives exactly the bytes that were signed", async () => {
      const call = await prepareSignedCall({
        signer: env.gw.pki.tppA.qseal,
        target: "/v1/accounts",
        headers: { "PSU-ID": PSU },
      });
      const r = await send(env.gw, "GET", call.target, call.headers);
      expect(r.status, r.text).toBe(200);
      const received = env.backend.requests[0]!.headers["psu-id"] as string;
      expect(Buffer.from(received, "latin1").toString("utf8")).toBe(PSU);
    });

    it("a raw Latin-1 byte (é as 0xE9, not UTF-8) is refused as invalid UTF-8, before any signature work", async () => {
      const call = await prepareSignedCall({
        signer: env.gw.pki.tppA.qseal,
        target: "/v1/accounts",
        headers: { "PSU-ID": "caf\u00e9" },
      });
      // Send é as the single byte 0xE9 (what a Latin-1 client sends): the signature no longer matters.
      const r = await send(env.gw, "GET", call.target, { ...call.headers, "PSU-ID": "caf\u00e9" });
      expect(r.status, r.text).toBe(400);
      expect(r.json.tppMessages?.[0]?.code).toBe("FORMAT_ERROR");
      expect(env.backend.requests).toHaveLength(0);
    });
  });

  describe("with the character policy on (nothing beyond the BMP)", () => {
    const env = useGatewayAndBackend({
      config: { verification: { characterPolicy: { maxCodePoint: 0xffff } } },
    });
    it("refuses the emoji by the policy, and accepts the same value without it", async () => {
      const refused = await prepareSignedCall({
        signer: env.gw.pki.tppA.qseal,
        target: "/v1/accounts",
        headers: { "PSU-ID": PSU },
      });
      const r = await send(env.gw, "GET", refused.target, refused.headers);
      expect(r.status, r.text).toBe(400);
      expect(r.json.tppMessages?.[0]?.code).toBe("FORMAT_ERROR");
      const accepted = await prepareSignedCall({
        signer: env.gw.pki.tppA.qseal,
        target: "/v1/accounts",
        headers: { "PSU-ID": PSU.replace("-😀", "") },
      });
      const ok = await send(env.gw, "GET", accepted.target, accepted.headers);
      expect(ok.status, ok.text).toBe(200);
    });
  });
});
