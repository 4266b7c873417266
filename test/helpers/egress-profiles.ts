/**
 * What the egress tests (the gateway and `sign --profile`) share: the dev TPP's files, a PKCS#12
 * bundle of its QSealC made by the openssl binary, and bank profiles pointing at an ingress
 * gateway (mutual TLS with the TPP's QWAC, responses verified against the dev trust folder).
 */

import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";

/** The dev TPP A's QSealC and QWAC files, and the root CA of the ingress gateway's TLS certificate. */
export function tppFiles(pki: DevPki) {
  const tpp = join(pki.dir, "tpp");
  return {
    qseal: { cert: join(tpp, "tpp-a-qseal.pem"), key: join(tpp, "tpp-a-qseal.key.pem") },
    qwac: { cert: join(tpp, "tpp-a-qwac.pem"), key: join(tpp, "tpp-a-qwac.key.pem") },
    ca: join(pki.paths.trustDir, "demo-root-ca.pem"),
  };
}

/** `openssl pkcs12 -export` of TPP A's QSealC into `file`; an empty password makes an unprotected-key bundle. */
export function qsealPkcs12(pki: DevPki, file: string, password: string): string {
  const { qseal } = tppFiles(pki);
  execFileSync("openssl", [
    "pkcs12",
    "-export",
    "-in",
    qseal.cert,
    "-inkey",
    qseal.key,
    "-out",
    file,
    "-passout",
    `pass:${password}`,
  ]);
  return file;
}

/** Response verification as the shipped demo profile has it: enforce, against the dev trust folder. */
export function enforcedResponses(pki: DevPki) {
  return { mode: "enforce", caDir: pki.paths.trustDir };
}

/** The bank-profile keys that reach an ingress gateway at `url` as TPP A (signing rules left to each test). */
export function toIngress(pki: DevPki, url: string) {
  const { qseal, qwac, ca } = tppFiles(pki);
  return {
    url,
    ca,
    qwac,
    qseal,
    defaultHeaders: { "TPP-Redirect-URI": "https://tpp.example/cb" },
    responses: enforcedResponses(pki),
  };
}

/** Java-style signing rules: lower-hex serial, ", " and %20 in the keyId, SHA256withRSA, sha-256=. */
export const JAVA_STYLE_SIGNING = {
  headers: ["date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"],
  algorithmToken: "SHA256withRSA",
  keyId: { serial: "lower-hex", issuerSeparator: ", ", spaces: "percent-20" },
  digest: { token: "lower" },
};

/** Signs Host and Content-Length too, as draft-cavage's examples do (the HTTP client writes both). */
export const HOST_SIGNING = {
  headers: [
    "(request-target)",
    "host",
    "date",
    "digest",
    "content-length",
    "x-request-id",
    "psu-id",
    "tpp-redirect-uri",
  ],
};
