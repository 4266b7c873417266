/**
 * Issuing CAs whose names need escaping in RFC 2253 (a comma in O, a `+` and a multi-valued RDN,
 * quotes, `;` `<` `>`, non-ASCII letters, a trailing line feed), and TPP certificates they issue:
 * made at test time with @peculiar/x509, so a keyId `SN=…,CA=<issuer>` holds the escapes signers
 * copy into the quotes (`O=Bank\, Köln`, `\+`, `\"`, `\0A`).
 */

import "reflect-metadata";
import { createPrivateKey, type KeyObject, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { encodeQcStatements, type Psd2Role } from "../../src/eidas/index.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const RSA = {
  name: "RSASSA-PKCS1-v1_5",
  hash: "SHA-256",
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};
const DAY = 24 * 3600 * 1000;

export interface EscapedIssuer {
  readonly what: string;
  /** The issuer's name in DER order, values as they are (no escaping; see `asn1Name`). */
  readonly name: x509.JsonName;
  /** Its RFC 2253 form, as `openssl x509 -issuer -nameopt RFC2253` writes it and signers copy it. */
  readonly rfc2253: string;
  /** Beyond Latin-1: cannot be sent as one byte per character, only as UTF-8 or RFC 2047. */
  readonly beyondLatin1?: boolean;
}

export const ESCAPED_ISSUERS: readonly EscapedIssuer[] = [
  {
    what: "a comma in O, and Köln",
    name: [{ C: ["DE"] }, { O: ["Bank, Köln"] }, { CN: ["Bank Köln Qualified CA"] }],
    rfc2253: "CN=Bank Köln Qualified CA,O=Bank\\, Köln,C=DE",
  },
  {
    what: "a + in O and a multi-valued RDN (CN+OU)",
    name: [{ C: ["NO"] }, { O: ["A+B Bank"] }, { CN: ["CA 1"], OU: ["PSD2"] }],
    rfc2253: "CN=CA 1+OU=PSD2,O=A\\+B Bank,C=NO",
  },
  {
    what: 'quotes in O, one of them leading ("Nord" Bank)',
    name: [{ C: ["NO"] }, { O: ['"Nord" Bank "AS"'] }, { CN: ["Nord CA"] }],
    rfc2253: 'CN=Nord CA,O=\\"Nord\\" Bank \\"AS\\",C=NO',
  },
  {
    what: "Ærø with ; < > in the name",
    name: [{ C: ["DK"] }, { O: ["Ærø Sparekasse; Marstal"] }, { CN: ["Ærø CA <QTSP>"] }],
    rfc2253: "CN=Ærø CA \\<QTSP\\>,O=Ærø Sparekasse\\; Marstal,C=DK",
  },
  {
    what: "a trailing line feed in O (written \\0A)",
    name: [{ C: ["NO"] }, { O: ["Trust Services\n"] }, { CN: ["QTSP CA"] }],
    rfc2253: "CN=QTSP CA,O=Trust Services\\0A,C=NO",
  },
  {
    what: "Łódź (beyond Latin-1) and a leading #",
    name: [{ C: ["PL"] }, { O: ["#1 Zaufanie S.A."] }, { CN: ["Łódź QTSP"] }],
    rfc2253: "CN=Łódź QTSP,O=\\#1 Zaufanie S.A.,C=PL",
    beyondLatin1: true,
  },
];

export interface Keys {
  readonly publicKey: webcrypto.CryptoKey;
  readonly privateKey: webcrypto.CryptoKey;
}

export interface Issued {
  readonly certificate: x509.X509Certificate;
  readonly keys: Keys;
  readonly der: Uint8Array;
  readonly pem: string;
  readonly privateKey: KeyObject;
  /** PKCS#1 PEM, the form http-signature (sshpk) reads. */
  readonly privateKeyPem: string;
  /** base64 DER, as it goes into TPP-Signature-Certificate. */
  readonly headerValue: string;
}

export async function generateKeys(): Promise<Keys> {
  return (await webcrypto.subtle.generateKey(RSA, true, ["sign", "verify"])) as Keys;
}

