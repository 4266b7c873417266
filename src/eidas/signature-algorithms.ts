/** Verifying an X.509 signature (certificate or CRL) over its TBS bytes with Node's crypto. */

import { constants, type KeyObject, verify } from "node:crypto";

/**
 * Signature algorithm OIDs → the digest and the key type they are made with (RSA PKCS#1 v1.5 and
 * ECDSA). The key type is part of the algorithm: an ECDSA OID must not verify with an RSA key.
 */
const SIGNATURE_ALGORITHMS: Readonly<
  Record<string, { readonly hash: string; readonly keyType: "rsa" | "ec" }>
> = {
  "1.2.840.113549.1.1.11": { hash: "sha256", keyType: "rsa" },
  "1.2.840.113549.1.1.12": { hash: "sha384", keyType: "rsa" },
  "1.2.840.113549.1.1.13": { hash: "sha512", keyType: "rsa" },
  "1.2.840.113549.1.1.5": { hash: "sha1", keyType: "rsa" },
  "1.2.840.10045.4.3.2": { hash: "sha256", keyType: "ec" },
  "1.2.840.10045.4.3.3": { hash: "sha384", keyType: "ec" },
  "1.2.840.10045.4.3.4": { hash: "sha512", keyType: "ec" },
};

/** True when the algorithm is one `verifyTbs` handles itself (others need a full X509Certificate). */
export function isSupportedSignatureAlgorithm(oid: string): boolean {
  return SIGNATURE_ALGORITHMS[oid] !== undefined;
}

/** False when the signature does not verify, the algorithm is unknown or does not fit the key; never throws. */
export function verifyTbs(oid: string, tbs: Uint8Array, signature: Uint8Array, key: KeyObject): boolean {
  const algorithm = SIGNATURE_ALGORITHMS[oid];
  if (!algorithm || key.asymmetricKeyType !== algorithm.keyType) return false;
  try {
    if (algorithm.keyType === "rsa")
      return verify(algorithm.hash, tbs, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
    return verify(algorithm.hash, tbs, key, signature);
  } catch {
    return false;
  }
}
