/**
 * OCSP (RFC 6960) in the lightweight profile QTSPs serve (RFC 5019): the request for one
 * certificate, and the reading of a response into a status the gateway may rely on — or an
 * OcspError saying why it may not. Pure: the clock, the nonce and the bytes come from the caller;
 * asking the responder is live-revocation.ts's job. Here, not in eidas/, because only the live
 * revocation client speaks OCSP: the eIDAS layer sees its answers as a RevocationStatus.
 *
 * The response is network input: whatever the bytes, readOcspResponse returns an answer or throws
 * an OcspError, never another exception, and its work is bounded (size, certificates, answers and
 * asn1js's depth and node limits) before any signature is checked.
 *
 * ASN.1 goes through @peculiar/asn1-ocsp; the signature is checked over the exact tbsResponseData
 * bytes received, and certificates in the response are read with the gateway's own strict reader
 * from the bytes as received (re-encoding a parsed certificate could change what was signed).
 */

import { createHash } from "node:crypto";
import {
  BasicOCSPResponse,
  CertID,
  id_pkix_ocsp_basic,
  id_pkix_ocsp_nonce,
  OCSPRequest,
  OCSPResponseStatus,
  Request,
  type SingleResponse,
  TBSRequest,
} from "@peculiar/asn1-ocsp";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  AlgorithmIdentifier,
  CRLReasons,
  ExtendedKeyUsage,
  Extension,
  id_ce_extKeyUsage,
  id_kp_OCSPSigning,
} from "@peculiar/asn1-x509";
import {
  children,
  content,
  DerError,
  expectTag,
  readBitString,
  readNode,
  readOid,
  TAG,
  whole,
} from "../../asn1/der.js";
import {
  type ParsedCertificate,
  parseCertificate,
  reportDefect,
  serialKey,
  verifyTbs,
} from "../../eidas/index.js";
import { isRejection } from "../../errors.js";

export type OcspStatus = "good" | "revoked" | "unknown";

export interface OcspAnswer {
  readonly status: OcspStatus;
  readonly thisUpdate: Date;
  /** undefined when the responder gave none: newer information may be available at any time. */
  readonly nextUpdate: Date | undefined;
  readonly producedAt: Date;
  readonly revokedAt?: Date;
  /** The CRLReason name (`keyCompromise`, …) when the responder gave one. */
  readonly revocationReason?: string;
  /** Who signed: the issuing CA itself, or a responder certificate the CA issued for OCSP. */
  readonly signer: "issuer" | "delegated";
}

export interface OcspExpectation {
  readonly certificate: ParsedCertificate;
  readonly issuer: ParsedCertificate;
  readonly now: Date;
  /** The nonce sent in the request; a response carrying a different one is refused. */
  readonly nonce?: Uint8Array;
  /** Tolerance for thisUpdate in the future and nextUpdate in the past; 5 minutes unless set. */
  readonly maxClockSkewMs?: number;
}

/** Everything that keeps a response from proving a status; the message says what. */
export class OcspError extends Error {
  override readonly name = "OcspError";
}

export const OCSP_LIMITS = {
  /** Larger responses are refused unread: RFC 5019 responses are a few KiB. */
  maxResponseBytes: 64 * 1024,
  maxCertificates: 20,
  maxSingleResponses: 100,
} as const;

export const DEFAULT_MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const SHA1 = "1.3.14.3.2.26";
/** CertID hash algorithms accepted in responses; requests use SHA-1 as RFC 5019 requires. */
const CERT_ID_HASHES: Readonly<Record<string, string>> = {
  [SHA1]: "sha1",
  "2.16.840.1.101.3.4.2.1": "sha256",
  "2.16.840.1.101.3.4.2.2": "sha384",
  "2.16.840.1.101.3.4.2.3": "sha512",
};

const DER_NULL = Uint8Array.of(0x05, 0x00).buffer;

// asn1js parses the whole response tree before the schema sees it: cap its depth and node count.
const PARSE_OPTIONS = { berOptions: { maxDepth: 40, maxNodes: 20_000 } };

