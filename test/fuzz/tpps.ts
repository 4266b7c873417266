/**
 * The identities the fuzz run signs with: the dev PKI's TPP A (PSP_AI + PSP_PI) and TPP B (AIS
 * only), the expired, revoked, unregistered and untrusted certificates, and an EC P-256 QSealC for
 * TPP A's organisation issued by the demo issuing CA (for ECDSA signatures and their re-encodings).
 */

import "reflect-metadata";
import { createPrivateKey, type KeyObject, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import type { DevPki, IssuedCertificate } from "@psd2-gateway/dev-pki";
import { encodeQcStatements } from "../../src/eidas/index.js";
import { RequestSigner } from "../../src/signature/index.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export type TppName = "A" | "B" | "EC" | "expired" | "revoked" | "unregistered" | "untrusted";

export interface FuzzTpp {
  readonly name: TppName;
  readonly der: Uint8Array;
  readonly headerValue: string;
  readonly privateKey: KeyObject;
  readonly signer: RequestSigner;
  /** What the backend must be told about a request this TPP signed, when it is forwarded. */
  readonly organizationId: string;
  readonly roles: readonly string[];
  /** Requests it signs may be forwarded (a trusted, registered, valid certificate). */
  readonly good: boolean;
}

function fromIssued(
  name: TppName,
  cert: IssuedCertificate,
  organizationId: string,
  roles: readonly string[],
  good: boolean,
): FuzzTpp {
  return {
    name,
    der: cert.der,
    headerValue: cert.headerValue,
    privateKey: cert.privateKey,
    signer: new RequestSigner({ privateKey: cert.privateKey, certificate: cert.der }),
    organizationId,
    roles,
    good,
  };
}

async function ecQseal(pki: DevPki): Promise<{ der: Uint8Array; privateKey: KeyObject }> {
  const algorithm = { name: "ECDSA", namedCurve: "P-256" };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ["sign", "verify"])) as {
    publicKey: webcrypto.CryptoKey;
    privateKey: webcrypto.CryptoKey;
  };
  const now = Date.now();
  const day = 24 * 3600 * 1000;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: `6e${now.toString(16)}0ec1`,
    subject: [
      { C: ["NO"] },
      { O: [pki.tppA.name] },
      { "2.5.4.97": [pki.tppA.organizationId] },
      { CN: [`${pki.tppA.name} EC QSealC`] },
    ],
    issuer: pki.issuingCa.certificate.subjectName,
    notBefore: new Date(now - day),
    notAfter: new Date(now + 365 * day),
    signingAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    publicKey: keys.publicKey as never,
    signingKey: pki.issuingCa.keys.privateKey as never,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
      await x509.AuthorityKeyIdentifierExtension.create(pki.issuingCa.certificate),
      new x509.Extension(
        "1.3.6.1.5.5.7.1.3",
        false,
        encodeQcStatements({
          qcCompliance: true,
          qcType: ["eseal"],
          psd2: { roles: ["PSP_AI", "PSP_PI"], ncaName: "Finanstilsynet", ncaId: "NO-FSA" },
        }),
      ),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  return {
    der: new Uint8Array(certificate.rawData),
    privateKey: createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }),
  };
}

export type TppSet = Readonly<Record<TppName, FuzzTpp>>;

export async function makeTpps(pki: DevPki): Promise<TppSet> {
  const a = pki.tppA;
  const ec = await ecQseal(pki);
  return {
    A: fromIssued("A", a.qseal, a.organizationId, a.roles, true),
    B: fromIssued("B", pki.tppB.qseal, pki.tppB.organizationId, pki.tppB.roles, true),
    EC: {
      name: "EC",
      der: ec.der,
      headerValue: Buffer.from(ec.der).toString("base64"),
      privateKey: ec.privateKey,
      signer: new RequestSigner({ privateKey: ec.privateKey, certificate: ec.der }),
      organizationId: a.organizationId,
      roles: a.roles,
      good: true,
    },
    expired: fromIssued("expired", pki.expired, a.organizationId, [], false),
    revoked: fromIssued("revoked", pki.revoked, a.organizationId, [], false),
    unregistered: fromIssued("unregistered", pki.unregistered, "PSDNO-FSA-NOTREG01", [], false),
    untrusted: fromIssued("untrusted", pki.untrusted, a.organizationId, [], false),
  };
}
