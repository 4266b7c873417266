/**
 * Revocation. `RevocationChecker` is the seam: local CRL files here, live CRLs and OCSP in
 * src/trust/live-revocation.ts (whose check may return a promise). A CRL is trusted only when its
 * signature verifies with a CA from the trust store.
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
import type { RevocationEvidence } from "./validation-report.js";

/** What a revocation source proved about one certificate, and for how long. */
export interface RevocationStatus {
  /** Set when the certificate is revoked, or when its status cannot be known and that fails closed. */
  readonly refusal?: Rejection;
  /**
   * Epoch ms after which the answer proves nothing (the CRL's or OCSP response's nextUpdate, or
   * earlier): a verdict resting on it must not be cached past this.
   */
  readonly validUntil?: number;
  /** The status is unknown but `softFail` let the certificate through: why (logged and counted). */
  readonly warning?: string;
  /** The refusal rests on a passing condition (a responder down): never cached. */
  readonly transient?: boolean;
  /** What the answer rests on (which source, when produced, nextUpdate), for the validation report. */
  readonly evidence?: RevocationEvidence;
}

export const NOT_REVOKED: RevocationStatus = Object.freeze({});

/** The answer for a CA of the trust store that names no revocation source anyone may ask. */
export const CA_NOT_CHECKED: RevocationStatus = Object.freeze({
  evidence: Object.freeze({
    status: "not-checked",
    reason: "a CA of the bank's trust store that names no OCSP responder or CRL the gateway may ask",
  }),
});

/** The path's answer: the one that decides, and each certificate's own (leaf first; none for the anchor). */
export interface PathRevocationStatus extends RevocationStatus {
  readonly each: readonly RevocationStatus[];
  /** The position in the path of the answer that refused, when one did. */
  readonly decidedAt?: number;
}

export interface RevocationChecker {
  /** The status of `certificate` (issued by `issuer`) at `now`. */
  check(
    certificate: ParsedCertificate,
    issuer: ParsedCertificate,
    now: Date,
  ): RevocationStatus | Promise<RevocationStatus>;
}

/**
 * The refusal for a certificate a CRL or OCSP response lists as revoked. A revoked CA is named by
 * its subject: every certificate under it is refused, and the TPP must learn which CA it was.
 */
export function revokedRefusal(
  certificate: ParsedCertificate,
  issuer: ParsedCertificate,
  revokedAt: Date,
  by: string,
): Rejection {
  if (certificate.basicConstraints?.ca)
    return reject(
      "CERTIFICATE_REVOKED",
      `issuing CA SN=${certificate.serialHex} (${certificate.subjectRfc2253}) in the certificate's path was revoked by ${issuer.subjectRfc2253} on ${revokedAt.toISOString()} (${by}); every certificate it issued is refused, obtain a new certificate from a CA of your QTSP that is not revoked`,
    );
  return reject(
    "CERTIFICATE_REVOKED",
    `certificate SN=${certificate.serialHex} was revoked by ${issuer.subjectRfc2253} on ${revokedAt.toISOString()} (${by}); obtain a new certificate from your QTSP`,
  );
}

/**
 * The revocation status of a whole path (RFC 5280 6.1.3 (a)(3): every certificate, not only the
 * leaf): each certificate but the trust anchor is asked of `checker` against the one above it, all
 * at once. A proven revocation anywhere outweighs an unknown status; among equals the one nearest
 * the leaf speaks. The answer holds until the earliest of their validUntil. Synchronous when every
 * answer is (the cached path).
 */
export function checkPath(
  checker: RevocationChecker,
  chain: readonly ParsedCertificate[],
  now: Date,
): PathRevocationStatus | Promise<PathRevocationStatus> {
  const answers: (RevocationStatus | Promise<RevocationStatus>)[] = [];
  for (let i = 0; i + 1 < chain.length; i++) answers.push(checker.check(chain[i]!, chain[i + 1]!, now));
  if (answers.some((a) => a instanceof Promise)) return Promise.all(answers).then(combined);
  return combined(answers as RevocationStatus[]);
}

function combined(statuses: readonly RevocationStatus[]): PathRevocationStatus {
  const refused = statuses.filter((s) => s.refusal);
  const decisive = refused.find((s) => !s.transient) ?? refused[0];
  if (decisive) return { ...decisive, each: statuses, decidedAt: statuses.indexOf(decisive) };
  const until = statuses.flatMap((s) => (s.validUntil === undefined ? [] : [s.validUntil]));
  const warnings = statuses.flatMap((s) => (s.warning ? [s.warning] : []));
  return {
    each: statuses,
    ...(until.length > 0 ? { validUntil: Math.min(...until) } : {}),
    ...(warnings.length > 0 ? { warning: warnings.join("; ") } : {}),
  };
}

/**
 * The status a verified CRL gives `certificate` at `now`: revoked, not revoked until its
 * nextUpdate (+ grace), or `undefined` when the list is past that and proves nothing.
 */
