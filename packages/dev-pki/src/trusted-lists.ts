/**
 * Development ETSI trusted lists, generated (never committed): a LOTL signed by a demo LOTL signer,
 * pointing to one national list (territory XX) signed by a national signer, naming the demo
 * issuing CA as a granted CA/QC service. Options add the awkward cases tests need: a CA granted
 * for website authentication only, a withdrawn CA with its history, a broken signature.
 * Real XML-DSig (xml-crypto, enveloped, exclusive c14n, rsa-sha256, X509Data in KeyInfo).
 */

import "reflect-metadata";
import { createPrivateKey, type KeyObject, webcrypto } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import {
  SERVICE_TYPE_CA_QC,
  STATUS_GRANTED,
  STATUS_WITHDRAWN,
  TRUSTED_LIST_ALGORITHMS,
  TSL_NS,
} from "psd2-gateway/trusted-list";
import { SignedXml } from "xml-crypto";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const DAY = 24 * 3600 * 1000;
const RSA = {
  name: "RSASSA-PKCS1-v1_5",
  hash: "SHA-256",
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};
const EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#";
const ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";
const SVC_INFO_EXT = "http://uri.etsi.org/TrstSvc/TrustedList/SvcInfoExt/";
const TSL_TYPE = "http://uri.etsi.org/TrstSvc/TrustedList/TSLType/";
const ADDITIONAL_TYPES_NS = "http://uri.etsi.org/02231/v2/additionaltypes#";

/** What signs a list: an IssuedCertificate from the dev PKI (pki.ts) fits. */
export interface TrustedListSigner {
  readonly pem: string;
  readonly keyPem: string;
  readonly der: Uint8Array;
}

export interface DevCaService {
  readonly providerName?: string;
  readonly serviceName: string;
  /** DER of the CA certificate the service names. */
  readonly certificate: Uint8Array;
  readonly qualifiedFor: { readonly qwac: boolean; readonly qseal: boolean };
  /** Granted since (default: 30 days before issue). */
  readonly grantedFrom?: Date;
  /** When set, the current status is withdrawn from this date, and the granted period is history. */
  readonly withdrawnAt?: Date;
}

export interface BuildTrustedListsOptions {
  readonly lotlSigner: TrustedListSigner;
  readonly nationalSigner: TrustedListSigner;
  readonly nationalListUrl: string;
  readonly services: readonly DevCaService[];
  readonly nextUpdate: Date;
  readonly issueDate?: Date;
  /** Two letters; default XX. */
  readonly territory?: string;
  readonly lotlSequenceNumber?: number;
  readonly nationalSequenceNumber?: number;
  /** Change one signed byte after signing (the sequence number). */
  readonly breakSignature?: "lotl" | "national";
  /** Reference the root by its Id (`#…`) instead of URI="". */
  readonly referenceById?: boolean;
}

