/**
 * Every refusal of the ingress checks, end to end over TLS: the status (400 in the `spec` profile,
 * 401 for certificate/signature/role failures in `berlin-group`), the Berlin Group body, the echoed
 * X-Request-ID, a text that says what to fix, and a backend that never saw the request. Then
 * malformed HTTP, which must never crash the gateway or answer 500.
 */

import { createHash, randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { IssuedCertificate } from "../../src/cli/dev-pki.js";
import {
  buildKeyId,
  computeDigestHeader,
  formatHttpDate,
  keyIdTargetFromDer,
} from "../../src/signature/index.js";
import {
  type CallResult,
  expectRejected,
  prepareSignedCall,
  rawExchange,
  rawHead,
  type SignedCall,
  send,
  signedCall,
  signManually,
  startTestGateway,
  type TestGateway,
} from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
const PAYMENT_BODY = JSON.stringify({
  instructedAmount: { amount: "125.50", currency: "NOK" },
  creditorName: "Kari Nordmann",
  creditorAccount: { bban: "12345678903" },
});
const EMPTY_SHA256 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

/** Signs and sends the call; returns the response and the X-Request-ID that went out (if any). */
async function attempt(
  gw: TestGateway,
  call: SignedCall,
): Promise<{ r: CallResult; requestId: string | undefined }> {
  const prepared = await prepareSignedCall(call);
  const r = await send(gw, prepared.method, prepared.target, prepared.headers, prepared.body);
  return { r, requestId: prepared.headers["X-Request-ID"] };
}

function without(headers: Record<string, string>, ...names: string[]): Record<string, string> {
  const out = { ...headers };
  for (const name of names) delete out[name];
  return out;
}

/** Replaces one parameter of a (not MIME-encoded) Signature header. */
function withSignatureParam(
  headers: Record<string, string>,
  param: string,
  value: string,
): Record<string, string> {
  const re = new RegExp(`${param}="[^"]*"`);
  expect(headers.Signature).toMatch(re);
  return { ...headers, Signature: headers.Signature!.replace(re, `${param}="${value}"`) };
}

describe("ingress rejections, spec profile (400)", () => {
  let backend: RecordingBackend;
  let gw: TestGateway;
  let tppA: IssuedCertificate;
  let tppB: IssuedCertificate;

  beforeAll(async () => {
    backend = await startRecordingBackend();
    gw = await startTestGateway({ backendUrl: backend.url });
    tppA = gw.pki.tppA.qseal;
    tppB = gw.pki.tppB.qseal;
  });
  afterAll(async () => {
    await gw?.close();
    await backend?.close();
  });
  beforeEach(() => backend.reset());

  /** The rejected request must not have reached the backend at all. */
  const nothingForwarded = () => expect(backend.requests).toHaveLength(0);

  it("control: a well-signed GET and POST are forwarded (so every refusal below is caused by its one defect)", async () => {
    const get = await signedCall(gw, { signer: tppA, target: "/v1/accounts" });
    expect(get.status, get.text).toBe(200);
    const post = await signedCall(gw, { signer: tppA, method: "POST", target: PAYMENTS, body: PAYMENT_BODY });
    expect(post.status, post.text).toBe(200);
    expect(backend.requests).toHaveLength(2);
  });

  it("missing X-Request-ID → FORMAT_ERROR, no X-Request-ID in the answer", async () => {
    const { r } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: without(headers, "X-Request-ID") }),
    });
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["X-Request-ID header is missing", "UUID"],
      requestId: null,
    });
    nothingForwarded();
  });

  it("X-Request-ID that is not a UUID → FORMAT_ERROR naming the value, echoed back", async () => {
    const { r } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      headers: { "X-Request-ID": "request-42" },
    });
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["X-Request-ID 'request-42' is not a UUID", "send e.g."],
      requestId: "request-42",
    });
    nothingForwarded();
  });

  it("missing TPP-Redirect-URI → FORMAT_ERROR", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: without(headers, "TPP-Redirect-URI") }),
    });
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["TPP-Redirect-URI header is missing", "required on every request"],
      requestId,
    });
    nothingForwarded();
  });

  it("TPP-Redirect-URI that is not an absolute URI → FORMAT_ERROR naming the value", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      headers: { "TPP-Redirect-URI": "/relative/callback" },
    });
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["TPP-Redirect-URI '/relative/callback' is not an absolute URI"],
      requestId,
    });
    nothingForwarded();
  });

  it("missing Signature → SIGNATURE_MISSING", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: without(headers, "Signature") }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_MISSING",
      text: ["Signature header is missing", "QSealC"],
      requestId,
    });
    nothingForwarded();
  });

  it("missing TPP-Signature-Certificate → CERTIFICATE_MISSING", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: without(headers, "TPP-Signature-Certificate") }),
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_MISSING",
      text: ["TPP-Signature-Certificate header is missing", "base64 DER"],
      requestId,
    });
    nothingForwarded();
  });

  it("a body without Digest → FORMAT_ERROR saying how to compute it", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      method: "POST",
      target: PAYMENTS,
      body: PAYMENT_BODY,
      signRequestTarget: false,
      tamper: ({ headers, body }) => ({
        headers: without(headers, "Digest"),
        ...(body !== undefined ? { body } : {}),
      }),
    });
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["Digest header is missing", "SHA-256=<base64"],
      requestId,
    });
    nothingForwarded();
  });

  it("a non-JSON Content-Type → FORMAT_ERROR naming the type and the one accepted", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      method: "POST",
      target: PAYMENTS,
      body: "<Document/>",
      headers: { "Content-Type": "application/xml" },
    });
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["Content-Type 'application/xml' is not accepted", "application/json"],
      requestId,
    });
    nothingForwarded();
  });

  it("a Date 2 minutes behind → TIMESTAMP_INVALID saying how far off and what is allowed", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      now: Date.now() - 120_000,
    });
    expectRejected(r, {
      status: 400,
      code: "TIMESTAMP_INVALID",
      text: [/is 1(19|20|21) s behind the gateway clock/, "at most 60 s either way"],
      requestId,
    });
    nothingForwarded();
  });

  it("a Date 2 minutes ahead → TIMESTAMP_INVALID", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      now: Date.now() + 120_000,
    });
    expectRejected(r, {
      status: 400,
      code: "TIMESTAMP_INVALID",
      text: [/is 1(19|20|21) s ahead of the gateway clock/],
      requestId,
    });
    nothingForwarded();
  });

  it("a malformed Signature header → SIGNATURE_INVALID saying what is wrong with it", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({
        headers: { ...headers, Signature: 'keyId="SN=1,CA=CN=x" algorithm="rsa-sha256"' },
      }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: ["Signature header parameter 'keyid' is followed by 'a' instead of ','"],
      requestId,
    });
    nothingForwarded();
  });

  it("a Signature whose signature value is not base64 → SIGNATURE_INVALID", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: withSignatureParam(headers, "signature", "not*base64") }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: ["'signature' parameter is not valid base64"],
      requestId,
    });
    nothingForwarded();
  });

  it("wrong signature bytes → SIGNATURE_INVALID naming the signed headers", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({
        headers: withSignatureParam(headers, "signature", randomBytes(256).toString("base64")),
      }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: [
        "Signature does not verify with the certificate's public key",
        "(request-target) date digest x-request-id psu-id tpp-redirect-uri",
      ],
      requestId,
    });
    nothingForwarded();
  });

  it("a signed header changed after signing (PSU-ID swapped) → SIGNATURE_INVALID", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: { ...headers, "PSU-ID": randomUUID() } }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: ["Signature does not verify", "exact values sent"],
      requestId,
    });
    nothingForwarded();
  });

  it("the request target changed after signing → SIGNATURE_INVALID", async () => {
    const prepared = await prepareSignedCall({ signer: tppA, target: "/v1/accounts/1/balances" });
    const r = await send(gw, "GET", "/v1/accounts/2/balances", prepared.headers);
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: ["Signature does not verify"],
      requestId: prepared.headers["X-Request-ID"],
    });
    nothingForwarded();
  });

  it("keyId naming another serial → SIGNATURE_INVALID naming both serials and the expected keyId", async () => {
    const own = buildKeyId(keyIdTargetFromDer(tppA.der));
    const other = buildKeyId(keyIdTargetFromDer(tppB.der));
    const otherSerial = /^SN=([0-9A-F]+),/.exec(other)![1]!;
    const ownSerial = /^SN=([0-9A-F]+),/.exec(own)![1]!;
    expect(otherSerial).not.toBe(ownSerial);
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: withSignatureParam(headers, "keyId", other) }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: [
        `SN=${otherSerial} does not match the certificate serial ${ownSerial}`,
        `expected keyId '${own}'`,
      ],
      requestId,
    });
    nothingForwarded();
  });

  describe("an eligible header present but not signed", () => {
    const handMade = (signPsuId: boolean) => {
      const headers: Record<string, string> = {
        Date: formatHttpDate(Date.now()),
        "X-Request-ID": randomUUID(),
        "TPP-Redirect-URI": "https://tpp.example/cb",
        "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
      };
      const signed = ["(request-target)", "date", "x-request-id", "tpp-redirect-uri"];
      if (signPsuId) signed.push("psu-id");
      return signManually(tppA, { method: "GET", target: "/v1/accounts", headers, signed });
    };

    it("control: the hand-made signature covering psu-id is accepted", async () => {
      const r = await send(gw, "GET", "/v1/accounts", handMade(true));
      expect(r.status, r.text).toBe(200);
      expect(backend.requests).toHaveLength(1);
    });

    it("PSU-ID sent but not in `headers` → SIGNATURE_INVALID telling to sign psu-id", async () => {
      const headers = handMade(false);
      const r = await send(gw, "GET", "/v1/accounts", headers);
      expectRejected(r, {
        status: 400,
        code: "SIGNATURE_INVALID",
        text: ["carries a psu-id header that the signature does not cover", "add 'psu-id'"],
        requestId: headers["X-Request-ID"]!,
      });
      nothingForwarded();
    });
  });

  it("a garbage certificate → CERTIFICATE_INVALID saying what was found", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({
        headers: { ...headers, "TPP-Signature-Certificate": "!!not-a-certificate!!" },
      }),
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["TPP-Signature-Certificate is not base64 DER or PEM", "character '!'"],
      requestId,
    });
    nothingForwarded();
  });

  it("base64 of a DER SEQUENCE that is no certificate → CERTIFICATE_INVALID, never 500", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({
        headers: {
          ...headers,
          "TPP-Signature-Certificate": Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]).toString("base64"),
        },
      }),
    });
    expectRejected(r, { status: 400, code: "CERTIFICATE_INVALID", text: ["X.509 certificate"], requestId });
    nothingForwarded();
  });

  it("a certificate from an untrusted CA → CERTIFICATE_INVALID naming the issuer", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.untrusted, target: "/v1/accounts" });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["CN=Rogue Root", "not in the gateway's trust store"],
      requestId,
    });
    nothingForwarded();
  });

  it("an expired certificate → CERTIFICATE_EXPIRED with the expiry date", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.expired, target: "/v1/accounts" });
    const notAfter = gw.pki.expired.certificate.notAfter.toISOString().slice(0, 16);
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_EXPIRED",
      text: ["expired on", notAfter, "renew it"],
      requestId,
    });
    nothingForwarded();
  });

  it("a revoked certificate → CERTIFICATE_REVOKED", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.revoked, target: "/v1/accounts" });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_REVOKED",
      text: ["was revoked by", "Demo Qualified Issuing CA", "obtain a new certificate"],
      requestId,
    });
    nothingForwarded();
  });

  it("a TPP not in the register → CERTIFICATE_BLOCKED naming the organisation", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.unregistered, target: "/v1/accounts" });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_BLOCKED",
      text: ["PSDNO-FSA-NOTREG01 is not in the TPP register"],
      requestId,
    });
    nothingForwarded();
  });

  it("the AIS-only TPP B calling POST /v1/payments/… → ROLE_INVALID naming the role needed and held", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: tppB,
      method: "POST",
      target: PAYMENTS,
      body: PAYMENT_BODY,
    });
    expectRejected(r, {
      status: 400,
      code: "ROLE_INVALID",
      text: [`${PAYMENTS} needs the PSD2 role PSP_PI`, "PSDNO-FSA-DEMO0002 only: PSP_AI"],
      requestId,
    });
    nothingForwarded();
    // …while TPP B's AIS call goes through.
    const ais = await signedCall(gw, { signer: tppB, target: "/v1/accounts" });
    expect(ais.status, ais.text).toBe(200);
  });

  it("a GET whose Digest is not the digest of zero bytes → SIGNATURE_INVALID naming both values", async () => {
    const sent = computeDigestHeader('{"a":1}');
    const { r, requestId } = await attempt(gw, {
      signer: tppA,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: { ...headers, Digest: sent } }),
    });
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: [`Digest header is ${sent}`, "the request has no body", `SHA-256=${EMPTY_SHA256}`],
      requestId,
    });
    nothingForwarded();
  });

  it("a GET signed with the digest of zero bytes is accepted", async () => {
    const r = await signedCall(gw, { signer: tppA, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.headers.digest).toBe(`SHA-256=${EMPTY_SHA256}`);
  });

  /**
   * An absolute-form target (`POST https://host/v1/payments/… HTTP/1.1`) would route past the role
   * table in backends that take the URL's path: the gateway accepts origin-form targets only.
   */
  it("an absolute-form target is refused, so the AIS-only TPP B cannot route past the role check", async () => {
    const target = `https://localhost${PAYMENTS}`;
    const prepared = await prepareSignedCall({ signer: tppB, method: "POST", target, body: PAYMENT_BODY });
    const head = rawHead({
      ...prepared,
      headers: { ...prepared.headers, "Content-Length": String(Buffer.byteLength(PAYMENT_BODY)) },
    });
    const r = await rawExchange(gw, [head, PAYMENT_BODY]);
    // Whatever the exact refusal, TPP B must not get a payment request to the backend.
    expect(backend.requests.map((q) => q.target)).toEqual([]);
    expect(r.status).toBe(400);
    expect(["ROLE_INVALID", "FORMAT_ERROR"]).toContain(JSON.parse(r.body).tppMessages[0].code);
  });

  /**
   * RFC 3986 6.2.2.2 makes `%70` and `p` equivalent, and backends decode, lower-case or collapse
   * paths in many ways: the role is decided on the normalised path (routes.ts routingPath).
   */
  it("a percent-encoded path /v1/%70ayments/… still needs PSP_PI", async () => {
    const target = "/v1/%70ayments/norwegian-domestic-credit-transfers";
    const { r, requestId } = await attempt(gw, { signer: tppB, method: "POST", target, body: PAYMENT_BODY });
    expect(backend.requests.map((q) => q.target)).toEqual([]);
    expectRejected(r, { status: 400, code: "ROLE_INVALID", text: ["PSP_PI"], requestId });
  });

  it.each([
    "/V1/PAYMENTS/norwegian-domestic-credit-transfers",
    "//v1//payments/norwegian-domestic-credit-transfers",
    "/v1/payments;jsessionid=1/norwegian-domestic-credit-transfers",
  ])("the path variant %s still needs PSP_PI", async (target) => {
    const { r, requestId } = await attempt(gw, { signer: tppB, method: "POST", target, body: PAYMENT_BODY });
    expect(backend.requests.map((q) => q.target)).toEqual([]);
    expectRejected(r, { status: 400, code: "ROLE_INVALID", text: ["PSP_PI"], requestId });
  });
});

