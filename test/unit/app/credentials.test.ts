/**
 * loadCredentials against keys, certificates and PKCS#12 bundles the openssl binary makes at test
 * time, so the bundles are what operators get from OpenSSL 3 (AES-256-CBC/PBKDF2 by default, 3DES,
 * and -legacy, whose RC2 is refused). openssl is required, here and in CI: without it these tests
 * fail, they never skip. test/unit/app/pkcs12.test.ts covers the PKCS#12 reader's algorithms.
 */

import { sign, verify, X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CredentialSource, loadCredentials } from "../../../src/app/credentials.js";
import { exportPkcs12, opensslIn } from "../../helpers/openssl.js";

const dir = mkdtempSync(join(tmpdir(), "psd2gw-credentials-"));
const at = (name: string) => join(dir, name);

const LABEL = "signing credentials";
const PASSWORD = "Tr0ub4dor&3";
const WRONG_PASSWORD = "correct horse battery staple";
/** Non-ASCII, outside Latin-1 too: UTF-8 for PBES2 (AES), a BMPString for the MAC and PKCS#12 3DES. */
const UNICODE_PASSWORD = "Pässwörd-€-ø";
const WRONG_UNICODE_PASSWORD = "Pässwörd-€-ö";
const RSA = ["-newkey", "rsa:2048"];
const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];
const CA = ["-addext", "basicConstraints=critical,CA:TRUE"];

const openssl = opensslIn(dir);

function selfSigned(name: string, subject: string, ...keyArgs: string[]): void {
  openssl(
    "req",
    "-x509",
    ...keyArgs,
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-subj",
    subject,
  );
}

function issued(name: string, ca: string): void {
  openssl(
    "req",
    "-new",
    ...RSA,
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  );
  openssl(
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-set_serial",
    "2",
    "-days",
    "2",
    "-out",
    `${name}.pem`,
  );
}

const pkcs12 = (file: string, name: string, password: string, ...extra: string[]) =>
  exportPkcs12(openssl, file, name, password, ...extra);

