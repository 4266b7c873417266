/**
 * A development PKI whose certificates name a real QTSP on loopback (CRL distribution points and
 * OCSP responder; the intermediates name the root's CRL), and that QTSP, restartable on the same port with other behaviour: a test can
 * take the responder down, sign with the wrong key or serve an expired CRL.
 */

import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import type { CertificateStatus } from "@psd2-gateway/dev-pki";
import {
  type DevPki,
  generateDevPki,
  QTSP_PATHS,
  type QtspServer,
  type QtspServerOptions,
  startQtspServer,
} from "@psd2-gateway/dev-pki";
import { freeLoopbackPort } from "./free-port.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export interface QtspPki {
  readonly pki: DevPki;
  readonly port: number;
  readonly url: string;
}

export async function qtspPki(): Promise<QtspPki> {
  const port = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}`;
  const pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-qtsp-pki-")), Date.now(), {
    qtspUrl: url,
  });
  return { pki, port, url };
}

/** A CRL of the demo issuing CA (or of `issuer`), DER; `signer` signs it in the issuer's name. */
export async function issuingCaCrl(
  pki: DevPki,
  options: {
    revoked?: readonly x509.X509Certificate[];
    thisUpdate?: Date;
    nextUpdate?: Date;
    signer?: DevPki["root"];
    issuer?: DevPki["root"];
  },
): Promise<Uint8Array> {
  const now = Date.now();
  const crl = await x509.X509CrlGenerator.create({
    issuer: (options.issuer ?? pki.issuingCa).certificate.subjectName,
    thisUpdate: options.thisUpdate ?? new Date(now - 1000),
    nextUpdate: options.nextUpdate ?? new Date(now + 24 * 3600 * 1000),
    entries: (options.revoked ?? []).map((c) => ({
      serialNumber: c.serialNumber,
      revocationDate: new Date(now - 1000),
    })),
    signingKey: (options.signer ?? options.issuer ?? pki.issuingCa).keys.privateKey as never,
    signingAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  });
  return new Uint8Array(crl.rawData);
}

export interface TestQtspOptions {
  /** Per upper-case serial; the default answers "good" for every serial. */
  readonly status?: (serialHex: string) => CertificateStatus;
  /** The CRL served at the distribution point (DER); absent: 404. */
  readonly crl?: () => Uint8Array;
  /** The root's CRL, which the intermediates name; default: one listing the dev PKI's revoked CA. */
  readonly rootCrl?: () => Uint8Array;
  readonly responder?: QtspServerOptions["responder"];
  readonly ocspValidityMs?: number;
}

export async function startTestQtsp(q: QtspPki, options: TestQtspOptions = {}): Promise<QtspServer> {
  const documents = new Map<string, { body: () => Uint8Array; contentType: string }>();
  if (options.crl) documents.set(QTSP_PATHS.crl, { body: options.crl, contentType: "application/pkix-crl" });
  const rootCrl = await issuingCaCrl(q.pki, { issuer: q.pki.root, revoked: [q.pki.revokedCa.certificate] });
  const revokedCaCrl = await issuingCaCrl(q.pki, { issuer: q.pki.revokedCa });
  documents.set(QTSP_PATHS.rootCrl, {
    body: options.rootCrl ?? (() => rootCrl),
    contentType: "application/pkix-crl",
  });
  documents.set(QTSP_PATHS.revokedCaCrl, { body: () => revokedCaCrl, contentType: "application/pkix-crl" });
  return startQtspServer({
    port: q.port,
    ca: {
      certificatePem: q.pki.issuingCa.pem,
      privateKeyPem: readFileSync(join(q.pki.dir, "issuing-ca.key.pem"), "utf8"),
    },
    ...(options.responder ? { responder: options.responder } : {}),
    status: options.status ?? (() => ({ status: "good" })),
    documents,
    ...(options.ocspValidityMs !== undefined ? { ocspValidityMs: options.ocspValidityMs } : {}),
  });
}
