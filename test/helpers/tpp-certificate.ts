/**
 * Reading a certificate the way a verifier gets it: a PEM file, or a TPP-Signature-Certificate
 * header (base64 DER, possibly with PEM armour and spaces for line breaks). Throws on anything
 * that is not a certificate, so a caller cannot end up with a key from garbage.
 */

import { type KeyObject, X509Certificate } from "node:crypto";
import { type KeyIdTarget, keyIdTargetFromDer } from "../../src/signature/index.js";

export interface LoadedCertificate {
  readonly der: Uint8Array;
  readonly publicKey: KeyObject;
  readonly keyIdTarget: KeyIdTarget;
}

const ARMOUR = /-----(?:BEGIN|END) CERTIFICATE-----/g;
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The DER inside a PEM or header value; throws when the text between the armour is not base64. */
export function certificateDerFromText(text: string): Uint8Array {
  const base64 = text.replace(ARMOUR, "").replace(/\s+/g, "");
  if (base64.length === 0 || !STRICT_BASE64.test(base64)) {
    throw new Error(`not a base64 certificate: '${base64.slice(0, 40)}…'`);
  }
  return new Uint8Array(Buffer.from(base64, "base64"));
}

export function loadCertificate(text: string): LoadedCertificate {
  const der = certificateDerFromText(text);
  // Node's parser (OpenSSL) for the key, ours for serial and issuer: both must accept the bytes.
  const publicKey = new X509Certificate(der).publicKey;
  return { der, publicKey, keyIdTarget: keyIdTargetFromDer(der) };
}
