/**
 * The X.509 v3 extensions a gateway needs from a certificate (RFC 5280 4.2): key usage and basic
 * constraints to judge what the key may do, the key identifiers to build chains. Throws DerError.
 */

import {
  children,
  content,
  DerError,
  type DerNode,
  expectTag,
  readBitString,
  readBoolean,
  readNode,
  readOid,
  readSmallInteger,
  TAG,
} from "../asn1/der.js";

export const EXTENSION_OID = {
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
} as const;

export interface Extension {
  readonly oid: string;
  readonly critical: boolean;
  /** The contents of extnValue: the DER of the extension's own type. */
  readonly value: Uint8Array;
}

/**
 * Reads `Extensions ::= SEQUENCE OF Extension`. An extension twice is refused, as RFC 5280 4.2
 * requires and OpenSSL's verifier does: two readers could otherwise disagree on which one counts.
 */
export function readExtensions(sequence: DerNode | undefined): Extension[] {
  if (!sequence) return [];
  const out: Extension[] = [];
  const seen = new Set<string>();
  for (const node of children(sequence)) {
    const parts = children(expectTag(node, TAG.SEQUENCE, "Extension"));
    const [idNode, second, third] = parts;
    if (!idNode || !second) {
      throw new DerError(`Extension at byte ${node.headerStart} lacks extnID or extnValue`);
    }
    const oid = readOid(idNode);
    const hasCritical = second.tag === TAG.BOOLEAN;
    const valueNode = hasCritical ? third : second;
    if (!valueNode || parts.length !== (hasCritical ? 3 : 2)) {
      throw new DerError(`extension ${oid} has ${parts.length} parts, not extnID, [critical,] extnValue`);
    }
    const value = content(expectTag(valueNode, TAG.OCTET_STRING, `extension ${oid} extnValue`));
    if (seen.has(oid)) throw new DerError(`extension ${oid} appears more than once`);
    seen.add(oid);
    out.push({ oid, critical: hasCritical ? readBoolean(second) : false, value });
  }
  return out;
}

/** Reads an extension value that must be exactly one TLV. */
export function readExtensionValue(ext: Extension): DerNode {
  const node = readNode(ext.value);
  if (node.end !== ext.value.length) throw new DerError(`extension ${ext.oid} has bytes after its value`);
  return node;
}

export const KEY_USAGE_NAMES = [
  "digitalSignature",
  "nonRepudiation",
  "keyEncipherment",
  "dataEncipherment",
  "keyAgreement",
  "keyCertSign",
  "cRLSign",
  "encipherOnly",
  "decipherOnly",
] as const;

/** RFC 5280 names; bit 1 is `nonRepudiation` (renamed contentCommitment, still printed so by OpenSSL). */
export type KeyUsage = (typeof KEY_USAGE_NAMES)[number];

export function readKeyUsage(ext: Extension): KeyUsage[] {
  const { bytes, unusedBits } = readBitString(readExtensionValue(ext));
  const bitCount = bytes.length * 8 - unusedBits;
  return KEY_USAGE_NAMES.filter((_, bit) => bit < bitCount && (bytes[bit >> 3]! & (0x80 >> (bit & 7))) !== 0);
}

export interface BasicConstraints {
  readonly ca: boolean;
  /** undefined when no pathLenConstraint is set (no limit). */
  readonly pathLen: number | undefined;
}

export function readBasicConstraints(ext: Extension): BasicConstraints {
  const seq = expectTag(readExtensionValue(ext), TAG.SEQUENCE, "BasicConstraints");
  let ca = false;
  let pathLen: number | undefined;
  for (const node of children(seq)) {
    if (node.tag === TAG.BOOLEAN) ca = readBoolean(node);
    else if (node.tag === TAG.INTEGER) pathLen = readSmallInteger(node, "pathLenConstraint");
    else throw new DerError("BasicConstraints holds an unexpected element");
  }
  return { ca, pathLen };
}

/** The keyIdentifier as lower-case hex. */
export function readSubjectKeyIdentifier(ext: Extension): string {
  const node = expectTag(readExtensionValue(ext), TAG.OCTET_STRING, "SubjectKeyIdentifier");
  return Buffer.from(content(node)).toString("hex");
}

/** The `[0] keyIdentifier` of AuthorityKeyIdentifier as lower-case hex, or undefined when only issuer/serial are given. */
export function readAuthorityKeyIdentifier(ext: Extension): string | undefined {
  const seq = expectTag(readExtensionValue(ext), TAG.SEQUENCE, "AuthorityKeyIdentifier");
  const keyId = children(seq).find((n) => n.tag === 0x80);
  return keyId ? Buffer.from(content(keyId)).toString("hex") : undefined;
}

/**
 * Extensions a certificate may mark critical: those OpenSSL's verifier handles, plus the key
 * identifiers and qcStatements, which this gateway reads itself.
 */
const UNDERSTOOD_WHEN_CRITICAL: ReadonlySet<string> = new Set([
  EXTENSION_OID.keyUsage,
  EXTENSION_OID.basicConstraints,
  EXTENSION_OID.subjectKeyIdentifier,
  EXTENSION_OID.authorityKeyIdentifier,
  "2.5.29.17", // subjectAltName
  "2.5.29.31", // cRLDistributionPoints
  "2.5.29.32", // certificatePolicies
  "2.5.29.30", // nameConstraints
  "2.5.29.33", // policyMappings
  "2.5.29.36", // policyConstraints
  "2.5.29.37", // extKeyUsage
  "2.5.29.54", // inhibitAnyPolicy
  "1.3.6.1.5.5.7.1.3", // qcStatements
  "1.3.6.1.5.5.7.1.7", // RFC 3779 IP address blocks
  "1.3.6.1.5.5.7.1.8", // RFC 3779 AS identifiers
  "1.3.6.1.5.5.7.1.14", // proxyCertInfo
  "1.3.6.1.5.5.7.48.1.5", // OCSP noCheck
  "2.16.840.1.113730.1.1", // Netscape certificate type
]);

/** The first critical extension the gateway does not understand (RFC 5280 4.2: the certificate must then be refused). */
export function unknownCriticalExtension(extensions: readonly Extension[]): string | undefined {
  return extensions.find((e) => e.critical && !UNDERSTOOD_WHEN_CRITICAL.has(e.oid))?.oid;
}
