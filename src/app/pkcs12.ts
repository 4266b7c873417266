/**
 * Opens a PKCS#12 bundle (RFC 7292) with @peculiar/asn1-pfx and node:crypto: the MAC is checked
 * first, then the AuthenticatedSafe is walked, its `data` and password-`encryptedData` contents
 * decrypted, and its key and certificate bags handed back as node KeyObjects and certificate DER.
 *
 * A PKCS#12 password takes two forms (RFC 7292 B.1, RFC 8018): the legacy MAC and PBE schemes
 * derive their keys from it as a BMPString (UTF-16BE with two zero bytes after it), PBES2 and
 * PBMAC1 from its UTF-8 bytes. Each scheme gets its own form, so a non-ASCII password opens a
 * bundle mixing the two. RC2 (what `openssl pkcs12 -export -legacy` encrypts certificates with)
 * is offered by node:crypto only when OpenSSL's legacy provider is loaded; without it, and for
 * RC4 always, the bundle is refused with the algorithm's name and how to re-export it.
 *
 * DER and BER (indefinite lengths, OCTET STRINGs in pieces) are read. Every error is a
 * `Pkcs12Error` with a short fixed text (an OID at most): never the password, never key
 * material, never an ASN.1 library's message.
 */

import {
  createDecipheriv,
  createHmac,
  createPrivateKey,
  hash,
  type KeyObject,
  pbkdf2Sync,
  timingSafeEqual,
} from "node:crypto";
import { type ContentInfo, EncryptedContentInfo, id_data, id_encryptedData } from "@peculiar/asn1-cms";
import {
  AuthenticatedSafe,
  CertBag,
  id_certBag,
  id_keyBag,
  id_pkcs8ShroudedKeyBag,
  id_SafeContents,
  id_x509Certificate,
  PFX,
  SafeContents,
} from "@peculiar/asn1-pfx";
import { EncryptedPrivateKeyInfo } from "@peculiar/asn1-pkcs8";
import { AsnConvert } from "@peculiar/asn1-schema";
import type { AlgorithmIdentifier } from "@peculiar/asn1-x509";
import {
  children,
  content,
  DerError,
  type DerNode,
  MAX_DEPTH,
  readNode,
  readOid,
  readSmallInteger,
  TAG,
} from "../asn1/der.js";
import { encodeTlv } from "../asn1/writer.js";

/** What the bundle holds, in bag order. */
export interface Pkcs12Contents {
  readonly keys: KeyObject[];
  /** Each x509Certificate bag's DER, as it sits in the bundle. */
  readonly certificates: Buffer[];
}

/**
 * Why a bundle did not open: `malformed` (not a PFX, or a broken one), `password` (the MAC does
 * not hold, or, in a bundle without MAC, the contents do not decrypt), `unsupported` (an algorithm
 * or mode this reader does not do).
 */
export type Pkcs12Failure = "malformed" | "password" | "unsupported";

export class Pkcs12Error extends Error {
  constructor(
    readonly failure: Pkcs12Failure,
    message: string,
  ) {
    super(message);
    this.name = "Pkcs12Error";
  }
}

/** Iteration counts above this are refused rather than run (OpenSSL writes 2048). */
export const MAX_ITERATIONS = 10_000_000;
/** SafeContents nested in safeContentsBags, at most this deep. */
const MAX_NESTING = 4;

const OID = {
  pbes2: "1.2.840.113549.1.5.13",
  pbkdf2: "1.2.840.113549.1.5.12",
  pbmac1: "1.2.840.113549.1.5.14",
  pbeSha3Des: "1.2.840.113549.1.12.1.3",
  pbeSha2Des: "1.2.840.113549.1.12.1.4",
  pbeShaRc2_128: "1.2.840.113549.1.12.1.5",
  pbeShaRc2_40: "1.2.840.113549.1.12.1.6",
  pbeShaRc4_128: "1.2.840.113549.1.12.1.1",
  pbeShaRc4_40: "1.2.840.113549.1.12.1.2",
  hmacWithSha1: "1.2.840.113549.2.7",
} as const;

