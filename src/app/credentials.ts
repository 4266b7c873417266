/**
 * Loads the gateway's own key and certificate from PEM files or from a PKCS#12 bundle, the form in
 * which QTSPs and banks often hand them out. node:crypto cannot open PKCS#12, so node-forge does
 * that one step and everything after it is native crypto. The leaf is found by its public key,
 * not by position, so a bundle or file listing its CA first still yields the right certificate.
 * No message built here carries key material or the password: they end up in logs.
 */

import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  timingSafeEqual,
  X509Certificate,
} from "node:crypto";
import { readFileSync } from "node:fs";
import forge from "node-forge";

/** Where a key and its certificate come from: PEM files, or a PKCS#12 bundle with its password from an environment variable or a file. */
export interface CredentialSource {
  /** PEM file, leaf first and chain after; goes with `key`. */
  readonly cert?: string;
  /** PEM private key file (PKCS#8, PKCS#1 or SEC1). */
  readonly key?: string;
  /** PKCS#12 file (.p12/.pfx). */
  readonly p12?: string;
  /** Name of the environment variable holding the PKCS#12 password. */
  readonly passwordEnv?: string;
  /** File holding the PKCS#12 password (one trailing line break is dropped). */
  readonly passwordFile?: string;
}

export interface Credentials {
  readonly privateKey: KeyObject;
  /** The leaf: the certificate whose public key matches `privateKey`. */
  readonly certificate: X509Certificate;
  /** The leaf's DER. */
  readonly certificateDer: Buffer;
  /** Leaf and chain certificates as PEM, leaf first (TLS `cert`). */
  readonly certificatePem: string;
  /** The private key as PKCS#8 PEM (TLS `key`). */
  readonly keyPem: string;
}

const USAGE =
  "give either cert and key (PEM files) or p12 (a PKCS#12 file, with passwordEnv or passwordFile)";
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

export function loadCredentials(
  source: CredentialSource,
  label: string,
  env: NodeJS.ProcessEnv = process.env,
): Credentials {
  const { cert, key, p12, passwordEnv, passwordFile } = source;
  const pem = cert !== undefined || key !== undefined;
  if (pem && p12 !== undefined) {
    throw new Error(`${label}: both PEM files and a PKCS#12 file given; ${USAGE}`);
  }
  if (!pem && p12 === undefined) {
    throw new Error(`${label}: no key and certificate given; ${USAGE}`);
  }
  if (pem && (cert === undefined || key === undefined)) {
    throw new Error(`${label}: cert and key go together; ${USAGE}`);
  }
  if (passwordEnv !== undefined && passwordFile !== undefined) {
    throw new Error(`${label}: give passwordEnv or passwordFile, not both`);
  }
  if (pem && (passwordEnv !== undefined || passwordFile !== undefined)) {
    throw new Error(`${label}: passwordEnv and passwordFile apply only to a p12 file`);
  }
  if (p12 !== undefined) return fromPkcs12(p12, password(source, label, env), label);
  return fromPem(cert!, key!, label);
}

function fromPem(certPath: string, keyPath: string, label: string): Credentials {
  const privateKey = attempt(
    () => createPrivateKey(read(keyPath, "key", label)),
    `${label}: cannot read the private key in ${keyPath}`,
  );
  const blocks = read(certPath, "cert", label).toString("latin1").match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new Error(`${label}: no PEM certificate in ${certPath}`);
  const certificates = blocks.map((block) =>
    attempt(() => new X509Certificate(block), `${label}: cannot read a certificate in ${certPath}`),
  );
  return assemble(
    privateKey,
    certificates,
    `${label}: the key in ${keyPath} does not belong to the certificate in ${certPath}`,
  );
}

