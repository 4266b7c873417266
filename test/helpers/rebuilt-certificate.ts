/**
 * Certificates rebuilt from a real one with a field changed, for the hostile-certificate tests.
 * With `signer`, the changed TBSCertificate is signed again (RSA PKCS#1 v1.5, SHA-256) with that
 * key — the dev PKI's issuing CA key makes a certificate the trust store accepts, so a change gets
 * past the chain check and reaches what comes after it (revocation, register, key policy).
 */

import { type KeyObject, sign } from "node:crypto";
import { encodeTlvTree, parseTlv, type Tlv } from "./der-mutation.js";

export interface CertificateParts {
  /** TBSCertificate: version [0], serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, [3] extensions. */
  readonly tbs: Tlv;
  /** The outer signatureAlgorithm. */
  readonly algorithm: Tlv;
}

/** Index of a TBSCertificate field in a v3 certificate's tree. */
export const TBS = {
  version: 0,
  serialNumber: 1,
  signature: 2,
  issuer: 3,
  validity: 4,
  subject: 5,
  subjectPublicKeyInfo: 6,
  extensions: 7,
} as const;

export function rebuild(
  der: Uint8Array,
  edit: (parts: CertificateParts) => void,
  signer?: KeyObject,
): Uint8Array {
  const root = parseTlv(der);
  const [tbs, algorithm, signature] = root.children!;
  edit({ tbs: tbs!, algorithm: algorithm! });
  if (!signer) return encodeTlvTree(root);
  const tbsDer = encodeTlvTree(tbs!);
  return encodeTlvTree({
    tag: 0x30,
    children: [{ tag: 0x30, raw: tbsDer }, algorithm!, resigned(signature!, tbsDer, signer)],
  });
}

function resigned(_old: Tlv, tbs: Uint8Array, signer: KeyObject): Tlv {
  return { tag: 0x03, content: Buffer.concat([Uint8Array.of(0), sign("sha256", tbs, signer)]) };
}

export const oidTlv = (hex: string): Tlv => ({
  tag: 0x06,
  content: Uint8Array.from(Buffer.from(hex, "hex")),
});

export const tlv = (hex: string): Tlv =>
  parseTlv(Uint8Array.from(Buffer.from(hex.replace(/\s+/g, ""), "hex")));

/** The certificate's extensions (inside [3]), to add to or change. */
export function extensionsOf(tbs: Tlv): Tlv[] {
  return tbs.children![TBS.extensions]!.children![0]!.children!;
}

export function base64(der: Uint8Array): string {
  return Buffer.from(der).toString("base64");
}