/** A DER OCSPRequest for one certificate: a SHA-1 CertID (RFC 5019 2.1.1), a nonce extension only when given. */
export function buildOcspRequest(
  certificate: ParsedCertificate,
  issuer: ParsedCertificate,
  options: { readonly nonce?: Uint8Array } = {},
): Uint8Array {
  const keyBits = subjectPublicKeyBits(issuer);
  const certId = new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: SHA1, parameters: DER_NULL }),
    issuerNameHash: new OctetString(digest("sha1", issuer.subjectDer)),
    issuerKeyHash: new OctetString(digest("sha1", keyBits)),
    serialNumber: arrayBuffer(certificate.serial),
  });
  const tbsRequest = new TBSRequest({ requestList: [new Request({ reqCert: certId })] });
  if (options.nonce) {
    // RFC 8954: the extension value is the DER of Nonce ::= OCTET STRING.
    tbsRequest.requestExtensions = [
      new Extension({
        extnID: id_pkix_ocsp_nonce,
        critical: false,
        extnValue: new OctetString(AsnConvert.serialize(new OctetString(arrayBuffer(options.nonce)))),
      }),
    ];
  }
  return new Uint8Array(AsnConvert.serialize(new OCSPRequest({ tbsRequest })));
}

const STATUS_NAMES: Readonly<Record<number, string>> = {
  [OCSPResponseStatus.malformedRequest]: "malformedRequest",
  [OCSPResponseStatus.internalError]: "internalError",
  [OCSPResponseStatus.tryLater]: "tryLater",
  [OCSPResponseStatus.sigRequired]: "sigRequired",
  [OCSPResponseStatus.unauthorized]: "unauthorized",
};

/**
 * Reads a DER OCSPResponse about `expected.certificate`, issued by `expected.issuer`. Returns the
 * status only when the response is signed by the issuer or its delegated OCSP responder, answers
 * for this very certificate, is current at `now` and echoes the nonce (when it carries one).
 * Throws OcspError otherwise; never any other exception.
 */
export function readOcspResponse(der: Uint8Array, expected: OcspExpectation): OcspAnswer {
  try {
    return readResponse(der, expected);
  } catch (error) {
    if (error instanceof OcspError) throw error;
    // Library errors are caught where they are expected; anything else is a bug, still a refusal.
    throw new OcspError(
      `the response cannot be read: the gateway's reader failed on it (${reportDefect("readOcspResponse", error)})`,
    );
  }
}

function readResponse(der: Uint8Array, expected: OcspExpectation): OcspAnswer {
  if (der.length > OCSP_LIMITS.maxResponseBytes) {
    throw new OcspError(
      `the response is ${der.length} bytes, more than the ${OCSP_LIMITS.maxResponseBytes} accepted`,
    );
  }
  requireOneDerElement(der, "the response");
  const envelope = envelopeOf(der);
  if (envelope.status !== OCSPResponseStatus.successful) {
    const name = STATUS_NAMES[envelope.status];
    throw new OcspError(
      name
        ? `the responder answered ${name} (responseStatus ${envelope.status})`
        : `the responder answered an unknown responseStatus ${envelope.status}`,
    );
  }
  if (!envelope.responseBytes) throw new OcspError("the response is successful but holds no responseBytes");
  if (envelope.responseBytes.type !== id_pkix_ocsp_basic) {
    throw new OcspError(
      `the response type is ${printable(envelope.responseBytes.type)}, not id-pkix-ocsp-basic`,
    );
  }
  const basicDer = envelope.responseBytes.response;
  requireOneDerElement(basicDer, "the BasicOCSPResponse");
  const basic = parse(basicDer, BasicOCSPResponse, "a BasicOCSPResponse");
  const data = basic.tbsResponseData;
  if ((basic.certs?.length ?? 0) > OCSP_LIMITS.maxCertificates) {
    throw new OcspError(
      `the response carries ${basic.certs?.length} certificates, more than ${OCSP_LIMITS.maxCertificates}`,
    );
  }
  if (data.responses.length > OCSP_LIMITS.maxSingleResponses) {
    throw new OcspError(
      `the response holds ${data.responses.length} answers, more than ${OCSP_LIMITS.maxSingleResponses}`,
    );
  }
  if (!basic.tbsResponseDataRaw) throw new OcspError("the response's tbsResponseData cannot be located");

  const { issuer, certificate, now } = expected;
  const issuerKeyBits = subjectPublicKeyBits(issuer);
  const signer = responderOf(basic, basicDer, issuer, issuerKeyBits, now);
  const signatureOk = verifyTbs(
    basic.signatureAlgorithm.algorithm,
    new Uint8Array(basic.tbsResponseDataRaw),
    new Uint8Array(basic.signature),
    signer.key.publicKey,
  );
  if (!signatureOk) {
    throw new OcspError(
      `the response signature (${printable(basic.signatureAlgorithm.algorithm)}) does not verify with the key of ${signer.key.subjectRfc2253.slice(0, 200)}`,
    );
  }

  const single = matchingResponse(data.responses, certificate, issuer, issuerKeyBits);
  const skew = expected.maxClockSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS;
  const producedAt = validDate(data.producedAt, "producedAt");
  const thisUpdate = validDate(single.thisUpdate, "thisUpdate");
  const nextUpdate = single.nextUpdate === undefined ? undefined : validDate(single.nextUpdate, "nextUpdate");
  if (thisUpdate.getTime() > now.getTime() + skew) {
    throw new OcspError(
      `the response's thisUpdate ${thisUpdate.toISOString()} is in the future (now ${now.toISOString()})`,
    );
  }
  if (nextUpdate && nextUpdate.getTime() < now.getTime() - skew) {
    throw new OcspError(`the response expired at ${nextUpdate.toISOString()} (now ${now.toISOString()})`);
  }
  if (expected.nonce) checkNonce(data.responseExtensions, expected.nonce);

  const base = { thisUpdate, nextUpdate, producedAt, signer: signer.kind };
  const status = single.certStatus;
  if (status.revoked) {
    const reason = status.revoked.revocationReason?.reason;
    return {
      status: "revoked",
      ...base,
      revokedAt: validDate(status.revoked.revocationTime, "revocationTime"),
      ...(reason === undefined ? {} : { revocationReason: CRLReasons[reason] ?? `reason ${reason}` }),
    };
  }
  if (status.good !== undefined) return { status: "good", ...base };
  if (status.unknown !== undefined) return { status: "unknown", ...base };
  throw new OcspError("the answer's certStatus is none of good, revoked or unknown");
}

