/**
 * Loads the gateway's own key and certificate from PEM files or from a PKCS#12 bundle, the form in
 * which QTSPs and banks often hand them out. node:crypto cannot open PKCS#12, so node-forge does
 * that one step and everything after it is native crypto. The leaf is found by its public key,
 * not by position, so a bundle or file listing its CA first still yields the right certificate.
 * No message built here carries key material or the password: they end up in logs.
 */

import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
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
    bundle = openPkcs12(der, password);
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

const MAC_FAILED = "PKCS#12 MAC could not be verified. Invalid password?";

/**
 * The bundle opened with `password`. forge derives the MAC key from the password as BMPString
 * (RFC 7292 B.1, right for any password) but feeds PBES2's PBKDF2 the password's UTF-16 code units
 * cut to bytes, where OpenSSL 3 (and RFC 8018 with it) takes its UTF-8 bytes: an AES bundle (OpenSSL
 * 3's default) with a non-ASCII password then fails to decrypt after its MAC verified. It is opened
 * again with the MAC, already verified with the real password, left out and PBES2 given the UTF-8
 * bytes. A legacy (3DES/RC2) bundle derives its keys as the MAC does and opens the first time.
 */
function openPkcs12(der: string, password: string): forge.pkcs12.Pkcs12Pfx {
  try {
    return forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(der), password);
  } catch (error) {
    const macVerified = !(error instanceof Error && error.message === MAC_FAILED);
    if (!macVerified || /^[\x00-\x7f]*$/.test(password)) throw error;
    const pfx = forge.asn1.fromDer(der);
    const fields = pfx.value as forge.asn1.Asn1[];
    if (fields.length > 2) pfx.value = fields.slice(0, 2);
    return forge.pkcs12.pkcs12FromAsn1(pfx, Buffer.from(password, "utf8").toString("binary"));
  }
}

/**
 * The certificate's DER as it sits in the bundle. forge keeps the ASN.1 only of certificates it could
 * not parse (all but RSA keys signed with RSA); a parsed one is rebuilt from its untouched
 * TBSCertificate, because forge's own encoding writes the outer signature algorithm afresh (NULL
 * parameter or not as forge likes), and RFC 5280 4.1.1.2 has that equal the TBS `signature` field.
 */
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
