/**
 * The trust store: CA certificates (roots and intermediates) from a folder, and chain building
 * from a leaf to a trusted self-signed root with every signature, validity period,
 * basicConstraints and keyUsage checked along the way.
 *
 * Trusted-list anchors (ETSI TS 119 612, read by src/trust/formats/trusted-list.ts) are CAs a list
 * names as qualified: a chain may end at one without reaching a root, and then the list decides:
 * the leaf must have been issued while the service was granted, and be of a kind (QWAC, QSealC) it
 * was granted for.
 * A CA that is both in a folder and on a list is judged by the list (the fresher word on withdrawal).
 */

import { X509Certificate } from "node:crypto";
import { children, readBitString, readNode, whole } from "../asn1/der.js";
import { type ErrorCode, isRejection, Rejection } from "../errors.js";
import { type ParsedCertificate, parseCertificate } from "./certificate.js";
import { unknownCriticalExtension } from "./extensions.js";
import { isSupportedSignatureAlgorithm, verifyTbs } from "./signature-algorithms.js";
import { clipped, type SubIndication } from "./validation-report.js";

export interface TrustAnchorSet {
  readonly certificates: readonly ParsedCertificate[];
  /** Files that could not be read, with why: reported at load, not fatal. */
  readonly problems: readonly string[];
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;

/**
 * Every certificate in one file's bytes: PEM blocks, or a single DER certificate when `name` ends
 * in .cer/.der/.crt. Pure: the folder is read at the edge (src/trust/).
 */
export function certificatesFromFile(name: string, bytes: Uint8Array): TrustAnchorSet {
  const certificates: ParsedCertificate[] = [];
  const problems: string[] = [];
  const text = Buffer.from(bytes).toString("latin1");
  const blocks: Uint8Array[] = [];
  if (text.includes("-----BEGIN")) {
    for (const m of text.matchAll(PEM_BLOCK)) blocks.push(Buffer.from(m[1]!.replace(/\s+/g, ""), "base64"));
  } else if (bytes[0] === 0x30) {
    blocks.push(bytes);
  }
  for (const der of blocks) {
    const parsed = parseCertificate(der, { label: name });
    if (isRejection(parsed)) problems.push(parsed.text);
    else certificates.push(parsed);
  }
  return { certificates, problems };
}

/** A CA named by a trusted list (see src/trust/trusted-lists.ts for how they are made). */
export interface QualifiedAnchor {
  readonly certificate: ParsedCertificate;
  /** What the service was granted for (current and historic extensions). */
  readonly qualifiedFor: { readonly qwac: boolean; readonly qseal: boolean };
  /** True when the service was granted at `date` (the leaf's issuance is asked). */
  grantedAt(date: Date): boolean;
  /** Names the list and service, for refusal texts and the chain result. */
  readonly source: string;
  /** The list's territory, for refusal texts. */
  readonly territory?: string;
  /** The status in force at `date`, for refusal texts. */
  statusAt?(date: Date): { readonly status: string; readonly from: Date } | undefined;
}

export type ChainPurpose = "qseal" | "qwac";

interface StoredCa {
  readonly parsed: ParsedCertificate;
  readonly selfSigned: boolean;
  readonly anchor?: QualifiedAnchor;
}

/** The signed parts of a certificate, to verify its issuer's signature without a full X509Certificate parse. */
function signedParts(der: Uint8Array): { tbs: Uint8Array; signature: Uint8Array } {
  const [tbs, , signature] = children(readNode(der));
  return { tbs: whole(tbs!), signature: readBitString(signature!).bytes };
}

/**
 * True when `issuer`'s key signed `subject`, else why not. Native crypto over the TBS bytes for the
 * common algorithms; X509Certificate for rarer ones (RSASSA-PSS, EdDSA), whose parser refuses some
 * bytes the tolerant reader took (invalid encodings inside, trailing fields): that is a "no", never
 * a throw, since the subject is whatever the sender put in the header.
 */
function issuedBy(subject: ParsedCertificate, issuer: ParsedCertificate): true | string {
  const oid = subject.signatureAlgorithmOid;
  const notVerified = `its signature does not verify with the key of ${describe(issuer)}`;
  try {
    if (isSupportedSignatureAlgorithm(oid)) {
      const { tbs, signature } = signedParts(subject.der);
      return verifyTbs(oid, tbs, signature, issuer.publicKey) || notVerified;
    }
    return new X509Certificate(Buffer.from(subject.der)).verify(issuer.publicKey) || notVerified;
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return `its signature (algorithm ${oid}) cannot be checked with the key of ${describe(issuer)}: ${detail.slice(0, 120)}`;
  }
}

export interface ChainResult {
  /** Leaf first, the trusted root (or trusted-list anchor) last. */
  readonly chain: readonly ParsedCertificate[];
  /** Set when the chain ends at a trusted-list anchor. */
  readonly anchor?: {
    readonly source: string;
    readonly qualifiedFor: QualifiedAnchor["qualifiedFor"];
    readonly territory?: string;
    /** The service's status when the leaf was issued. */
    readonly statusAtIssuance?: { readonly status: string; readonly from: Date };
  };
}

/**
 * A refusal of the path, with what the validation report needs: the sub-indication (ETSI EN 319
 * 102-1), whether the trust store or a trusted list decided, and the path as far as it was built.
 */
export class ChainRefusal extends Rejection {
  constructor(
    code: ErrorCode,
    text: string,
    readonly subIndication: SubIndication,
    readonly check: "path" | "trusted-list",
    readonly path: readonly ParsedCertificate[],
  ) {
    super(code, text);
  }
}

function refuse(
  subIndication: SubIndication,
  path: readonly ParsedCertificate[],
  code: ErrorCode,
  text: string,
  check: "path" | "trusted-list" = "path",
): ChainRefusal {
  return new ChainRefusal(code, text, subIndication, check, [...path]);
}

const MAX_CHAIN = 8;

function bySubject(parsed: ParsedCertificate): string {
  return Buffer.from(parsed.subjectDer).toString("hex");
}

function describe(c: ParsedCertificate): string {
  return `SN=${clipped(c.serialHex, 80)} (${clipped(c.subjectRfc2253, 160)})`;
}

/** Names and serials come from the sender: refusal texts (cached, logged) carry a bounded part. */
const NAME_IN_TEXT = 200;

function canSignCertificates(c: ParsedCertificate): string | undefined {
  if (!c.basicConstraints?.ca) return "it is not a CA (basicConstraints cA is not true)";
  if (c.keyUsage && !c.keyUsage.includes("keyCertSign")) return "its keyUsage lacks keyCertSign";
  return undefined;
}

export class TrustStore {
  private readonly bySubject = new Map<string, StoredCa[]>();
  /** CA-to-CA signatures verified once: they do not change while the store lives. */
  private readonly verifiedLinks = new WeakMap<ParsedCertificate, Set<StoredCa>>();
  readonly size: number;

