/**
 * OCSP as the gateway reads it: requests built here, answered by the demo QTSP's responder (an
 * independent writer, packages/dev-pki/src/qtsp/), read back with readOcspResponse. Real keys and signatures: a CA,
 * its delegated responders (with and without id-kp-OCSPSigning, expired), a responder of another
 * CA, generated with @peculiar/x509 at test time.
 */

import "reflect-metadata";
import { createHash, KeyObject, webcrypto } from "node:crypto";
import {
  CertID,
  id_pkix_ocsp_basic,
  OCSPRequest,
  OCSPResponse,
  OCSPResponseStatus,
  Request,
  ResponseBytes,
  TBSRequest,
} from "@peculiar/asn1-ocsp";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import { AlgorithmIdentifier, CRLReasons, SubjectPublicKeyInfo } from "@peculiar/asn1-x509";
import * as x509 from "@peculiar/x509";
import {
  type BuildOcspResponseOptions,
  buildOcspResponse,
  type CertificateStatus,
  ocspErrorResponse,
} from "@psd2-gateway/dev-pki";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type ParsedCertificate, parseCertificate } from "../../../../src/eidas/index.js";
import { isRejection } from "../../../../src/errors.js";
import {
  buildOcspRequest,
  type OcspAnswer,
  OcspError,
  type OcspExpectation,
  readOcspResponse,
} from "../../../../src/trust/formats/ocsp.js";
import { encodeTlvTree, mutateTree, mutationsArbitrary, parseTlv } from "../../../helpers/der-mutation.js";
import { named } from "../../../helpers/named-rows.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const OCSP_SIGNING = "1.3.6.1.5.5.7.3.9";

type Kind = "rsa" | "ec";
const ALGORITHMS = {
  rsa: {
    name: "RSASSA-PKCS1-v1_5",
    hash: "SHA-256",
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  },
  ec: { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" },
} as const;

interface Issued {
  readonly certificate: x509.X509Certificate;
  readonly keys: webcrypto.CryptoKeyPair;
  readonly kind: Kind;
  readonly der: Uint8Array;
  readonly privateKey: KeyObject;
  readonly parsed: ParsedCertificate;
}

let serial = 0x4000;

async function issue(spec: {
  subject: string;
  issuer?: Issued;
  kind?: Kind;
  ca?: boolean;
  eku?: string[];
  notBefore?: Date;
  notAfter?: Date;
  extensions?: x509.Extension[];
}): Promise<Issued> {
  const kind = spec.kind ?? "ec";
  const keys = (await webcrypto.subtle.generateKey(ALGORITHMS[kind], true, [
    "sign",
    "verify",
  ])) as webcrypto.CryptoKeyPair;
  const now = Date.now();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(spec.ca ?? false, undefined, true),
    ...(spec.eku ? [new x509.ExtendedKeyUsageExtension(spec.eku)] : []),
    ...(spec.extensions ?? []),
  ];
  serial += 1;
  const common = {
    serialNumber: `7f${serial.toString(16)}`,
    notBefore: spec.notBefore ?? new Date(now - DAY),
    notAfter: spec.notAfter ?? new Date(now + 365 * DAY),
    extensions,
  };
  const certificate = spec.issuer
    ? await x509.X509CertificateGenerator.create({
        ...common,
        subject: spec.subject,
        issuer: spec.issuer.certificate.subjectName,
        publicKey: keys.publicKey as never,
        signingKey: spec.issuer.keys.privateKey as never,
        signingAlgorithm: ALGORITHMS[spec.issuer.kind],
      })
    : await x509.X509CertificateGenerator.createSelfSigned({
        ...common,
        name: spec.subject,
        keys: keys as never,
        signingAlgorithm: ALGORITHMS[kind],
      });
  const der = new Uint8Array(certificate.rawData);
  const parsed = parseCertificate(der);
  if (isRejection(parsed)) throw new Error(parsed.text);
  return { certificate, keys, kind, der, privateKey: KeyObject.from(keys.privateKey), parsed };
}

interface Pki {
  ca: Issued;
  otherCa: Issued;
  leaf: Issued;
  otherLeaf: Issued;
  responder: Issued;
  responderWithoutEku: Issued;
  responderOfOtherCa: Issued;
  expiredResponder: Issued;
}

let pki: Pki;