/** The digests of the PKCS#12 KDF: output bytes (u in RFC 7292 B.2) and block bytes (v). */
const KDF_DIGESTS = {
  sha1: { u: 20, v: 64 },
  sha224: { u: 28, v: 64 },
  sha256: { u: 32, v: 64 },
  sha384: { u: 48, v: 128 },
  sha512: { u: 64, v: 128 },
} as const;
export type KdfDigest = keyof typeof KDF_DIGESTS;

/** MAC digests by their OID. */
const MAC_DIGESTS: Readonly<Record<string, KdfDigest>> = {
  "1.3.14.3.2.26": "sha1",
  "2.16.840.1.101.3.4.2.4": "sha224",
  "2.16.840.1.101.3.4.2.1": "sha256",
  "2.16.840.1.101.3.4.2.2": "sha384",
  "2.16.840.1.101.3.4.2.3": "sha512",
};
/** PBKDF2 PRFs and PBMAC1 MACs by their OID: the HMAC's digest. */
const HMACS: Readonly<Record<string, string>> = {
  [OID.hmacWithSha1]: "sha1",
  "1.2.840.113549.2.8": "sha224",
  "1.2.840.113549.2.9": "sha256",
  "1.2.840.113549.2.10": "sha384",
  "1.2.840.113549.2.11": "sha512",
};
/** PBES2 encryption schemes by their OID: node:crypto's cipher, key and IV bytes. */
const PBES2_CIPHERS: Readonly<Record<string, { cipher: string; key: number; iv: number }>> = {
  "2.16.840.1.101.3.4.1.2": { cipher: "aes-128-cbc", key: 16, iv: 16 },
  "2.16.840.1.101.3.4.1.22": { cipher: "aes-192-cbc", key: 24, iv: 16 },
  "2.16.840.1.101.3.4.1.42": { cipher: "aes-256-cbc", key: 32, iv: 16 },
  "1.2.840.113549.3.7": { cipher: "des-ede3-cbc", key: 24, iv: 8 },
};
/** RFC 7292 appendix C schemes: SHA-1 PKCS#12 KDF, then node:crypto's cipher. */
const PKCS12_PBES: Readonly<Record<string, { name: string; cipher: string; key: number; iv: number }>> = {
  [OID.pbeSha3Des]: { name: "pbeWithSHAAnd3-KeyTripleDES-CBC", cipher: "des-ede3-cbc", key: 24, iv: 8 },
  [OID.pbeSha2Des]: { name: "pbeWithSHAAnd2-KeyTripleDES-CBC", cipher: "des-ede-cbc", key: 16, iv: 8 },
  [OID.pbeShaRc2_128]: { name: "pbeWithSHAAnd128BitRC2-CBC", cipher: "rc2-cbc", key: 16, iv: 8 },
  [OID.pbeShaRc2_40]: { name: "pbeWithSHAAnd40BitRC2-CBC", cipher: "rc2-40-cbc", key: 5, iv: 8 },
};
const RC4_PBES: Readonly<Record<string, string>> = {
  [OID.pbeShaRc4_128]: "pbeWithSHAAnd128BitRC4",
  [OID.pbeShaRc4_40]: "pbeWithSHAAnd40BitRC4",
};

const REEXPORT =
  "re-export the bundle with `openssl pkcs12 -export` without -legacy (AES-256-CBC), or start node with --openssl-legacy-provider";

/** The password in the forms the schemes take it. */
interface Password {
  /** PBES2 and PBMAC1: UTF-8. */
  readonly utf8: Buffer;
  /** MAC and legacy PBE: the BMPString forms to try, the RFC's first (narrowed to one once a MAC holds). */
  bmp: Buffer[];
}

/** Opens `der` with `password`. Throws `Pkcs12Error` only. */
export function openPkcs12(der: Uint8Array, password: string): Pkcs12Contents {
  try {
    return open(der, password);
  } catch (error) {
    if (error instanceof Pkcs12Error) throw error;
    // ASN.1 libraries' messages may quote bytes of the bundle; none is passed on.
    throw new Pkcs12Error("malformed", "not a PKCS#12 bundle, or a damaged one");
  }
}

