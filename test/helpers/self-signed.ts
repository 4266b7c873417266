/** A throwaway self-signed certificate for library-level tests, made at test time (never committed). */

import { createPublicKey, type KeyObject, webcrypto } from "node:crypto";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export interface SelfSigned {
  readonly der: Uint8Array;
  readonly pem: string;
  readonly serialHex: string;
  readonly publicKey: KeyObject;
}

export async function selfSignedCertificate(options: {
  subject: string;
  keys: { publicKey: KeyObject; privateKey: KeyObject };
  serialHex?: string;
}): Promise<SelfSigned> {
  const isEc = options.keys.publicKey.asymmetricKeyType === "ec";
  const algorithm = isEc
    ? { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" }
    : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  const keys = {
    publicKey: await webcrypto.subtle.importKey(
      "spki",
      options.keys.publicKey.export({ format: "der", type: "spki" }),
      algorithm,
      true,
      ["verify"],
    ),
    privateKey: await webcrypto.subtle.importKey(
      "pkcs8",
      options.keys.privateKey.export({ format: "der", type: "pkcs8" }),
      algorithm,
      true,
      ["sign"],
    ),
  };
  const serialHex = options.serialHex ?? "01a2b3c4d5";
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialHex,
    name: options.subject,
    notBefore: new Date(Date.UTC(2026, 0, 1)),
    notAfter: new Date(Date.UTC(2036, 0, 1)),
    signingAlgorithm: algorithm,
    keys: keys as unknown as x509.X509CertificateCreateSelfSignedParams["keys"],
  });
  const der = new Uint8Array(cert.rawData);
  return {
    der,
    pem: cert.toString("pem"),
    serialHex: serialHex.toUpperCase().replace(/^(00)+(?=..)/, ""),
    publicKey: createPublicKey(options.keys.publicKey.export({ format: "pem", type: "spki" })),
  };
}
