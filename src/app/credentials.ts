/**
 * Loads the gateway's own key and certificate from PEM files or from a PKCS#12 bundle, the form in
 * which QTSPs and banks often hand them out. node:crypto cannot open PKCS#12, so ./pkcs12.ts does
 * that one step (its ASN.1 read with @peculiar/asn1-pfx, its crypto node's own). The leaf is found
 * by its public key, not by position, so a bundle or file listing its CA first still yields the
 * right certificate.
 * No message built here carries key material or the password: they end up in logs.
 */

import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { openPkcs12, type Pkcs12Contents, Pkcs12Error } from "./pkcs12.js";

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

/** The files credentials are read from, for a watch that reads a renewal written over them. */
export function credentialFiles(source: CredentialSource | undefined): string[] {
  if (!source) return [];
  return [source.cert, source.key, source.p12, source.passwordFile].filter((f) => f !== undefined);
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
  const der = read(path, "p12", label);
  let bundle: Pkcs12Contents;
  try {
    bundle = openPkcs12(der, password);
  } catch (error) {
    // openPkcs12's texts are fixed (an OID at most): no password, no key material, no bytes of the file.
    const text = reason(error);
    const unsupported = error instanceof Pkcs12Error && error.failure === "unsupported";
    throw new Error(
      `${label}: cannot open PKCS#12 file ${path}: ${unsupported ? text : `wrong password or not a PKCS#12 bundle (${text})`}`,
    );
  }
  if (bundle.keys.length !== 1) {
    throw new Error(
      `${label}: PKCS#12 file ${path} holds ${bundle.keys.length} private keys; it needs exactly one`,
    );
  }
  const certificates = bundle.certificates.map((der) =>
    attempt(() => new X509Certificate(der), `${label}: cannot read a certificate in ${path}`),
  );
  return assemble(
    bundle.keys[0]!,
    certificates,
    `${label}: no certificate in ${path} belongs to its private key`,
  );
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
