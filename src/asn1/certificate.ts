/**
 * The fixed fields of an X.509 certificate's TBSCertificate, located without a schema so that
 * callers can read what they need (serial, names, extensions) at the cost of one walk.
 */

import { children, content, DerError, type DerNode, expectTag, readNode, TAG } from "./der.js";

export interface CertificateFields {
  readonly tbs: DerNode;
  readonly version: number;
  /** The INTEGER content bytes as encoded (a leading 00 sign byte included when present). */
  readonly serial: Uint8Array;
  readonly signatureAlgorithm: DerNode;
  readonly issuer: DerNode;
  readonly validity: DerNode;
  readonly subject: DerNode;
  readonly subjectPublicKeyInfo: DerNode;
  /** The SEQUENCE OF Extension inside `[3]`, when present. */
  readonly extensions: DerNode | undefined;
}

export function readCertificateFields(der: Uint8Array): CertificateFields {
  const cert = expectTag(readNode(der), TAG.SEQUENCE, "Certificate");
  if (cert.end !== der.length) throw new DerError(`${der.length - cert.end} bytes follow the certificate`);
  const [tbs] = children(cert);
  if (!tbs) throw new DerError("Certificate has no TBSCertificate");
  const fields = children(expectTag(tbs, TAG.SEQUENCE, "TBSCertificate"));
  let i = 0;
  let version = 1;
  if (fields[0]?.tag === 0xa0) {
    const [v] = children(fields[0]);
    if (!v) throw new DerError("empty version field");
    const bytes = content(expectTag(v, TAG.INTEGER, "version"));
    version = (bytes[bytes.length - 1] ?? 0) + 1;
    i = 1;
  }
  const take = (tag: number, what: string): DerNode => {
    const node = fields[i++];
    if (!node) throw new DerError(`TBSCertificate ends before ${what}`);
    return expectTag(node, tag, what);
  };
  const serialNode = take(TAG.INTEGER, "serialNumber");
  const signatureAlgorithm = take(TAG.SEQUENCE, "signature");
  const issuer = take(TAG.SEQUENCE, "issuer");
  const validity = take(TAG.SEQUENCE, "validity");
  const subject = take(TAG.SEQUENCE, "subject");
  const subjectPublicKeyInfo = take(TAG.SEQUENCE, "subjectPublicKeyInfo");
  let extensions: DerNode | undefined;
  for (; i < fields.length; i++) {
    const node = fields[i]!;
    if (node.tag === 0xa3) {
      const [seq] = children(node);
      if (seq) extensions = expectTag(seq, TAG.SEQUENCE, "extensions");
    }
  }
  const serial = content(serialNode);
  if (serial.length === 0) throw new DerError("empty serialNumber");
  return {
    tbs,
    version,
    serial,
    signatureAlgorithm,
    issuer,
    validity,
    subject,
    subjectPublicKeyInfo,
    extensions,
  };
}

/** The serial as a signed integer, as X.690 encodes it (negative serials exist in the wild). */
export function serialToBigInt(serial: Uint8Array): bigint {
  let value = BigInt(`0x${Buffer.from(serial).toString("hex") || "0"}`);
  if (serial.length > 0 && (serial[0]! & 0x80) !== 0) value -= 1n << BigInt(serial.length * 8);
  return value;
}

/** Upper-case hex of the serial the way OpenSSL prints it: no sign byte, a leading `-` when negative. */
export function serialToHex(serial: Uint8Array): string {
  const value = serialToBigInt(serial);
  const magnitude = value < 0n ? -value : value;
  let hex = magnitude.toString(16).toUpperCase();
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return value < 0n ? `-${hex}` : hex;
}
