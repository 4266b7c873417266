/**
 * Mutual TLS: the QWAC on the connection (or handed over by a trusted TLS-terminating proxy in
 * `x-ssl-client-cert`) is checked like the QSealC and must name the same organisation.
 *
 * Every request is signed by TPP A's QSealC. Each set-up is a listener configuration; each of its
 * rows says which QWAC is on the connection, what the proxy header carries, and what must happen:
 * forwarded as TPP A with the proxy header stripped, or refused with a code and text and not
 * forwarded.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { connect as tlsConnect } from "node:tls";
import type { DevPki, IssuedCertificate } from "@psd2-gateway/dev-pki";
import { describe, expect, it } from "vitest";
import { validateConfig } from "../../src/config/load.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  expectRejected,
  type GatewayOptions,
  prepareSignedCall,
  rawHead,
  send,
  testPki,
} from "../helpers/gateway-fixture.js";
import { named } from "../helpers/named-rows.js";

const ACCOUNTS = "/v1/accounts";
const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";

type Qwac = "tppA" | "tppB" | "expired" | "untrusted";

function qwacOf(pki: DevPki, which: Qwac): IssuedCertificate {
  return which === "tppA" || which === "tppB" ? pki[which].qwac : pki[which];
}

/** What nginx puts in `$ssl_client_escaped_cert`: the PEM, URL-encoded. */
const escapedPem = (cert: IssuedCertificate) => encodeURIComponent(cert.pem);

interface MtlsCase {
  readonly name: string;
  // What is sent (a GET /v1/accounts signed by TPP A's QSealC, unless `payment`):
  /** The client certificate on the TLS connection (none when omitted). */
  readonly qwac?: Qwac;
  /** `x-ssl-client-cert` as a proxy sends it: a QWAC's URL-encoded PEM, or raw text. */
  readonly proxyHeader?: Qwac | { readonly raw: string };
  /** POST a payment instead of the GET. */
  readonly payment?: true;
  // What must happen: without `refused`, 200 and forwarded once as TPP A without x-ssl-client-cert.
  readonly refused?: { readonly code: string; readonly text?: readonly string[] };
}

interface Setup {
  readonly name: string;
  readonly gateway: Omit<GatewayOptions, "backendUrl">;
  readonly cases: readonly MtlsCase[];
}

const SETUPS: readonly Setup[] = [
  {
    name: "clientCertificate: require (same organisation required)",
    gateway: { config: { listen: { clientCertificate: "require", requireSameOrganization: true } } },
    cases: [
      { name: "TPP A's QWAC with TPP A's QSealC → 200, forwarded as TPP A", qwac: "tppA", payment: true },
      {
        name: "TPP B's QWAC with TPP A's QSealC → CERTIFICATE_INVALID naming both organisations",
        qwac: "tppB",
        refused: {
          code: "CERTIFICATE_INVALID",
          text: [
            "the TLS client certificate belongs to PSDNO-FSA-DEMO0002",
            "the signing certificate to PSDNO-FSA-DEMO0001",
            "same TPP",
          ],
        },
      },
      {
        name: "no client certificate → CERTIFICATE_MISSING asking for the QWAC",
        refused: { code: "CERTIFICATE_MISSING", text: ["no TLS client certificate was presented", "QWAC"] },
      },
      {
        name: "an expired client certificate → CERTIFICATE_EXPIRED, marked as the TLS certificate's fault",
        qwac: "expired",
        refused: { code: "CERTIFICATE_EXPIRED", text: ["TLS client certificate (QWAC): ", "expired on"] },
      },
      {
        name: "a client certificate from an untrusted CA → CERTIFICATE_INVALID",
        qwac: "untrusted",
        refused: {
          code: "CERTIFICATE_INVALID",
          text: ["TLS client certificate (QWAC): ", "not in the gateway's trust store"],
        },
      },
      {
        name: "x-ssl-client-cert from a peer that is not a trusted proxy is ignored: still CERTIFICATE_MISSING",
        proxyHeader: "tppA",
        refused: { code: "CERTIFICATE_MISSING" },
      },
    ],
  },
  {
    name: "clientCertificate: require, requireSameOrganization: false",
    gateway: { config: { listen: { clientCertificate: "require", requireSameOrganization: false } } },
    cases: [
      { name: "TPP B's QWAC with TPP A's QSealC → 200, forwarded as the signer (TPP A)", qwac: "tppB" },
    ],
  },
  {
    name: "clientCertificate: request",
    gateway: { config: { listen: { clientCertificate: "request" } } },
    cases: [
      { name: "no client certificate → 200" },
      { name: "TPP A's QWAC with TPP A's QSealC → 200", qwac: "tppA" },
      {
        name: "a client certificate, when given, is checked: TPP B's QWAC with TPP A's QSealC → CERTIFICATE_INVALID",
        qwac: "tppB",
        refused: { code: "CERTIFICATE_INVALID", text: ["PSDNO-FSA-DEMO0002", "PSDNO-FSA-DEMO0001"] },
      },
      {
        // Would be refused (other organisation) if it were honoured.
        name: "x-ssl-client-cert from an untrusted peer is ignored and stripped: never forwarded",
        proxyHeader: "tppB",
      },
    ],
  },
  {
    name: "a TLS-terminating proxy in front (trusted proxy 127.0.0.1, require)",
    gateway: { config: { listen: { trustedProxies: ["127.0.0.1"], clientCertificate: "require" } } },
    cases: [
      {
        name: "the proxy's URL-encoded PEM of TPP A's QWAC is honoured → 200, and the header is not forwarded",
        proxyHeader: "tppA",
      },
      {
        name: "the proxy's PEM of TPP B's QWAC with TPP A's QSealC → CERTIFICATE_INVALID naming both",
        proxyHeader: "tppB",
        refused: {
          code: "CERTIFICATE_INVALID",
          text: ["belongs to PSDNO-FSA-DEMO0002", "signing certificate to PSDNO-FSA-DEMO0001"],
        },
      },
      {
        name: "a garbage header from the proxy → CERTIFICATE_INVALID about the TLS client certificate",
        proxyHeader: { raw: "%%%not-a-pem" },
        refused: { code: "CERTIFICATE_INVALID", text: ["TLS client certificate (QWAC): "] },
      },
      {
        name: "neither a TLS client certificate nor the header → CERTIFICATE_MISSING",
        refused: { code: "CERTIFICATE_MISSING" },
      },
    ],
  },
  /**
   * A plain-HTTP gateway behind a TLS-terminating proxy: the client-certificate policy lives at
   * `listen.clientCertificate`, so it applies to the QWAC the trusted proxy passes in
   * `x-ssl-client-cert` just as to one from the gateway's own handshake.
   */
  {
    name: "plain HTTP behind a trusted TLS-terminating proxy (tls: false, trustedProxies 127.0.0.1)",
    gateway: {
      tls: false,
      config: { listen: { trustedProxies: ["127.0.0.1"], clientCertificate: "require" } },
    },
    cases: [
      {
        name: "the proxy's PEM of TPP A's QWAC is honoured → 200, and the proxy header is stripped before forwarding",
        proxyHeader: "tppA",
      },
      {
        name: "a request from the proxy without any client certificate is refused (CERTIFICATE_MISSING)",
        refused: { code: "CERTIFICATE_MISSING" },
      },
      {
        name: "the proxy's PEM of TPP B's QWAC with TPP A's QSealC is refused (CERTIFICATE_INVALID)",
        proxyHeader: "tppB",
        refused: { code: "CERTIFICATE_INVALID", text: ["PSDNO-FSA-DEMO0002"] },
      },
    ],
  },
];

