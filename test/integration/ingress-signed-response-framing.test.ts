/**
 * Response signing (`responseSigning`) holds the backend's answer to sign it, then writes it with
 * its own framing. Found by the fuzz `responses` family: it wrote `Content-Length: 0` on every
 * answer without content — an answer to HEAD (whose Content-Length is the length a GET would get,
 * RFC 9110 8.6), a 204 (which must carry none) and a 304. The answer keeps the backend's framing;
 * it is still signed, and the signature verifies over the bytes the client got.
 */

import { describe, expect, it } from "vitest";
import { cavageResponseChecks, StepsResponseVerifier } from "../../src/checks/index.js";
import { RawClient } from "../fuzz/raw-client.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { prepareSignedCall, rawHead } from "../helpers/gateway-fixture.js";
import { trustedCertificatesIn } from "../helpers/trusted-certificates.js";

const BODY = JSON.stringify({ accounts: [{ resourceId: "acc-1", iban: "NO9386011117947" }] });

const env = useGatewayAndBackend((pki) => ({
  config: {
    responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
  },
}));

/** One signed request on its own connection; the answer read as a client that knows it sent HEAD. */
async function exchange(method: string, target: string) {
  const { gw } = env;
  const call = await prepareSignedCall({ signer: gw.pki.tppA.qseal, method, target });
  const url = new URL(gw.url);
  const client = new RawClient({
    host: "127.0.0.1",
    port: Number(url.port),
    tls: { ca: gw.pki.root.pem, servername: url.hostname },
  });
  const outcome = await client.exchange({
    writes: [{ data: Buffer.from(rawHead(call), "latin1") }],
    bodiless: method === "HEAD" ? new Set([0]) : new Set(),
    // The answer echoes the request's X-Request-ID: reading ends with it.
    sentinelId: call.headers["X-Request-ID"]!,
    deadlineMs: 5_000,
  });
  const answer = outcome.responses[0];
  if (!answer) throw new Error(`no answer: ${outcome.endedBy} ${outcome.error ?? ""}`);
  const verifier = new StepsResponseVerifier(
    cavageResponseChecks({
      certificates: trustedCertificatesIn(gw.pki.paths.trustDir),
      certificateHeader: "aspsp-signature-certificate",
      dateToleranceMs: 60_000,
      algorithms: ["rsa-sha256"],
    }),
  );
  const verdict = await verifier.verify({
    headers: answer.headers,
    body: answer.body,
    request: { method, target, requestId: call.headers["X-Request-ID"]! },
  });
  return { answer, verdict };
}

describe("a signed answer keeps the backend's framing", () => {
  it("an answer to HEAD carries the backend's Content-Length (the GET body's), no body", async () => {
    env.backend.behave((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(BODY) });
      res.end(BODY); // Node sends no body to HEAD
    });
    const { answer, verdict } = await exchange("HEAD", "/v1/accounts");
    expect(answer.status).toBe(200);
    expect(answer.headers["content-length"]).toBe(String(Buffer.byteLength(BODY)));
    expect(answer.body.length).toBe(0);
    expect(verdict).toBe(true);
    expect(env.backend.requests.map((r) => r.method)).toEqual(["HEAD"]);
  });

  it.each([
    [204, {}],
    [304, { etag: '"v1"' }],
  ])("a %i carries no Content-Length", async (status, extra) => {
    env.backend.behave((_req, res) => {
      res.writeHead(status, extra);
      res.end();
    });
    const { answer, verdict } = await exchange("GET", "/v1/accounts/acc-1");
    expect(answer.status).toBe(status);
    expect(answer.headers["content-length"]).toBeUndefined();
    expect(answer.headers["transfer-encoding"]).toBeUndefined();
    expect(answer.headers.signature).toBeDefined();
    expect(verdict).toBe(true);
  });

  it("an answer with content is framed by the body it signed", async () => {
    env.backend.behave((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(BODY.slice(0, 10));
      res.end(BODY.slice(10)); // chunked from the backend
    });
    const { answer, verdict } = await exchange("GET", "/v1/accounts");
    expect(answer.headers["content-length"]).toBe(String(Buffer.byteLength(BODY)));
    expect(answer.body.toString()).toBe(BODY);
    expect(verdict).toBe(true);
  });
});