function open(der: Uint8Array, password: string): Pkcs12Contents {
  let pfx: PFX;
  try {
    // Bytes after the PFX are left alone, as OpenSSL leaves them.
    const bytes = definite(der);
    pfx = parse(bytes.subarray(0, readNode(bytes).end), PFX);
  } catch {
    throw new Pkcs12Error("malformed", "not a PKCS#12 bundle (no PFX structure)");
  }
  if (pfx.version !== 3) throw new Pkcs12Error("malformed", "not a PKCS#12 v3 bundle");
  if (pfx.authSafe.contentType !== id_data) {
    throw new Pkcs12Error(
      "unsupported",
      `PKCS#12 public-key integrity mode (authSafe ${pfx.authSafe.contentType}) is not supported`,
    );
  }
  const authSafe = octets(pfx.authSafe.content);
  const secret: Password = { utf8: Buffer.from(password, "utf8"), bmp: bmpForms(password) };
  // A bundle made with -nomac has no macData; asn1-schema leaves an empty one there (algorithm "").
  const verified = Boolean(pfx.macData?.mac?.digestAlgorithm?.algorithm);
  if (verified) verifyMac(pfx, authSafe, secret);

  const out: { keys: KeyObject[]; certificates: Buffer[] } = { keys: [], certificates: [] };
  for (const info of parse(authSafe, AuthenticatedSafe)) {
    walk(safeContents(info, secret, verified), secret, verified, out, 0);
  }
  return out;
}

/** RFC 7292 B.1: UTF-16BE and a two-byte zero; then the forms other writers use. */
export function bmpForms(password: string): Buffer[] {
  const forms = [bmp(password)];
  // OpenSSL before 1.1.0 (and tools copying it) widened each UTF-8 byte instead; OpenSSL 3 still reads those.
  if (/[^\x00-\x7f]/.test(password)) forms.push(bmp(Buffer.from(password, "utf8").toString("latin1")));
  // An empty password is also MACed as no bytes at all (OpenSSL's NULL password).
  if (password === "") forms.push(Buffer.alloc(0));
  return forms;
}

function bmp(text: string): Buffer {
  const out = Buffer.alloc(text.length * 2 + 2);
  for (let i = 0; i < text.length; i++) out.writeUInt16BE(text.charCodeAt(i), i * 2);
  return out;
}

/** RFC 7292 5.1 and B (PKCS#12 KDF, ID 3), or RFC 9579 (PBMAC1): an HMAC over the authSafe's content. */
function verifyMac(pfx: PFX, authSafe: Buffer, secret: Password): void {
  const { mac, macSalt, iterations } = pfx.macData;
  const sent = Buffer.from(mac.digest.buffer);
  const algorithm = mac.digestAlgorithm.algorithm;
  if (algorithm === OID.pbmac1) {
    const { digest, key } = pbmac1Key(mac.digestAlgorithm, secret.utf8);
    if (!equal(sent, createHmac(digest, key).update(authSafe).digest())) macFails();
    return;
  }
  const digest = MAC_DIGESTS[algorithm];
  if (!digest) throw new Pkcs12Error("unsupported", `PKCS#12 MAC digest ${algorithm} is not supported`);
  const count = checkedIterations(iterations ?? 1);
  const salt = Buffer.from(macSalt.buffer);
  for (const form of secret.bmp) {
    const key = pkcs12Kdf(digest, form, salt, 3, count, KDF_DIGESTS[digest].u);
    if (equal(sent, createHmac(digest, key).update(authSafe).digest())) {
      secret.bmp = [form];
      return;
    }
  }
  macFails();
}

function macFails(): never {
  throw new Pkcs12Error("password", "PKCS#12 MAC could not be verified: wrong password or a damaged file");
}