interface Signer {
  readonly kind: "issuer" | "delegated";
  readonly key: ParsedCertificate;
}

/**
 * RFC 6960 4.2.2.2: the issuer signs itself, or a responder certificate it issued with
 * id-kp-OCSPSigning does. The responderID says which; any other certificate in `certs` is ignored.
 */
function responderOf(
  basic: BasicOCSPResponse,
  basicDer: Uint8Array,
  issuer: ParsedCertificate,
  issuerKeyBits: Uint8Array,
  now: Date,
): Signer {
  const id = basic.tbsResponseData.responderID;
  const byName = id.byName ? new Uint8Array(AsnConvert.serialize(id.byName)) : undefined;
  const byKey = id.byKey ? new Uint8Array(id.byKey.buffer) : undefined;
  if (!byName && !byKey) throw new OcspError("the responderID is neither byName nor byKey");
  const names = (candidate: ParsedCertificate, keyBits: Uint8Array) =>
    byName ? sameBytes(byName, candidate.subjectDer) : sameBytes(byKey!, digest("sha1", keyBits));
  if (names(issuer, issuerKeyBits)) return { kind: "issuer", key: issuer };

  const named: ParsedCertificate[] = [];
  for (const der of certificatesIn(basicDer)) {
    const candidate = parseCertificate(der, { label: "the OCSP responder certificate" });
    if (!isRejection(candidate) && names(candidate, subjectPublicKeyBits(candidate))) named.push(candidate);
  }
  const who = byName ? "by its name" : "by its key hash";
  if (named.length === 0) {
    throw new OcspError(
      `the response is signed by a responder (named ${who}) that is neither ${issuer.subjectRfc2253.slice(0, 200)} nor a certificate in the response`,
    );
  }
  // Several certificates may carry the responder's name (a renewed one beside the old): the first that qualifies signs.
  let problem = "";
  for (const candidate of named) {
    problem = delegationProblem(candidate, issuer, now);
    if (!problem) return { kind: "delegated", key: candidate };
  }
  throw new OcspError(`the responder certificate ${named[0]!.subjectRfc2253.slice(0, 200)} ${problem}`);
}

