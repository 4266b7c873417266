/**
 * The demo QTSP's OCSP responder (RFC 6960, RFC 5019 profile): reads an OCSPRequest, answers each
 * CertID with the status a lookup gives, and signs with the CA key or a delegated responder's.
 * Pure: the clock comes in as thisUpdate/nextUpdate, so tests can make stale or future answers.
 *
 * The demo QTSP is a separate system from the gateway: it imports nothing of src/ outside
 * src/qtsp/, so that the gateway's reader is tested against an independent writer.
 */

import { createHash, type KeyObject, sign } from "node:crypto";
import {
  BasicOCSPResponse,
  CertStatus,
  id_pkix_ocsp_basic,
  id_pkix_ocsp_nonce,
  KeyHash,
  OCSPRequest,
  OCSPResponse,
  OCSPResponseStatus,
  ResponderID,
  ResponseBytes,
  ResponseData,
  RevokedInfo,
  SingleResponse,
} from "@peculiar/asn1-ocsp";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  AlgorithmIdentifier,
  Certificate,
  CRLReason,
  type CRLReasons,
  type Extension,
} from "@peculiar/asn1-x509";

export type CertificateStatus =
  | { readonly status: "good" }
  | { readonly status: "revoked"; readonly revokedAt: Date; readonly reason?: CRLReasons }
  | { readonly status: "unknown" };

/**
 * The status of the certificate with this serial: upper-case hex of the serialNumber INTEGER
 * without leading zero octets (`7E01…`), as OpenSSL prints a positive serial.
 */
export type StatusLookup = (serialHex: string) => CertificateStatus;

export interface OcspSigningKey {
  /** DER of the certificate. */
  readonly certificate: Uint8Array;
  readonly privateKey: KeyObject;
}

export interface BuildOcspResponseOptions {
  /** The DER OCSPRequest as received. */
  readonly request: Uint8Array;
  /** The CA whose certificates are answered for; its key signs unless `responder` is given. */
  readonly ca: { readonly certificate: Uint8Array; readonly privateKey?: KeyObject };
  /** A delegated responder (id-kp-OCSPSigning certificate issued by the CA): it signs, its certificate goes in `certs`. */
  readonly responder?: OcspSigningKey;
  readonly status: StatusLookup;
  readonly thisUpdate: Date;
  readonly nextUpdate?: Date;
  /** Defaults to thisUpdate. */
  readonly producedAt?: Date;
  /** Copy the request's nonce into the response (default true). */
  readonly echoNonce?: boolean;
  /** How the responderID names the signer (default byName). */
  readonly responderIdBy?: "name" | "key";
}

export type OcspErrorStatus = "malformedRequest" | "internalError" | "tryLater" | "unauthorized";

/** More CertIDs than this in one request is refused as malformedRequest: RFC 5019 clients ask for one. */
export const MAX_REQUESTED_CERTIFICATES = 100;

const CERT_ID_HASHES: Readonly<Record<string, string>> = {
  "1.3.14.3.2.26": "sha1",
  "2.16.840.1.101.3.4.2.1": "sha256",
  "2.16.840.1.101.3.4.2.2": "sha384",
  "2.16.840.1.101.3.4.2.3": "sha512",
};

const PARSE_OPTIONS = { berOptions: { maxDepth: 32, maxNodes: 5_000 } };

/** An OCSPResponse with only a responseStatus (RFC 6960 4.2.1: no responseBytes unless successful). */
export function ocspErrorResponse(status: OcspErrorStatus): Uint8Array {
  return new Uint8Array(
    AsnConvert.serialize(new OCSPResponse({ responseStatus: OCSPResponseStatus[status] })),
  );
}

/** Parsed once per certificate: a responder answers with the same CA for its whole life. */
const parsedCas = new WeakMap<
  Uint8Array,
  { certificate: Certificate; name: Uint8Array; keyBits: Uint8Array }
>();

function parsedCa(der: Uint8Array): { certificate: Certificate; name: Uint8Array; keyBits: Uint8Array } {
  let parsed = parsedCas.get(der);
  if (!parsed) {
    const certificate = AsnConvert.parse(der, Certificate);
    parsed = {
      certificate,
      name: new Uint8Array(AsnConvert.serialize(certificate.tbsCertificate.subject)),
      keyBits: new Uint8Array(certificate.tbsCertificate.subjectPublicKeyInfo.subjectPublicKey),
    };
    parsedCas.set(der, parsed);
  }
  return parsed;
}

/**
 * The DER OCSPResponse answering `options.request`. A request that cannot be read gets
 * malformedRequest; a CertID naming another issuer (or an unknown hash) gets `unknown`.
 */
