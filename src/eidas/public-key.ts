/** The certificate's public key as a Node KeyObject, made once, with its type and size for policy checks. */

import { createPublicKey, type KeyObject } from "node:crypto";
import { children, readBitString, readNode, readOid, TAG } from "../asn1/der.js";

export type PublicKeyType = NonNullable<KeyObject["asymmetricKeyType"]>;

export interface PublicKeyInfo {
  readonly publicKey: KeyObject;
  readonly keyType: PublicKeyType;
  /** RSA/DSA modulus bits, EC curve bits; undefined when Node does not tell. */
  readonly keyBits: number | undefined;
  /** The named curve of an EC key (`prime256v1`, `secp384r1`, …). */
  readonly namedCurve: string | undefined;
}

const RSA_ENCRYPTION = "1.2.840.113549.1.1.1";

const FIXED_BITS: Partial<Record<PublicKeyType, number>> = {
  ed25519: 256,
  ed448: 456,
  x25519: 256,
  x448: 448,
};

/**
 * Throws when Node (OpenSSL) cannot read the key; the caller turns that into a rejection.
 *
 * An rsaEncryption key is imported from its PKCS#1 RSAPublicKey rather than from the whole
 * SubjectPublicKeyInfo: the same key (KeyObject.equals holds), but OpenSSL 3's SPKI decoder
 * tries its decoders in turn and costs about 100 µs where PKCS#1 costs about 6 µs — most of the
 * first-sight cost of a certificate otherwise.
 */
export function readPublicKey(spki: Uint8Array): PublicKeyInfo {
  const publicKey = createPublicKey(keyInput(spki));
  const keyType = publicKey.asymmetricKeyType;
  if (!keyType) throw new Error("the key type is unknown to Node");
  const details = publicKey.asymmetricKeyDetails ?? {};
  const namedCurve = details.namedCurve;
  const keyBits = details.modulusLength ?? (namedCurve ? curveBits(namedCurve) : FIXED_BITS[keyType]);
  return { publicKey, keyType, keyBits, namedCurve };
}

function keyInput(spki: Uint8Array): { key: Buffer; format: "der"; type: "spki" | "pkcs1" } {
  const whole = { key: toBuffer(spki), format: "der", type: "spki" } as const;
  const [algorithm, bits] = children(readNode(spki));
  if (algorithm?.tag !== TAG.SEQUENCE || bits?.tag !== TAG.BIT_STRING) return whole;
  const [oid, parameters] = children(algorithm);
  // Only plain rsaEncryption with NULL (or absent) parameters; RSASSA-PSS keys carry parameters that matter.
  if (oid?.tag !== TAG.OID || readOid(oid) !== RSA_ENCRYPTION) return whole;
  if (parameters && (parameters.tag !== TAG.NULL || parameters.end !== parameters.start)) return whole;
  const { unusedBits, bytes } = readBitString(bits);
  if (unusedBits !== 0 || bytes.length === 0) return whole;
  const rsaPublicKey = readNode(bytes);
  if (rsaPublicKey.tag !== TAG.SEQUENCE || rsaPublicKey.end !== bytes.length) return whole;
  return { key: toBuffer(bytes), format: "der", type: "pkcs1" };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** prime256v1 → 256, secp384r1 → 384, secp521r1 → 521, brainpoolP256r1 → 256. */
function curveBits(curve: string): number | undefined {
  const m = /(\d{3})/.exec(curve);
  return m ? Number(m[1]) : undefined;
}
