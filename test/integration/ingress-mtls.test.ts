/**
 * Mutual TLS: the QWAC on the connection (or handed over by a trusted TLS-terminating proxy in
 * `x-ssl-client-cert`) is checked like the QSealC and must name the same organisation.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { IssuedCertificate } from "../../src/cli/dev-pki.js";
import { validateConfig } from "../../src/config/load.js";
import {
  expectRejected,
  prepareSignedCall,
  type SignedCall,
  send,
  signedCall,
  startTestGateway,
  type TestGateway,
  testPki,
} from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";

/** What nginx puts in `$ssl_client_escaped_cert`: the PEM, URL-encoded. */
const escapedPem = (cert: IssuedCertificate) => encodeURIComponent(cert.pem);

async function attempt(gw: TestGateway, call: SignedCall) {
  const prepared = await prepareSignedCall(call);
  const r = await send(
    gw,
    prepared.method,
    prepared.target,
    prepared.headers,
    prepared.body,
    call.dispatcher,
  );
  return { r, requestId: prepared.headers["X-Request-ID"]! };
}

let backend: RecordingBackend;
beforeAll(async () => {
  backend = await startRecordingBackend();
});
afterAll(async () => {
  await backend?.close();
});
beforeEach(() => backend.reset());

describe("clientCertificate: require (same organisation required)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { listen: { clientCertificate: "require", requireSameOrganization: true } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("TPP A's QWAC with TPP A's QSealC → 200, forwarded as TPP A", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: "{}",
      dispatcher: gw.withClientCertificate(gw.pki.tppA.qwac),
    });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests).toHaveLength(1);
    expect(backend.requests[0]!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
  });

  it("TPP B's QWAC with TPP A's QSealC → CERTIFICATE_INVALID naming both organisations", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      dispatcher: gw.withClientCertificate(gw.pki.tppB.qwac),
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: [
        "the TLS client certificate belongs to PSDNO-FSA-DEMO0002",
        "the signing certificate to PSDNO-FSA-DEMO0001",
        "same TPP",
      ],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("no client certificate → CERTIFICATE_MISSING asking for the QWAC", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_MISSING",
      text: ["no TLS client certificate was presented", "QWAC"],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("an expired client certificate → CERTIFICATE_EXPIRED, marked as the TLS certificate's fault", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      dispatcher: gw.withClientCertificate(gw.pki.expired),
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_EXPIRED",
      text: ["TLS client certificate (QWAC): ", "expired on"],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("a client certificate from an untrusted CA → CERTIFICATE_INVALID", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      dispatcher: gw.withClientCertificate(gw.pki.untrusted),
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["TLS client certificate (QWAC): ", "not in the gateway's trust store"],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("x-ssl-client-cert from a peer that is not a trusted proxy is ignored: still CERTIFICATE_MISSING", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppA.qwac) },
    });
    expectRejected(r, { status: 400, code: "CERTIFICATE_MISSING", requestId });
    expect(backend.requests).toHaveLength(0);
  });
});

describe("clientCertificate: require, requireSameOrganization: false", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { listen: { clientCertificate: "require", requireSameOrganization: false } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("TPP B's QWAC with TPP A's QSealC → 200, forwarded as the signer (TPP A)", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      dispatcher: gw.withClientCertificate(gw.pki.tppB.qwac),
    });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
  });
});

describe("clientCertificate: request", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { listen: { clientCertificate: "request" } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("no client certificate → 200", async () => {
    const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
  });

  it("TPP A's QWAC with TPP A's QSealC → 200", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      dispatcher: gw.withClientCertificate(gw.pki.tppA.qwac),
    });
    expect(r.status, r.text).toBe(200);
  });

  it("a client certificate, when given, is checked: TPP B's QWAC with TPP A's QSealC → CERTIFICATE_INVALID", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      dispatcher: gw.withClientCertificate(gw.pki.tppB.qwac),
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["PSDNO-FSA-DEMO0002", "PSDNO-FSA-DEMO0001"],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("x-ssl-client-cert from an untrusted peer is ignored and stripped: never forwarded", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      // Would be refused (other organisation) if it were honoured.
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppB.qwac) },
    });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.headers["x-ssl-client-cert"]).toBeUndefined();
  });
});

describe("a TLS-terminating proxy in front (trusted proxy 127.0.0.1, require)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { listen: { trustedProxies: ["127.0.0.1"], clientCertificate: "require" } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("the proxy's URL-encoded PEM of TPP A's QWAC is honoured → 200, and the header is not forwarded", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppA.qwac) },
    });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.headers["x-ssl-client-cert"]).toBeUndefined();
  });

  it("the proxy's PEM of TPP B's QWAC with TPP A's QSealC → CERTIFICATE_INVALID naming both", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppB.qwac) },
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["belongs to PSDNO-FSA-DEMO0002", "signing certificate to PSDNO-FSA-DEMO0001"],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("a garbage header from the proxy → CERTIFICATE_INVALID about the TLS client certificate", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": "%%%not-a-pem" },
    });
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["TLS client certificate (QWAC): "],
      requestId,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("neither a TLS client certificate nor the header → CERTIFICATE_MISSING", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expectRejected(r, { status: 400, code: "CERTIFICATE_MISSING", requestId });
  });
});

/**
 * A plain-HTTP gateway behind a TLS-terminating proxy: the client-certificate policy lives at
 * `listen.clientCertificate`, so it applies to the QWAC the trusted proxy passes in
 * `x-ssl-client-cert` just as to one from the gateway's own handshake.
 */
describe("plain HTTP behind a trusted TLS-terminating proxy (tls: false, trustedProxies 127.0.0.1)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      backendUrl: backend.url,
      tls: false,
      config: { listen: { trustedProxies: ["127.0.0.1"], clientCertificate: "require" } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("the configuration can require a client certificate without the gateway terminating TLS", async () => {
    const pki = await testPki();
    const config = validateConfig({
      listen: { trustedProxies: ["127.0.0.1"], clientCertificate: "require" },
      trust: { caDir: pki.paths.trustDir },
      register: { file: pki.paths.register },
    });
    expect(config.listen.tls).toBeUndefined();
    expect(config.listen.clientCertificate).toBe("require");
  });

  it("the proxy's PEM of TPP A's QWAC is honoured → 200", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppA.qwac) },
    });
    expect(r.status, r.text).toBe(200);
  });

  it("the proxy header is stripped before forwarding", async () => {
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppA.qwac) },
    });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.headers["x-ssl-client-cert"]).toBeUndefined();
  });

  it("a request from the proxy without any client certificate is refused (CERTIFICATE_MISSING)", async () => {
    const { r, requestId } = await attempt(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expectRejected(r, { status: 400, code: "CERTIFICATE_MISSING", requestId });
    expect(backend.requests).toHaveLength(0);
  });

  it("the proxy's PEM of TPP B's QWAC with TPP A's QSealC is refused (CERTIFICATE_INVALID)", async () => {
    const { r, requestId } = await attempt(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "X-SSL-Client-Cert": escapedPem(gw.pki.tppB.qwac) },
    });
    expectRejected(r, { status: 400, code: "CERTIFICATE_INVALID", text: ["PSDNO-FSA-DEMO0002"], requestId });
    expect(backend.requests).toHaveLength(0);
  });
});