export function buildOcspResponse(options: BuildOcspResponseOptions): Uint8Array {
  let request: OCSPRequest;
  try {
    request = AsnConvert.parse(options.request, OCSPRequest, PARSE_OPTIONS);
  } catch {
    return ocspErrorResponse("malformedRequest");
  }
  const requested = request.tbsRequest.requestList;
  if (requested.length === 0 || requested.length > MAX_REQUESTED_CERTIFICATES) {
    return ocspErrorResponse("malformedRequest");
  }

  const { certificate: ca, name: caName, keyBits: caKeyBits } = parsedCa(options.ca.certificate);
  const signer = options.responder
    ? {
        certificate: parsedCa(options.responder.certificate).certificate,
        privateKey: options.responder.privateKey,
      }
    : options.ca.privateKey
      ? { certificate: ca, privateKey: options.ca.privateKey }
      : undefined;
  if (!signer) throw new TypeError("buildOcspResponse needs ca.privateKey or a responder to sign with");

  const thisUpdate = wholeSeconds(options.thisUpdate);
  const nextUpdate = options.nextUpdate && wholeSeconds(options.nextUpdate);
  const responses = requested.map(({ reqCert }) => {
    const hash = CERT_ID_HASHES[reqCert.hashAlgorithm.algorithm];
    const ours =
      hash !== undefined &&
      equal(reqCert.issuerNameHash.buffer, digest(hash, caName)) &&
      equal(reqCert.issuerKeyHash.buffer, digest(hash, caKeyBits));
    const answer: CertificateStatus = ours
      ? options.status(serialHex(reqCert.serialNumber))
      : { status: "unknown" };
    return new SingleResponse({ certID: reqCert, certStatus: certStatus(answer), thisUpdate, nextUpdate });
  });

  const signerTbs = signer.certificate.tbsCertificate;
  const responderID =
    options.responderIdBy === "key"
      ? new ResponderID({
          byKey: new KeyHash(digest("sha1", new Uint8Array(signerTbs.subjectPublicKeyInfo.subjectPublicKey))),
        })
      : new ResponderID({ byName: signerTbs.subject });
  const nonce = request.tbsRequest.requestExtensions?.find((e) => e.extnID === id_pkix_ocsp_nonce);
  const responseExtensions: Extension[] | undefined =
    nonce && options.echoNonce !== false ? [nonce] : undefined;
  const tbsResponseData = new ResponseData({
    responderID,
    producedAt: wholeSeconds(options.producedAt ?? options.thisUpdate),
    responses,
    responseExtensions,
  });

  const tbs = new Uint8Array(AsnConvert.serialize(tbsResponseData));
  const { algorithm, signature } = signTbs(tbs, signer.privateKey);
  const basic = new BasicOCSPResponse({
    tbsResponseData,
    signatureAlgorithm: algorithm,
    signature,
    certs: options.responder ? [signer.certificate] : undefined,
  });
  return new Uint8Array(
    AsnConvert.serialize(
      new OCSPResponse({
        responseStatus: OCSPResponseStatus.successful,
        responseBytes: new ResponseBytes({
          responseType: id_pkix_ocsp_basic,
          response: new OctetString(AsnConvert.serialize(basic)),
        }),
      }),
    ),
  );
}

function certStatus(answer: CertificateStatus): CertStatus {
  switch (answer.status) {
    case "good":
      return new CertStatus({ good: null });
    case "unknown":
      return new CertStatus({ unknown: null });
    case "revoked":
      return new CertStatus({
        revoked: new RevokedInfo({
          revocationTime: wholeSeconds(answer.revokedAt),
          revocationReason: answer.reason === undefined ? undefined : new CRLReason(answer.reason),
        }),
      });
  }
}

const DER_NULL = Uint8Array.of(0x05, 0x00).buffer;

/** sha256WithRSAEncryption for RSA keys, ecdsa-with-SHA256 for EC keys: what verifiers everywhere take. */
function signTbs(
  tbs: Uint8Array,
  key: KeyObject,
): { algorithm: AlgorithmIdentifier; signature: ArrayBuffer } {
  const signature = sign("sha256", tbs, key);
  const algorithm =
    key.asymmetricKeyType === "ec"
      ? new AlgorithmIdentifier({ algorithm: "1.2.840.10045.4.3.2" })
      : new AlgorithmIdentifier({ algorithm: "1.2.840.113549.1.1.11", parameters: DER_NULL });
  return { algorithm, signature: toArrayBuffer(signature) };
}

function serialHex(serial: ArrayBuffer): string {
  const bytes = new Uint8Array(serial);
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  return Buffer.from(bytes.subarray(i)).toString("hex").toUpperCase();
}

// GeneralizedTime without fractions (RFC 5280 4.1.2.5.2 style; some verifiers refuse them).
function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

function digest(algorithm: string, bytes: Uint8Array): Uint8Array {
  return createHash(algorithm).update(bytes).digest();
}

function equal(a: ArrayBuffer, b: Uint8Array): boolean {
  return Buffer.from(a).equals(b);
}

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  const out = new ArrayBuffer(bytes.length);
  new Uint8Array(out).set(bytes);
  return out;
}