/** PBMAC1-params (RFC 8018 7.1): PBKDF2, its keyLength required by RFC 9579, and an HMAC. */
function pbmac1Key(algorithm: AlgorithmIdentifier, password: Buffer): { digest: string; key: Buffer } {
  const [kdf, scheme] = sequence(params(algorithm), "PBMAC1 parameters");
  if (!kdf || !scheme) throw new Pkcs12Error("malformed", "PBMAC1 parameters are incomplete");
  const digest = HMACS[algorithmOid(scheme)];
  if (!digest) throw new Pkcs12Error("unsupported", `PBMAC1 MAC ${algorithmOid(scheme)} is not supported`);
  const { salt, iterations, keyLength, prf } = pbkdf2Params(kdf, "PBMAC1");
  if (keyLength === undefined) throw new Pkcs12Error("malformed", "PBMAC1's PBKDF2 has no keyLength");
  return { digest, key: pbkdf2Sync(password, salt, iterations, keyLength, prf) };
}

function equal(sent: Buffer, computed: Buffer): boolean {
  return sent.length === computed.length && timingSafeEqual(sent, computed);
}

/**
 * RFC 7292 appendix B.2: `length` bytes for purpose `id` (1 key, 2 IV, 3 MAC) from a BMPString
 * password and a salt, hashed `iterations` times.
 */
export function pkcs12Kdf(
  digest: KdfDigest,
  password: Buffer,
  salt: Buffer,
  id: 1 | 2 | 3,
  iterations: number,
  length: number,
): Buffer {
  const { u, v } = KDF_DIGESTS[digest];
  const fill = (bytes: Buffer) => {
    const out = Buffer.alloc(bytes.length === 0 ? 0 : v * Math.ceil(bytes.length / v));
    for (let i = 0; i < out.length; i++) out[i] = bytes[i % bytes.length]!;
    return out;
  };
  const diversifier = Buffer.alloc(v, id);
  const input = Buffer.concat([fill(salt), fill(password)]);
  const out = Buffer.alloc(u * Math.ceil(length / u));
  for (let block = 0; block * u < length; block++) {
    let a = hash(digest, Buffer.concat([diversifier, input]), "buffer");
    for (let round = 1; round < iterations; round++) a = hash(digest, a, "buffer");
    a.copy(out, block * u);
    // I_j = (I_j + B + 1) mod 2^(8v), B being A repeated to v bytes.
    for (let j = 0; j < input.length; j += v) {
      let carry = 1;
      for (let k = v - 1; k >= 0; k--) {
        const sum = input[j + k]! + a[k % u]! + carry;
        input[j + k] = sum & 0xff;
        carry = sum >>> 8;
      }
    }
  }
  return out.subarray(0, length);
}

/** A ContentInfo of the AuthenticatedSafe as its SafeContents. */
function safeContents(info: ContentInfo, secret: Password, verified: boolean): SafeContents {
  if (info.contentType === id_data) return parse(octets(info.content), SafeContents);
  if (info.contentType === id_encryptedData) {
    // EncryptedData ::= SEQUENCE { version, EncryptedContentInfo, [1] unprotectedAttrs OPTIONAL }
    const eci = sequence(Buffer.from(info.content), "EncryptedData")[1];
    if (!eci) throw new Pkcs12Error("malformed", "EncryptedData has no content");
    const encrypted = parse(whole(eci), EncryptedContentInfo);
    const { value, constructedValue } = encrypted.encryptedContent ?? {};
    const ciphertext = value
      ? Buffer.from(value.buffer)
      : Buffer.concat((constructedValue ?? []).map((piece) => Buffer.from(piece.buffer)));
    const plain = decrypt(encrypted.contentEncryptionAlgorithm, ciphertext, secret, "certificates");
    try {
      return parse(plain, SafeContents);
    } catch {
      // Without a MAC, a wrong password can decrypt to garbage that still has valid padding.
      if (verified)
        throw new Pkcs12Error("malformed", "the bundle's decrypted certificates are not SafeContents");
      throw new Pkcs12Error(
        "password",
        "the bundle's certificates decrypt to no SafeContents: wrong password or a damaged file",
      );
    }
  }
  throw new Pkcs12Error(
    "unsupported",
    `PKCS#12 content ${info.contentType} is not supported (public-key encrypted contents are not)`,
  );
}

