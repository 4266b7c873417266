/**
 * Revocation. `RevocationChecker` is the seam: CRL files today, OCSP can implement the same
 * interface later (its check may return a promise). A CRL is trusted only when its signature
 * verifies with a CA from the trust store.
 */

import {
  children,
  content,
  type DerNode,
  expectTag,
  readBitString,
  readNode,
  readOid,
  readTime,
  TAG,
  whole,
} from "../asn1/der.js";
import { type Rejection, reject } from "../errors.js";
import type { ParsedCertificate } from "./certificate.js";
import { verifyTbs } from "./signature-algorithms.js";

export interface RevocationChecker {
  /** A rejection when the certificate (issued by `issuer`) is revoked. */
  check(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    now: Date,
  ): Rejection | undefined | Promise<Rejection | undefined>;
}

export interface RevocationList {
  readonly issuerDer: Uint8Array;
  readonly thisUpdate: Date;
  readonly nextUpdate: Date | undefined;
  /** Serial content bytes (as hex, leading zero bytes removed) → revocation date. */
  readonly revoked: ReadonlyMap<string, Date>;
  readonly source: string;
}

export function serialKey(serial: Uint8Array): string {
  let i = 0;
  while (i < serial.length - 1 && serial[i] === 0) i++;
  return Buffer.from(serial.subarray(i)).toString("hex");
}

/** Reads a DER CertificateList (RFC 5280 5.1). Throws DerError on malformed input. */
export function readCrl(
  der: Uint8Array,
  source: string,
): { list: RevocationList; tbs: Uint8Array; algorithm: string; signature: Uint8Array } {
  const [tbsNode, algNode, sigNode] = children(expectTag(readNode(der), TAG.SEQUENCE, "CertificateList"));
  if (!tbsNode || !algNode || !sigNode)
    throw new Error("a CRL is tbsCertList, signatureAlgorithm and signatureValue");
  const fields = children(expectTag(tbsNode, TAG.SEQUENCE, "TBSCertList"));
  let i = 0;
  if (fields[i]?.tag === TAG.INTEGER) i++;
  i++; // signature AlgorithmIdentifier
  const issuer = fields[i++];
  const thisUpdateNode = fields[i++];
  if (!issuer || !thisUpdateNode) throw new Error("TBSCertList lacks issuer or thisUpdate");
  let nextUpdate: Date | undefined;
  const maybeNext = fields[i];
  if (maybeNext && (maybeNext.tag === TAG.UTC_TIME || maybeNext.tag === TAG.GENERALIZED_TIME)) {
    nextUpdate = readTime(maybeNext);
    i++;
  }
  const revoked = new Map<string, Date>();
  const maybeRevoked: DerNode | undefined = fields[i];
  if (maybeRevoked && maybeRevoked.tag === TAG.SEQUENCE) {
    for (const entry of children(maybeRevoked)) {
      const [serialNode, dateNode] = children(expectTag(entry, TAG.SEQUENCE, "revokedCertificate"));
      if (!serialNode || !dateNode) throw new Error("revokedCertificate lacks serial or date");
      revoked.set(
        serialKey(content(expectTag(serialNode, TAG.INTEGER, "userCertificate"))),
        readTime(dateNode),
      );
    }
  }
  const [algOid] = children(expectTag(algNode, TAG.SEQUENCE, "signatureAlgorithm"));
  const algorithm = algOid ? readOid(algOid) : "";
  return {
    list: { issuerDer: whole(issuer), thisUpdate: readTime(thisUpdateNode), nextUpdate, revoked, source },
    tbs: whole(tbsNode),
    algorithm,
    signature: readBitString(sigNode).bytes,
  };
}

// OpenSSL writes "X509 CRL"; some tools write plain "CRL".
const PEM_CRL = /-----BEGIN (?:X509 )?CRL-----([\s\S]*?)-----END (?:X509 )?CRL-----/g;

export class CrlRevocationChecker implements RevocationChecker {
  private readonly byIssuer = new Map<string, RevocationList>();

  constructor(lists: readonly RevocationList[]) {
    for (const list of lists) {
      const key = Buffer.from(list.issuerDer).toString("hex");
      const existing = this.byIssuer.get(key);
      // Keep the newest list per issuer.
      if (!existing || existing.thisUpdate < list.thisUpdate) this.byIssuer.set(key, list);
    }
  }

  get lists(): RevocationList[] {
    return [...this.byIssuer.values()];
  }

  check(certificate: ParsedCertificate, issuer: ParsedCertificate): Rejection | undefined {
    const list = this.byIssuer.get(Buffer.from(issuer.subjectDer).toString("hex"));
    if (!list) return undefined;
    const revokedAt = list.revoked.get(serialKey(certificate.serial));
    if (revokedAt === undefined) return undefined;
    return reject(
      "CERTIFICATE_REVOKED",
      `certificate SN=${certificate.serialHex} was revoked by ${issuer.subjectRfc2253} on ${revokedAt.toISOString()}; obtain a new certificate from your QTSP`,
    );
  }
}

/**
 * The CRLs in one file's bytes (PEM blocks, or DER when `name` ends in .crl), keeping only lists
 * whose signature a trusted CA verifies. Pure: files are read at the edge (src/trust/).
 */
export function crlsFromFile(
  name: string,
  bytes: Uint8Array,
  cas: readonly ParsedCertificate[],
): { lists: RevocationList[]; problems: string[] } {
  const lists: RevocationList[] = [];
  const problems: string[] = [];
  const text = Buffer.from(bytes).toString("latin1");
  const blocks: Uint8Array[] = [];
  if (/-----BEGIN (?:X509 )?CRL-----/.test(text)) {
    for (const m of text.matchAll(PEM_CRL)) blocks.push(Buffer.from(m[1]!.replace(/\s+/g, ""), "base64"));
  } else if (/\.crl$/i.test(name) && bytes[0] === 0x30) {
    blocks.push(bytes);
  }
  for (const der of blocks) {
    try {
      const { list, tbs, algorithm, signature } = readCrl(der, name);
      const issuer = cas.find(
        (ca) => Buffer.compare(Buffer.from(ca.subjectDer), Buffer.from(list.issuerDer)) === 0,
      );
      if (!issuer) {
        problems.push(`${name}: CRL issuer is not in the trust store; ignored`);
        continue;
      }
      if (!verifyTbs(algorithm, tbs, signature, issuer.publicKey)) {
        problems.push(`${name}: CRL signature does not verify with ${issuer.subjectRfc2253}; ignored`);
        continue;
      }
      lists.push(list);
    } catch (error) {
      problems.push(`${name}: not a readable CRL (${(error as Error).message}); ignored`);
    }
  }
  return { lists, problems };
}