export interface DevTrustedLists {
  readonly lotlXml: string;
  readonly nationalXml: string;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function b64(der: Uint8Array): string {
  return Buffer.from(der).toString("base64");
}

function name(text: string): string {
  return `<Name xml:lang="en">${escapeXml(text)}</Name>`;
}

function schemeInformation(o: {
  type: "EUlistofthelists" | "EUgeneric";
  territory: string;
  sequenceNumber: number;
  operator: string;
  issueDate: Date;
  nextUpdate: Date;
  pointers?: string;
}): string {
  return [
    "<SchemeInformation>",
    "<TSLVersionIdentifier>5</TSLVersionIdentifier>",
    `<TSLSequenceNumber>${o.sequenceNumber}</TSLSequenceNumber>`,
    `<TSLType>${TSL_TYPE}${o.type}</TSLType>`,
    `<SchemeOperatorName>${name(o.operator)}</SchemeOperatorName>`,
    `<SchemeName>${name(`${o.territory}: Trusted list (development)`)}</SchemeName>`,
    `<SchemeTerritory>${o.territory}</SchemeTerritory>`,
    o.pointers ?? "",
    `<ListIssueDateTime>${iso(o.issueDate)}</ListIssueDateTime>`,
    `<NextUpdate><dateTime>${iso(o.nextUpdate)}</dateTime></NextUpdate>`,
    "</SchemeInformation>",
  ].join("");
}

function iso(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function extensions(q: { qwac: boolean; qseal: boolean }): string {
  const uris = [q.qwac ? "ForWebSiteAuthentication" : "", q.qseal ? "ForeSeals" : ""].filter(Boolean);
  if (uris.length === 0) return "";
  return `<ServiceInformationExtensions>${uris
    .map(
      (u) =>
        `<Extension Critical="false"><AdditionalServiceInformation><URI xml:lang="en">${SVC_INFO_EXT}${u}</URI></AdditionalServiceInformation></Extension>`,
    )
    .join("")}</ServiceInformationExtensions>`;
}

function serviceXml(s: DevCaService, issueDate: Date): string {
  const identity = `<ServiceDigitalIdentity><DigitalId><X509Certificate>${b64(s.certificate)}</X509Certificate></DigitalId></ServiceDigitalIdentity>`;
  const grantedFrom = s.grantedFrom ?? new Date(issueDate.getTime() - 30 * DAY);
  const period = (status: string, from: Date, inner: string) =>
    `<ServiceTypeIdentifier>${SERVICE_TYPE_CA_QC}</ServiceTypeIdentifier><ServiceName>${name(s.serviceName)}</ServiceName>${identity}<ServiceStatus>${status}</ServiceStatus><StatusStartingTime>${iso(from)}</StatusStartingTime>${inner}`;
  const info = s.withdrawnAt
    ? period(STATUS_WITHDRAWN, s.withdrawnAt, "")
    : period(STATUS_GRANTED, grantedFrom, extensions(s.qualifiedFor));
  const history = s.withdrawnAt
    ? `<ServiceHistory><ServiceHistoryInstance>${period(STATUS_GRANTED, grantedFrom, extensions(s.qualifiedFor))}</ServiceHistoryInstance></ServiceHistory>`
    : "";
  return `<TSPService><ServiceInformation>${info}</ServiceInformation>${history}</TSPService>`;
}

function pointerXml(territory: string, location: string, signer: TrustedListSigner): string {
  return [
    "<OtherTSLPointer>",
    `<ServiceDigitalIdentities><ServiceDigitalIdentity><DigitalId><X509Certificate>${b64(signer.der)}</X509Certificate></DigitalId></ServiceDigitalIdentity></ServiceDigitalIdentities>`,
    `<TSLLocation>${escapeXml(location)}</TSLLocation>`,
    "<AdditionalInformation>",
    `<OtherInformation><TSLType>${TSL_TYPE}EUgeneric</TSLType></OtherInformation>`,
    `<OtherInformation><SchemeTerritory>${territory}</SchemeTerritory></OtherInformation>`,
    `<OtherInformation><tslx:MimeType xmlns:tslx="${ADDITIONAL_TYPES_NS}">application/vnd.etsi.tsl+xml</tslx:MimeType></OtherInformation>`,
    "</AdditionalInformation>",
    "</OtherTSLPointer>",
  ].join("");
}

/** Signs a TrustServiceStatusList document: enveloped signature appended to the root. */
export function signTrustedList(xml: string, signer: TrustedListSigner, referenceById = false): string {
  const signed = new SignedXml({
    privateKey: signer.keyPem,
    publicCert: signer.pem,
    signatureAlgorithm: "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    canonicalizationAlgorithm: EXC_C14N,
  });
  signed.SignatureAlgorithms = TRUSTED_LIST_ALGORITHMS.signature;
  signed.addReference({
    xpath: "/*",
    transforms: [ENVELOPED, EXC_C14N],
    digestAlgorithm: "http://www.w3.org/2001/04/xmlenc#sha256",
    ...(referenceById ? {} : { uri: "", isEmptyUri: true }),
  });
  signed.computeSignature(xml, { prefix: "ds", location: { reference: "/*", action: "append" } });
  return signed.getSignedXml();
}

function breakSequenceNumber(xml: string): string {
  return xml.replace(/<TSLSequenceNumber>(\d+)</, (_m, n: string) => `<TSLSequenceNumber>${Number(n) + 1}<`);
}

export function buildTrustedLists(o: BuildTrustedListsOptions): DevTrustedLists {
  const territory = o.territory ?? "XX";
  const issueDate = o.issueDate ?? new Date();
  const providers = new Map<string, DevCaService[]>();
  for (const s of o.services) {
    const provider = s.providerName ?? "psd2-gateway Demo QTSP";
    providers.set(provider, [...(providers.get(provider) ?? []), s]);
  }
  const national = [
    `<TrustServiceStatusList xmlns="${TSL_NS}" Id="tsl-${territory}" TSLTag="http://uri.etsi.org/19612/TSLTag">`,
    schemeInformation({
      type: "EUgeneric",
      territory,
      sequenceNumber: o.nationalSequenceNumber ?? 1,
      operator: `${territory} development supervisory body`,
      issueDate,
      nextUpdate: o.nextUpdate,
    }),
    "<TrustServiceProviderList>",
    ...[...providers].map(
      ([provider, services]) =>
        `<TrustServiceProvider><TSPInformation><TSPName>${name(provider)}</TSPName></TSPInformation><TSPServices>${services
          .map((s) => serviceXml(s, issueDate))
          .join("")}</TSPServices></TrustServiceProvider>`,
    ),
    "</TrustServiceProviderList>",
    "</TrustServiceStatusList>",
  ].join("");
  const lotl = [
    `<TrustServiceStatusList xmlns="${TSL_NS}" Id="tsl-EU" TSLTag="http://uri.etsi.org/19612/TSLTag">`,
    schemeInformation({
      type: "EUlistofthelists",
      territory: "EU",
      sequenceNumber: o.lotlSequenceNumber ?? 1,
      operator: "Development list of the lists operator",
      issueDate,
      nextUpdate: o.nextUpdate,
      pointers: `<PointersToOtherTSL>${pointerXml(territory, o.nationalListUrl, o.nationalSigner)}</PointersToOtherTSL>`,
    }),
    "</TrustServiceStatusList>",
  ].join("");
  let lotlXml = signTrustedList(lotl, o.lotlSigner, o.referenceById);
  let nationalXml = signTrustedList(national, o.nationalSigner, o.referenceById);
  if (o.breakSignature === "lotl") lotlXml = breakSequenceNumber(lotlXml);
  if (o.breakSignature === "national") nationalXml = breakSequenceNumber(nationalXml);
  return { lotlXml, nationalXml };
}

/** A self-signed trusted-list signing certificate (RSA 2048) with its key. */
export async function generateTrustedListSigner(
  commonName: string,
  now: number = Date.now(),
): Promise<TrustedListSigner & { privateKey: KeyObject }> {
  const keys = (await webcrypto.subtle.generateKey(RSA, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: `7f${now.toString(16)}`,
    name: `C=XX, O=psd2-gateway Demo Trusted List Operator, CN=${commonName}`,
    notBefore: new Date(now - 365 * DAY),
    notAfter: new Date(now + 3650 * DAY),
    signingAlgorithm: RSA,
    keys: keys as unknown as x509.X509CertificateCreateSelfSignedParams["keys"],
    extensions: [
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation,
        true,
      ),
      // id-tsl-kp-tslSigning (TS 119 612 5.7.1)
      new x509.ExtendedKeyUsageExtension(["0.4.0.2231.3.0"]),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString("base64").replace(/.{1,64}/g, "$&\n")}-----END PRIVATE KEY-----\n`;
  return {
    pem: `${certificate.toString("pem")}\n`,
    keyPem,
    der: new Uint8Array(certificate.rawData),
    privateKey: createPrivateKey(keyPem),
  };
}

export interface WrittenDevTrustedLists {
  readonly lotl: string;
  readonly national: string;
  readonly lotlSigner: string;
}

/**
 * Writes lotl.xml, the national list and the LOTL signer certificate (what a gateway configures)
 * into `dir`, naming the dev PKI's issuing CA as granted for QWACs and QSealCs. The national list
 * is to be served at `nationalListUrl` (a file path works too).
 */
export async function writeDevTrustedLists(
  dir: string,
  /** The dev PKI (pki.ts's DevPki fits): only its issuing CA's certificate is named. */
  pki: { readonly issuingCa: { readonly der: DevCaService["certificate"] } },
  nationalListUrl: string,
  now: number = Date.now(),
): Promise<WrittenDevTrustedLists> {
  const lotlSigner = await generateTrustedListSigner("Demo LOTL signer", now);
  const nationalSigner = await generateTrustedListSigner("Demo XX trusted list signer", now);
  const { lotlXml, nationalXml } = buildTrustedLists({
    lotlSigner,
    nationalSigner,
    nationalListUrl,
    nextUpdate: new Date(now + 180 * DAY),
    issueDate: new Date(now),
    services: [
      {
        serviceName: "Demo Qualified Issuing CA",
        certificate: pki.issuingCa.der,
        qualifiedFor: { qwac: true, qseal: true },
      },
    ],
  });
  mkdirSync(dir, { recursive: true });
  const paths = {
    lotl: join(dir, "lotl.xml"),
    national: join(dir, "tl-xx.xml"),
    lotlSigner: join(dir, "lotl-signer.pem"),
  };
  writeFileSync(paths.lotl, lotlXml);
  writeFileSync(paths.national, nationalXml);
  writeFileSync(paths.lotlSigner, lotlSigner.pem);
  return paths;
}
