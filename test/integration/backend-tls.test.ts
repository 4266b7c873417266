import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedCall, startTestGateway, type TestGateway, testPki } from "../helpers/gateway-fixture.js";

describe("forwarding to an HTTPS backend that wants mutual TLS", () => {
  let backend: Server;
  let backendUrl = "";
  const seenClients: (string | undefined)[] = [];

  beforeAll(async () => {
    const pki = await testPki();
    backend = createServer(
      {
        cert: pki.gatewayTls.pem + pki.issuingCa.pem,
        key: pki.gatewayTls.keyPem,
        // Only clients with a certificate from the demo CA get in.
        ca: [pki.root.pem, pki.issuingCa.pem],
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        seenClients.push([peer.subject?.CN].flat()[0]);
        req.resume();
        req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}'));
      },
    );
    await new Promise<void>((r) => backend.listen(0, "127.0.0.1", r));
    backendUrl = `https://localhost:${(backend.address() as AddressInfo).port}`;
  });
  let gw: TestGateway | undefined;
  afterAll(async () => {
    await gw?.close();
    backend.closeAllConnections();
    await new Promise<void>((r) => backend.close(() => r()));
  });

  it("presents the configured client certificate and trusts the backend through the configured CA", async () => {
    const pki = await testPki();
    gw = await startTestGateway({
      backendUrl,
      config: {
        backend: {
          ca: join(pki.paths.trustDir, "demo-root-ca.pem"),
          cert: join(pki.dir, "tpp", "tpp-a-qwac.pem"),
          key: join(pki.dir, "tpp", "tpp-a-qwac.key.pem"),
        },
      },
    });
    const r = await signedCall(gw, { signer: pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
    expect(seenClients.at(-1)).toBe("demo-payments-as.example");
    await gw.close();
    gw = undefined;
  });

  it("answers 502 when the backend refuses the gateway (no client certificate)", async () => {
    const pki = await testPki();
    gw = await startTestGateway({
      backendUrl,
      config: { backend: { ca: join(pki.paths.trustDir, "demo-root-ca.pem") } },
    });
    const r = await signedCall(gw, { signer: pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status).toBe(502);
    expect(r.json.tppMessages?.[0]?.code).toBe("BAD_GATEWAY");
    await gw.close();
    gw = undefined;
  });

  it("answers 502 when the backend's certificate is not from the configured CA", async () => {
    const pki = await testPki();
    gw = await startTestGateway({ backendUrl });
    const r = await signedCall(gw, { signer: pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status).toBe(502);
    expect(r.json.tppMessages?.[0]?.text).toContain("could not be reached");
    await gw.close();
    gw = undefined;
  });
});
