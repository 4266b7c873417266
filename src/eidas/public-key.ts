/**
 * The certificate's public key as a Node KeyObject, made once, with its type and size for policy
 * checks. The SubjectPublicKeyInfo is read here before OpenSSL sees it, and only keys that can
 * verify signatures get through: RSA, RSASSA-PSS, EC on the named curves of ETSI TS 119 312, Ed25519
 * and Ed448. Reading first is not only for clearer texts: an EC key whose point is the point at
 * infinity (BIT STRING 00 00) imports without error and then aborts the whole process (a failed
 * C++ assertion, not an exception) when Node is asked for its details or its JWK (Node 20).
 */

import { createPublicKey, type KeyObject } from "node:crypto";
import {
  children,
  content,
  DerError,
  type DerNode,
  expectTag,
  readBitString,
  readNode,
  readOid,
  TAG,
} from "../asn1/der.js";

export type PublicKeyType = NonNullable<KeyObject["asymmetricKeyType"]>;

export interface PublicKeyInfo {
  readonly publicKey: KeyObject;
  readonly keyType: PublicKeyType;
  /** RSA modulus bits, EC curve bits, 256 for Ed25519, 456 for Ed448. */
  readonly keyBits: number | undefined;
  /** The named curve of an EC key, as OpenSSL names it (`prime256v1`, `secp384r1`, …). */
  readonly namedCurve: string | undefined;
}

const KEY_ALGORITHM = {
  rsa: "1.2.840.113549.1.1.1",
  rsaPss: "1.2.840.113549.1.1.10",
  ec: "1.2.840.10045.2.1",
  ed25519: "1.3.101.112",
  ed448: "1.3.101.113",
} as const;

/** Key algorithms that cannot sign, or that the gateway does not verify with, named for the refusal text. */
const REFUSED_KEY_ALGORITHMS: Readonly<Record<string, string>> = {
  "1.3.101.110": "X25519, a key-agreement key that cannot sign",
  "1.3.101.111": "X448, a key-agreement key that cannot sign",
  "1.2.840.113549.1.3.1": "Diffie-Hellman, a key-agreement key that cannot sign",
  "1.2.840.10046.2.1": "Diffie-Hellman (X9.42), a key-agreement key that cannot sign",
  "1.2.840.10040.4.1": "DSA, which the gateway does not verify signatures with",
};

/** The curves of ETSI TS 119 312 (NIST P and brainpool), with OpenSSL's names and field sizes. */
const CURVES: Readonly<Record<string, { readonly name: string; readonly bits: number }>> = {
  "1.2.840.10045.3.1.7": { name: "prime256v1", bits: 256 },
  "1.3.132.0.34": { name: "secp384r1", bits: 384 },
  "1.3.132.0.35": { name: "secp521r1", bits: 521 },
  "1.3.36.3.3.2.8.1.1.7": { name: "brainpoolP256r1", bits: 256 },
  "1.3.36.3.3.2.8.1.1.11": { name: "brainpoolP384r1", bits: 384 },
  "1.3.36.3.3.2.8.1.1.13": { name: "brainpoolP512r1", bits: 512 },
};

/** OpenSSL refuses to verify with a larger modulus (OPENSSL_RSA_MAX_MODULUS_BITS). */
const MAX_RSA_BITS = 16384;

/**
 * Throws DerError when the key cannot be used, saying why; the caller turns that into a rejection.
 *
 * An rsaEncryption key is imported from its PKCS#1 RSAPublicKey rather than from the whole
 * SubjectPublicKeyInfo: the same key (KeyObject.equals holds), but OpenSSL 3's SPKI decoder
 * tries its decoders in turn and costs about 100 µs where PKCS#1 costs about 6 µs — most of the
 * first-sight cost of a certificate otherwise.
 */