beforeAll(async () => {
  const ca = await issue({ subject: "C=NO, O=OCSP Test QTSP, CN=OCSP Test CA", kind: "rsa", ca: true });
  const otherCa = await issue({ subject: "C=XX, O=Other QTSP, CN=Other CA", ca: true });
  const responderName = "C=NO, O=OCSP Test QTSP, CN=OCSP Responder";
  pki = {
    ca,
    otherCa,
    leaf: await issue({ subject: "C=NO, O=Demo TPP, CN=Demo TPP QSealC", issuer: ca }),
    otherLeaf: await issue({ subject: "C=NO, O=Demo TPP, CN=Another QSealC", issuer: ca }),
    responder: await issue({ subject: responderName, issuer: ca, eku: [OCSP_SIGNING] }),
    responderWithoutEku: await issue({ subject: responderName, issuer: ca, eku: ["1.3.6.1.5.5.7.3.2"] }),
    responderOfOtherCa: await issue({ subject: responderName, issuer: otherCa, eku: [OCSP_SIGNING] }),
    expiredResponder: await issue({
      subject: responderName,
      issuer: ca,
      eku: [OCSP_SIGNING],
      notBefore: new Date(Date.now() - 30 * DAY),
      notAfter: new Date(Date.now() - DAY),
    }),
  };
}, 60_000);

const NONCE = Uint8Array.from(Buffer.from("5e1f0a2b3c4d5e6f708192a3b4c5d6e7", "hex"));
const OTHER_NONCE = Uint8Array.from(Buffer.from("00112233445566778899aabbccddeeff", "hex"));
const REVOKED_AT = new Date("2025-03-01T10:00:00Z");

/** A request with a SHA-256 CertID, written here with @peculiar/asn1-ocsp (buildOcspRequest uses SHA-1). */
function sha256Request(certificate: ParsedCertificate, issuer: ParsedCertificate): Uint8Array {
  const hash = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest();
  const spki = AsnConvert.parse(issuer.subjectPublicKeyInfo, SubjectPublicKeyInfo);
  const certId = new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: "2.16.840.1.101.3.4.2.1" }),
    issuerNameHash: new OctetString(hash(issuer.subjectDer)),
    issuerKeyHash: new OctetString(hash(new Uint8Array(spki.subjectPublicKey))),
    serialNumber: Uint8Array.from(certificate.serial).buffer,
  });
  const tbsRequest = new TBSRequest({ requestList: [new Request({ reqCert: certId })] });
  return new Uint8Array(AsnConvert.serialize(new OCSPRequest({ tbsRequest })));
}

interface Scenario {
  /** The request the responder answers; buildOcspRequest(leaf, ca) unless set. */
  readonly request?: (p: Pki) => Uint8Array;
  /** Changes to the responder's options. */
  readonly responder?: (p: Pki, now: number) => Partial<BuildOcspResponseOptions>;
  /** The response bytes outright, instead of asking the responder. */
  readonly response?: (p: Pki, now: number) => Uint8Array;
  /** Changes to what the reader expects. */
  readonly expected?: (p: Pki) => Partial<OcspExpectation>;
}

interface Row extends Scenario {
  readonly name: string;
  readonly answer?: Partial<OcspAnswer>;
  readonly error?: RegExp;
  /** Properties the answer must not have. */
  readonly absent?: readonly (keyof OcspAnswer)[];
}

function respond(row: Scenario, p: Pki, now: number): Uint8Array {
  if (row.response) return row.response(p, now);
  return buildOcspResponse({
    request: row.request ? row.request(p) : buildOcspRequest(p.leaf.parsed, p.ca.parsed),
    ca: { certificate: p.ca.der, privateKey: p.ca.privateKey },
    status: () => ({ status: "good" }),
    thisUpdate: new Date(now - MINUTE),
    nextUpdate: new Date(now + HOUR),
    ...row.responder?.(p, now),
  });
}

function read(row: Scenario, p: Pki, now: number): OcspAnswer {
  return readOcspResponse(respond(row, p, now), {
    certificate: p.leaf.parsed,
    issuer: p.ca.parsed,
    now: new Date(now),
    ...row.expected?.(p),
  });
}

const fixedStatus =
  (answer: CertificateStatus) =>
  (p: Pki): Partial<BuildOcspResponseOptions> => ({
    status: (serialHex) => (serialHex === p.leaf.parsed.serialHex ? answer : { status: "good" }),
  });

const delegated = (which: keyof Pki) => (p: Pki) => ({
  responder: { certificate: p[which].der, privateKey: p[which].privateKey },
});

const errorResponse = (status: number) => () =>
  new Uint8Array(AsnConvert.serialize(new OCSPResponse({ responseStatus: status })));