  constructor(certificates: readonly ParsedCertificate[], anchors: readonly QualifiedAnchor[] = []) {
    // Anchors go first in each subject's list, so a CA on a trusted list is judged by it.
    for (const anchor of anchors) {
      const key = bySubject(anchor.certificate);
      this.bySubject.set(key, [
        ...(this.bySubject.get(key) ?? []),
        { parsed: anchor.certificate, selfSigned: false, anchor },
      ]);
    }
    for (const parsed of certificates) {
      const selfSigned =
        Buffer.compare(Buffer.from(parsed.subjectDer), Buffer.from(parsed.issuerDer)) === 0 &&
        issuedBy(parsed, parsed) === true;
      const key = bySubject(parsed);
      const list = this.bySubject.get(key) ?? [];
      list.push({ parsed, selfSigned });
      this.bySubject.set(key, list);
    }
    this.size = certificates.length;
    this.anchorCount = anchors.length;
  }

  /** How many trusted-list anchors the store holds (not counted in `size`). */
  readonly anchorCount: number;

  /** Every folder certificate in the store (for expiry metrics and startup lines). */
  get all(): ParsedCertificate[] {
    return [...this.bySubject.values()]
      .flat()
      .filter((c) => !c.anchor)
      .map((c) => c.parsed);
  }

  /** The trusted-list anchors. */
  get anchors(): QualifiedAnchor[] {
    return [...this.bySubject.values()].flat().flatMap((c) => (c.anchor ? [c.anchor] : []));
  }

