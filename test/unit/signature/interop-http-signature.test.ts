/**
 * Interop both ways with an independent implementation, joyent's http-signature 1.4, over real
 * HTTP on loopback: (a) http-signature signs a real http.request and our verifyRequestSignature
 * judges it on the server; (b) our RequestSigner signs and http-signature's parseRequest +
 * verifySignature judge it, with the public key taken from the TPP-Signature-Certificate sent.
 */

import { createHash, X509Certificate } from "node:crypto";
import type { ClientRequest } from "node:http";
import httpSignature from "http-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRejection, type Rejection } from "../../../src/errors.js";
import {
  checkDate,
  headerValue,
  RequestSigner,
  type RequestToSign,
  verifyDigest,
  verifyRequestSignature,
} from "../../../src/signature/index.js";
import {
  type LoopbackServer,
  type ReceivedRequest,
  sendRequest,
  startLoopbackServer,
  type Verdict,
} from "../../helpers/loopback-http.js";
import { type ThrowawayTpp, throwawayTpp } from "../../helpers/throwaway-tpp.js";

/** Computed with node:crypto directly, not with the library under test. */
function sha256DigestHeader(body: string | Buffer): string {
  return `SHA-256=${createHash("sha256").update(body).digest("base64")}`;
}

function refused(rejection: Rejection): Verdict {
  return { status: 401, body: { code: rejection.code, text: rejection.text } };
}

let tpp: ThrowawayTpp;

beforeAll(async () => {
  tpp = await throwawayTpp();
});

// ---------------------------------------------------------------------------------------------