/** Why `candidate` may not answer for `issuer`'s certificates; empty when it may. */
function delegationProblem(candidate: ParsedCertificate, issuer: ParsedCertificate, now: Date): string {
  if (!sameBytes(candidate.issuerDer, issuer.subjectDer)) {
    return `was issued by ${candidate.issuerRfc2253.slice(0, 200)}, not by ${issuer.subjectRfc2253.slice(0, 200)}`;
  }
  const { tbs, signature } = signedParts(candidate.der);
  if (!verifyTbs(candidate.signatureAlgorithmOid, tbs, signature, issuer.publicKey)) {
    return `is not signed by ${issuer.subjectRfc2253.slice(0, 200)}`;
  }
  if (!hasOcspSigning(candidate)) {
    return "lacks the id-kp-OCSPSigning extended key usage (1.3.6.1.5.5.7.3.9)";
  }
  if (now < candidate.notBefore || now > candidate.notAfter) {
    return `is not valid at ${now.toISOString()} (${candidate.notBefore.toISOString()} to ${candidate.notAfter.toISOString()})`;
  }
  return "";
}

function hasOcspSigning(certificate: ParsedCertificate): boolean {
  const extension = certificate.extensions.find((e) => e.oid === id_ce_extKeyUsage);
  if (!extension) return false;
  try {
    return AsnConvert.parse(extension.value, ExtendedKeyUsage, PARSE_OPTIONS).includes(id_kp_OCSPSigning);
  } catch {
    return false;
  }
}

/** The certificates of `certs [0] EXPLICIT SEQUENCE OF Certificate`, as the bytes received. */
function certificatesIn(basicDer: Uint8Array): Uint8Array[] {
  try {
    const tagged = children(readNode(basicDer)).find((node) => node.tag === 0xa0);
    const [list] = tagged ? children(tagged) : [];
    if (!list || list.tag !== TAG.SEQUENCE) return [];
    return children(list)
      .slice(0, OCSP_LIMITS.maxCertificates)
      .map((node) => whole(node));
  } catch (error) {
    if (error instanceof DerError) return [];
    throw error;
  }
}

function signedParts(der: Uint8Array): { tbs: Uint8Array; signature: Uint8Array } {
  // parseCertificate has read this certificate already: the three parts are there.
  const [tbs, , signature] = children(readNode(der));
  return { tbs: whole(tbs!), signature: readBitString(signature!).bytes };
}

function matchingResponse(
  responses: readonly SingleResponse[],
  certificate: ParsedCertificate,
  issuer: ParsedCertificate,
  issuerKeyBits: Uint8Array,
): SingleResponse {
  const wanted = serialKey(certificate.serial);
  const hashes = new Map<string, { name: Uint8Array; key: Uint8Array }>();
  for (const single of responses) {
    const id = single.certID;
    const hash = CERT_ID_HASHES[id.hashAlgorithm.algorithm];
    if (!hash || serialKey(new Uint8Array(id.serialNumber)) !== wanted) continue;
    let expected = hashes.get(hash);
    if (!expected) {
      expected = { name: digest(hash, issuer.subjectDer), key: digest(hash, issuerKeyBits) };
      hashes.set(hash, expected);
    }
    if (
      sameBytes(new Uint8Array(id.issuerNameHash.buffer), expected.name) &&
      sameBytes(new Uint8Array(id.issuerKeyHash.buffer), expected.key)
    ) {
      return single;
    }
  }
  throw new OcspError(
    `the response holds no answer for certificate SN=${certificate.serialHex} issued by ${issuer.subjectRfc2253.slice(0, 200)} (${responses.length} answer(s) for other certificates)`,
  );
}

function checkNonce(extensions: readonly Extension[] | undefined, sent: Uint8Array): void {
  const extension = extensions?.find((e) => e.extnID === id_pkix_ocsp_nonce);
  // RFC 5019 responders may ignore the nonce (they serve precomputed responses): absent is allowed.
  if (!extension) return;
  const value = new Uint8Array(extension.extnValue.buffer);
  let inner: Uint8Array | undefined;
  try {
    inner = new Uint8Array(AsnConvert.parse(value, OctetString, PARSE_OPTIONS).buffer);
  } catch {
    inner = undefined;
  }
  // Some responders wrote the nonce bytes without the inner OCTET STRING (before RFC 8954).
  if ((inner && sameBytes(inner, sent)) || sameBytes(value, sent)) return;
  throw new OcspError(
    `the response's nonce ${Buffer.from(inner ?? value)
      .toString("hex")
      .slice(0, 80)} is not the one sent (${Buffer.from(sent).toString("hex").slice(0, 80)})`,
  );
}