function fromPkcs12(path: string, password: string, label: string): Credentials {
  const der = read(path, "p12", label).toString("binary");
  let bundle: forge.pkcs12.Pkcs12Pfx;
  try {
    bundle = openPfx(forge.asn1.fromDer(der), password);
  } catch (error) {
    // forge's messages are fixed texts and OIDs; the error object itself (with ASN.1 attached) is not passed on.
    throw new Error(
      `${label}: cannot open PKCS#12 file ${path}: wrong password or not a PKCS#12 bundle (${reason(error)})`,
    );
  }
  const { oids } = forge.pki;
  const keyBags = [...bags(bundle, oids.pkcs8ShroudedKeyBag!), ...bags(bundle, oids.keyBag!)];
  if (keyBags.length !== 1) {
    throw new Error(
      `${label}: PKCS#12 file ${path} holds ${keyBags.length} private keys; it needs exactly one`,
    );
  }
  const keyBag = keyBags[0]!;
  // forge parses only RSA keys and certificates; for the others it hands over their ASN.1 untouched.
  const keyPem = keyBag.key
    ? forge.pki.privateKeyToPem(keyBag.key)
    : forge.pki.privateKeyInfoToPem(keyBag.asn1);
  const privateKey = attempt(
    () => createPrivateKey(keyPem),
    `${label}: cannot read the private key in ${path}`,
  );
  const certificates = bags(bundle, oids.certBag!).map((bag) =>
    attempt(() => new X509Certificate(certificateDer(bag)), `${label}: cannot read a certificate in ${path}`),
  );
  return assemble(privateKey, certificates, `${label}: no certificate in ${path} belongs to its private key`);
}

/**
 * The certificate's DER as it sits in the bundle. forge keeps the ASN.1 only of certificates it could
 * not parse (all but RSA keys signed with RSA); a parsed one is rebuilt from its untouched
 * TBSCertificate, because forge's own encoding writes the outer signature algorithm afresh (NULL
 * parameter or not as forge likes), and RFC 5280 4.1.1.2 has that equal the TBS `signature` field.
 */
/**
 * A PFX opened with its password. A PKCS#12 password is a BMPString for the MAC and the legacy
 * 3DES/RC2 keys (RFC 7292 B.1) but its UTF-8 bytes for PBES2, the AES that OpenSSL 3 writes by
 * default (RFC 8018, as OpenSSL does). forge takes one string for both and feeds PBKDF2 its chars
 * as bytes, so a non-ASCII password fails AES bundles: then the MAC is checked here with the
 * password as text and forge decrypts, MAC left out, with the UTF-8 bytes. A bundle mixing AES
 * with legacy encryption under a non-ASCII password still cannot be opened (forge would need the
 * two forms at once).
 */
function openPfx(pfx: forge.asn1.Asn1, password: string): forge.pkcs12.Pkcs12Pfx {
  try {
    return forge.pkcs12.pkcs12FromAsn1(pfx, password);
  } catch (error) {
    if (/^[\x00-\x7f]*$/.test(password)) throw error;
    const parts = pfx.value as forge.asn1.Asn1[];
    if (parts.length !== 3) throw error;
    if (!pfxMacHolds(parts[1]!, parts[2]!, password))
      throw new Error("PKCS#12 MAC could not be verified. Invalid password?");
    const withoutMac = forge.asn1.create(pfx.tagClass, pfx.type, true, parts.slice(0, 2));
    return forge.pkcs12.pkcs12FromAsn1(withoutMac, forge.util.encodeUtf8(password));
  }
}

const MAC_DIGESTS: Readonly<
  Record<string, { name: string; md: () => forge.md.MessageDigest; bytes: number }>
> = {
  [forge.pki.oids.sha1!]: { name: "sha1", md: () => forge.md.sha1.create(), bytes: 20 },
  [forge.pki.oids.sha256!]: { name: "sha256", md: () => forge.md.sha256.create(), bytes: 32 },
  [forge.pki.oids.sha384!]: { name: "sha384", md: () => forge.md.sha384.create(), bytes: 48 },
  [forge.pki.oids.sha512!]: { name: "sha512", md: () => forge.md.sha512.create(), bytes: 64 },
};

/** forge's RFC 7292 appendix B key derivation (exported by forge, not declared by its types). */
const pkcs12Key = (
  forge.pkcs12 as unknown as {
    generateKey(
      password: string,
      salt: forge.util.ByteStringBuffer,
      id: number,
      iterations: number,
      bytes: number,
      md: forge.md.MessageDigest,
    ): forge.util.ByteStringBuffer;
  }
).generateKey;