  /**
   * Builds and checks the chain from a leaf to a self-signed root in the store, or to a
   * trusted-list anchor. `now` is injected so tests can use real, long-expired certificates.
   * `purpose` matters only at an anchor: the list must have granted the CA for that kind.
   */
  verifyChain(leaf: ParsedCertificate, now: Date, purpose?: ChainPurpose): ChainResult | ChainRefusal {
    const chain: ParsedCertificate[] = [leaf];
    const validity = checkValidity(leaf, now, "the certificate", chain);
    if (validity) return validity;
    if (leaf.basicConstraints?.ca) {
      return refuse(
        "CHAIN_CONSTRAINTS_FAILURE",
        chain,
        "CERTIFICATE_INVALID",
        `certificate ${describe(leaf)} is a CA certificate; sign with your QSealC`,
      );
    }
    if (
      leaf.keyUsage &&
      !leaf.keyUsage.includes("digitalSignature") &&
      !leaf.keyUsage.includes("nonRepudiation")
    ) {
      return refuse(
        "CHAIN_CONSTRAINTS_FAILURE",
        chain,
        "CERTIFICATE_INVALID",
        `certificate ${describe(leaf)} may not sign: its keyUsage (${leaf.keyUsage.join(", ")}) has neither digitalSignature nor nonRepudiation`,
      );
    }
    const leafCritical = criticalProblem(leaf, "the certificate", chain);
    if (leafCritical) return leafCritical;
    let current = leaf;
    for (let depth = 0; depth < MAX_CHAIN; depth++) {
      const candidates = this.bySubject.get(Buffer.from(current.issuerDer).toString("hex")) ?? [];
      let issuer: StoredCa | undefined;
      let lastProblem: string | undefined;
      for (const candidate of candidates) {
        if (
          current.authorityKeyIdentifier &&
          candidate.parsed.subjectKeyIdentifier &&
          current.authorityKeyIdentifier !== candidate.parsed.subjectKeyIdentifier
        ) {
          continue;
        }
        const linked = this.linkVerified(current, candidate);
        if (linked !== true) {
          lastProblem = linked;
          continue;
        }
        issuer = candidate;
        break;
      }
      if (!issuer) {
        return refuse(
          lastProblem ? "CERTIFICATE_CHAIN_GENERAL_FAILURE" : "NO_CERTIFICATE_CHAIN_FOUND",
          chain,
          "CERTIFICATE_INVALID",
          `certificate ${describe(current)} ${lastProblem ?? `was issued by ${clipped(current.issuerRfc2253, NAME_IN_TEXT)}, which is not in the gateway's trust store`}; use a certificate from a qualified trust service provider the bank trusts`,
        );
      }
      const notCa = canSignCertificates(issuer.parsed);
      const withIssuer = [...chain, issuer.parsed];
      if (notCa)
        return refuse(
          "CHAIN_CONSTRAINTS_FAILURE",
          withIssuer,
          "CERTIFICATE_INVALID",
          `issuer ${describe(issuer.parsed)} may not issue certificates: ${notCa}`,
        );
      const issuerValidity = checkValidity(issuer.parsed, now, "its issuing CA certificate", withIssuer);
      if (issuerValidity) return issuerValidity;
      const issuerCritical = criticalProblem(issuer.parsed, "its issuing CA certificate", withIssuer);
      if (issuerCritical) return issuerCritical;
      const pathLen = issuer.parsed.basicConstraints?.pathLen;
      const casBelow = chain.length - 1;
      if (pathLen !== undefined && casBelow > pathLen) {
        return refuse(
          "CHAIN_CONSTRAINTS_FAILURE",
          withIssuer,
          "CERTIFICATE_INVALID",
          `issuer ${describe(issuer.parsed)} allows ${pathLen} CAs below it, the chain has ${casBelow}`,
        );
      }
      chain.push(issuer.parsed);
      if (issuer.anchor) return anchoredChain(chain, leaf, issuer.anchor, purpose);
      if (issuer.selfSigned) return { chain };
      current = issuer.parsed;
    }
    return refuse(
      "NO_CERTIFICATE_CHAIN_FOUND",
      chain,
      "CERTIFICATE_INVALID",
      `certificate chain is longer than ${MAX_CHAIN}; no trusted root was reached`,
    );
  }

  /** Leaf signatures are checked every time (leaves are cached by the verdict cache); CA links once. */
  private linkVerified(subject: ParsedCertificate, issuer: StoredCa): true | string {
    const known = this.verifiedLinks.get(subject);
    if (known?.has(issuer)) return true;
    const issued = issuedBy(subject, issuer.parsed);
    if (issued !== true) return issued;
    if (this.isStored(subject)) {
      const set = known ?? new Set<StoredCa>();
      set.add(issuer);
      this.verifiedLinks.set(subject, set);
    }
    return true;
  }