async function finish(certificate: x509.X509Certificate, keys: Keys): Promise<Issued> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const privateKey = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
  const der = new Uint8Array(certificate.rawData);
  return {
    certificate,
    keys,
    der,
    pem: `${certificate.toString("pem")}\n`,
    privateKey,
    privateKeyPem: privateKey.export({ format: "pem", type: "pkcs1" }).toString(),
    headerValue: Buffer.from(der).toString("base64"),
  };
}

let serialCounter = 0;
function nextSerial(): string {
  serialCounter += 1;
  return `5e${Date.now().toString(16)}${serialCounter.toString(16).padStart(4, "0")}`;
}

/**
 * The name with every value given as an explicit string type: @peculiar/x509 reads a plain value
 * starting with `#` as hex and keeps only what is between the first pair of quotes.
 */
function asn1Name(name: x509.JsonName): x509.JsonNameParams {
  return name.map((rdn) =>
    Object.fromEntries(
      Object.entries(rdn).map(([type, values]) => [
        type,
        values.map((value) => (type === "C" ? { printableString: value } : { utf8String: value })),
      ]),
    ),
  );
}

/** An issuing CA named `name`, signed by `parent` (self-signed without one); `keys` may be shared to save time. */
export async function issuingCa(
  name: x509.JsonName,
  options: { parent?: { certificate: x509.X509Certificate; keys: Keys }; keys?: Keys } = {},
): Promise<Issued> {
  const keys = options.keys ?? (await generateKeys());
  const now = Date.now();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(true, 0, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
  ];
  if (options.parent)
    extensions.push(await x509.AuthorityKeyIdentifierExtension.create(options.parent.certificate));
  const subject = new x509.Name(asn1Name(name));
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: nextSerial(),
    subject,
    issuer: options.parent ? options.parent.certificate.subjectName : subject,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 3650 * DAY),
    signingAlgorithm: RSA,
    publicKey: keys.publicKey as never,
    signingKey: (options.parent?.keys ?? keys).privateKey as never,
    extensions,
  });
  return finish(certificate, keys);
}

/** A TPP's QSealC issued by `ca`: organizationIdentifier, PSD2 roles in QCStatements. */
export async function tppQseal(
  ca: Issued,
  tpp: { organizationId: string; name: string; roles: readonly Psd2Role[]; keys?: Keys },
): Promise<Issued> {
  const keys = tpp.keys ?? (await generateKeys());
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: nextSerial(),
    subject: [
      { C: ["NO"] },
      { O: [tpp.name] },
      { "2.5.4.97": [tpp.organizationId] },
      { CN: [`${tpp.name} QSealC`] },
    ],
    issuer: ca.certificate.subjectName,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 365 * DAY),
    signingAlgorithm: RSA,
    publicKey: keys.publicKey as never,
    signingKey: ca.keys.privateKey as never,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
      await x509.AuthorityKeyIdentifierExtension.create(ca.certificate),
      new x509.Extension(
        "1.3.6.1.5.5.7.1.3",
        false,
        encodeQcStatements({
          qcCompliance: true,
          qcType: ["eseal"],
          psd2: { roles: tpp.roles, ncaName: "Finanstilsynet", ncaId: "NO-FSA" },
        }),
      ),
    ],
  });
  return finish(certificate, keys);
}

/**
 * The keyId as a foreign signer puts it on the wire: one byte per character (Node writes a string
 * of chars ≤ U+00FF that way), or the UTF-8 bytes of each character.
 */
export function onTheWire(keyId: string, as: "latin1" | "utf-8"): string {
  return as === "latin1" ? keyId : Buffer.from(keyId, "utf8").toString("latin1");
}

/**
 * An empty CRL of `ca`, PEM: the gateway refuses a certificate whose revocation status nobody
 * can prove, so a CA in a trust folder publishes one.
 */
export async function emptyCrlPem(ca: Issued): Promise<string> {
  const now = Date.now();
  const crl = await x509.X509CrlGenerator.create({
    issuer: ca.certificate.subjectName,
    thisUpdate: new Date(now - 60_000),
    nextUpdate: new Date(now + DAY),
    entries: [],
    signingKey: ca.keys.privateKey as never,
    signingAlgorithm: RSA,
  });
  return `${crl.toString("pem").replace(/(BEGIN|END) CRL/g, "$1 X509 CRL")}\n`;
}