/** RFC 7292 5.1 and B: HMAC over the authSafe content, its key from the password as a BMPString. */
function pfxMacHolds(authSafe: forge.asn1.Asn1, macData: forge.asn1.Asn1, password: string): boolean {
  const [mac, saltNode, iterationsNode] = macData.value as forge.asn1.Asn1[];
  const [algorithm, digestNode] = (mac?.value ?? []) as forge.asn1.Asn1[];
  const oid = forge.asn1.derToOid(((algorithm?.value ?? []) as forge.asn1.Asn1[])[0]?.value as string);
  const digest = MAC_DIGESTS[oid];
  // authSafe: ContentInfo { data, [0] EXPLICIT OCTET STRING (primitive, or BER pieces) }.
  const octets = ((authSafe.value as forge.asn1.Asn1[])[1]?.value as forge.asn1.Asn1[] | undefined)?.[0];
  if (!digest || !saltNode || !digestNode || !octets) return false;
  const iterations = iterationsNode
    ? Number.parseInt(forge.util.bytesToHex(iterationsNode.value as string), 16)
    : 1;
  if (!(iterations >= 1 && iterations <= 10_000_000)) return false;
  const key = pkcs12Key(
    password,
    forge.util.createBuffer(saltNode.value as string),
    3,
    iterations,
    digest.bytes,
    digest.md(),
  );
  const content = Array.isArray(octets.value)
    ? octets.value.map((piece) => piece.value as string).join("")
    : (octets.value as string);
  const computed = createHmac(digest.name, Buffer.from(key.getBytes(), "binary"))
    .update(Buffer.from(content, "binary"))
    .digest();
  const sent = Buffer.from(digestNode.value as string, "binary");
  return sent.length === computed.length && timingSafeEqual(sent, computed);
}

function certificateDer(bag: forge.pkcs12.Bag): Buffer {
  let asn1 = bag.asn1;
  if (bag.cert) {
    const { Class, Type, create } = forge.asn1;
    const tbs = bag.cert.tbsCertificate;
    const algorithm = (tbs.value as forge.asn1.Asn1[]).find(
      (part) => part.tagClass === Class.UNIVERSAL && part.type === Type.SEQUENCE,
    )!;
    const signature = create(Class.UNIVERSAL, Type.BITSTRING, false, "\0" + bag.cert.signature);
    asn1 = create(Class.UNIVERSAL, Type.SEQUENCE, true, [tbs, algorithm, signature]);
  }
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), "binary");
}

function bags(bundle: forge.pkcs12.Pkcs12Pfx, bagType: string): forge.pkcs12.Bag[] {
  return bundle.getBags({ bagType })[bagType] ?? [];
}

function assemble(privateKey: KeyObject, certificates: X509Certificate[], mismatch: string): Credentials {
  const spki = (key: KeyObject) => key.export({ type: "spki", format: "der" });
  const own = spki(createPublicKey(privateKey));
  const leaf = certificates.find((certificate) => spki(certificate.publicKey).equals(own));
  if (!leaf) throw new Error(mismatch);
  const chain = [leaf, ...certificates.filter((certificate) => certificate !== leaf)];
  return {
    privateKey,
    certificate: leaf,
    certificateDer: leaf.raw,
    certificatePem: chain.map((certificate) => certificate.toString()).join(""),
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
  };
}

function password(source: CredentialSource, label: string, env: NodeJS.ProcessEnv): string {
  if (source.passwordEnv !== undefined) {
    const value = env[source.passwordEnv];
    if (value === undefined) {
      throw new Error(`${label}: the environment variable ${source.passwordEnv} (passwordEnv) is not set`);
    }
    return value;
  }
  if (source.passwordFile !== undefined) {
    return read(source.passwordFile, "passwordFile", label)
      .toString("utf8")
      .replace(/\r?\n$/, "");
  }
  return "";
}

function read(path: string, what: string, label: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(
      `${label}: cannot read ${what} ${path} (${(error as NodeJS.ErrnoException).code ?? reason(error)})`,
    );
  }
}

/** Runs `make`, replacing its error by `message` plus the original's text (node:crypto's never quote the key). */
function attempt<T>(make: () => T, message: string): T {
  try {
    return make();
  } catch (error) {
    throw new Error(`${message} (${reason(error)})`);
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
