/**
 * Never-seen certificates for the benches: copies of TPP A's QSealC from a dev PKI folder (its
 * subject, validity and extensions — QCStatements, and CDP/AIA when the PKI names a QTSP — on its
 * key), each with a serial of its own, issued by the PKI's issuing CA. One key for all: issuing is
 * then a signature, not a key generation.
 */

import "reflect-metadata";
import { createPrivateKey, createPublicKey, randomBytes, webcrypto } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";

export async function freshCertificates(
  pkiDir: string,
  count: number,
  /** Two hex digits that start every serial, so the benches' certificates never collide. */
  serialPrefix: string,
): Promise<x509.X509Certificate[]> {
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const alg = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  const read = (...path: string[]) => readFileSync(join(pkiDir, ...path), "utf8");
  const issuerCert = new x509.X509Certificate(read("trust", "demo-issuing-ca.pem"));
  const issuerKey = await webcrypto.subtle.importKey(
    "pkcs8",
    createPrivateKey(read("issuing-ca.key.pem")).export({ format: "der", type: "pkcs8" }),
    alg,
    false,
    ["sign"],
  );
  const subjectPublic = await webcrypto.subtle.importKey(
    "spki",
    createPublicKey(read("tpp", "tpp-a-qseal.key.pem")).export({ format: "der", type: "spki" }),
    alg,
    true,
    ["verify"],
  );
  const template = new x509.X509Certificate(read("tpp", "tpp-a-qseal.pem"));
  const out: x509.X509Certificate[] = [];
  for (let i = 0; i < count; i++) {
    out.push(
      await x509.X509CertificateGenerator.create({
        serialNumber: `${serialPrefix}${randomBytes(10).toString("hex")}`,
        subject: template.subjectName,
        issuer: issuerCert.subjectName,
        notBefore: template.notBefore,
        notAfter: template.notAfter,
        signingAlgorithm: alg,
        publicKey: subjectPublic as never,
        signingKey: issuerKey as never,
        // The key identifiers would name TPP A's own issuance; the rest is the same.
        extensions: template.extensions.filter((e) => e.type !== "2.5.29.35" && e.type !== "2.5.29.14"),
      }),
    );
  }
  return out;
}
