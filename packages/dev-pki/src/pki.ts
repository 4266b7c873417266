/**
 * A complete development PKI, generated (never committed): root CA, qualified issuing CA, the
 * gateway's TLS certificate, demo TPPs with PSD2 QWACs and QSealCs, the awkward cases tests need
 * (expired, revoked, not in the register, under an intermediate CA the root revoked), the matching
 * register JSON and CRLs (the issuing CA's, the root's, the revoked CA's).
 */

import "reflect-metadata";
import { createPrivateKey, type KeyObject, webcrypto } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { encodeQcStatements, type Psd2Role, type QcTypeName } from "psd2-gateway/eidas";
import { ebaRegisterDocument, ebaRegisterZip } from "./eba-register.js";
import { writeDevTrustedLists } from "./trusted-lists.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const RSA = {
  name: "RSASSA-PKCS1-v1_5",
  hash: "SHA-256",
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};
const DAY = 24 * 3600 * 1000;

type Keys = Awaited<ReturnType<typeof webcrypto.subtle.generateKey>> & {
  privateKey: webcrypto.CryptoKey;
  publicKey: webcrypto.CryptoKey;
};

export interface IssuedCertificate {
  readonly name: string;
  readonly certificate: x509.X509Certificate;
  readonly keys: Keys;
  /** PEM of the certificate. */
  readonly pem: string;
  /** PKCS#8 PEM of the private key. */
  readonly keyPem: string;
  readonly der: Uint8Array;
  readonly privateKey: KeyObject;
  /** base64 DER, as it goes into TPP-Signature-Certificate. */
  readonly headerValue: string;
}

export interface DemoTpp {
  readonly organizationId: string;
  readonly name: string;
  readonly roles: readonly Psd2Role[];
  readonly qseal: IssuedCertificate;
  readonly qwac: IssuedCertificate;
}

export interface DevPki {
  readonly dir: string;
  readonly root: IssuedCertificate;
  readonly issuingCa: IssuedCertificate;
  readonly gatewayTls: IssuedCertificate;
  readonly tppA: DemoTpp;
  readonly tppB: DemoTpp;
  readonly expired: IssuedCertificate;
  readonly revoked: IssuedCertificate;
  readonly unregistered: IssuedCertificate;
  /** An intermediate CA the root revoked (its CRL lists it), in trust/ like the good one. */
  readonly revokedCa: IssuedCertificate;
  /** A QSealC of TPP A issued by the revoked CA: good itself, refused for its path. */
  readonly underRevokedCa: IssuedCertificate;
  /** A PSD2-looking certificate from a CA nobody trusts. */
  readonly untrusted: IssuedCertificate;
  /** The demo bank's QSealC (PSD2 role PSP_AS): ingress signs responses with it. */
  readonly bankQseal: IssuedCertificate;
  readonly paths: {
    readonly trustDir: string;
    readonly register: string;
    readonly crl: string;
    readonly gatewayCert: string;
    readonly gatewayKey: string;
    readonly bankQseal: string;
    readonly bankQsealKey: string;
    /** What the demo QTSP serves: CRL (DER), issuing CA, status.json for OCSP. */
    readonly qtspDir: string;
  };
}

async function generateKeys(): Promise<Keys> {
  return (await webcrypto.subtle.generateKey(RSA, true, ["sign", "verify"])) as Keys;
}