describe("ingress rejections, berlin-group profile (401 for certificate, signature and role)", () => {
  let backend: RecordingBackend;
  let gw: TestGateway;

  beforeAll(async () => {
    backend = await startRecordingBackend();
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { verification: { statusProfile: "berlin-group" } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await backend?.close();
  });
  beforeEach(() => backend.reset());

  const cases: { name: string; status: number; code: string; call: (gw: TestGateway) => SignedCall }[] = [
    {
      name: "missing Signature",
      status: 401,
      code: "SIGNATURE_MISSING",
      call: (g) => ({
        signer: g.pki.tppA.qseal,
        target: "/v1/accounts",
        tamper: ({ headers }) => ({ headers: without(headers, "Signature") }),
      }),
    },
    {
      name: "missing certificate",
      status: 401,
      code: "CERTIFICATE_MISSING",
      call: (g) => ({
        signer: g.pki.tppA.qseal,
        target: "/v1/accounts",
        tamper: ({ headers }) => ({ headers: without(headers, "TPP-Signature-Certificate") }),
      }),
    },
    {
      name: "wrong signature bytes",
      status: 401,
      code: "SIGNATURE_INVALID",
      call: (g) => ({
        signer: g.pki.tppA.qseal,
        target: "/v1/accounts",
        tamper: ({ headers }) => ({
          headers: withSignatureParam(headers, "signature", randomBytes(256).toString("base64")),
        }),
      }),
    },
    {
      name: "untrusted certificate",
      status: 401,
      code: "CERTIFICATE_INVALID",
      call: (g) => ({ signer: g.pki.untrusted, target: "/v1/accounts" }),
    },
    {
      name: "expired certificate",
      status: 401,
      code: "CERTIFICATE_EXPIRED",
      call: (g) => ({ signer: g.pki.expired, target: "/v1/accounts" }),
    },
    {
      name: "revoked certificate",
      status: 401,
      code: "CERTIFICATE_REVOKED",
      call: (g) => ({ signer: g.pki.revoked, target: "/v1/accounts" }),
    },
    {
      name: "unregistered TPP",
      status: 401,
      code: "CERTIFICATE_BLOCKED",
      call: (g) => ({ signer: g.pki.unregistered, target: "/v1/accounts" }),
    },
    {
      name: "role missing",
      status: 401,
      code: "ROLE_INVALID",
      call: (g) => ({ signer: g.pki.tppB.qseal, method: "POST", target: PAYMENTS, body: PAYMENT_BODY }),
    },
    {
      name: "missing X-Request-ID (format errors stay 400)",
      status: 400,
      code: "FORMAT_ERROR",
      call: (g) => ({
        signer: g.pki.tppA.qseal,
        target: "/v1/accounts",
        tamper: ({ headers }) => ({ headers: without(headers, "X-Request-ID") }),
      }),
    },
    {
      name: "Date 2 minutes off (timestamp errors stay 400)",
      status: 400,
      code: "TIMESTAMP_INVALID",
      call: (g) => ({ signer: g.pki.tppA.qseal, target: "/v1/accounts", now: Date.now() - 120_000 }),
    },
  ];

  it.each(cases)("$name → $status $code", async ({ status, code, call }) => {
    const { r, requestId } = await attempt(gw, call(gw));
    expectRejected(r, { status, code, requestId: requestId ?? null });
    expect(backend.requests).toHaveLength(0);
  });
});

describe("malformed HTTP never crashes the gateway nor answers 500", () => {
  let backend: RecordingBackend;
  let gw: TestGateway;

  beforeAll(async () => {
    backend = await startRecordingBackend();
    gw = await startTestGateway({ backendUrl: backend.url });
  });
  afterAll(async () => {
    await gw?.close();
    await backend?.close();
  });
  beforeEach(() => backend.reset());

  const stillServes = async () => {
    const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
  };

  it("raw garbage over TLS → 400 FORMAT_ERROR in the Berlin Group shape, then a normal request works", async () => {
    const r = await rawExchange(gw, "GARBAGE\r\n\r\n");
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["malformed HTTP request"],
      requestId: null,
    });
    expect(backend.requests).toHaveLength(0);
    await stillServes();
  });

  it("binary noise over TLS → a 400 or a closed connection, never 500; then a normal request works", async () => {
    // Fixed noise (not random) so that the test sees the same bytes every run.
    let noise = Buffer.alloc(0);
    for (let i = 0; noise.length < 4096; i++) {
      noise = Buffer.concat([noise, createHash("sha256").update(`noise-${i}`).digest()]);
    }
    const r = await rawExchange(gw, noise);
    if (r.status !== undefined) expect(r.status).toBe(400);
    expect(r.raw).not.toMatch(/^HTTP\/1\.1 5/);
    await stillServes();
  });

  it("a header larger than the parser allows → 400 FORMAT_ERROR (not 500), then a normal request works", async () => {
    const r = await rawExchange(
      gw,
      `GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nX-Huge: ${"a".repeat(64 * 1024)}\r\n\r\n`,
    );
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["malformed HTTP request", /[Hh]eader overflow/],
    });
    await stillServes();
  });

  it("a request line with a huge target → 4xx, never 500; then a normal request works", async () => {
    const r = await rawExchange(
      gw,
      `GET /v1/accounts?q=${"x".repeat(64 * 1024)} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
    );
    expect(r.status).toBe(400);
    await stillServes();
  });

  it("a MIME-encoded Signature with broken base64 → SIGNATURE_INVALID, never 500", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      tamper: ({ headers }) => ({ headers: { ...headers, Signature: "=?utf-8?B?***?=" } }),
    });
    expect(r.status, r.text).toBe(400);
    expect(r.json.tppMessages?.[0]?.code).toBe("SIGNATURE_INVALID");
    expect(r.headers["x-request-id"]).toBe(requestId);
    await stillServes();
  });
});