/** The contents of the subjectPublicKey BIT STRING: what CertID and byKey hash (RFC 6960 4.1.1). */
function subjectPublicKeyBits(certificate: ParsedCertificate): Uint8Array {
  const [, bits] = children(readNode(certificate.subjectPublicKeyInfo));
  return readBitString(bits!).bytes;
}

function parse<T>(bytes: Uint8Array, type: new () => T, what: string): T {
  try {
    return AsnConvert.parse(bytes, type, PARSE_OPTIONS);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new OcspError(`the bytes are not ${what} (${printable(detail).slice(0, 120)})`);
  }
}

const ENUMERATED = 0x0a;
const CONTEXT_0 = 0xa0;

/**
 * The OCSPResponse envelope (RFC 6960 4.2.1: responseStatus, and ResponseBytes' type and the
 * response it wraps), read with the gateway's DER reader. Stack exception with its measured
 * reason: asn1js decodes an OCTET STRING's content as nested ASN.1, so parsing the envelope with
 * @peculiar/asn1-ocsp decodes the whole BasicOCSPResponse once more (440 µs of a 1 ms read,
 * bench/RESULTS.md "Live trust"). What the response says is read by the library.
 */
function envelopeOf(der: Uint8Array): {
  status: number;
  responseBytes?: { type: string; response: Uint8Array };
} {
  try {
    const fields = children(readNode(der));
    const [statusNode, wrapped] = fields;
    if (!statusNode || statusNode.tag !== ENUMERATED || fields.length > 2)
      throw new OcspError("the bytes are not an OCSPResponse (responseStatus, [0] responseBytes)");
    const status = content(statusNode);
    if (status.length !== 1) throw new OcspError("the responseStatus is not one byte");
    if (!wrapped) return { status: status[0]! };
    const inner = children(expectTag(wrapped, CONTEXT_0, "[0] responseBytes"));
    if (inner.length !== 1) throw new OcspError("[0] responseBytes holds more than ResponseBytes");
    const parts = children(expectTag(inner[0]!, TAG.SEQUENCE, "ResponseBytes"));
    const [typeNode, responseNode] = parts;
    if (!typeNode || !responseNode || parts.length !== 2)
      throw new OcspError("ResponseBytes is not responseType and response");
    return {
      status: status[0]!,
      responseBytes: {
        type: readOid(expectTag(typeNode, TAG.OID, "responseType")),
        // A copy: the library is handed bytes of their own, not a view into the response.
        response: content(expectTag(responseNode, TAG.OCTET_STRING, "response")).slice(),
      },
    };
  } catch (error) {
    if (error instanceof OcspError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new OcspError(`the bytes are not an OCSPResponse (${printable(detail).slice(0, 120)})`);
  }
}

/** asn1js reads BER and ignores trailing bytes; the gateway's reader holds the outer framing to one DER element. */
function requireOneDerElement(bytes: Uint8Array, what: string): void {
  if (bytes.length === 0) throw new OcspError(`${what} is empty`);
  let end: number;
  try {
    const node = readNode(bytes);
    if (node.tag !== TAG.SEQUENCE)
      throw new OcspError(`${what} is not a DER SEQUENCE (tag 0x${node.tag.toString(16)})`);
    end = node.end;
  } catch (error) {
    if (error instanceof OcspError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new OcspError(`${what} is not DER (${printable(detail).slice(0, 120)})`);
  }
  if (end !== bytes.length) throw new OcspError(`${bytes.length - end} bytes follow ${what}`);
}

function validDate(value: unknown, what: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new OcspError(`the response's ${what} is not a valid time`);
  }
  return value;
}

function digest(algorithm: string, bytes: Uint8Array): Uint8Array {
  return createHash(algorithm).update(bytes).digest();
}

/** A fresh ArrayBuffer holding exactly `bytes` (a view's .buffer may be larger, or shared). */
function arrayBuffer(bytes: Uint8Array): ArrayBuffer {
  const out = new ArrayBuffer(bytes.length);
  new Uint8Array(out).set(bytes);
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?");
}