async function finish(
  name: string,
  certificate: x509.X509Certificate,
  keys: Keys,
): Promise<IssuedCertificate> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trim()}\n-----END PRIVATE KEY-----\n`;
  const der = new Uint8Array(certificate.rawData);
  return {
    name,
    certificate,
    keys,
    pem: `${certificate.toString("pem")}\n`,
    keyPem,
    der,
    privateKey: createPrivateKey(keyPem),
    headerValue: Buffer.from(der).toString("base64"),
  };
}

let serialCounter = 0x1000;
function nextSerial(): string {
  serialCounter += 1;
  return `7e${Date.now().toString(16)}${serialCounter.toString(16)}`;
}

async function selfSignedCa(subject: string, now: number): Promise<IssuedCertificate> {
  const keys = await generateKeys();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: nextSerial(),
    name: subject,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 3650 * DAY),
    signingAlgorithm: RSA,
    keys: keys as unknown as x509.X509CertificateCreateSelfSignedParams["keys"],
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
    ],
  });
  return finish(subject, certificate, keys);
}

interface IssueOptions {
  readonly subject: x509.JsonName;
  readonly issuer: IssuedCertificate;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly ca?: boolean;
  readonly keyUsage: number;
  readonly extendedKeyUsage?: string[];
  readonly dnsNames?: string[];
  readonly ipAddresses?: string[];
  readonly qc?: { readonly qcType: QcTypeName; readonly roles: readonly Psd2Role[] };
  readonly label: string;
  /** The demo QTSP's base URL: the certificate names its CRL distribution point and OCSP responder there. */
  readonly qtspUrl?: string;
  /** The distribution point's path at the QTSP; default the issuing CA's CRL. */
  readonly crlPath?: string;
  /** False: no OCSP responder (nor caIssuers) named, the CRL alone speaks (the root's CAs, the revoked CA's TPP). */
  readonly ocsp?: boolean;
}

/** Where the demo QTSP publishes the issuing CA's CRL and answers OCSP (src/qtsp/server.ts). */
export const QTSP_PATHS = {
  crl: "/crl/demo-issuing-ca.crl",
  /** The root's CRL (an ARL): the intermediates name it, it lists the revoked CA. */
  rootCrl: "/crl/demo-root-ca.crl",
  revokedCaCrl: "/crl/demo-revoked-ca.crl",
  ocsp: "/ocsp",
  caIssuers: "/ca/demo-issuing-ca.cer",
  /** The EBA-format register's file metadata, at the path the EBA answers it on. */
  ebaMetadata: "/register/api/filemetadata",
} as const;

async function issue(options: IssueOptions): Promise<IssuedCertificate> {
  const keys = await generateKeys();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(options.ca ?? false, options.ca ? 0 : undefined, true),
    new x509.KeyUsagesExtension(options.keyUsage, true),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
    await x509.AuthorityKeyIdentifierExtension.create(options.issuer.certificate),
  ];
  if (options.extendedKeyUsage) extensions.push(new x509.ExtendedKeyUsageExtension(options.extendedKeyUsage));
  if (options.dnsNames || options.ipAddresses) {
    extensions.push(
      new x509.SubjectAlternativeNameExtension([
        ...(options.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
        ...(options.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
      ]),
    );
  }
  if (options.qtspUrl) {
    extensions.push(
      new x509.CRLDistributionPointsExtension([`${options.qtspUrl}${options.crlPath ?? QTSP_PATHS.crl}`]),
    );
    if (options.ocsp !== false)
      extensions.push(
        new x509.AuthorityInfoAccessExtension({
          ocsp: [`${options.qtspUrl}${QTSP_PATHS.ocsp}`],
          caIssuers: [`${options.qtspUrl}${QTSP_PATHS.caIssuers}`],
        }),
      );
  }
  if (options.qc) {
    const value = encodeQcStatements({
      qcCompliance: true,
      qcType: [options.qc.qcType],
      psd2: { roles: options.qc.roles, ncaName: "Finanstilsynet", ncaId: "NO-FSA" },
    });
    extensions.push(new x509.Extension("1.3.6.1.5.5.7.1.3", false, value));
  }
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: nextSerial(),
    subject: options.subject,
    issuer: options.issuer.certificate.subjectName,
    notBefore: options.notBefore,
    notAfter: options.notAfter,
    signingAlgorithm: RSA,
    publicKey: keys.publicKey as never,
    signingKey: options.issuer.keys.privateKey as never,
    extensions,
  });
  return finish(options.label, certificate, keys);
}

function tppSubject(organizationId: string, name: string, commonName: string): x509.JsonName {
  return [{ C: ["NO"] }, { O: [name] }, { "2.5.4.97": [organizationId] }, { CN: [commonName] }];
}

const SEAL_USAGE = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation;

async function demoTpp(
  issuer: IssuedCertificate,
  organizationId: string,
  name: string,
  roles: Psd2Role[],
  now: number,
  qtspUrl: string | undefined,
): Promise<DemoTpp> {
  const validity = {
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 730 * DAY),
    ...(qtspUrl ? { qtspUrl } : {}),
  };
  const qseal = await issue({
    ...validity,
    label: `${name} QSealC`,
    subject: tppSubject(organizationId, name, `${name} QSealC`),
    issuer,
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles },
  });
  const qwac = await issue({
    ...validity,
    label: `${name} QWAC`,
    subject: tppSubject(organizationId, name, `${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.example`),
    issuer,
    keyUsage: x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
    extendedKeyUsage: ["1.3.6.1.5.5.7.3.2"],
    qc: { qcType: "web", roles },
  });
  return { organizationId, name, roles, qseal, qwac };
}

export interface DevPkiOptions {
  /**
   * The demo QTSP's base URL (`npm start` runs it on http://127.0.0.1:8099): the TPP certificates
   * name their CRL and OCSP responder there. Without it they carry no revocation URLs and only the
   * CRL file in trust/ speaks for them.
   */
  readonly qtspUrl?: string;
}

/** Generates the whole PKI into `dir` (created when missing). `now` lets tests shift time. */
export async function generateDevPki(
  dir: string,
  now: number = Date.now(),
  options: DevPkiOptions = {},
): Promise<DevPki> {
  const { qtspUrl } = options;
  const revocationUrls = qtspUrl ? { qtspUrl } : {};
  const root = await selfSignedCa("C=NO, O=psd2-gateway Demo QTSP, CN=Demo Root CA", now);
  // The intermediates name the root's CRL, so the whole path is checked, not only the leaf.
  const underRoot = qtspUrl ? { qtspUrl, crlPath: QTSP_PATHS.rootCrl, ocsp: false } : {};
  /** An issuing CA of the demo QTSP under its root (the revoked one is on the root's CRL). */
  const issuingCaNamed = (commonName: string) =>
    issue({
      ...underRoot,
      label: commonName,
      subject: [
        { C: ["NO"] },
        { O: ["psd2-gateway Demo QTSP"] },
        { "2.5.4.97": ["NTRNO-999999999"] },
        { CN: [commonName] },
      ],
      issuer: root,
      notBefore: new Date(now - DAY),
      notAfter: new Date(now + 3650 * DAY),
      ca: true,
      keyUsage: x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
    });
  const issuingCa = await issuingCaNamed("Demo Qualified Issuing CA");
  const gatewayTls = await issue({
    label: "gateway TLS",
    subject: [{ C: ["NO"] }, { O: ["psd2-gateway Demo Bank"] }, { CN: ["localhost"] }],
    issuer: issuingCa,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 365 * DAY),
    keyUsage: x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
    extendedKeyUsage: ["1.3.6.1.5.5.7.3.1"],
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1", "::1"],
  });
  const tppA = await demoTpp(
    issuingCa,
    "PSDNO-FSA-DEMO0001",
    "Demo Payments AS",
    ["PSP_AI", "PSP_PI"],
    now,
    qtspUrl,
  );
  const tppB = await demoTpp(issuingCa, "PSDNO-FSA-DEMO0002", "Demo Insight AS", ["PSP_AI"], now, qtspUrl);
  const expired = await issue({
    label: "expired QSealC",
    ...revocationUrls,
    subject: tppSubject("PSDNO-FSA-DEMO0001", "Demo Payments AS", "Demo Payments AS expired QSealC"),
    issuer: issuingCa,
    notBefore: new Date(now - 400 * DAY),
    notAfter: new Date(now - 30 * DAY),
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles: ["PSP_AI", "PSP_PI"] },
  });
  const revoked = await issue({
    label: "revoked QSealC",
    ...revocationUrls,
    subject: tppSubject("PSDNO-FSA-DEMO0001", "Demo Payments AS", "Demo Payments AS revoked QSealC"),
    issuer: issuingCa,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 365 * DAY),
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles: ["PSP_AI", "PSP_PI"] },
  });
  const unregistered = await issue({
    label: "unregistered QSealC",
    ...revocationUrls,
    subject: tppSubject("PSDNO-FSA-NOTREG01", "Unregistered AS", "Unregistered AS QSealC"),
    issuer: issuingCa,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 365 * DAY),
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles: ["PSP_AI", "PSP_PI"] },
  });
  const bankQseal = await issue({
    label: "demo bank QSealC",
    ...revocationUrls,
    subject: tppSubject("PSDNO-FSA-DEMOBANK", "psd2-gateway Demo Bank", "Demo Bank QSealC"),
    issuer: issuingCa,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 730 * DAY),
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles: ["PSP_AS"] },
  });
  const revokedCa = await issuingCaNamed("Demo Revoked Issuing CA");
  const underRevokedCa = await issue({
    label: "QSealC under the revoked CA",
    ...(qtspUrl ? { qtspUrl, crlPath: QTSP_PATHS.revokedCaCrl, ocsp: false } : {}),
    subject: tppSubject(tppA.organizationId, tppA.name, `${tppA.name} QSealC (revoked CA)`),
    issuer: revokedCa,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 365 * DAY),
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles: tppA.roles },
  });
  const rogueRoot = await selfSignedCa("C=XX, O=Rogue CA, CN=Rogue Root", now);
  const untrusted = await issue({
    label: "untrusted QSealC",
    subject: tppSubject("PSDNO-FSA-DEMO0001", "Demo Payments AS", "Rogue QSealC"),
    issuer: rogueRoot,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 365 * DAY),
    keyUsage: SEAL_USAGE,
    qc: { qcType: "eseal", roles: ["PSP_AI", "PSP_PI"] },
  });

  const crl = await x509.X509CrlGenerator.create({
    issuer: issuingCa.certificate.subjectName,
    thisUpdate: new Date(now - 3600 * 1000),
    nextUpdate: new Date(now + 7 * DAY),
    entries: [
      { serialNumber: revoked.certificate.serialNumber, revocationDate: new Date(now - 3600 * 1000) },
    ],
    signingKey: issuingCa.keys.privateKey as never,
    signingAlgorithm: RSA,
  });

  const rootCrl = await x509.X509CrlGenerator.create({
    issuer: root.certificate.subjectName,
    thisUpdate: new Date(now - 3600 * 1000),
    nextUpdate: new Date(now + 7 * DAY),
    entries: [
      { serialNumber: revokedCa.certificate.serialNumber, revocationDate: new Date(now - 3600 * 1000) },
    ],
    signingKey: root.keys.privateKey as never,
    signingAlgorithm: RSA,
  });
  const revokedCaCrl = await x509.X509CrlGenerator.create({
    issuer: revokedCa.certificate.subjectName,
    thisUpdate: new Date(now - 3600 * 1000),
    nextUpdate: new Date(now + 7 * DAY),
    entries: [],
    signingKey: revokedCa.keys.privateKey as never,
    signingAlgorithm: RSA,
  });
  const crlPem = (list: x509.X509Crl) =>
    `${list.toString("pem").replace(/(BEGIN|END) CRL/g, "$1 X509 CRL")}\n`;

  const trustDir = join(dir, "trust");
  const tppDir = join(dir, "tpp");
  mkdirSync(trustDir, { recursive: true });
  mkdirSync(tppDir, { recursive: true });
  const write = (file: string, text: string, secret = false) =>
    writeFileSync(file, text, { mode: secret ? 0o600 : 0o644 });

  write(join(trustDir, "demo-root-ca.pem"), root.pem);
  write(join(trustDir, "demo-issuing-ca.pem"), issuingCa.pem);
  const crlPath = join(trustDir, "demo-issuing-ca.crl.pem");
  write(crlPath, crlPem(crl));
  // The bank trusts the revoked CA too (a TPP sends its leaf only); the root's CRL says it is revoked.
  write(join(trustDir, "demo-revoked-ca.pem"), revokedCa.pem);
  write(join(trustDir, "demo-root-ca.crl.pem"), crlPem(rootCrl));
  write(join(trustDir, "demo-revoked-ca.crl.pem"), crlPem(revokedCaCrl));
  const gatewayCert = join(dir, "gateway.pem");
  const gatewayKey = join(dir, "gateway.key.pem");
  write(gatewayCert, gatewayTls.pem + issuingCa.pem);
  write(gatewayKey, gatewayTls.keyPem, true);
  write(join(dir, "root-ca.key.pem"), root.keyPem, true);
  write(join(dir, "issuing-ca.key.pem"), issuingCa.keyPem, true);
  for (const [slug, tpp] of [
    ["tpp-a", tppA],
    ["tpp-b", tppB],
  ] as const) {
    write(join(tppDir, `${slug}-qseal.pem`), tpp.qseal.pem);
    write(join(tppDir, `${slug}-qseal.key.pem`), tpp.qseal.keyPem, true);
    write(join(tppDir, `${slug}-qwac.pem`), tpp.qwac.pem + issuingCa.pem);
    write(join(tppDir, `${slug}-qwac.key.pem`), tpp.qwac.keyPem, true);
  }
  for (const [slug, c] of [
    ["expired", expired],
    ["revoked", revoked],
    ["unregistered", unregistered],
    ["untrusted", untrusted],
    ["revoked-ca", underRevokedCa],
  ] as const) {
    write(join(tppDir, `${slug}-qseal.pem`), c.pem);
    write(join(tppDir, `${slug}-qseal.key.pem`), c.keyPem, true);
  }
  const register = {
    updated: new Date(now).toISOString(),
    tpps: [
      {
        organizationIdentifier: tppA.organizationId,
        name: tppA.name,
        roles: tppA.roles,
        status: "authorised",
      },
      {
        organizationIdentifier: tppB.organizationId,
        name: tppB.name,
        roles: tppB.roles,
        status: "authorised",
      },
    ],
  };
  const registerPath = join(dir, "register.json");
  write(registerPath, `${JSON.stringify(register, null, 2)}\n`);
  // What the demo QTSP publishes: the CRL (DER, as distribution points serve it), the issuing CA,
  // and each certificate's status for its OCSP responder.
  const qtspDir = join(dir, "qtsp");
  mkdirSync(qtspDir, { recursive: true });
  writeFileSync(join(qtspDir, "demo-issuing-ca.crl"), Buffer.from(crl.rawData));
  writeFileSync(join(qtspDir, "demo-issuing-ca.cer"), issuingCa.der);
  writeFileSync(join(qtspDir, "demo-root-ca.crl"), Buffer.from(rootCrl.rawData));
  writeFileSync(join(qtspDir, "demo-revoked-ca.crl"), Buffer.from(revokedCaCrl.rawData));
  const issued = [tppA.qseal, tppA.qwac, tppB.qseal, tppB.qwac, expired, unregistered, bankQseal, gatewayTls];
  const status = {
    issuer: issuingCa.certificate.subject,
    certificates: {
      ...Object.fromEntries(
        issued.map((c) => [c.certificate.serialNumber.toUpperCase(), { status: "good" }]),
      ),
      [revoked.certificate.serialNumber.toUpperCase()]: {
        status: "revoked",
        revokedAt: new Date(now - 3600 * 1000).toISOString(),
      },
    },
  };
  // The register as the EBA publishes it (demo QTSP: /eba-register.zip), with an empty overrides
  // file in our own format in front of it (config/default.yaml reads both).
  writeFileSync(
    join(qtspDir, "eba-register.zip"),
    ebaRegisterZip(
      ebaRegisterDocument([
        { organizationId: tppA.organizationId, name: tppA.name, roles: tppA.roles },
        { organizationId: tppB.organizationId, name: tppB.name, roles: tppB.roles },
      ]),
    ),
  );
  write(join(dir, "register-overrides.json"), `${JSON.stringify({ tpps: [] }, null, 2)}\n`);
  // A LOTL and the national list it points to, signed by demo signers (demo QTSP: /lotl.xml).
  if (qtspUrl) await writeDevTrustedLists(qtspDir, { issuingCa }, `${qtspUrl}/tl-xx.xml`, now);
  // Last of qtsp/: its presence says the folder is complete (see ensureDevCertificates).
  write(join(qtspDir, "status.json"), `${JSON.stringify(status, null, 2)}\n`);
  // Written last: its presence says the whole PKI is there (see ensureDevCertificates).
  const bankDir = join(dir, "bank");
  mkdirSync(bankDir, { recursive: true });
  const bankQsealPath = join(bankDir, "bank-qseal.pem");
  const bankQsealKeyPath = join(bankDir, "bank-qseal.key.pem");
  write(bankQsealKeyPath, bankQseal.keyPem, true);
  write(bankQsealPath, bankQseal.pem);

  return {
    dir,
    root,
    issuingCa,
    gatewayTls,
    tppA,
    tppB,
    expired,
    revoked,
    unregistered,
    revokedCa,
    underRevokedCa,
    untrusted,
    bankQseal,
    paths: {
      trustDir,
      register: registerPath,
      crl: crlPath,
      gatewayCert,
      gatewayKey,
      bankQseal: bankQsealPath,
      bankQsealKey: bankQsealKeyPath,
      qtspDir,
    },
  };
}