  private isStored(c: ParsedCertificate): boolean {
    return (this.bySubject.get(bySubject(c)) ?? []).some((s) => s.parsed === c);
  }
}

const PURPOSE_NAMES: Record<ChainPurpose, string> = {
  qwac: "website authentication (QWACs)",
  qseal: "electronic seals (QSealCs)",
};

/** The trusted list's word on a chain that ends at one of its CAs. */
function anchoredChain(
  chain: ParsedCertificate[],
  leaf: ParsedCertificate,
  anchor: QualifiedAnchor,
  purpose: ChainPurpose | undefined,
): ChainResult | ChainRefusal {
  const ca = describe(anchor.certificate);
  const list = `the ${anchor.territory ?? ""}${anchor.territory ? " " : ""}trusted list`;
  const period = anchor.statusAt?.(leaf.notBefore);
  if (!anchor.grantedAt(leaf.notBefore)) {
    const why = period
      ? `its status there has been ${shortStatus(period.status)} since ${period.from.toISOString()}`
      : "the list shows no status for it at that date";
    return refuse(
      "CHAIN_CONSTRAINTS_FAILURE",
      chain,
      "CERTIFICATE_INVALID",
      `certificate ${describe(leaf)} was issued on ${leaf.notBefore.toISOString()} by CA ${ca}, which was not granted on ${list} then: ${why} (${clipped(anchor.source, NAME_IN_TEXT)}); use a certificate from a CA whose qualified status is granted`,
      "trusted-list",
    );
  }
  if (purpose && !anchor.qualifiedFor[purpose]) {
    const granted = (Object.keys(PURPOSE_NAMES) as ChainPurpose[]).filter((p) => anchor.qualifiedFor[p]);
    const what =
      granted.length > 0
        ? `for ${granted.map((p) => PURPOSE_NAMES[p]).join(" and ")} only`
        : "without a ForWebSiteAuthentication or ForeSeals extension";
    return refuse(
      "CHAIN_CONSTRAINTS_FAILURE",
      chain,
      "CERTIFICATE_INVALID",
      `certificate ${describe(leaf)} chains to CA ${ca}, which is on ${list} ${what}, not for ${PURPOSE_NAMES[purpose]} (${clipped(anchor.source, NAME_IN_TEXT)}); use a ${purpose === "qseal" ? "QSealC" : "QWAC"} from a CA granted for it`,
      "trusted-list",
    );
  }
  return {
    chain,
    anchor: {
      source: anchor.source,
      qualifiedFor: anchor.qualifiedFor,
      ...(anchor.territory ? { territory: anchor.territory } : {}),
      ...(period ? { statusAtIssuance: period } : {}),
    },
  };
}

/** `…/Svcstatus/withdrawn` → `withdrawn`. */
export function shortStatus(uri: string): string {
  return clipped(uri.slice(uri.lastIndexOf("/") + 1), 60);
}

function criticalProblem(
  c: ParsedCertificate,
  which: string,
  path: readonly ParsedCertificate[],
): ChainRefusal | undefined {
  const oid = unknownCriticalExtension(c.extensions);
  if (oid === undefined) return undefined;
  return refuse(
    "CHAIN_CONSTRAINTS_FAILURE",
    path,
    "CERTIFICATE_INVALID",
    `${which} ${describe(c)} has a critical extension ${oid} the gateway does not know; RFC 5280 4.2 requires refusing it`,
  );
}

function checkValidity(
  c: ParsedCertificate,
  now: Date,
  which: string,
  path: readonly ParsedCertificate[],
): ChainRefusal | undefined {
  // EN 319 102-1: a signer not yet valid fails; any other certificate out of its period is out of bounds.
  if (now < c.notBefore) {
    return refuse(
      path.length === 1 ? "NOT_YET_VALID" : "OUT_OF_BOUNDS_NO_POE",
      path,
      "CERTIFICATE_EXPIRED",
      `${which} ${describe(c)} is not valid before ${c.notBefore.toISOString()}`,
    );
  }
  if (now > c.notAfter) {
    return refuse(
      "OUT_OF_BOUNDS_NO_POE",
      path,
      "CERTIFICATE_EXPIRED",
      `${which} ${describe(c)} expired on ${c.notAfter.toISOString()}; renew it with your QTSP`,
    );
  }
  return undefined;
}
