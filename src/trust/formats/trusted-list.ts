/**
 * ETSI TS 119 612 trusted lists: the EU list of the lists (LOTL) and the national lists it points
 * to. Pure: the XML text and the certificates allowed to sign it come in, a verified, bounded
 * summary comes out, or a TrustedListError that says what is wrong. Fetching and turning the
 * granted services into trust anchors is trusted-lists.ts's.
 *
 * Order of work, each step guarding the next: size cap and no DOCTYPE (no entity expansion) →
 * well-formed XML → exactly one ds:Signature, a child of the root → its signing certificate is one
 * of `allowedSigners`, byte for byte (an embedded certificate is never trusted by itself) →
 * xml-crypto verifies the signature with that certificate's key → the content is read from the
 * canonical bytes xml-crypto says it verified for the reference covering the root, never from the
 * original DOM, so a wrapped or duplicated copy of the list cannot be what we read.
 */

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  createVerify,
  type KeyLike,
  sign as signBytes,
  verify as verifyBytes,
} from "node:crypto";
import { DOMParser, type Element } from "@xmldom/xmldom";
import { SignedXml } from "xml-crypto";
import { type ParsedCertificate, parseCertificate } from "../../eidas/index.js";
import { isRejection } from "../../errors.js";

export class TrustedListError extends Error {
  override readonly name = "TrustedListError";
}

export const TSL_NS = "http://uri.etsi.org/02231/v2#";
const DSIG_NS = "http://www.w3.org/2000/09/xmldsig#";
const XML_NS = "http://www.w3.org/XML/1998/namespace";

export const SERVICE_TYPE_CA_QC = "http://uri.etsi.org/TrstSvc/Svctype/CA/QC";
export const STATUS_GRANTED = "http://uri.etsi.org/TrstSvc/TrustedList/Svcstatus/granted";
export const STATUS_WITHDRAWN = "http://uri.etsi.org/TrstSvc/TrustedList/Svcstatus/withdrawn";
/**
 * Statuses of lists made before eIDAS (2016) that TS 119 612 v2 and TS 119 615 read as "granted"
 * for a CA/QC service: such a CA was supervised or accredited for qualified certificates then.
 */
export const PRE_EIDAS_GRANTED = [
  "http://uri.etsi.org/TrstSvc/Svcstatus/undersupervision",
  "http://uri.etsi.org/TrstSvc/Svcstatus/accredited",
] as const;
const GRANTED = new Set<string>([STATUS_GRANTED, ...PRE_EIDAS_GRANTED]);

const FOR_WEBSITE_AUTHENTICATION = "SvcInfoExt/ForWebSiteAuthentication";
const FOR_ESEALS = "SvcInfoExt/ForeSeals";
const TSL_MIME_TYPE = "application/vnd.etsi.tsl+xml";

/** Bounds: the XML comes from the network. The EU lists are far below each (2025: ~2 MB, ~150 TSPs). */
export const TRUSTED_LIST_LIMITS = {
  maxBytes: 20 * 1024 * 1024,
  maxProviders: 2_000,
  maxServices: 20_000,
  maxCertificatesPerService: 64,
  maxHistoryPerService: 256,
  maxPointers: 256,
  maxCertificateBytes: 64 * 1024,
  maxTextLength: 4_096,
} as const;

export interface QualifiedFor {
  readonly qwac: boolean;
  readonly qseal: boolean;
}

export interface ServiceStatusPeriod {
  readonly status: string;
  readonly from: Date;
  /** The service type in that period when it was not CA/QC (then never granted). */
  readonly type?: string;
  /** What the period's own extensions said. */
  readonly qualifiedFor?: QualifiedFor;
}

export interface CaService {
  readonly providerName: string;
  readonly serviceName: string;
  /** DER of each X509Certificate in the service's digital identity. */
  readonly certificates: readonly Uint8Array[];
  readonly type: string;
  readonly status: string;
  readonly statusStarting: Date;
  /** Earlier statuses, newest first as the list writes them. */
  readonly history: readonly ServiceStatusPeriod[];
  /** The current extensions, plus any a history instance carried (a withdrawn CA's old rights). */
  readonly qualifiedFor: QualifiedFor;
}

export interface TrustedListPointer {
  readonly territory: string;
  readonly location: string;
  readonly mimeType?: string;
  /** DER of the certificates that may sign the list pointed to. */
  readonly signers: readonly Uint8Array[];
}