beforeAll(() => {
  selfSigned("leaf", "/CN=leaf", ...RSA);
  selfSigned("other", "/CN=other", ...RSA);
  selfSigned("ec-leaf", "/CN=ec-leaf", ...EC);
  selfSigned("ca", "/CN=Test CA", ...RSA, ...CA);
  selfSigned("ec-ca", "/CN=Test EC CA", ...EC, ...CA);
  issued("issued", "ca");
  issued("ec-issued", "ec-ca");
  openssl("pkey", "-in", "leaf.key", "-traditional", "-out", "leaf-pkcs1.key");
  openssl("pkey", "-in", "ec-leaf.key", "-traditional", "-out", "ec-leaf-sec1.key");
  writeFileSync(
    at("ca-first.pem"),
    readFileSync(at("ca.pem"), "latin1") + readFileSync(at("issued.pem"), "latin1"),
  );

  pkcs12("leaf-password.p12", "leaf", PASSWORD);
  pkcs12("leaf-empty.p12", "leaf", "");
  pkcs12("leaf-unprotected.p12", "leaf", "", "-keypbe", "NONE", "-certpbe", "NONE", "-nomac");
  pkcs12("leaf-legacy.p12", "leaf", PASSWORD, "-legacy");
  // OpenSSL 3's default, AES-256-CBC with PBKDF2 and a SHA-256 MAC, under a non-ASCII password.
  pkcs12(
    "leaf-aes-unicode.p12",
    "leaf",
    UNICODE_PASSWORD,
    "-keypbe",
    "AES-256-CBC",
    "-certpbe",
    "AES-256-CBC",
    "-macalg",
    "sha256",
  );
  pkcs12("leaf-legacy-unicode.p12", "leaf", UNICODE_PASSWORD, "-legacy");
  // -legacy's key encryption and MAC without its RC2: what node:crypto opens without the legacy provider.
  const TRIPLE_DES = ["-keypbe", "PBE-SHA1-3DES", "-certpbe", "PBE-SHA1-3DES", "-macalg", "sha1"];
  pkcs12("leaf-3des.p12", "leaf", PASSWORD, ...TRIPLE_DES);
  pkcs12("leaf-3des-unicode.p12", "leaf", UNICODE_PASSWORD, ...TRIPLE_DES);
  // The two forms of one non-ASCII password in one bundle: BMPString for the key, UTF-8 for the certificate.
  pkcs12(
    "leaf-mixed-unicode.p12",
    "leaf",
    UNICODE_PASSWORD,
    "-keypbe",
    "PBE-SHA1-3DES",
    "-certpbe",
    "AES-256-CBC",
  );
  writeFileSync(at("unicode-password.txt"), `${UNICODE_PASSWORD}\n`);
  pkcs12("ec-leaf.p12", "ec-leaf", PASSWORD);
  pkcs12("chain.p12", "issued", PASSWORD, "-certfile", "ca.pem");
  pkcs12("ec-chain.p12", "ec-issued", PASSWORD, "-certfile", "ec-ca.pem");
  // Key and certificates unlinked (no localKeyId), the CA's bag before the leaf's.
  pkcs12("ca-first.p12", "issued", PASSWORD, "-nocerts", "-certfile", "ca-first.pem");
  writeFileSync(at("password.txt"), PASSWORD + "\n");
  writeFileSync(at("password-crlf.txt"), PASSWORD + "\r\n");
  writeFileSync(at("password-bare.txt"), PASSWORD);
  writeFileSync(at("wrong-password.txt"), WRONG_PASSWORD + "\n");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function subjects(pem: string): string[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map(
    (block) => new X509Certificate(block).subject,
  );
}

interface Loads {
  what: string;
  source: CredentialSource;
  env?: NodeJS.ProcessEnv;
  /** The PEM file openssl wrote the leaf to. */
  leaf: string;
  /** Subjects in certificatePem, in order. */
  chain: string[];
}

const withPassword = { passwordEnv: "P12_PASSWORD" };
const passwordEnv = { P12_PASSWORD: PASSWORD };

const loads: Loads[] = [
  {
    what: "a PEM pair (PKCS#8 key)",
    source: { cert: at("leaf.pem"), key: at("leaf.key") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PEM pair (PKCS#1 key)",
    source: { cert: at("leaf.pem"), key: at("leaf-pkcs1.key") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PEM pair (SEC1 EC key)",
    source: { cert: at("ec-leaf.pem"), key: at("ec-leaf-sec1.key") },
    leaf: "ec-leaf",
    chain: ["CN=ec-leaf"],
  },
  {
    what: "a PEM certificate file listing the CA first: the leaf comes first",
    source: { cert: at("ca-first.pem"), key: at("issued.key") },
    leaf: "issued",
    chain: ["CN=issued", "CN=Test CA"],
  },
  {
    what: "a PKCS#12 with its password from the environment",
    source: { p12: at("leaf-password.p12"), ...withPassword },
    env: passwordEnv,
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with its password from a file (LF)",
    source: { p12: at("leaf-password.p12"), passwordFile: at("password.txt") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with its password from a file (CRLF)",
    source: { p12: at("leaf-password.p12"), passwordFile: at("password-crlf.txt") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with its password from a file (no line break)",
    source: { p12: at("leaf-password.p12"), passwordFile: at("password-bare.txt") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with an empty password",
    source: { p12: at("leaf-empty.p12") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 without encryption or MAC",
    source: { p12: at("leaf-unprotected.p12") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with PKCS#12 3DES for key and certificates and a SHA-1 MAC",
    source: { p12: at("leaf-3des.p12"), ...withPassword },
    env: passwordEnv,
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with AES (OpenSSL 3's default) and a non-ASCII password from the environment",
    source: { p12: at("leaf-aes-unicode.p12"), ...withPassword },
    env: { P12_PASSWORD: UNICODE_PASSWORD },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with AES and a non-ASCII password from a file (UTF-8)",
    source: { p12: at("leaf-aes-unicode.p12"), passwordFile: at("unicode-password.txt") },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with PKCS#12 3DES and a non-ASCII password",
    source: { p12: at("leaf-3des-unicode.p12"), ...withPassword },
    env: { P12_PASSWORD: UNICODE_PASSWORD },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 mixing 3DES (key) and AES (certificate) under a non-ASCII password",
    source: { p12: at("leaf-mixed-unicode.p12"), ...withPassword },
    env: { P12_PASSWORD: UNICODE_PASSWORD },
    leaf: "leaf",
    chain: ["CN=leaf"],
  },
  {
    what: "a PKCS#12 with an EC key",
    source: { p12: at("ec-leaf.p12"), ...withPassword },
    env: passwordEnv,
    leaf: "ec-leaf",
    chain: ["CN=ec-leaf"],
  },
  {
    what: "a PKCS#12 whose chain includes its CA: the leaf is picked and comes first",
    source: { p12: at("chain.p12"), ...withPassword },
    env: passwordEnv,
    leaf: "issued",
    chain: ["CN=issued", "CN=Test CA"],
  },
  {
    what: "a PKCS#12 listing its CA before the leaf: the leaf is found by its public key",
    source: { p12: at("ca-first.p12"), ...withPassword },
    env: passwordEnv,
    leaf: "issued",
    chain: ["CN=issued", "CN=Test CA"],
  },
  {
    what: "a PKCS#12 with an RSA leaf issued by an EC CA",
    source: { p12: at("ec-chain.p12"), ...withPassword },
    env: passwordEnv,
    leaf: "ec-issued",
    chain: ["CN=ec-issued", "CN=Test EC CA"],
  },
];

describe("loadCredentials", () => {
  describe.each(loads)("$what", ({ source, env, leaf, chain }) => {
    const load = () => loadCredentials(source, LABEL, env ?? {});

    it("the key signs what the leaf certificate's public key verifies", () => {
      const { privateKey, certificate } = load();
      const data = Buffer.from("PSD2 signing string");
      expect(verify("sha256", data, certificate.publicKey, sign("sha256", data, privateKey))).toBe(true);
    });

    it("the leaf is the certificate openssl wrote, byte for byte, and certificatePem lists the chain leaf first", () => {
      const credentials = load();
      const expected = new X509Certificate(readFileSync(at(`${leaf}.pem`)));
      expect(credentials.certificateDer.equals(expected.raw)).toBe(true);
      expect(credentials.certificate.raw.equals(expected.raw)).toBe(true);
      expect(subjects(credentials.certificatePem)).toEqual(chain);
    });

    it("keyPem is PKCS#8 and TLS takes keyPem with certificatePem", () => {
      const { keyPem, certificatePem } = load();
      expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      expect(() => createSecureContext({ key: keyPem, cert: certificatePem })).not.toThrow();
    });
  });

  const refusals: {
    what: string;
    source: CredentialSource;
    env?: NodeJS.ProcessEnv;
    message: () => string;
  }[] = [
    {
      what: "a wrong password from the environment",
      source: { p12: at("leaf-password.p12"), ...withPassword },
      env: { P12_PASSWORD: WRONG_PASSWORD },
      message: () =>
        `cannot open PKCS#12 file ${at("leaf-password.p12")}: wrong password or not a PKCS#12 bundle`,
    },
    {
      what: "a wrong password from a file",
      source: { p12: at("leaf-password.p12"), passwordFile: at("wrong-password.txt") },
      message: () =>
        `cannot open PKCS#12 file ${at("leaf-password.p12")}: wrong password or not a PKCS#12 bundle`,
    },
    {
      what: "a wrong non-ASCII password for an AES bundle (its MAC checked before anything is decrypted)",
      source: { p12: at("leaf-aes-unicode.p12"), ...withPassword },
      env: { P12_PASSWORD: WRONG_UNICODE_PASSWORD },
      message: () =>
        `cannot open PKCS#12 file ${at("leaf-aes-unicode.p12")}: wrong password or not a PKCS#12 bundle (PKCS#12 MAC could not be verified`,
    },
    {
      what: "a PKCS#12 made with -legacy (RC2-40 certificates, which node's OpenSSL 3 leaves to its legacy provider)",
      source: { p12: at("leaf-legacy.p12"), ...withPassword },
      env: passwordEnv,
      message: () =>
        `cannot open PKCS#12 file ${at("leaf-legacy.p12")}: pbeWithSHAAnd40BitRC2-CBC encrypts the bundle's certificates, and this node's OpenSSL offers it only with its legacy provider; re-export the bundle with \`openssl pkcs12 -export\` without -legacy`,
    },
    {
      what: "a PKCS#12 made with -legacy under a non-ASCII password (its MAC holds; RC2 refused)",
      source: { p12: at("leaf-legacy-unicode.p12"), ...withPassword },
      env: { P12_PASSWORD: UNICODE_PASSWORD },
      message: () => `cannot open PKCS#12 file ${at("leaf-legacy-unicode.p12")}: pbeWithSHAAnd40BitRC2-CBC`,
    },
    {
      what: "no password for a bundle that has one",
      source: { p12: at("leaf-password.p12") },
      message: () =>
        `cannot open PKCS#12 file ${at("leaf-password.p12")}: wrong password or not a PKCS#12 bundle`,
    },
    {
      what: "a PEM file given as the PKCS#12",
      source: { p12: at("leaf.pem") },
      message: () => `cannot open PKCS#12 file ${at("leaf.pem")}: wrong password or not a PKCS#12 bundle`,
    },
    {
      what: "a passwordEnv that is not set",
      source: { p12: at("leaf-password.p12"), ...withPassword },
      env: {},
      message: () => "the environment variable P12_PASSWORD (passwordEnv) is not set",
    },
    {
      what: "neither PEM files nor a PKCS#12",
      source: {},
      message: () => "no key and certificate given; give either cert and key",
    },
    {
      what: "both PEM files and a PKCS#12",
      source: { cert: at("leaf.pem"), key: at("leaf.key"), p12: at("leaf-empty.p12") },
      message: () => "both PEM files and a PKCS#12 file given; give either cert and key",
    },
    {
      what: "a cert without its key",
      source: { cert: at("leaf.pem") },
      message: () => "cert and key go together",
    },
    {
      what: "both passwordEnv and passwordFile",
      source: { p12: at("leaf-password.p12"), ...withPassword, passwordFile: at("password.txt") },
      env: passwordEnv,
      message: () => "give passwordEnv or passwordFile, not both",
    },
    {
      what: "a PEM key that does not belong to the certificate",
      source: { cert: at("leaf.pem"), key: at("other.key") },
      message: () => `the key in ${at("other.key")} does not belong to the certificate in ${at("leaf.pem")}`,
    },
    {
      what: "a file that is not there",
      source: { p12: at("missing.p12") },
      message: () => `cannot read p12 ${at("missing.p12")} (ENOENT)`,
    },
  ];

  it.each(refusals)(
    "refuses $what, saying so without key material or password",
    ({ source, env, message }) => {
      let error: unknown;
      try {
        loadCredentials(source, LABEL, env ?? {});
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(Error);
      const text = (error as Error).message;
      expect(text).toContain(`${LABEL}: ${message()}`);
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(WRONG_PASSWORD);
      expect(text).not.toContain(UNICODE_PASSWORD);
      expect(text).not.toContain(WRONG_UNICODE_PASSWORD);
      expect(text).not.toMatch(/PRIVATE KEY|[A-Za-z0-9+/]{40,}/);
    },
  );
});
