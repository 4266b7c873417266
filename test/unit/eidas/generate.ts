/**
 * Certificates made at test time (never committed) for the cases the interop corpus lacks:
 * @peculiar/x509 builds and signs them; `resign` rewrites fields it cannot express (a negative
 * serial) with the DER writer and signs the result again with Node's crypto.
 */

import "reflect-metadata";
import { generateKeyPairSync, type KeyObject, sign, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { readCertificateFields } from "../../../src/asn1/certificate.js";
import { children, readNode, TAG, whole } from "../../../src/asn1/der.js";
import { encodeBitString, encodeSequence, encodeTlv } from "../../../src/asn1/writer.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export type KeyKind = "rsa" | "ec";

interface KeyPair {
  readonly publicKey: KeyObject;
  readonly privateKey: KeyObject;
}

// One key pair of each kind for the whole run: RSA generation is the slow part.
const keyPairs: Partial<Record<KeyKind, KeyPair>> = {};

export function keyPair(kind: KeyKind): KeyPair {
  keyPairs[kind] ??=
    kind === "rsa"
      ? generateKeyPairSync("rsa", { modulusLength: 2048 })
      : generateKeyPairSync("ec", { namedCurve: "P-256" });
  return keyPairs[kind];
}

const ALGORITHMS = {
  rsa: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  ec: { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" },
} as const;

export interface ExtensionSpec {
  readonly oid: string;
  readonly critical?: boolean;
  /** extnValue contents. */
  readonly value: Uint8Array;
}

/** @peculiar/x509's JSON name: one object per RDN, several keys in one object make a multi-valued RDN. */
export type JsonName = x509.JsonName;

export interface CertificateSpec {
  readonly subject: string | JsonName;
  readonly key?: KeyKind;
  readonly serialHex?: string;
  readonly extensions?: readonly ExtensionSpec[];
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

/** A self-signed certificate, DER. */
export async function makeCertificate(spec: CertificateSpec): Promise<Uint8Array> {
  const kind = spec.key ?? "rsa";
  const pair = keyPair(kind);
  const algorithm = ALGORITHMS[kind];
  const keys = {
    publicKey: await webcrypto.subtle.importKey(
      "spki",
      pair.publicKey.export({ format: "der", type: "spki" }),
      algorithm,
      true,
      ["verify"],
    ),
    privateKey: await webcrypto.subtle.importKey(
      "pkcs8",
      pair.privateKey.export({ format: "der", type: "pkcs8" }),
      algorithm,
      true,
      ["sign"],
    ),
  };
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: spec.serialHex ?? "0a1b2c3d",
    name: spec.subject,
    notBefore: spec.notBefore ?? new Date(Date.UTC(2026, 0, 1)),
    notAfter: spec.notAfter ?? new Date(Date.UTC(2027, 0, 1)),
    signingAlgorithm: algorithm,
    keys: keys as unknown as x509.X509CertificateCreateSelfSignedParams["keys"],
    extensions: (spec.extensions ?? []).map((e) => new x509.Extension(e.oid, e.critical ?? false, e.value)),
  });
  return new Uint8Array(cert.rawData);
}

/** The same certificate with the serial INTEGER content replaced (any bytes, e.g. a negative value), signed again. */
export function withSerialContent(
  der: Uint8Array,
  serialContent: Uint8Array,
  kind: KeyKind = "rsa",
): Uint8Array {
  const nodes = children(readCertificateFields(der).tbs);
  const serialIndex = nodes[0]?.tag === 0xa0 ? 1 : 0; // after the optional [0] version
  const parts = nodes.map((node, i) =>
    i === serialIndex ? encodeTlv(TAG.INTEGER, serialContent) : whole(node),
  );
  return resign(encodeSequence(...parts), der, kind);
}

/** Wraps a TBSCertificate into a Certificate signed with the test key, keeping the original's algorithm. */
export function resign(tbs: Uint8Array, original: Uint8Array, kind: KeyKind = "rsa"): Uint8Array {
  const [, algorithm] = children(readNode(original));
  const signature = sign("sha256", tbs, keyPair(kind).privateKey);
  return encodeSequence(tbs, whole(algorithm!), encodeBitString(signature));
}

export function toPem(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString("base64");
  return `-----BEGIN CERTIFICATE-----\n${b64.replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
}