export interface TrustedList {
  readonly kind: "lotl" | "national";
  readonly territory: string;
  readonly sequenceNumber: number;
  readonly issueDate: Date;
  readonly nextUpdate: Date | undefined;
  /** XML trusted lists only (PDF copies and the LOTL's pointer to itself are left out). */
  readonly pointers: readonly TrustedListPointer[];
  /** CA/QC services only. */
  readonly services: readonly CaService[];
  /** The certificate (one of allowedSigners) whose key verified the signature. */
  readonly signer: Uint8Array;
}

export interface ReadTrustedListOptions {
  /** The signer certificate must be valid at the list's issue date, which may not be after `now`. */
  readonly now?: Date;
}

/** The period in force at `date`: the current status from its start, else the latest history instance begun by then. */
export function statusAt(service: CaService, date: Date): ServiceStatusPeriod | undefined {
  let best: ServiceStatusPeriod | undefined;
  const current: ServiceStatusPeriod = {
    status: service.status,
    from: service.statusStarting,
    qualifiedFor: service.qualifiedFor,
  };
  for (const period of [current, ...service.history]) {
    if (period.from.getTime() <= date.getTime() && (!best || period.from > best.from)) best = period;
  }
  return best;
}

/** True when the status in force at `date` is granted (or a pre-eIDAS equivalent, see PRE_EIDAS_GRANTED). */
export function grantedAt(service: CaService, date: Date): boolean {
  const period = statusAt(service, date);
  return period !== undefined && period.type === undefined && GRANTED.has(period.status);
}

export function isGrantedStatus(status: string): boolean {
  return GRANTED.has(status);
}

export function readTrustedList(
  xml: string,
  allowedSigners: readonly Uint8Array[],
  options: ReadTrustedListOptions = {},
): TrustedList {
  if (typeof xml !== "string") throw new TrustedListError("the trusted list is not text");
  if (xml.length > TRUSTED_LIST_LIMITS.maxBytes) {
    throw new TrustedListError(
      `the trusted list is ${xml.length} characters, more than the ${TRUSTED_LIST_LIMITS.maxBytes} allowed`,
    );
  }
  // No DTD at all: entity expansion and external entities are the classic XML attacks, and no
  // trusted list needs one.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) {
    throw new TrustedListError("the trusted list has a DOCTYPE or ENTITY declaration; refused");
  }
  const root = parseXml(xml, "the trusted list");
  expectRoot(root, "the trusted list");

  const signature = onlySignature(root);
  const signer = signingCertificate(signature, allowedSigners);
  const signedContent = verifiedContent(xml, root, signature, signer);
  const signedRoot = parseXml(signedContent, "the signed content of the trusted list");
  expectRoot(signedRoot, "the signed content of the trusted list");

  const list = readContent(signedRoot, signer);
  checkSignerValidity(signer, list.issueDate, options.now ?? new Date());
  return list;
}

function parseXml(text: string, what: string): Element {
  const problems: string[] = [];
  let doc: ReturnType<DOMParser["parseFromString"]>;
  try {
    doc = new DOMParser({
      onError: (level, message) => {
        if (level !== "warning") problems.push(String(message));
      },
    }).parseFromString(text, "application/xml");
  } catch (error) {
    throw new TrustedListError(`${what} is not well-formed XML: ${clip(errorText(error))}`);
  }
  if (problems.length > 0)
    throw new TrustedListError(`${what} is not well-formed XML: ${clip(problems[0]!)}`);
  const root = doc.documentElement;
  if (!root) throw new TrustedListError(`${what} has no root element`);
  return root;
}

function expectRoot(root: Element, what: string): void {
  if (root.localName !== "TrustServiceStatusList" || root.namespaceURI !== TSL_NS) {
    throw new TrustedListError(
      `${what} has root element {${clip(root.namespaceURI ?? "", 80)}}${clip(root.localName ?? "", 80)}, not {${TSL_NS}}TrustServiceStatusList`,
    );
  }
}

function onlySignature(root: Element): Element {
  const signatures = Array.from(root.getElementsByTagNameNS(DSIG_NS, "Signature"));
  if (signatures.length !== 1) {
    throw new TrustedListError(
      `the trusted list has ${signatures.length} ds:Signature elements; exactly one, a child of the root, is required`,
    );
  }
  const signature = signatures[0]!;
  if (signature.parentNode !== root) {
    throw new TrustedListError("the trusted list's ds:Signature is not a direct child of the root element");
  }
  return signature;
}