export function readPublicKey(spki: Uint8Array): PublicKeyInfo {
  const [algorithm, bits, extra] = children(expectTag(readNode(spki), TAG.SEQUENCE, "SubjectPublicKeyInfo"));
  if (!algorithm || !bits || extra) {
    throw new DerError("SubjectPublicKeyInfo is not an algorithm and a BIT STRING");
  }
  const [oidNode, parameters, more] = children(expectTag(algorithm, TAG.SEQUENCE, "public key algorithm"));
  if (!oidNode || more) throw new DerError("the public key AlgorithmIdentifier is not an OID and parameters");
  const oid = readOid(oidNode);
  const { unusedBits, bytes: key } = readBitString(bits);
  if (unusedBits !== 0) throw new DerError(`the public key BIT STRING has ${unusedBits} unused bits`);
  switch (oid) {
    case KEY_ALGORITHM.rsa: {
      if (parameters && !isNull(parameters))
        throw new DerError("an rsaEncryption key has parameters other than NULL");
      const keyBits = checkRsaPublicKey(key);
      return imported(
        createPublicKey({ key: toBuffer(key), format: "der", type: "pkcs1" }),
        keyBits,
        undefined,
      );
    }
    case KEY_ALGORITHM.rsaPss: {
      if (parameters && parameters.tag !== TAG.SEQUENCE)
        throw new DerError("RSASSA-PSS key parameters are not a SEQUENCE");
      const keyBits = checkRsaPublicKey(key);
      return imported(spkiKey(spki), keyBits, undefined);
    }
    case KEY_ALGORITHM.ec: {
      if (!parameters || parameters.tag !== TAG.OID) {
        throw new DerError(
          "an EC key must name its curve (RFC 5480: namedCurve, no explicit or implicit parameters)",
        );
      }
      const curveOid = readOid(parameters);
      const curve = CURVES[curveOid];
      if (!curve) {
        throw new DerError(
          `the EC key is on curve ${curveOid}, not one of ${Object.values(CURVES)
            .map((c) => c.name)
            .join(", ")}`,
        );
      }
      checkEcPoint(key, curve.bits, curve.name);
      return imported(spkiKey(spki), curve.bits, curve.name);
    }
    case KEY_ALGORITHM.ed25519:
    case KEY_ALGORITHM.ed448: {
      const [name, length, keyBits] =
        oid === KEY_ALGORITHM.ed25519 ? ["Ed25519", 32, 256] : ["Ed448", 57, 456];
      if (parameters) throw new DerError(`an ${name} key has parameters, which RFC 8410 forbids`);
      if (key.length !== length) throw new DerError(`an ${name} key is ${key.length} bytes, not ${length}`);
      return imported(spkiKey(spki), keyBits, undefined);
    }
    default: {
      const refused = REFUSED_KEY_ALGORITHMS[oid];
      throw new DerError(
        refused
          ? `the public key is ${refused}`
          : `the public key algorithm ${oid} is not RSA, RSASSA-PSS, EC, Ed25519 or Ed448`,
      );
    }
  }
}

function imported(publicKey: KeyObject, keyBits: number, namedCurve: string | undefined): PublicKeyInfo {
  const keyType = publicKey.asymmetricKeyType;
  if (!keyType) throw new DerError("the key type is unknown to Node");
  return { publicKey, keyType, keyBits, namedCurve };
}

function spkiKey(spki: Uint8Array): KeyObject {
  return createPublicKey({ key: toBuffer(spki), format: "der", type: "spki" });
}

function isNull(node: DerNode): boolean {
  return node.tag === TAG.NULL && node.end === node.start;
}

/**
 * RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }, refusing keys no
 * signature can be checked with: n even or not positive, e even, below 3 or not below n (e = 1
 * makes every message its own signature), and what OpenSSL will not verify with (a modulus over
 * 16384 bits; an exponent over 64 bits with a modulus over 3072). Returns the modulus bits.
 */
function checkRsaPublicKey(bytes: Uint8Array): number {
  const sequence = expectTag(readNode(bytes), TAG.SEQUENCE, "RSAPublicKey");
  if (sequence.end !== bytes.length) throw new DerError("bytes follow the RSAPublicKey");
  const [modulusNode, exponentNode, extra] = children(sequence);
  if (!modulusNode || !exponentNode || extra)
    throw new DerError("RSAPublicKey is not a modulus and an exponent");
  const n = positiveInteger(modulusNode, "RSA modulus");
  const e = positiveInteger(exponentNode, "RSA public exponent");
  if ((n.at(-1)! & 1) === 0) throw new DerError("the RSA modulus is even");
  if ((e.at(-1)! & 1) === 0) throw new DerError("the RSA public exponent is even");
  const nBits = bitLength(n);
  const eBits = bitLength(e);
  if (eBits < 2) throw new DerError("the RSA public exponent is 1, so every message is its own signature");
  if (eBits >= nBits) throw new DerError("the RSA public exponent is not shorter than the modulus");
  if (nBits > MAX_RSA_BITS)
    throw new DerError(
      `the RSA modulus has ${nBits} bits, more than the ${MAX_RSA_BITS} OpenSSL verifies with`,
    );
  if (nBits > 3072 && eBits > 64) {
    throw new DerError(
      `the RSA public exponent has ${eBits} bits; OpenSSL verifies with at most 64 for a modulus over 3072 bits`,
    );
  }
  return nBits;
}

/** The magnitude bytes of a positive INTEGER, sign and leading zero octets stripped. */
function positiveInteger(node: DerNode, what: string): Uint8Array {
  const bytes = content(expectTag(node, TAG.INTEGER, what));
  if (bytes.length === 0) throw new DerError(`the ${what} is an empty INTEGER`);
  if (bytes[0]! & 0x80) throw new DerError(`the ${what} is negative`);
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  if (i === bytes.length) throw new DerError(`the ${what} is zero`);
  return bytes.subarray(i);
}

function bitLength(magnitude: Uint8Array): number {
  return (magnitude.length - 1) * 8 + (32 - Math.clz32(magnitude[0]!));
}

/** SEC 1 2.3.3: 04 X Y uncompressed, or 02/03 X compressed. Not the point at infinity, not hybrid. */
function checkEcPoint(point: Uint8Array, bits: number, curve: string): void {
  const field = Math.ceil(bits / 8);
  const form = point[0];
  const fits =
    (form === 0x04 && point.length === 1 + 2 * field) ||
    ((form === 0x02 || form === 0x03) && point.length === 1 + field);
  if (!fits) {
    const what = point.length === 1 && form === 0x00 ? "the point at infinity" : `${point.length} bytes`;
    throw new DerError(`the ${curve} public key is ${what}, not an uncompressed or compressed point`);
  }
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
