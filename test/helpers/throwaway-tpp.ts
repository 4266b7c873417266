/**
 * A throwaway TPP identity made at test time: an RSA-2048 key pair and a self-signed certificate
 * (@peculiar/x509 over WebCrypto, see self-signed.ts), with the key also in the PEM forms other
 * implementations read.
 */

import { generateKeyPair, type KeyObject } from "node:crypto";
import { promisify } from "node:util";
import { selfSignedCertificate } from "./self-signed.js";

const generateKeyPairAsync = promisify(generateKeyPair);

export interface ThrowawayTpp {
  readonly certificateDer: Uint8Array;
  readonly certificatePem: string;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** PKCS#1 PEM, the form http-signature (sshpk) reads without options. */
  readonly privateKeyPem: string;
  /** SubjectPublicKeyInfo PEM. */
  readonly publicKeyPem: string;
}

export async function throwawayTpp(
  options: { subject?: string; serialHex?: string } = {},
): Promise<ThrowawayTpp> {
  const keys = await generateKeyPairAsync("rsa", { modulusLength: 2048 });
  const certificate = await selfSignedCertificate({
    subject: options.subject ?? "CN=Throwaway TPP,O=Interop Test AS,C=NO",
    keys,
    ...(options.serialHex !== undefined ? { serialHex: options.serialHex } : {}),
  });
  return {
    certificateDer: certificate.der,
    certificatePem: certificate.pem,
    privateKey: keys.privateKey,
    publicKey: keys.publicKey,
    privateKeyPem: keys.privateKey.export({ format: "pem", type: "pkcs1" }).toString(),
    publicKeyPem: keys.publicKey.export({ format: "pem", type: "spki" }).toString(),
  };
}