/** The first KeyInfo certificate that is one of the allowed signers; refused when none is. */
function signingCertificate(signature: Element, allowedSigners: readonly Uint8Array[]): Uint8Array {
  const keyInfo = children(signature, "KeyInfo", DSIG_NS);
  const embedded: Uint8Array[] = [];
  for (const data of keyInfo.flatMap((k) => children(k, "X509Data", DSIG_NS))) {
    for (const cert of children(data, "X509Certificate", DSIG_NS)) {
      if (embedded.length >= 16) break;
      embedded.push(base64(textOf(cert, 1_000_000), "ds:X509Certificate"));
    }
  }
  if (embedded.length === 0) {
    throw new TrustedListError("the trusted list's signature has no KeyInfo/X509Data/X509Certificate");
  }
  for (const candidate of embedded) {
    const allowed = allowedSigners.find((a) => Buffer.from(a).equals(Buffer.from(candidate)));
    if (allowed) return allowed;
  }
  throw new TrustedListError(
    `the trusted list is signed by ${certificateName(embedded[0]!)}, which is not among the ${allowedSigners.length} certificate(s) allowed to sign it`,
  );
}

/** The canonical XML of the root, as xml-crypto verified it; throws when the signature does not verify. */
function verifiedContent(xml: string, root: Element, signature: Element, signer: Uint8Array): string {
  const verifier = new SignedXml({ publicCert: derToPem(signer) });
  verifier.SignatureAlgorithms = SIGNATURE_ALGORITHMS;
  verifier.HashAlgorithms = { ...HASH_ALGORITHMS };
  let valid: boolean;
  try {
    verifier.loadSignature(signature as never);
    valid = verifier.checkSignature(xml);
  } catch (error) {
    throw new TrustedListError(`the trusted list's signature does not verify: ${clip(errorText(error))}`);
  }
  if (!valid)
    throw new TrustedListError("the trusted list's signature does not verify: a reference's digest differs");
  const rootId = root.getAttribute("Id") ?? root.getAttribute("ID") ?? root.getAttribute("id");
  const whole = verifier
    .getReferences()
    .filter((r) => r.uri === "" || (rootId !== null && rootId !== "" && r.uri === `#${rootId}`));
  const others = verifier.getReferences().filter((r) => !whole.includes(r));
  // XAdES adds a reference to its SignedProperties; anything else signs something we do not read.
  const stray = others.find((r) => !(r.type ?? "").endsWith("#SignedProperties"));
  if (whole.length !== 1 || stray) {
    throw new TrustedListError(
      `the trusted list's signature must have exactly one reference to the whole list (URI="" or "#${clip(rootId ?? "", 40)}"); it has ${whole.length}${stray ? ` and one to "${clip(stray.uri, 60)}"` : ""}`,
    );
  }
  const reference = whole[0]!;
  if (!reference.transforms.includes("http://www.w3.org/2000/09/xmldsig#enveloped-signature")) {
    throw new TrustedListError("the trusted list's reference lacks the enveloped-signature transform");
  }
  if (typeof reference.signedReference !== "string") {
    throw new TrustedListError("xml-crypto verified no content for the trusted list's reference");
  }
  return reference.signedReference;
}