export function statusFromCrl(
  list: RevocationList,
  certificate: ParsedCertificate,
  issuer: ParsedCertificate,
  now: Date,
  graceMs: number,
): RevocationStatus | undefined {
  const validUntil = list.nextUpdate ? list.nextUpdate.getTime() + graceMs : undefined;
  if (validUntil !== undefined && validUntil <= now.getTime()) return undefined;
  return crlStatus(list, certificate, issuer, validUntil);
}

/** What `list` says of `certificate`, with the list as evidence. */
function crlStatus(
  list: RevocationList,
  certificate: ParsedCertificate,
  issuer: ParsedCertificate,
  validUntil: number | undefined,
): RevocationStatus {
  const revokedAt = list.revoked.get(serialKey(certificate.serial));
  const evidence = {
    source: "CRL",
    location: list.source,
    thisUpdate: list.thisUpdate.toISOString(),
    ...(list.nextUpdate ? { nextUpdate: list.nextUpdate.toISOString() } : {}),
  } as const;
  if (revokedAt !== undefined)
    return {
      refusal: revokedRefusal(certificate, issuer, revokedAt, `CRL ${list.source}`),
      evidence: { ...evidence, status: "revoked", revokedAt: revokedAt.toISOString() },
    };
  return { ...(validUntil === undefined ? {} : { validUntil }), evidence: { ...evidence, status: "good" } };
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

const FILES_ONLY_NOT_CHECKED: RevocationStatus = Object.freeze({
  evidence: Object.freeze({ status: "not-checked", reason: "no CRL file of its issuer is held" }),
});

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

  /** The newest verified list `issuer` published, if any. */
  listOf(issuer: ParsedCertificate): RevocationList | undefined {
    return this.byIssuer.get(Buffer.from(issuer.subjectDer).toString("hex"));
  }

  /**
   * Files only: a certificate whose issuer has no list here is not checked (egress and the
   * command line's offline checks); ingress asks src/trust/live-revocation.ts, which fails closed.
   */
  check(certificate: ParsedCertificate, issuer: ParsedCertificate): RevocationStatus {
    const list = this.listOf(issuer);
    if (!list) return FILES_ONLY_NOT_CHECKED;
    return crlStatus(list, certificate, issuer, undefined);
  }
}

/**
 * The CRLs in one file's bytes (PEM blocks, or DER when `name` ends in .crl), keeping only lists
 * whose signature a trusted CA verifies. Pure: files are read at the edge (src/trust/). A file of
 * several lists names each `name#1`, `name#2`…, so texts and metric labels tell them apart.
 */
export function crlsFromFile(
  name: string,
  bytes: Uint8Array,
  cas: readonly ParsedCertificate[],
): { lists: RevocationList[]; problems: string[]; rejected: { source: string; reason: string }[] } {
  const lists: RevocationList[] = [];
  const problems: string[] = [];
  const rejected: { source: string; reason: string }[] = [];
  const text = Buffer.from(bytes).toString("latin1");
  const blocks: Uint8Array[] = [];
  if (/-----BEGIN (?:X509 )?CRL-----/.test(text)) {
    for (const m of text.matchAll(PEM_CRL)) blocks.push(Buffer.from(m[1]!.replace(/\s+/g, ""), "base64"));
  } else if (/\.crl$/i.test(name) && bytes[0] === 0x30) {
    blocks.push(bytes);
  }
  for (const [i, der] of blocks.entries()) {
    const source = blocks.length > 1 ? `${name}#${i + 1}` : name;
    const verified = verifiedCrl(der, source, cas);
    if (typeof verified === "string") {
      problems.push(`${verified}; ignored`);
      rejected.push({ source, reason: verified.slice(source.length + 2) });
    } else lists.push(verified);
  }
  return { lists, problems, rejected };
}

/**
 * One DER CRL whose signature a CA of `cas` (matched by the CRL's issuer name) verifies, or why
 * not. Never throws: fetched CRLs are network input.
 */
export function verifiedCrl(
  der: Uint8Array,
  source: string,
  cas: readonly ParsedCertificate[],
): RevocationList | string {
  try {
    const { list, tbs, algorithm, signature } = readCrl(der, source);
    const candidates = cas.filter(
      (ca) => Buffer.compare(Buffer.from(ca.subjectDer), Buffer.from(list.issuerDer)) === 0,
    );
    if (candidates.length === 0) return `${source}: CRL issuer is not in the trust store`;
    const issuer = candidates.find((ca) => verifyTbs(algorithm, tbs, signature, ca.publicKey));
    if (!issuer) return `${source}: CRL signature does not verify with ${candidates[0]!.subjectRfc2253}`;
    return list;
  } catch (error) {
    return `${source}: not a readable CRL (${(error as Error).message})`;
  }
}
