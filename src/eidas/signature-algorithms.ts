/** Verifying an X.509 signature (certificate or CRL) over its TBS bytes with Node's crypto. */

import { constants, type KeyObject, verify } from "node:crypto";

/** Signature algorithm OIDs → Node digest names (RSA PKCS#1 v1.5 and ECDSA). */
const SIGNATURE_HASH: Readonly<Record<string, string>> = {
  "1.2.840.113549.1.1.11": "sha256",
  "1.2.840.113549.1.1.12": "sha384",
  "1.2.840.113549.1.1.13": "sha512",
  "1.2.840.113549.1.1.5": "sha1",
  "1.2.840.10045.4.3.2": "sha256",
  "1.2.840.10045.4.3.3": "sha384",
  "1.2.840.10045.4.3.4": "sha512",
};

/** True when the algorithm is one `verifyTbs` handles itself (others need a full X509Certificate). */
export function isSupportedSignatureAlgorithm(oid: string): boolean {
  return SIGNATURE_HASH[oid] !== undefined;
}

export function verifyTbs(oid: string, tbs: Uint8Array, signature: Uint8Array, key: KeyObject): boolean {
  const hash = SIGNATURE_HASH[oid];
  if (!hash) return false;
  try {
    if (key.asymmetricKeyType === "rsa")
      return verify(hash, tbs, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
    return verify(hash, tbs, key, signature);
  } catch {
    return false;
  }
}
