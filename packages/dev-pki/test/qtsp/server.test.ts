/**
 * The demo QTSP over real HTTP on loopback: OCSP by POST and by GET (RFC 5019), answers read back
 * with the gateway's readOcspResponse, and documents (CRLs, trusted lists) revalidated with ETag
 * and Last-Modified. Real certificates generated with @peculiar/x509 at test time.
 */

import "reflect-metadata";
import { KeyObject, webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ParsedCertificate, parseCertificate } from "../../../../src/eidas/index.js";
import { isRejection } from "../../../../src/errors.js";
import { buildOcspRequest, type OcspAnswer, readOcspResponse } from "../../../../src/trust/formats/ocsp.js";
import { named } from "../../../../test/helpers/named-rows.js";
import type { CertificateStatus } from "../../src/qtsp/ocsp-responder.js";
import { type QtspServer, startQtspServer } from "../../src/qtsp/server.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY = 86_400_000;
const REVOKED_AT = new Date("2025-06-01T08:00:00Z");

interface Issued {
  readonly certificate: x509.X509Certificate;
  readonly keys: webcrypto.CryptoKeyPair;
  readonly parsed: ParsedCertificate;
  readonly pem: string;
  readonly keyPem: string;
}

let serial = 0x5100;

async function issue(subject: string, issuer?: Issued, extensions: x509.Extension[] = []): Promise<Issued> {
  const keys = (await webcrypto.subtle.generateKey(EC, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  serial += 1;
  const common = {
    serialNumber: `6e${serial.toString(16)}`,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    signingAlgorithm: EC,
    extensions: [new x509.BasicConstraintsExtension(!issuer, undefined, true), ...extensions],
  };
  const certificate = issuer
    ? await x509.X509CertificateGenerator.create({
        ...common,
        subject,
        issuer: issuer.certificate.subjectName,
        publicKey: keys.publicKey as never,
        signingKey: issuer.keys.privateKey as never,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({ ...common, name: subject, keys: keys as never });
  const parsed = parseCertificate(new Uint8Array(certificate.rawData));
  if (isRejection(parsed)) throw new Error(parsed.text);
  const keyPem = KeyObject.from(keys.privateKey).export({ type: "pkcs8", format: "pem" }).toString();
  return { certificate, keys, parsed, pem: certificate.toString("pem"), keyPem };
}

let ca: Issued;
let responder: Issued;
let good: Issued;
let revoked: Issued;
let server: QtspServer;
let delegatedServer: QtspServer;
let crlBytes = Uint8Array.from(Buffer.from("first CRL"));

const status = (serialHex: string): CertificateStatus => {
  if (serialHex === "DEAD") throw new Error("the status database is down");
  return serialHex === revoked.parsed.serialHex
    ? { status: "revoked", revokedAt: REVOKED_AT }
    : { status: "good" };
};

beforeAll(async () => {
  ca = await issue("C=NO, O=Demo QTSP, CN=Demo Issuing CA");
  responder = await issue("C=NO, O=Demo QTSP, CN=Demo OCSP Responder", ca, [
    new x509.ExtendedKeyUsageExtension(["1.3.6.1.5.5.7.3.9"]),
  ]);
  good = await issue("C=NO, O=Demo TPP, CN=Good QSealC", ca);
  revoked = await issue("C=NO, O=Demo TPP, CN=Revoked QSealC", ca);
  const caKeys = { certificatePem: ca.pem, privateKeyPem: ca.keyPem };
  server = await startQtspServer({
    ca: caKeys,
    status,
    documents: new Map([
      ["/crl/issuing-ca.crl", { body: () => crlBytes, contentType: "application/pkix-crl" }],
      ["/tsl/NO.xml", { body: Buffer.from("<TrustServiceStatusList/>"), contentType: "application/xml" }],
    ]),
  });
  delegatedServer = await startQtspServer({
    ca: caKeys,
    responder: { certificatePem: responder.pem, privateKeyPem: responder.keyPem },
    status,
  });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await delegatedServer?.close();
});

function read(body: Uint8Array, certificate: Issued, nonce?: Uint8Array): OcspAnswer {
  return readOcspResponse(body, {
    certificate: certificate.parsed,
    issuer: ca.parsed,
    now: new Date(),
    nonce,
  });
}

async function post(url: string, body: Uint8Array) {
  const response = await request(`${url}/ocsp`, {
    method: "POST",
    headers: { "content-type": "application/ocsp-request" },
    body,
  });
  return { ...response, bytes: new Uint8Array(await response.body.arrayBuffer()) };
}

async function get(url: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") {
  const response = await request(url, { method, headers });
  return { ...response, bytes: new Uint8Array(await response.body.arrayBuffer()) };
}

describe("QTSP OCSP responder over HTTP", () => {
  it("answers a POST, signed by the CA", async () => {
    const nonce = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const response = await post(server.url, buildOcspRequest(good.parsed, ca.parsed, { nonce }));
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/ocsp-response");
    expect(read(response.bytes, good, nonce)).toMatchObject({ status: "good", signer: "issuer" });
  });

  it("with answerReuseMs serves the answer it made for the same request again; without, signs anew", async () => {
    const reusing = await startQtspServer({
      ca: { certificatePem: ca.pem, privateKeyPem: ca.keyPem },
      status,
      answerReuseMs: 60_000,
    });
    try {
      const body = buildOcspRequest(good.parsed, ca.parsed);
      const [first, second] = [await post(reusing.url, body), await post(reusing.url, body)];
      expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
      expect(read(second.bytes, good)).toMatchObject({ status: "good" });
      expect(reusing.stats.ocspRequests).toBe(2);
      const other = await post(reusing.url, buildOcspRequest(revoked.parsed, ca.parsed));
      expect(read(other.bytes, revoked).status).toBe("revoked");
    } finally {
      await reusing.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 1100)); // thisUpdate is in whole seconds
    const body = buildOcspRequest(good.parsed, ca.parsed);
    const a = await post(server.url, body);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const b = await post(server.url, body);
    expect(Buffer.from(a.bytes).equals(Buffer.from(b.bytes))).toBe(false);
  });

  it("answers a GET with the request in base64url, cacheable until nextUpdate", async () => {
    const encoded = Buffer.from(buildOcspRequest(revoked.parsed, ca.parsed)).toString("base64url");
    const response = await get(`${server.url}/ocsp/${encoded}`);
    expect(response.statusCode).toBe(200);
    expect(response.headers["cache-control"]).toMatch(/^max-age=3600, public/);
    expect(read(response.bytes, revoked)).toMatchObject({ status: "revoked", revokedAt: REVOKED_AT });
  });

  it("answers a GET with the request percent-encoded base64 (RFC 6960 A.1)", async () => {
    // A nonce that puts '+' or '/' into the base64, so that percent-encoding matters.
    let base64 = "";
    for (let i = 0; !/[+/]/.test(base64); i++) {
      base64 = Buffer.from(
        buildOcspRequest(good.parsed, ca.parsed, { nonce: Uint8Array.of(i, 0xfb, 0xff) }),
      ).toString("base64");
    }
    const response = await get(`${server.url}/ocsp/${encodeURIComponent(base64)}`);
    expect(read(response.bytes, good)).toMatchObject({ status: "good" });
  });

  it("signs with the delegated responder when it has one", async () => {
    const response = await post(delegatedServer.url, buildOcspRequest(revoked.parsed, ca.parsed));
    expect(read(response.bytes, revoked)).toMatchObject({ status: "revoked", signer: "delegated" });
  });

  it("answers malformedRequest to bytes that are no OCSPRequest, by POST and by GET", async () => {
    const posted = await post(server.url, Uint8Array.from(Buffer.from("not an OCSP request")));
    expect(posted.statusCode).toBe(200);
    expect(() => read(posted.bytes, good)).toThrow(/answered malformedRequest/);
    for (const path of ["/ocsp/%%%", "/ocsp/", "/ocsp/bm90IGFuIE9DU1AgcmVxdWVzdA"]) {
      const fetched = await get(`${server.url}${path}`);
      expect(() => read(fetched.bytes, good), path).toThrow(/answered malformedRequest/);
    }
  });

  it("answers internalError when the status lookup fails", async () => {
    const broken = { ...good, parsed: { ...good.parsed, serial: Uint8Array.of(0xde, 0xad) } };
    const response = await post(server.url, buildOcspRequest(broken.parsed, ca.parsed));
    expect(() => read(response.bytes, broken)).toThrow(/answered internalError/);
  });

  it("refuses a request body over 16 KiB with 413", async () => {
    const response = await post(server.url, new Uint8Array(16 * 1024 + 1));
    expect(response.statusCode).toBe(413);
  });
});

interface ConditionalRow {
  readonly name: string;
  readonly headers: (etag: string, lastModified: string) => Record<string, string>;
  readonly status: 200 | 304;
}

const CONDITIONAL: readonly ConditionalRow[] = [
  { name: "no validators", headers: () => ({}), status: 200 },
  { name: "If-None-Match with the ETag", headers: (etag) => ({ "if-none-match": etag }), status: 304 },
  {
    name: "If-None-Match listing it as a weak tag among others",
    headers: (etag) => ({ "if-none-match": `"other", W/${etag}` }),
    status: 304,
  },
  { name: "If-None-Match: *", headers: () => ({ "if-none-match": "*" }), status: 304 },
  { name: "If-None-Match with another ETag", headers: () => ({ "if-none-match": '"other"' }), status: 200 },
  {
    name: "If-Modified-Since Last-Modified",
    headers: (_e, lm) => ({ "if-modified-since": lm }),
    status: 304,
  },
  {
    name: "If-Modified-Since an hour earlier",
    headers: (_e, lm) => ({ "if-modified-since": new Date(Date.parse(lm) - 3_600_000).toUTCString() }),
    status: 200,
  },
  {
    name: "If-None-Match decides over If-Modified-Since",
    headers: (_e, lm) => ({ "if-none-match": '"other"', "if-modified-since": lm }),
    status: 200,
  },
  {
    name: "an unreadable If-Modified-Since",
    headers: () => ({ "if-modified-since": "yesterday" }),
    status: 200,
  },
];

describe("QTSP documents over HTTP", () => {
  const url = () => `${server.url}/tsl/NO.xml`;

  it("serves a document with a strong SHA-256 ETag and Last-Modified", async () => {
    const response = await get(url());
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/xml");
    expect(Buffer.from(response.bytes).toString()).toBe("<TrustServiceStatusList/>");
    expect(response.headers.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(Date.parse(String(response.headers["last-modified"]))).toBeLessThanOrEqual(Date.now());
  });

  it.each(named(CONDITIONAL))("%s", async (_name, row) => {
    const first = await get(url());
    const etag = String(first.headers.etag);
    const response = await get(url(), row.headers(etag, String(first.headers["last-modified"])));
    expect(response.statusCode).toBe(row.status);
    expect(response.headers.etag).toBe(etag);
    expect(response.bytes.length).toBe(row.status === 304 ? 0 : first.bytes.length);
  });

  it("gives a new ETag when the bytes behind a document change, and when it is replaced", async () => {
    const crlUrl = `${server.url}/crl/issuing-ca.crl`;
    const first = await get(crlUrl);
    crlBytes = Uint8Array.from(Buffer.from("second CRL"));
    const second = await get(crlUrl, { "if-none-match": String(first.headers.etag) });
    expect(second.statusCode).toBe(200);
    expect(Buffer.from(second.bytes).toString()).toBe("second CRL");
    expect(second.headers.etag).not.toBe(first.headers.etag);

    server.setDocument("/crl/issuing-ca.crl", {
      body: Buffer.from("third CRL"),
      contentType: "application/pkix-crl",
    });
    const third = await get(crlUrl, { "if-none-match": String(second.headers.etag) });
    expect(Buffer.from(third.bytes).toString()).toBe("third CRL");
  });

  it("answers HEAD without a body, 404 for unknown paths, 405 for other methods, and counts", async () => {
    const before = { ...server.stats };
    const head = await get(url(), {}, "HEAD");
    expect(head.statusCode).toBe(200);
    expect(head.bytes.length).toBe(0);
    expect(Number(head.headers["content-length"])).toBe("<TrustServiceStatusList/>".length);
    expect((await get(`${server.url}/nothing-here`)).statusCode).toBe(404);
    const put = await request(url(), { method: "PUT", body: "x" });
    await put.body.dump();
    expect(put.statusCode).toBe(405);
    await post(server.url, buildOcspRequest(good.parsed, ca.parsed));
    expect(server.stats).toEqual({
      ocspRequests: before.ocspRequests + 1,
      documentRequests: before.documentRequests + 1,
    });
  });
});
