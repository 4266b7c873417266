/**
 * Every refusal of the ingress checks, end to end over TLS: the status (400 in the `spec` profile,
 * 401 for certificate/signature/role failures in `berlin-group`), the Berlin Group body, the echoed
 * X-Request-ID, a text that says what to fix, and a backend that never saw the request. Then
 * malformed HTTP, which must never crash the gateway or answer 500.
 *
 * Each refusal is one row of REFUSALS: what is sent (a request signed as a TPP would, with one
 * defect), the code and the fragments of the text. Every row runs against both status profiles.
 */

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { StatusProfile } from "../../src/errors.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  expectRejected,
  prepareSignedCall,
  rawExchange,
  rawHead,
  send,
  signedCall,
} from "../helpers/gateway-fixture.js";
import {
  ACCOUNTS,
  attempt,
  EMPTY_SHA256,
  handSigned,
  PAYMENT,
  PAYMENT_BODY,
  PAYMENTS,
  REFUSALS,
  SIGNED_BUT_PSU_ID,
} from "../helpers/ingress-refusals.js";
import { named } from "../helpers/named-rows.js";

/** Codes that `berlin-group` answers with 401 (format and timestamp errors stay 400). */
const BERLIN_GROUP_401 = new Set([
  "SIGNATURE_MISSING",
  "SIGNATURE_INVALID",
  "CERTIFICATE_MISSING",
  "CERTIFICATE_INVALID",
  "CERTIFICATE_EXPIRED",
  "CERTIFICATE_BLOCKED",
  "CERTIFICATE_REVOKED",
  "ROLE_INVALID",
]);

/** Each profile with the status it answers a code with. */
const PROFILES: [StatusProfile, (code: string) => number][] = [
  ["spec", () => 400],
  ["berlin-group", (code) => (BERLIN_GROUP_401.has(code) ? 401 : 400)],
];

describe.each(PROFILES)("ingress rejections, %s profile", (profile, statusOf) => {
  const env = useGatewayAndBackend({ config: { verification: { statusProfile: profile } } });

  it("control: a well-signed GET and POST are forwarded (so every refusal below is caused by its one defect)", async () => {
    const tppA = env.gw.pki.tppA.qseal;
    const get = await signedCall(env.gw, { signer: tppA, target: ACCOUNTS });
    expect(get.status, get.text).toBe(200);
    const post = await signedCall(env.gw, { signer: tppA, ...PAYMENT });
    expect(post.status, post.text).toBe(200);
    expect(env.backend.requests).toHaveLength(2);
  });

  it("control: the hand-made signature covering psu-id is accepted", async () => {
    const made = handSigned(env.gw.pki, [...SIGNED_BUT_PSU_ID, "psu-id"]);
    const r = await send(env.gw, made.method, made.target, made.headers);
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests).toHaveLength(1);
  });

  it("control: the AIS-only TPP B's AIS call goes through", async () => {
    const ais = await signedCall(env.gw, { signer: env.gw.pki.tppB.qseal, target: ACCOUNTS });
    expect(ais.status, ais.text).toBe(200);
  });

  it("a GET signed with the digest of zero bytes is accepted", async () => {
    const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: ACCOUNTS });
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests[0]!.headers.digest).toBe(`SHA-256=${EMPTY_SHA256}`);
  });

  it.each(named(REFUSALS))("%s", async (_name, row) => {
    const { r, requestId } = await attempt(env.gw, row);
    expectRejected(r, {
      status: statusOf(row.code),
      code: row.code,
      text: typeof row.text === "function" ? row.text(env.gw.pki) : row.text,
      requestId: requestId ?? null,
    });
    expect(
      env.backend.requests.map((q) => q.target),
      "the backend saw nothing",
    ).toEqual([]);
  });

  /**
   * An absolute-form target (`POST https://host/v1/payments/… HTTP/1.1`) would route past the role
   * table in backends that take the URL's path: the gateway accepts origin-form targets only.
   */
  it("an absolute-form target is refused, so the AIS-only TPP B cannot route past the role check", async () => {
    const target = `https://localhost${PAYMENTS}`;
    const prepared = await prepareSignedCall({ signer: env.gw.pki.tppB.qseal, ...PAYMENT, target });
    const head = rawHead({
      ...prepared,
      headers: { ...prepared.headers, "Content-Length": String(Buffer.byteLength(PAYMENT_BODY)) },
    });
    const r = await rawExchange(env.gw, [head, PAYMENT_BODY]);
    // Whatever the exact refusal, TPP B must not get a payment request to the backend.
    expect(env.backend.requests.map((q) => q.target)).toEqual([]);
    const code = JSON.parse(r.body).tppMessages[0].code;
    expect(["ROLE_INVALID", "FORMAT_ERROR"]).toContain(code);
    expect(r.status).toBe(statusOf(code));
  });
});