describe("(a) signed by http-signature, verified by our library", () => {
  let server: LoopbackServer;
  let requireHeadersParameter = true;

  /**
   * What an ingress does: the whole signature check with the coverage rule at its default (every
   * eligible header present must be signed), then Digest and Date. The keyId rule is off:
   * http-signature's keyId is an opaque name, not SN=…,CA=….
   */
  function ourVerdict({ message, body }: ReceivedRequest): Verdict {
    const request = { method: message.method ?? "", target: message.url ?? "", headers: message.headers };
    const params = verifyRequestSignature(request, {
      publicKey: tpp.publicKey,
      algorithms: ["rsa-sha256"],
      requireHeaders: requireHeadersParameter,
    });
    if (isRejection(params)) return refused(params);
    const digest = headerValue(message.headers, "digest");
    if (digest !== undefined) {
      const digestOk = verifyDigest(digest, body);
      if (digestOk !== true) return refused(digestOk);
    }
    const date = checkDate(headerValue(message.headers, "date"), Date.now());
    if (isRejection(date)) return refused(date);
    return { status: 200, body: { keyId: params.keyId, signed: params.headers, target: request.target } };
  }

  beforeAll(async () => {
    server = await startLoopbackServer(ourVerdict);
  });
  afterAll(() => server.close());

  function signWith(headers?: string[]) {
    return (request: ClientRequest) => {
      httpSignature.sign(request, {
        keyId: "interop-client-1",
        key: tpp.privateKeyPem,
        algorithm: "rsa-sha256",
        authorizationHeaderName: "Signature",
        ...(headers ? { headers } : {}),
      });
    };
  }

  it("GET with (request-target) carrying a query string, host, date and x-request-id", async () => {
    const path = "/v1/accounts?withBalance=true&iban=NO93%208601%201117947&x=%2F";
    const response = await sendRequest(
      server.port,
      { method: "GET", path, headers: { "X-Request-ID": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721" } },
      signWith(["(request-target)", "host", "date", "x-request-id"]),
    );
    expect(response.body).toEqual({
      keyId: "interop-client-1",
      signed: ["(request-target)", "host", "date", "x-request-id"],
      target: path,
    });
    expect(response.status).toBe(200);
  });

  it("POST with a JSON body, Digest and every eligible header signed", async () => {
    const body = JSON.stringify({
      instructedAmount: { currency: "NOK", amount: "123.50" },
      creditorName: "Ærlig Øl AS",
    });
    const signed = ["(request-target)", "date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"];
    const response = await sendRequest(
      server.port,
      {
        method: "POST",
        path: "/v1/payments/sepa-credit-transfers",
        headers: {
          "Content-Type": "application/json",
          Digest: sha256DigestHeader(body),
          "X-Request-ID": "0ee25bf1-4d8d-4b6b-9f38-a86b9d2d1f19",
          "PSU-ID": "PSU-1234",
          "TPP-Redirect-URI": "https://tpp.example/redirect?state=a%20b",
        },
        body,
      },
      signWith(signed),
    );
    expect(response.body).toMatchObject({ signed });
    expect(response.status).toBe(200);
  });

  it("a header list written in mixed case (http-signature writes it as given; we lower-case it)", async () => {
    const response = await sendRequest(
      server.port,
      { method: "DELETE", path: "/v1/consents/abc", headers: { "X-Request-ID": "id-1", "PSU-ID": "PSU-9" } },
      signWith(["Date", "X-Request-ID", "PSU-ID", "(request-target)"]),
    );
    expect(response.body).toMatchObject({ signed: ["date", "x-request-id", "psu-id", "(request-target)"] });
    expect(response.status).toBe(200);
  });

  it("http-signature's default (date only, no headers parameter): refused by the Berlin Group parser, accepted as plain draft-cavage", async () => {
    const strict = await sendRequest(server.port, { method: "GET", path: "/v1/accounts" }, signWith());
    expect(strict.status).toBe(401);
    expect(String(strict.body.text)).toContain("has no 'headers' parameter");

    requireHeadersParameter = false;
    try {
      const lenient = await sendRequest(server.port, { method: "GET", path: "/v1/accounts" }, signWith());
      expect(lenient.body).toMatchObject({ signed: ["date"] });
      expect(lenient.status).toBe(200);
    } finally {
      requireHeadersParameter = true;
    }
  });

  it("refuses a request whose signed PSU-ID was changed after signing", async () => {
    const response = await sendRequest(
      server.port,
      { method: "GET", path: "/v1/accounts", headers: { "X-Request-ID": "id-2", "PSU-ID": "alice" } },
      (request) => {
        signWith(["(request-target)", "date", "x-request-id", "psu-id"])(request);
        request.setHeader("PSU-ID", "mallory");
      },
    );
    expect(response.status).toBe(401);
    expect(response.body.code).toBe("SIGNATURE_INVALID");
    expect(String(response.body.text)).toContain("does not verify");
  });

  it("refuses a request that carries an eligible header the signature leaves out (coverage rule)", async () => {
    const response = await sendRequest(
      server.port,
      { method: "GET", path: "/v1/accounts", headers: { "X-Request-ID": "id-3", "PSU-ID": "alice" } },
      signWith(["(request-target)", "date", "x-request-id"]),
    );
    expect(response.status).toBe(401);
    expect(String(response.body.text)).toContain("psu-id header that the signature does not cover");
  });

  it("refuses a body that does not match the signed Digest", async () => {
    const response = await sendRequest(
      server.port,
      {
        method: "POST",
        path: "/v1/payments",
        headers: { Digest: sha256DigestHeader('{"amount":"1"}'), "X-Request-ID": "id-4" },
        body: '{"amount":"1000"}',
      },
      signWith(["(request-target)", "date", "digest", "x-request-id"]),
    );
    expect(response.status).toBe(401);
    expect(String(response.body.text)).toContain("but the 17-byte body hashes to");
  });
});

// ---------------------------------------------------------------------------------------------

describe("(b) signed by our RequestSigner, verified by http-signature", () => {
  let server: LoopbackServer;
  let signer: RequestSigner;

  /**
   * http-signature's server side: parse (requiring date, digest and x-request-id to be signed),
   * take the public key from the certificate the request carries (Node's X509Certificate, not our
   * DER reader), verify, and check the Digest with node:crypto.
   */
  function theirVerdict({ message, body }: ReceivedRequest): Verdict {
    let parsed: ReturnType<typeof httpSignature.parseRequest>;
    try {
      parsed = httpSignature.parseRequest(message, {
        algorithms: ["rsa-sha256"],
        headers: ["date", "digest", "x-request-id"],
      });
    } catch (error) {
      return {
        status: 400,
        body: { error: error instanceof Error ? `${error.name}: ${error.message}` : "?" },
      };
    }
    const certificateBase64 = headerValue(message.headers, "tpp-signature-certificate") ?? "";
    const certificate = new X509Certificate(Buffer.from(certificateBase64, "base64"));
    const publicKeyPem = certificate.publicKey.export({ format: "pem", type: "spki" }).toString();
    const signatureOk = httpSignature.verifySignature(parsed, publicKeyPem);
    const digestOk = headerValue(message.headers, "digest") === sha256DigestHeader(body);
    return {
      status: signatureOk && digestOk ? 200 : 401,
      body: { signatureOk, digestOk, keyId: parsed.keyId, signed: parsed.params.headers },
    };
  }

  beforeAll(async () => {
    server = await startLoopbackServer(theirVerdict);
    signer = new RequestSigner({ privateKey: tpp.privateKey, certificate: tpp.certificateDer });
  });
  afterAll(() => server.close());

  /** Signs `request` with our signer and sends it as signed; `tamper` may change it afterwards. */
  async function signAndSend(
    request: RequestToSign,
    options: { signer?: RequestSigner; tamper?: (r: ClientRequest) => void; sendPath?: string } = {},
  ) {
    const added = await (options.signer ?? signer).sign(request);
    return sendRequest(
      server.port,
      {
        method: request.method,
        path: options.sendPath ?? request.target,
        headers: { ...request.headers, ...added },
        ...(request.body !== undefined ? { body: Buffer.from(request.body) } : {}),
      },
      options.tamper,
    );
  }

  it("GET with a query string in (request-target) and a PSU-ID", async () => {
    const response = await signAndSend({
      method: "GET",
      target: "/v1/accounts/3dc3d5b3/transactions?bookingStatus=booked&dateFrom=2024-01-01&q=%C3%A6",
      headers: { "PSU-ID": "PSU-1234", Accept: "application/json" },
    });
    expect(response.body).toEqual({
      signatureOk: true,
      digestOk: true,
      keyId: signer.keyId,
      signed: ["(request-target)", "date", "digest", "x-request-id", "psu-id"],
    });
    // keyId as SPEC 5.3 spells it, checked against OpenSSL's view of the certificate (RFC 2253 reverses DER order).
    const openssl = new X509Certificate(tpp.certificateDer);
    expect(signer.keyId).toBe(
      `SN=${openssl.serialNumber},CA=${openssl.issuer.split("\n").reverse().join(",")}`,
    );
    expect(response.status).toBe(200);
  });

  it("POST with a body: Digest, PSU-ID, PSU-Corporate-ID and TPP-Redirect-URI all signed", async () => {
    const response = await signAndSend({
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      headers: {
        "Content-Type": "application/json",
        "PSU-ID": "PSU-1234",
        "PSU-Corporate-ID": "NO-987654321",
        "TPP-Redirect-URI": "https://tpp.example/cb?x=1",
      },
      body: JSON.stringify({
        instructedAmount: { currency: "NOK", amount: "10.00" },
        remittance: "Blåbærsyltetøy",
      }),
    });
    expect(response.body).toMatchObject({
      signatureOk: true,
      digestOk: true,
      signed: [
        "(request-target)",
        "date",
        "digest",
        "x-request-id",
        "psu-id",
        "psu-corporate-id",
        "tpp-redirect-uri",
      ],
    });
    expect(response.status).toBe(200);
  });

  it("without (request-target), keeping the caller's X-Request-ID and Date", async () => {
    const withoutTarget = new RequestSigner({
      privateKey: tpp.privateKey,
      certificate: tpp.certificateDer,
      signRequestTarget: false,
    });
    const date = new Date(Math.floor(Date.now() / 1000) * 1000).toUTCString();
    const response = await signAndSend(
      {
        method: "PUT",
        target: "/v1/signing-baskets/7",
        headers: { "x-request-id": "caller-chosen-id", date },
        body: "{}",
      },
      { signer: withoutTarget },
    );
    expect(response.body).toMatchObject({ signatureOk: true, signed: ["date", "digest", "x-request-id"] });
    expect(response.status).toBe(200);
  });

  it("refuses a request whose signed PSU-ID was changed after signing", async () => {
    const response = await signAndSend(
      { method: "GET", target: "/v1/accounts", headers: { "PSU-ID": "alice" } },
      { tamper: (request) => request.setHeader("PSU-ID", "mallory") },
    );
    expect(response.body).toMatchObject({ signatureOk: false, digestOk: true });
    expect(response.status).toBe(401);
  });

  it("refuses a request sent to another query string than the one signed", async () => {
    const response = await signAndSend(
      { method: "GET", target: "/v1/accounts?withBalance=false" },
      { sendPath: "/v1/accounts?withBalance=true" },
    );
    expect(response.body).toMatchObject({ signatureOk: false });
    expect(response.status).toBe(401);
  });
});
