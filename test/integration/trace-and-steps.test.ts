/**
 * Issue 26, point 4, over real TLS: a bank follows one payment through its systems by the W3C
 * trace id (the TPP's traceparent goes on to the backend with the gateway as the next span, a new
 * trace starts when there is none, and every access line carries the trace id), and every refusal
 * names its step in the access line and in psd2_gateway_rejections_total — a Digest mismatch
 * found at the end of the body was counted as step="".
 */

import { Writable } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall } from "../helpers/gateway-fixture.js";
import { Scrape } from "../helpers/prometheus-text.js";

const lines: Record<string, unknown>[] = [];
const logger = createLogger("info", {
  destination: new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  }),
});
const accessLine = (requestId: string) =>
  lines.find((l) => l.msg === "request" && l.requestId === requestId) as Record<string, unknown> | undefined;

const TRACE = "0af7651916cd43dd8448eb211c80319c";
const PAYMENT = "/v1/payments/norwegian-domestic-credit-transfers";
const BODY = JSON.stringify({ instructedAmount: { amount: "10.00", currency: "NOK" } });

describe("W3C trace context through ingress", () => {
  const env = useGatewayAndBackend({ logger });

  it("passes the TPP's trace on with the gateway as the next span, and logs its id", async () => {
    env.backend.reset();
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { traceparent: `00-${TRACE}-b7ad6b7169203331-01`, tracestate: "tpp=abc" },
    });
    expect(r.status).toBe(200);
    const seen = env.backend.requests[0]!.headers;
    expect(seen.traceparent).toMatch(new RegExp(`^00-${TRACE}-(?!b7ad6b7169203331)[0-9a-f]{16}-01$`));
    expect(seen.tracestate).toBe("tpp=abc");
    await new Promise((r) => setTimeout(r, 50));
    expect(accessLine(String(r.headers["x-request-id"]))?.traceId).toBe(TRACE);
  });

  it("starts a trace when the TPP sent none, and logs the id the backend got", async () => {
    env.backend.reset();
    const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
    const traceparent = String(env.backend.requests[0]!.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await new Promise((r) => setTimeout(r, 50));
    expect(accessLine(String(r.headers["x-request-id"]))?.traceId).toBe(traceparent.slice(3, 35));
  });

  it("logs the trace id of a refused request too", async () => {
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppB.qseal,
      method: "POST",
      target: PAYMENT,
      body: BODY,
      headers: { traceparent: `00-${TRACE}-b7ad6b7169203331-01` },
    });
    expect(r.status).toBe(400);
    await new Promise((r) => setTimeout(r, 50));
    expect(accessLine(String(r.headers["x-request-id"]))).toMatchObject({ traceId: TRACE, step: "role" });
  });

  it("logs the route that claimed a refused request and the refusal's text, a PSU-ID in it hashed", async () => {
    const psuId = "PSU-SECRET-4711";
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppB.qseal,
      method: "POST",
      target: PAYMENT,
      body: BODY,
      headers: { "PSU-ID": psuId },
    });
    expect(r.status).toBe(400);
    const text = String(r.json.tppMessages?.[0]?.text);
    await new Promise((r) => setTimeout(r, 50));
    const line = accessLine(String(r.headers["x-request-id"]));
    expect(line).toMatchObject({ route: "/v1/payments", step: "role", text });
    expect(JSON.stringify(lines)).not.toContain(psuId);
  });
});

describe("every refusal names its step", () => {
  const env = useGatewayAndBackend({ logger, config: { verification: { maxBodyBytes: 2048 } } });
  const rejections = async (step: string) =>
    new Scrape(await env.gw.gateway.metrics.registry.metrics()).value("psd2_gateway_rejections_total", {
      step,
    });

  it("a Digest mismatch found at the end of the body: the digest step", async () => {
    const before = await rejections("digest");
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENT,
      body: BODY,
      tamper: ({ headers, body }) => ({ headers, body: String(body).replace("10.00", "99.00") }),
    });
    expect(r.status).toBe(400);
    expect(r.json.tppMessages?.[0]?.code).toBe("SIGNATURE_INVALID");
    expect(await rejections("digest")).toBe(before + 1);
    expect(await rejections("")).toBe(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(accessLine(String(r.headers["x-request-id"]))?.step).toBe("digest");
  });

  it.each([
    {
      name: "a bad header line",
      bytes: "GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nbad header\r\n\r\n",
    },
    { name: "a CONNECT", bytes: "CONNECT bank.example:443 HTTP/1.1\r\nHost: bank.example:443\r\n\r\n" },
  ])(
    "bytes that are no request ($name): malformed-request, in the access line and the metric",
    async ({ bytes }) => {
      const before = await rejections("malformed-request");
      const linesBefore = lines.length;
      const url = new URL(env.gw.url);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = tlsConnect(
          { host: url.hostname, port: Number(url.port), ca: env.gw.pki.root.pem },
          () => socket.end(bytes),
        );
        let text = "";
        socket.on("data", (chunk) => (text += chunk.toString()));
        socket.on("close", () => resolve(text));
        socket.on("error", reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"code":"FORMAT_ERROR"');
      expect(await rejections("malformed-request")).toBe(before + 1);
      await new Promise((r) => setTimeout(r, 50));
      expect(lines.slice(linesBefore).filter((l) => l.msg === "request")).toEqual([
        expect.objectContaining({
          status: 400,
          code: "FORMAT_ERROR",
          step: "malformed-request",
          routeClass: "unparsed",
        }),
      ]);
    },
  );

  it("a backend that cannot be reached: upstream", async () => {
    env.backend.behave((req) => req.socket.destroy());
    try {
      const before = await rejections("upstream");
      const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
      expect(r.status).toBe(502);
      expect(await rejections("upstream")).toBe(before + 1);
    } finally {
      env.backend.reset();
    }
  });
});