describe.each(named(SETUPS))("%s", (_name, setup) => {
  const env = useGatewayAndBackend(setup.gateway);

  it.each(named(setup.cases))("%s", async (_case, c) => {
    const { gw, backend } = env;
    const header = c.proxyHeader;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      ...(c.payment ? { method: "POST", target: PAYMENTS, body: "{}" } : { target: ACCOUNTS }),
      ...(header === undefined
        ? {}
        : {
            headers: {
              "X-SSL-Client-Cert":
                typeof header === "string" ? escapedPem(qwacOf(gw.pki, header)) : header.raw,
            },
          }),
    });
    const r = await send(
      gw,
      prepared.method,
      prepared.target,
      prepared.headers,
      prepared.body,
      c.qwac ? gw.withClientCertificate(qwacOf(gw.pki, c.qwac)) : undefined,
    );
    if (c.refused) {
      expectRejected(r, {
        status: 400,
        code: c.refused.code,
        text: c.refused.text ?? [],
        requestId: prepared.headers["X-Request-ID"]!,
      });
      expect(backend.requests, "the backend saw nothing").toHaveLength(0);
    } else {
      expect(r.status, r.text).toBe(200);
      expect(backend.requests).toHaveLength(1);
      const forwarded = backend.requests[0]!.headers;
      expect(forwarded["x-tpp-organization-id"], "forwarded as the signer").toBe("PSDNO-FSA-DEMO0001");
      expect(forwarded["x-ssl-client-cert"], "the proxy header is not forwarded").toBeUndefined();
    }
  });
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

describe("a client certificate cannot change on a connection", () => {
  const env = useGatewayAndBackend({ config: { listen: { clientCertificate: "request" } } });

  it("TLS 1.2 renegotiation is refused: the connection ends instead of carrying another QWAC", async () => {
    const { gw } = env;
    const { hostname, port } = new URL(gw.url);
    const qwac = gw.pki.tppA.qwac;
    const socket = tlsConnect({
      host: "127.0.0.1",
      port: Number(port),
      servername: hostname,
      ca: gw.pki.root.pem,
      cert: qwac.pem,
      key: qwac.keyPem,
      maxVersion: "TLSv1.2",
    });
    socket.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: ACCOUNTS });
    let raw = "";
    socket.on("data", (chunk: Buffer) => {
      raw += chunk.toString("latin1");
    });
    socket.write(rawHead(prepared));
    for (let waited = 0; waited < 3_000 && !raw.includes("\r\n\r\n"); waited += 20) await sleep(20);
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    const closed = new Promise<boolean>((resolve) => socket.once("close", () => resolve(true)));
    socket.renegotiate({ rejectUnauthorized: false }, () => {});
    expect(await Promise.race([closed, sleep(3_000).then(() => false)])).toBe(true);
  });
});