describe("malformed HTTP never crashes the gateway nor answers 500", () => {
  const env = useGatewayAndBackend();

  const stillServes = async () => {
    const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: ACCOUNTS });
    expect(r.status, r.text).toBe(200);
  };

  it("raw garbage over TLS → 400 FORMAT_ERROR in the Berlin Group shape, then a normal request works", async () => {
    const r = await rawExchange(env.gw, "GARBAGE\r\n\r\n");
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["malformed HTTP request"],
      requestId: null,
    });
    expect(env.backend.requests).toHaveLength(0);
    await stillServes();
  });

  it("binary noise over TLS → a 400 or a closed connection, never 500; then a normal request works", async () => {
    // Fixed noise (not random) so that the test sees the same bytes every run.
    let noise = Buffer.alloc(0);
    for (let i = 0; noise.length < 4096; i++) {
      noise = Buffer.concat([noise, createHash("sha256").update(`noise-${i}`).digest()]);
    }
    const r = await rawExchange(env.gw, noise);
    if (r.status !== undefined) expect(r.status).toBe(400);
    expect(r.raw).not.toMatch(/^HTTP\/1\.1 5/);
    await stillServes();
  });

  it("a header larger than the parser allows → 400 FORMAT_ERROR (not 500), then a normal request works", async () => {
    const r = await rawExchange(
      env.gw,
      `GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nX-Huge: ${"a".repeat(64 * 1024)}\r\n\r\n`,
    );
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["malformed HTTP request", /[Hh]eader overflow/],
    });
    await stillServes();
  });

  it("two Host lines → 400 FORMAT_ERROR and a closed connection before the backend sees anything (RFC 9112 3.2)", async () => {
    const r = await rawExchange(
      env.gw,
      "GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nhost: evil.example\r\n\r\n",
    );
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["more than one Host header"],
    });
    expect(r.raw).toMatch(/\r\nconnection: close\r\n/i);
    expect(env.backend.requests).toHaveLength(0);
    await stillServes();
  });

  it("a request line with a huge target → 4xx, never 500; then a normal request works", async () => {
    const r = await rawExchange(
      env.gw,
      `GET /v1/accounts?q=${"x".repeat(64 * 1024)} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
    );
    expect(r.status).toBe(400);
    await stillServes();
  });

  it("a MIME-encoded Signature with broken base64 → SIGNATURE_INVALID, never 500", async () => {
    const prepared = await prepareSignedCall({
      signer: env.gw.pki.tppA.qseal,
      target: ACCOUNTS,
      tamper: ({ headers }) => ({ headers: { ...headers, Signature: "=?utf-8?B?***?=" } }),
    });
    const r = await send(env.gw, prepared.method, prepared.target, prepared.headers);
    expect(r.status, r.text).toBe(400);
    expect(r.json.tppMessages?.[0]?.code).toBe("SIGNATURE_INVALID");
    expect(r.headers["x-request-id"]).toBe(prepared.headers["X-Request-ID"]);
    await stillServes();
  });
});