function checkSignerValidity(signer: Uint8Array, issueDate: Date, now: Date): void {
  const parsed = parseCertificate(signer, { label: "trusted list signer" });
  if (isRejection(parsed)) throw new TrustedListError(`the list's signing certificate: ${parsed.text}`);
  if (issueDate.getTime() > now.getTime() + 5 * 60_000) {
    throw new TrustedListError(
      `the trusted list's ListIssueDateTime ${issueDate.toISOString()} is in the future`,
    );
  }
  if (issueDate < parsed.notBefore || issueDate > parsed.notAfter) {
    throw new TrustedListError(
      `the trusted list was issued on ${issueDate.toISOString()}, outside its signing certificate's validity (${parsed.notBefore.toISOString()} to ${parsed.notAfter.toISOString()}) — ${nameOf(parsed)}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The content, read from the verified canonical XML.

function readContent(root: Element, signer: Uint8Array): TrustedList {
  const scheme = one(root, "SchemeInformation", "TrustServiceStatusList");
  const tslType = textOf(one(scheme, "TSLType", "SchemeInformation"));
  const territory = territoryOf(
    textOf(one(scheme, "SchemeTerritory", "SchemeInformation")),
    "SchemeTerritory",
  );
  const sequenceText = textOf(one(scheme, "TSLSequenceNumber", "SchemeInformation"));
  if (!/^[1-9][0-9]{0,8}$/.test(sequenceText)) {
    throw new TrustedListError(`TSLSequenceNumber '${clip(sequenceText, 40)}' is not a positive integer`);
  }
  const issueDate = dateOf(one(scheme, "ListIssueDateTime", "SchemeInformation"), "ListIssueDateTime");
  const nextUpdateElement = optional(scheme, "NextUpdate", "SchemeInformation");
  const nextUpdateTime = nextUpdateElement && optional(nextUpdateElement, "dateTime", "NextUpdate");
  const nextUpdate = nextUpdateTime ? dateOf(nextUpdateTime, "NextUpdate/dateTime") : undefined;
  return {
    kind: tslType.endsWith("listofthelists") ? "lotl" : "national",
    territory,
    sequenceNumber: Number(sequenceText),
    issueDate,
    nextUpdate,
    pointers: readPointers(scheme),
    services: readServices(root),
    signer,
  };
}

function readPointers(scheme: Element): TrustedListPointer[] {
  const container = optional(scheme, "PointersToOtherTSL", "SchemeInformation");
  if (!container) return [];
  const all = children(container, "OtherTSLPointer");
  bound(all.length, TRUSTED_LIST_LIMITS.maxPointers, "OtherTSLPointer elements");
  const pointers: TrustedListPointer[] = [];
  for (const pointer of all) {
    const location = textOf(one(pointer, "TSLLocation", "OtherTSLPointer"));
    let territory: string | undefined;
    let mimeType: string | undefined;
    let tslType: string | undefined;
    for (const info of children(
      optional(pointer, "AdditionalInformation", "OtherTSLPointer"),
      "OtherInformation",
    )) {
      for (const item of elementChildren(info)) {
        if (item.localName === "SchemeTerritory") territory = textOf(item);
        else if (item.localName === "MimeType") mimeType = textOf(item);
        else if (item.localName === "TSLType") tslType = textOf(item);
      }
    }
    const xml = mimeType === TSL_MIME_TYPE || (mimeType === undefined && /\.xml$/i.test(location));
    if (!xml || tslType?.endsWith("listofthelists")) continue;
    if (territory === undefined)
      throw new TrustedListError(`the pointer to ${clip(location, 120)} names no SchemeTerritory`);
    const signers = children(
      optional(pointer, "ServiceDigitalIdentities", "OtherTSLPointer"),
      "ServiceDigitalIdentity",
    ).flatMap((identity) => digitalIdCertificates(identity, `the signers of ${territory}`));
    bound(
      signers.length,
      TRUSTED_LIST_LIMITS.maxCertificatesPerService,
      `signer certificates for ${territory}`,
    );
    pointers.push({
      territory: territoryOf(territory, `the pointer to ${clip(location, 120)}`),
      location,
      ...(mimeType !== undefined ? { mimeType } : {}),
      signers,
    });
  }
  return pointers;
}

function readServices(root: Element): CaService[] {
  const providers = children(
    optional(root, "TrustServiceProviderList", "TrustServiceStatusList"),
    "TrustServiceProvider",
  );
  bound(providers.length, TRUSTED_LIST_LIMITS.maxProviders, "TrustServiceProvider elements");
  const services: CaService[] = [];
  let seen = 0;
  for (const provider of providers) {
    const providerName = nameIn(
      one(one(provider, "TSPInformation", "TrustServiceProvider"), "TSPName", "TSPInformation"),
    );
    for (const service of children(optional(provider, "TSPServices", "TrustServiceProvider"), "TSPService")) {
      bound(++seen, TRUSTED_LIST_LIMITS.maxServices, "TSPService elements");
      const info = one(service, "ServiceInformation", "TSPService");
      const type = textOf(one(info, "ServiceTypeIdentifier", "ServiceInformation"));
      if (type !== SERVICE_TYPE_CA_QC) continue;
      const serviceName = nameIn(one(info, "ServiceName", "ServiceInformation"));
      const where = `service '${clip(serviceName, 80)}' of '${clip(providerName, 80)}'`;
      const certificates = digitalIdCertificates(one(info, "ServiceDigitalIdentity", where), where);
      const current = readPeriod(info, where);
      const instances = children(optional(service, "ServiceHistory", "TSPService"), "ServiceHistoryInstance");
      bound(
        instances.length,
        TRUSTED_LIST_LIMITS.maxHistoryPerService,
        `ServiceHistoryInstance elements in ${where}`,
      );
      const history = instances.map((instance) => {
        const period = readPeriod(instance, `a history instance of ${where}`);
        const instanceType = textOf(one(instance, "ServiceTypeIdentifier", `a history instance of ${where}`));
        return instanceType === SERVICE_TYPE_CA_QC ? period : { ...period, type: instanceType };
      });
      const qualifiedFor = [current, ...history].reduce<QualifiedFor>(
        (sum, p) => ({
          qwac: sum.qwac || !!p.qualifiedFor?.qwac,
          qseal: sum.qseal || !!p.qualifiedFor?.qseal,
        }),
        { qwac: false, qseal: false },
      );
      services.push({
        providerName,
        serviceName,
        certificates,
        type,
        status: current.status,
        statusStarting: current.from,
        history,
        qualifiedFor,
      });
    }
  }
  return services;
}

function readPeriod(info: Element, where: string): ServiceStatusPeriod {
  const status = textOf(one(info, "ServiceStatus", where));
  const from = dateOf(one(info, "StatusStartingTime", where), `StatusStartingTime of ${where}`);
  const uris = children(optional(info, "ServiceInformationExtensions", where), "Extension")
    .flatMap((e) => children(e, "AdditionalServiceInformation"))
    .flatMap((a) => children(a, "URI"))
    .map((u) => textOf(u));
  return {
    status,
    from,
    qualifiedFor: {
      qwac: uris.some((u) => u.endsWith(FOR_WEBSITE_AUTHENTICATION)),
      qseal: uris.some((u) => u.endsWith(FOR_ESEALS)),
    },
  };
}

function digitalIdCertificates(identity: Element, where: string): Uint8Array[] {
  const certificates = children(identity, "DigitalId")
    .flatMap((id) => children(id, "X509Certificate"))
    .map((c) =>
      base64(textOf(c, TRUSTED_LIST_LIMITS.maxCertificateBytes * 2), `an X509Certificate of ${where}`),
    );
  bound(certificates.length, TRUSTED_LIST_LIMITS.maxCertificatesPerService, `certificates in ${where}`);
  return certificates;
}

// ---------------------------------------------------------------------------------------------
// Small readers. Elements are matched by namespace and local name, in the TSL namespace unless told.

function elementChildren(parent: Element): Element[] {
  const out: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) if (n.nodeType === 1) out.push(n as Element);
  return out;
}

function children(parent: Element | undefined, local: string, ns: string = TSL_NS): Element[] {
  if (!parent) return [];
  return elementChildren(parent).filter((e) => e.localName === local && e.namespaceURI === ns);
}

function optional(parent: Element, local: string, where: string): Element | undefined {
  const found = children(parent, local);
  if (found.length > 1)
    throw new TrustedListError(`${where} has ${found.length} ${local} elements; at most one is allowed`);
  return found[0];
}

function one(parent: Element, local: string, where: string): Element {
  const found = optional(parent, local, where);
  if (!found) throw new TrustedListError(`${where} has no ${local}`);
  return found;
}

function textOf(element: Element, max: number = TRUSTED_LIST_LIMITS.maxTextLength): string {
  const text = (element.textContent ?? "").trim();
  if (text.length > max) throw new TrustedListError(`${element.localName} is longer than ${max} characters`);
  return text;
}

/** The English name when there is one (lists are multilingual), else the first. */
function nameIn(names: Element): string {
  const all = children(names, "Name");
  const english = all.find((n) => (n.getAttributeNS(XML_NS, "lang") ?? n.getAttribute("xml:lang")) === "en");
  const chosen = english ?? all[0];
  if (!chosen) throw new TrustedListError(`${names.localName} has no Name`);
  return textOf(chosen);
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})?$/;

function dateOf(element: Element, what: string): Date {
  const text = textOf(element, 64);
  // xs:dateTime without a zone is read as UTC, as TS 119 612 requires lists to write it.
  const date = DATE_TIME.test(text)
    ? new Date(/Z|[+-]\d{2}:\d{2}$/.test(text) ? text : `${text}Z`)
    : undefined;
  if (!date || Number.isNaN(date.getTime()))
    throw new TrustedListError(`${what} '${clip(text, 40)}' is not an xs:dateTime`);
  return date;
}

function territoryOf(text: string, what: string): string {
  if (!/^[A-Z]{2}$/.test(text))
    throw new TrustedListError(`${what} '${clip(text, 20)}' is not a two-letter territory code`);
  return text;
}

function base64(text: string, what: string): Uint8Array {
  const compact = text.replace(/\s+/g, "");
  if (compact.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    throw new TrustedListError(`${what} is not base64`);
  }
  const der = new Uint8Array(Buffer.from(compact, "base64"));
  if (der.length > TRUSTED_LIST_LIMITS.maxCertificateBytes) {
    throw new TrustedListError(`${what} is larger than ${TRUSTED_LIST_LIMITS.maxCertificateBytes} bytes`);
  }
  return der;
}

function bound(count: number, max: number, what: string): void {
  if (count > max) throw new TrustedListError(`the trusted list has more than ${max} ${what}`);
}

function certificateName(der: Uint8Array): string {
  const parsed = parseCertificate(der, { label: "KeyInfo certificate" });
  return isRejection(parsed)
    ? `an unreadable certificate (SHA-256 ${createHash("sha256").update(der).digest("hex")})`
    : nameOf(parsed);
}

function nameOf(c: ParsedCertificate): string {
  return `${clip(c.subjectRfc2253, 160)} (SHA-256 ${c.sha256Fingerprint})`;
}

export function derToPem(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString("base64");
  return `-----BEGIN CERTIFICATE-----\n${b64.replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
}

function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Algorithms: only these are accepted (xml-crypto's defaults include SHA-1 and lack SHA-384/ECDSA).

type Verifier = (material: string, key: KeyLike, signatureValue: string) => boolean;

function algorithm(name: string, hash: string, ecdsa: boolean) {
  const verify: Verifier = (material, key, signatureValue) =>
    ecdsa
      ? // XML-DSig ECDSA values are r || s (RFC 4050), not DER.
        verifyBytes(
          hash,
          Buffer.from(material),
          { key: createPublicKey(key), dsaEncoding: "ieee-p1363" },
          Buffer.from(signatureValue, "base64"),
        )
      : createVerify(hash).update(material).verify(key, signatureValue, "base64");
  const getSignature = (signedInfo: string | Uint8Array, privateKey: KeyLike) =>
    signBytes(
      hash,
      Buffer.from(signedInfo),
      ecdsa ? { key: createPrivateKey(privateKey as string), dsaEncoding: "ieee-p1363" } : privateKey,
    ).toString("base64");
  return class {
    getAlgorithmName = () => name;
    verifySignature = verify as never;
    getSignature = getSignature as never;
  };
}

const SIGNATURE_ALGORITHMS = {
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256": algorithm(
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    "sha256",
    false,
  ),
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384": algorithm(
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384",
    "sha384",
    false,
  ),
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512": algorithm(
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512",
    "sha512",
    false,
  ),
  "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256": algorithm(
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256",
    "sha256",
    true,
  ),
  "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384": algorithm(
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384",
    "sha384",
    true,
  ),
  "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512": algorithm(
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512",
    "sha512",
    true,
  ),
} as unknown as SignedXml["SignatureAlgorithms"];

function hashAlgorithm(name: string, hash: string) {
  return class {
    getAlgorithmName = () => name;
    getHash = (xml: string) => createHash(hash).update(xml, "utf8").digest("base64");
  };
}

const HASH_ALGORITHMS = {
  "http://www.w3.org/2001/04/xmlenc#sha256": hashAlgorithm(
    "http://www.w3.org/2001/04/xmlenc#sha256",
    "sha256",
  ),
  "http://www.w3.org/2001/04/xmldsig-more#sha384": hashAlgorithm(
    "http://www.w3.org/2001/04/xmldsig-more#sha384",
    "sha384",
  ),
  "http://www.w3.org/2001/04/xmlenc#sha512": hashAlgorithm(
    "http://www.w3.org/2001/04/xmlenc#sha512",
    "sha512",
  ),
} as unknown as SignedXml["HashAlgorithms"];

/** For the dev generator: the same algorithm table, so what we sign is what we accept. */
export const TRUSTED_LIST_ALGORITHMS = { signature: SIGNATURE_ALGORITHMS, hash: HASH_ALGORITHMS } as const;
