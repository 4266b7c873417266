/** Keys and self-signed certificates for the JWS tests, made at test time (never committed). */

import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { selfSignedCertificate } from "../../../helpers/self-signed.js";

export interface Signer {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly der: Uint8Array;
  readonly privatePem: string;
  readonly publicPem: string;
}

async function signerOf(keys: { publicKey: KeyObject; privateKey: KeyObject }, cn: string): Promise<Signer> {
  const cert = await selfSignedCertificate({ subject: `CN=${cn},O=Example TPP,C=DE`, keys });
  return {
    privateKey: keys.privateKey,
    publicKey: keys.publicKey,
    der: cert.der,
    privatePem: keys.privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
    publicPem: keys.publicKey.export({ format: "pem", type: "spki" }).toString(),
  };
}

export const rsa = await signerOf(generateKeyPairSync("rsa", { modulusLength: 2048 }), "rsa");
export const ec = await signerOf(generateKeyPairSync("ec", { namedCurve: "P-256" }), "ec");
export const ecP384 = generateKeyPairSync("ec", { namedCurve: "P-384" });

/** 2026-11-26T12:00:00Z */
export const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);

export const request = {
  method: "POST",
  target: "/v2/payments/sepa-credit-transfers?x=1",
  headers: {
    digest: "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
    "psu-id": "PSU-1234",
    "content-type": "application/json",
  },
} as const;

export const PARS = ["(request-target)", "digest", "x-request-id", "psu-id"] as const;

/** base64url of a JSON text as given, so that tests can send what JSON.stringify would not write. */
export function b64u(text: string): string {
  return Buffer.from(text, "utf8").toString("base64url");
}

export function headerOf(jws: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jws.slice(0, jws.indexOf(".")), "base64url").toString("utf8"));
}