const ROWS: readonly Row[] = [
  { name: "good, signed by the CA", answer: { status: "good", signer: "issuer" } },
  {
    name: "revoked, with the time and reason",
    responder: fixedStatus({ status: "revoked", revokedAt: REVOKED_AT, reason: CRLReasons.keyCompromise }),
    answer: { status: "revoked", revokedAt: REVOKED_AT, revocationReason: "keyCompromise" },
  },
  {
    name: "revoked without a reason",
    responder: fixedStatus({ status: "revoked", revokedAt: REVOKED_AT }),
    answer: { status: "revoked", revokedAt: REVOKED_AT },
    absent: ["revocationReason"],
  },
  { name: "unknown", responder: fixedStatus({ status: "unknown" }), answer: { status: "unknown" } },
  {
    name: "the CA named by key hash",
    responder: () => ({ responderIdBy: "key" }),
    answer: { status: "good", signer: "issuer" },
  },
  {
    name: "a delegated responder with id-kp-OCSPSigning",
    responder: delegated("responder"),
    answer: { status: "good", signer: "delegated" },
  },
  {
    name: "a delegated responder named by key hash",
    responder: (p) => ({ ...delegated("responder")(p), responderIdBy: "key" }),
    answer: { status: "good", signer: "delegated" },
  },
  {
    name: "a delegated responder without id-kp-OCSPSigning",
    responder: delegated("responderWithoutEku"),
    error: /lacks the id-kp-OCSPSigning extended key usage/,
  },
  {
    name: "a delegated responder issued by another CA",
    responder: delegated("responderOfOtherCa"),
    error: /was issued by .*CN=Other CA.*, not by .*CN=OCSP Test CA/,
  },
  {
    name: "a delegated responder no longer valid",
    responder: delegated("expiredResponder"),
    error: /is not valid at/,
  },
  {
    name: "the CA's name but another key",
    responder: (p) => ({ ca: { certificate: p.ca.der, privateKey: p.otherCa.privateKey } }),
    error: /signature .* does not verify with the key of .*CN=OCSP Test CA/,
  },
  {
    name: "signed by another CA, naming itself",
    responder: (p) => ({ ca: { certificate: p.otherCa.der, privateKey: p.otherCa.privateKey } }),
    error:
      /named by its name\) that is neither CN=OCSP Test CA,O=OCSP Test QTSP,C=NO nor a certificate in the response/,
  },
  {
    name: "an expired response",
    responder: (_p, now) => ({ thisUpdate: new Date(now - 3 * HOUR), nextUpdate: new Date(now - HOUR) }),
    error: /the response expired at/,
  },
  {
    name: "expired within the clock skew",
    responder: (_p, now) => ({ thisUpdate: new Date(now - HOUR), nextUpdate: new Date(now - 2 * MINUTE) }),
    answer: { status: "good" },
  },
  {
    name: "expired beyond a smaller clock skew",
    responder: (_p, now) => ({ thisUpdate: new Date(now - HOUR), nextUpdate: new Date(now - 2 * MINUTE) }),
    expected: () => ({ maxClockSkewMs: MINUTE }),
    error: /the response expired at/,
  },
  {
    name: "thisUpdate in the future",
    responder: (_p, now) => ({ thisUpdate: new Date(now + HOUR), nextUpdate: new Date(now + 2 * HOUR) }),
    error: /thisUpdate .* is in the future/,
  },
  {
    name: "no nextUpdate",
    responder: () => ({ nextUpdate: undefined }),
    answer: { status: "good", nextUpdate: undefined },
  },
  {
    name: "an answer for another serial only",
    request: (p) => buildOcspRequest(p.otherLeaf.parsed, p.ca.parsed),
    error: /no answer for certificate SN=.* \(1 answer\(s\) for other certificates\)/,
  },
  {
    name: "an answer for the same serial from another issuer",
    request: (p) => buildOcspRequest(p.leaf.parsed, p.otherCa.parsed),
    error: /no answer for certificate SN=/,
  },
  {
    name: "a SHA-256 CertID",
    request: (p) => sha256Request(p.leaf.parsed, p.ca.parsed),
    responder: fixedStatus({ status: "revoked", revokedAt: REVOKED_AT }),
    answer: { status: "revoked" },
  },
  {
    name: "the nonce echoed",
    request: (p) => buildOcspRequest(p.leaf.parsed, p.ca.parsed, { nonce: NONCE }),
    expected: () => ({ nonce: NONCE }),
    answer: { status: "good" },
  },
  {
    name: "another nonce echoed",
    request: (p) => buildOcspRequest(p.leaf.parsed, p.ca.parsed, { nonce: OTHER_NONCE }),
    expected: () => ({ nonce: NONCE }),
    error: /nonce 00112233.* is not the one sent \(5e1f0a2b/,
  },
  {
    name: "the nonce not echoed (RFC 5019 precomputed responses)",
    request: (p) => buildOcspRequest(p.leaf.parsed, p.ca.parsed, { nonce: NONCE }),
    responder: () => ({ echoNonce: false }),
    expected: () => ({ nonce: NONCE }),
    answer: { status: "good" },
  },
  {
    name: "malformedRequest",
    response: () => ocspErrorResponse("malformedRequest"),
    error: /answered malformedRequest/,
  },
  {
    name: "internalError",
    response: () => ocspErrorResponse("internalError"),
    error: /answered internalError/,
  },
  { name: "tryLater", response: () => ocspErrorResponse("tryLater"), error: /answered tryLater/ },
  {
    name: "sigRequired",
    response: errorResponse(OCSPResponseStatus.sigRequired),
    error: /answered sigRequired/,
  },
  { name: "unauthorized", response: () => ocspErrorResponse("unauthorized"), error: /answered unauthorized/ },
  { name: "an unknown responseStatus", response: errorResponse(4), error: /unknown responseStatus 4/ },
  {
    name: "successful without responseBytes",
    response: errorResponse(OCSPResponseStatus.successful),
    error: /holds no responseBytes/,
  },
  {
    name: "a response type other than basic",
    response: () =>
      new Uint8Array(
        AsnConvert.serialize(
          new OCSPResponse({
            responseStatus: OCSPResponseStatus.successful,
            responseBytes: new ResponseBytes({ responseType: "1.2.3.4", response: new OctetString(4) }),
          }),
        ),
      ),
    error: /response type is 1\.2\.3\.4, not id-pkix-ocsp-basic/,
  },
  {
    name: "basic, but the bytes inside are not a BasicOCSPResponse",
    response: () =>
      new Uint8Array(
        AsnConvert.serialize(
          new OCSPResponse({
            responseStatus: OCSPResponseStatus.successful,
            responseBytes: new ResponseBytes({
              responseType: id_pkix_ocsp_basic,
              response: new OctetString(Uint8Array.of(0x30, 0x03, 0x02, 0x01, 0x00)),
            }),
          }),
        ),
      ),
    error: /not a BasicOCSPResponse/,
  },
  {
    name: "truncated",
    response: (p, now) => respond({}, p, now).subarray(0, 200),
    error: /the response is not DER/,
  },
  {
    name: "bytes after the response",
    response: (p, now) => Buffer.concat([respond({}, p, now), Uint8Array.of(0)]),
    error: /1 bytes follow the response/,
  },
  { name: "garbage", response: () => Uint8Array.from(Buffer.from("<html>oops</html>")), error: /is not DER/ },
  {
    name: "DER, but not a SEQUENCE",
    response: () => Uint8Array.of(0x02, 0x01, 0x00),
    error: /not a DER SEQUENCE \(tag 0x2\)/,
  },
  { name: "empty", response: () => new Uint8Array(0), error: /the response is empty/ },
  {
    name: "larger than 64 KiB",
    response: () => new Uint8Array(64 * 1024 + 1),
    error: /65537 bytes, more than the 65536 accepted/,
  },
  {
    name: "a SEQUENCE that is no OCSPResponse",
    response: (p) => p.ca.der,
    error: /not an OCSPResponse/,
  },
];