function walk(
  bags: SafeContents,
  secret: Password,
  verified: boolean,
  out: { keys: KeyObject[]; certificates: Buffer[] },
  depth: number,
): void {
  if (depth > MAX_NESTING) throw new Pkcs12Error("malformed", "PKCS#12 safe contents nest too deep");
  for (const bag of bags) {
    const value = Buffer.from(bag.bagValue);
    switch (bag.bagId) {
      case id_keyBag:
        out.keys.push(privateKey(Buffer.from(definite(value)), verified));
        break;
      case id_pkcs8ShroudedKeyBag: {
        const shrouded = parse(value, EncryptedPrivateKeyInfo);
        const pkcs8 = decrypt(
          shrouded.encryptionAlgorithm,
          Buffer.from(shrouded.encryptedData.buffer),
          secret,
          "private key",
        );
        out.keys.push(privateKey(pkcs8, verified));
        break;
      }
      case id_certBag: {
        const cert = parse(value, CertBag);
        if (cert.certId === id_x509Certificate) out.certificates.push(octets(cert.certValue));
        break;
      }
      case id_SafeContents:
        walk(parse(value, SafeContents), secret, verified, out, depth + 1);
        break;
      // CRL and secret bags are not needed here.
    }
  }
}

/** A PKCS#8 PrivateKeyInfo as a KeyObject: RSA, EC, Ed25519, whatever node:crypto knows. */
function privateKey(pkcs8: Buffer, verified: boolean): KeyObject {
  try {
    return createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
  } catch {
    // Without a MAC, a wrong password can decrypt to garbage that still has valid padding.
    throw verified
      ? new Pkcs12Error("unsupported", "a private key in the bundle is of a kind node:crypto cannot read")
      : new Pkcs12Error("password", "the private key decrypts to no key: wrong password or a damaged file");
  }
}

/** Password-based decryption: PBES2 (RFC 8018) or the PKCS#12 PBE schemes (RFC 7292 appendix C). */
function decrypt(algorithm: AlgorithmIdentifier, data: Buffer, secret: Password, what: string): Buffer {
  const oid = algorithm.algorithm;
  if (oid === OID.pbes2) {
    const [kdf, scheme] = sequence(params(algorithm), "PBES2 parameters");
    if (!kdf || !scheme) throw new Pkcs12Error("malformed", "PBES2 parameters are incomplete");
    const schemeOid = algorithmOid(scheme);
    const cipher = PBES2_CIPHERS[schemeOid];
    if (!cipher)
      throw new Pkcs12Error("unsupported", `PBES2 encryption scheme ${schemeOid} is not supported`);
    const iv = octetString(children(scheme)[1], "PBES2 IV");
    if (iv.length !== cipher.iv) throw new Pkcs12Error("malformed", "PBES2 IV has the wrong length");
    const { salt, iterations, keyLength, prf } = pbkdf2Params(kdf, "PBES2");
    if (keyLength !== undefined && keyLength !== cipher.key) {
      throw new Pkcs12Error("malformed", "PBES2 keyLength does not fit its cipher");
    }
    const key = pbkdf2Sync(secret.utf8, salt, iterations, cipher.key, prf);
    return decipher(cipher.cipher, key, iv, data, what);
  }
  const pbe = PKCS12_PBES[oid];
  if (pbe) {
    const [saltNode, iterationsNode] = sequence(params(algorithm), "PKCS#12 PBE parameters");
    const salt = octetString(saltNode, "PKCS#12 PBE salt");
    const iterations = checkedIterations(integer(iterationsNode, "PKCS#12 PBE iterations"));
    // Without a MAC no form has been settled on: the first whose padding holds wins.
    for (const [index, form] of secret.bmp.entries()) {
      const key = pkcs12Kdf("sha1", form, salt, 1, iterations, pbe.key);
      const iv = pkcs12Kdf("sha1", form, salt, 2, iterations, pbe.iv);
      try {
        return decipher(pbe.cipher, key, iv, data, what, pbe.name);
      } catch (error) {
        const last = index === secret.bmp.length - 1;
        if (last || !(error instanceof Pkcs12Error) || error.failure !== "password") throw error;
      }
    }
  }
  const rc4 = RC4_PBES[oid];
  if (rc4)
    throw new Pkcs12Error(
      "unsupported",
      `${rc4} encrypts the bundle's ${what} and is not supported; ${REEXPORT}`,
    );
  throw new Pkcs12Error("unsupported", `${oid} encrypts the bundle's ${what} and is not supported`);
}

