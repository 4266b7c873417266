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

/**
 * Locates the TBSCertificate fields. Strict where a lenient reader would see a different
 * certificate than OpenSSL does: the version must be v1, v2 or v3 (read as the whole INTEGER),
 * only issuerUniqueID, subjectUniqueID and extensions may follow the public key, in that order and
 * once each, and extensions need v3 (RFC 5280 4.1).
 */
export function readCertificateFields(der: Uint8Array): CertificateFields {
  const cert = expectTag(readNode(der), TAG.SEQUENCE, "Certificate");
  if (cert.end !== der.length) throw new DerError(`${der.length - cert.end} bytes follow the certificate`);
  const [tbs] = children(cert);
  if (!tbs) throw new DerError("Certificate has no TBSCertificate");
  const fields = children(expectTag(tbs, TAG.SEQUENCE, "TBSCertificate"));
  let i = 0;
  let version = 1;
  if (fields[0]?.tag === 0xa0) {
    const [v, extra] = children(fields[0]);
    if (!v || extra) throw new DerError("the version field must hold one INTEGER");
    const bytes = content(expectTag(v, TAG.INTEGER, "version"));
    // v1 = 0, v2 = 1, v3 = 2; one octet, as anything longer or negative is no version at all.
    if (bytes.length !== 1 || bytes[0]! > 2) {
      throw new DerError(`version ${hexOf(bytes)} is not v1, v2 or v3 (0, 1 or 2)`);
    }
    version = bytes[0]! + 1;
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
  // [1] issuerUniqueID, [2] subjectUniqueID (primitive, or constructed as some BER writers did), [3] extensions.
  let lastOptional = 0;
  for (; i < fields.length; i++) {
    const node = fields[i]!;
    const number = node.tag & 0x1f;
    const isOptionalField = (node.tag & 0xc0) === 0x80 && number >= 1 && number <= 3;
    if (!isOptionalField || number <= lastOptional || (number === 3 && node.tag !== 0xa3)) {
      throw new DerError(
        `TBSCertificate holds an unexpected element (tag 0x${node.tag.toString(16).padStart(2, "0")}) at byte ${node.headerStart}; after the public key only [1], [2] and [3] may follow, once each and in order`,
      );
    }
    lastOptional = number;
    if (number === 3) {
      const [seq, extra] = children(node);
      if (!seq || extra) throw new DerError("the extensions field must hold one SEQUENCE");
      extensions = expectTag(seq, TAG.SEQUENCE, "extensions");
      if (version !== 3) throw new DerError(`a v${version} certificate carries extensions; they need v3`);
    } else if (version === 1) {
      throw new DerError("a v1 certificate carries a unique identifier; it needs v2 or v3");
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

function hexOf(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.subarray(0, 8)).toString("hex");
  return bytes.length > 8 ? `0x${hex}… (${bytes.length} bytes)` : `0x${hex || "(empty)"}`;
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