describe("readOcspResponse", () => {
  it.each(named(ROWS))("%s", (_name, row) => {
    const now = Date.now();
    if (row.error) {
      expect(() => read(row, pki, now)).toThrow(OcspError);
      expect(() => read(row, pki, now)).toThrow(row.error);
    } else {
      const answer = read(row, pki, now);
      expect(answer).toMatchObject({ signer: "issuer", ...row.answer });
      for (const key of row.absent ?? []) expect(answer).not.toHaveProperty(key);
      expect(answer.thisUpdate.getTime()).toBeLessThanOrEqual(now);
      expect(answer.producedAt).toBeInstanceOf(Date);
    }
  });

  it("finds the answer for its certificate among several", () => {
    const now = Date.now();
    const request = buildOcspRequest(pki.otherLeaf.parsed, pki.ca.parsed);
    const parsed = AsnConvert.parse(request, OCSPRequest);
    const ours = AsnConvert.parse(buildOcspRequest(pki.leaf.parsed, pki.ca.parsed), OCSPRequest);
    parsed.tbsRequest.requestList.push(...ours.tbsRequest.requestList);
    const answer = read(
      {
        request: () => new Uint8Array(AsnConvert.serialize(parsed)),
        responder: fixedStatus({ status: "revoked", revokedAt: REVOKED_AT }),
      },
      pki,
      now,
    );
    expect(answer.status).toBe("revoked");
  });

  it("reports the times the responder gave", () => {
    const now = Date.now();
    const thisUpdate = new Date(Math.floor((now - 10 * MINUTE) / 1000) * 1000);
    const nextUpdate = new Date(Math.floor((now + 3 * HOUR) / 1000) * 1000);
    const answer = read({ responder: () => ({ thisUpdate, nextUpdate }) }, pki, now);
    expect(answer).toMatchObject({ thisUpdate, nextUpdate, producedAt: thisUpdate });
  });
});