function decipher(
  cipher: string,
  key: Buffer,
  iv: Buffer,
  data: Buffer,
  what: string,
  name = cipher.toUpperCase(),
): Buffer {
  let engine: ReturnType<typeof createDecipheriv>;
  try {
    engine = createDecipheriv(cipher, key, iv);
  } catch {
    // OpenSSL 3 keeps RC2 (and RC4) in its legacy provider, which node does not load by default.
    throw new Pkcs12Error(
      "unsupported",
      `${name} encrypts the bundle's ${what}, and this node's OpenSSL offers it only with its legacy provider; ${REEXPORT}`,
    );
  }
  try {
    return Buffer.concat([engine.update(data), engine.final()]);
  } catch {
    throw new Pkcs12Error(
      "password",
      `cannot decrypt the bundle's ${what}: wrong password or a damaged file`,
    );
  }
}

interface Pbkdf2 {
  readonly salt: Buffer;
  readonly iterations: number;
  readonly keyLength: number | undefined;
  /** The PRF's digest for pbkdf2Sync. */
  readonly prf: string;
}

/** PBKDF2-params (RFC 8018 A.2) of a keyDerivationFunc AlgorithmIdentifier node. */
function pbkdf2Params(kdf: DerNode, where: string): Pbkdf2 {
  const kdfOid = algorithmOid(kdf);
  if (kdfOid !== OID.pbkdf2) {
    throw new Pkcs12Error("unsupported", `${where} key derivation ${kdfOid} is not supported (PBKDF2 is)`);
  }
  const parts = children(expectSequence(children(kdf)[1], "PBKDF2 parameters"));
  const [saltNode, iterationsNode] = parts;
  if (saltNode?.tag !== TAG.OCTET_STRING) {
    throw new Pkcs12Error("unsupported", "PBKDF2 salt from another source is not supported");
  }
  let rest = parts.slice(2);
  let keyLength: number | undefined;
  if (rest[0]?.tag === TAG.INTEGER) {
    keyLength = integer(rest[0], "PBKDF2 keyLength");
    if (keyLength < 1 || keyLength > 64)
      throw new Pkcs12Error("malformed", "PBKDF2 keyLength is out of range");
    rest = rest.slice(1);
  }
  const prfOid = rest[0] ? algorithmOid(rest[0]) : OID.hmacWithSha1;
  const prf = HMACS[prfOid];
  if (!prf) throw new Pkcs12Error("unsupported", `PBKDF2 PRF ${prfOid} is not supported`);
  return {
    salt: Buffer.from(content(saltNode)),
    iterations: checkedIterations(integer(iterationsNode, "PBKDF2 iterations")),
    keyLength,
    prf,
  };
}

function checkedIterations(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_ITERATIONS) {
    throw new Pkcs12Error("unsupported", `an iteration count outside 1..${MAX_ITERATIONS} is not supported`);
  }
  return count;
}

/**
 * `der` read as `type`, which is a SEQUENCE. asn1-schema alone takes any element of length zero
 * for an empty SEQUENCE OF and ignores bytes after the element, so both are checked first.
 */
function parse<T>(ber: Uint8Array, type: new () => T): T {
  const der = definite(ber);
  const node = readNode(der);
  if (node.tag !== TAG.SEQUENCE || node.end !== der.length) throw new DerError("not one SEQUENCE");
  return AsnConvert.parse(der, type);
}

/** An AlgorithmIdentifier's parameters, as DER. */
function params(algorithm: AlgorithmIdentifier): Buffer {
  if (!algorithm.parameters) throw new Pkcs12Error("malformed", `${algorithm.algorithm} has no parameters`);
  return Buffer.from(algorithm.parameters);
}

function sequence(ber: Buffer, what: string): DerNode[] {
  const der = definite(ber);
  const node = readNode(der);
  if (node.end !== der.length) throw new Pkcs12Error("malformed", `${what} have trailing bytes`);
  return children(expectSequence(node, what));
}

function expectSequence(node: DerNode | undefined, what: string): DerNode {
  if (node?.tag !== TAG.SEQUENCE) throw new Pkcs12Error("malformed", `${what} are not a SEQUENCE`);
  return node;
}

function algorithmOid(node: DerNode): string {
  const oid = children(expectSequence(node, "AlgorithmIdentifier"))[0];
  if (oid?.tag !== TAG.OID) throw new Pkcs12Error("malformed", "an AlgorithmIdentifier has no OID");
  return readOid(oid);
}

function integer(node: DerNode | undefined, what: string): number {
  if (node?.tag !== TAG.INTEGER) throw new Pkcs12Error("malformed", `${what} is missing`);
  return readSmallInteger(node, what);
}

function octetString(node: DerNode | undefined, what: string): Buffer {
  if (node?.tag !== TAG.OCTET_STRING) throw new Pkcs12Error("malformed", `${what} is not an OCTET STRING`);
  return Buffer.from(content(node));
}

function whole(node: DerNode): Buffer {
  return Buffer.from(node.buf.subarray(node.headerStart, node.end));
}

/**
 * An OCTET STRING's bytes from its TLV, primitive or constructed (BER pieces, as some writers
 * split large contents). asn1-schema's OctetString reads a constructed one as empty, so it is not
 * used for this.
 */
function octets(tlv: ArrayBuffer | Uint8Array, depth = 0): Buffer {
  const bytes = definite(tlv instanceof Uint8Array ? tlv : new Uint8Array(tlv));
  const node = readNode(bytes);
  if (node.end !== bytes.length) throw new Pkcs12Error("malformed", "an OCTET STRING has trailing bytes");
  return pieces(node, depth);
}

function pieces(node: DerNode, depth: number): Buffer {
  if (node.tag === TAG.OCTET_STRING) return Buffer.from(content(node));
  if (node.tag === (TAG.OCTET_STRING | 0x20) && depth < 4) {
    return Buffer.concat(children(node).map((piece) => pieces(piece, depth + 1)));
  }
  throw new Pkcs12Error("malformed", "an OCTET STRING was expected");
}

/**
 * `ber` with every indefinite length made definite (BER, as Windows and Java write some bundles),
 * so that der.ts and asn1-schema read it; primitives, the MACed and certificate bytes among them,
 * are copied untouched. A bundle without indefinite lengths comes back as it was.
 */
function definite(ber: Uint8Array): Uint8Array {
  const found = { indefinite: false };
  const { tlv, next } = reencode(ber, 0, ber.length, 0, found);
  if (!found.indefinite) return ber;
  return Buffer.concat([tlv, ber.subarray(next)]);
}

function reencode(
  buf: Uint8Array,
  pos: number,
  limit: number,
  depth: number,
  found: { indefinite: boolean },
): { tlv: Uint8Array; next: number } {
  if (depth > MAX_DEPTH) throw new DerError("ASN.1 nested too deep");
  const tag = buf[pos];
  if (tag === undefined || pos + 1 >= limit) throw new DerError("ASN.1 element cut short");
  const constructed = (tag & 0x20) !== 0;
  const parts: Uint8Array[] = [];
  if (buf[pos + 1] !== 0x80) {
    const node = readNode(buf, pos, limit);
    if (!constructed) return { tlv: buf.subarray(pos, node.end), next: node.end };
    for (let at = node.start; at < node.end; ) {
      const child = reencode(buf, at, node.end, depth + 1, found);
      parts.push(child.tlv);
      at = child.next;
    }
    return { tlv: encodeTlv(tag, Buffer.concat(parts)), next: node.end };
  }
  if (!constructed) throw new DerError("indefinite length on a primitive element");
  found.indefinite = true;
  let at = pos + 2;
  while (!(buf[at] === 0 && buf[at + 1] === 0)) {
    if (at + 1 >= limit) throw new DerError("indefinite length without its end");
    const child = reencode(buf, at, limit, depth + 1, found);
    parts.push(child.tlv);
    at = child.next;
  }
  return { tlv: encodeTlv(tag, Buffer.concat(parts)), next: at + 2 };
}