describe("buildOcspRequest", () => {
  it("asks for one certificate with a SHA-1 CertID over the issuer's name and key", () => {
    const request = AsnConvert.parse(buildOcspRequest(pki.leaf.parsed, pki.ca.parsed), OCSPRequest);
    const [single, extra] = request.tbsRequest.requestList;
    expect(extra).toBeUndefined();
    const id = single!.reqCert;
    const sha1 = (bytes: Uint8Array) => createHash("sha1").update(bytes).digest("hex");
    expect(id.hashAlgorithm.algorithm).toBe("1.3.14.3.2.26");
    expect(Buffer.from(id.issuerNameHash.buffer).toString("hex")).toBe(sha1(pki.ca.parsed.subjectDer));
    // The key hash is over the BIT STRING contents, which OpenSSL's `ocsp -issuer` computes too.
    const spki = AsnConvert.parse(pki.ca.parsed.subjectPublicKeyInfo, SubjectPublicKeyInfo);
    expect(Buffer.from(id.issuerKeyHash.buffer).toString("hex")).toBe(
      sha1(new Uint8Array(spki.subjectPublicKey)),
    );
    expect(Buffer.from(id.serialNumber).toString("hex").toUpperCase()).toBe(pki.leaf.parsed.serialHex);
    expect(request.tbsRequest.requestExtensions).toBeUndefined();
  });

  it("carries the nonce as an OCTET STRING when given", () => {
    const request = AsnConvert.parse(
      buildOcspRequest(pki.leaf.parsed, pki.ca.parsed, { nonce: NONCE }),
      OCSPRequest,
    );
    const [nonce] = request.tbsRequest.requestExtensions ?? [];
    expect(nonce?.extnID).toBe("1.3.6.1.5.5.7.48.1.2");
    expect(Buffer.from(nonce!.extnValue.buffer).toString("hex")).toBe(
      `0410${Buffer.from(NONCE).toString("hex")}`,
    );
  });
});

describe("readOcspResponse on hostile bytes", () => {
  const expectAnswerOrOcspError = (bytes: Uint8Array, nonce?: Uint8Array) => {
    try {
      const answer = readOcspResponse(bytes, {
        certificate: pki.leaf.parsed,
        issuer: pki.ca.parsed,
        now: new Date(),
        nonce,
      });
      expect(["good", "revoked", "unknown"]).toContain(answer.status);
    } catch (error) {
      if (!(error instanceof OcspError)) throw error;
      expect(error.message.length).toBeGreaterThan(0);
    }
  };

  it("answers or throws OcspError for arbitrary bytes", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 256 }),
          fc.uint8Array({ maxLength: 64 }).map((tail) => Uint8Array.from([0x30, 0x82, 0x01, 0x00, ...tail])),
        ),
        (bytes) => expectAnswerOrOcspError(bytes),
      ),
      { numRuns: 400 },
    );
  });

  it("answers or throws OcspError for mutated valid responses", () => {
    const now = Date.now();
    const valid = [
      respond({}, pki, now),
      respond({ responder: delegated("responder") }, pki, now),
      respond(
        {
          request: (p) => buildOcspRequest(p.leaf.parsed, p.ca.parsed, { nonce: NONCE }),
          responder: fixedStatus({ status: "revoked", revokedAt: REVOKED_AT, reason: CRLReasons.superseded }),
        },
        pki,
        now,
      ),
    ].map(parseTlv);
    fc.assert(
      fc.property(
        fc.nat({ max: valid.length - 1 }),
        mutationsArbitrary(3),
        fc.boolean(),
        (which, mutations, nonce) =>
          expectAnswerOrOcspError(
            encodeTlvTree(mutateTree(valid[which]!, mutations)),
            nonce ? NONCE : undefined,
          ),
      ),
      { numRuns: 600 },
    );
  });
});
