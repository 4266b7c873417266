/**
 * Ingress verifying UK Open Banking requests (a detached JWS over the body in x-jws-signature, the
 * critical claims iat/iss/tan, the QSealC in x5c), end to end over TLS: signed by our signer and
 * by an independent JOSE implementation (python3-jwcrypto), over mutual TLS with TPP A's QWAC (UK
 * OB signs the body only: the connection binds the head to the TPP); the body read whole and
 * verified before anything is sent, so a body changed after signing never reaches the backend at
 * all; answers signed back over their body.
 */

import { randomUUID } from "node:crypto";
import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../src/errors.js";
import { signUkOb, UKOB_IAT, UKOB_ISS, UKOB_TAN, verifyUkOb } from "../../src/signature/jws/index.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, send, type TestGateway } from "../helpers/gateway-fixture.js";
import { describeWithJwcrypto, runJwcrypto } from "../helpers/jwcrypto.js";

const env = useGatewayAndBackend((pki) => ({
  config: {
    listen: { clientCertificate: "request" },
    verification: { dialects: { accept: ["cavage", "uk-ob"] } },
    responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
  },
}));

const PAYMENT = "/v1/payments/sepa-credit-transfers";
// Long enough to arrive in several chunks and exercise the streaming base64url (not a multiple of 3).
const BODY = JSON.stringify({
  instructedAmount: { currency: "GBP", amount: "123.50" },
  creditorName: "Laura",
  remittance: "x".repeat(70_001),
});
const ORG = "PSDNO-FSA-DEMO0001";

interface UkObCall {
  readonly body?: string;
  readonly signer?: IssuedCertificate;
  readonly by?: "ours" | "jwcrypto";
  readonly iss?: string;
  readonly tan?: string;
  readonly iatOffset?: number;
  readonly withoutX5c?: boolean;
  readonly tamperBody?: string;
}

function prepare(gw: TestGateway, call: UkObCall = {}) {
  const method = call.body === undefined ? "GET" : "POST";
  const target = call.body === undefined ? "/v1/accounts" : PAYMENT;
  const signer = call.signer ?? gw.pki.tppA.qseal;
  const iat = Math.floor(Date.now() / 1000) + (call.iatOffset ?? 0);
  const claims = { iss: call.iss ?? `${ORG}/software-1`, tan: call.tan ?? "openbanking.org.uk" };
  let value: string;
  if ((call.by ?? "ours") === "ours") {
    value = signUkOb({
      key: signer.privateKey,
      kid: "key-1",
      ...claims,
      iat,
      body: call.body ?? "",
      ...(call.withoutX5c ? {} : { certificateChain: [signer.der] }),
    });
  } else {
    const [result] = runJwcrypto([
      {
        op: "sign",
        key: signer.keyPem,
        protected: {
          alg: "PS256",
          kid: "key-1",
          [UKOB_IAT]: iat,
          [UKOB_ISS]: claims.iss,
          [UKOB_TAN]: claims.tan,
          crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN],
          typ: "JOSE",
          cty: "application/json",
          x5c: [signer.headerValue],
        },
        payload: Buffer.from(call.body ?? "").toString("base64"),
      },
    ]);
    if (!result?.jws) throw new Error(`jwcrypto did not sign: ${result?.error}`);
    value = result.jws;
  }
  const headers: Record<string, string> = {
    "x-request-id": randomUUID(),
    "tpp-redirect-uri": "https://tpp.example/cb",
    "psu-ip-address": "192.0.2.10",
    "x-jws-signature": value,
    ...(call.body === undefined ? {} : { "content-type": "application/json" }),
  };
  return { method, target, headers, body: call.tamperBody ?? call.body };
}

/** TPP A's mutual-TLS connection, made once per gateway. */
const overQwac = new WeakMap<TestGateway, ReturnType<TestGateway["withClientCertificate"]>>();
function tppA(gw: TestGateway) {
  let agent = overQwac.get(gw);
  if (!agent) {
    agent = gw.withClientCertificate(gw.pki.tppA.qwac);
    overQwac.set(gw, agent);
  }
  return agent;
}

async function ukObCall(gw: TestGateway, call: UkObCall = {}) {
  const r = prepare(gw, call);
  return send(gw, r.method, r.target, r.headers, r.body, tppA(gw));
}

describe("ingress verifies UK Open Banking requests", () => {
  it.each([
    ["ours", undefined],
    ["ours", BODY],
  ] as const)(
    "passes a %s-signed request (body: %s chars) to the bank, body intact, the answer signed",
    async (by, body) => {
      const r = await ukObCall(env.gw, { by, ...(body ? { body } : {}) });
      expect(r.status, r.text).toBe(200);
      expect(env.backend.requests).toHaveLength(1);
      if (body) expect(env.backend.requests[0]!.body.toString()).toBe(body);
      const verified = verifyUkOb(String(r.headers["x-jws-signature"]), r.text, { now: Date.now() });
      if (isRejection(verified)) throw new Error(verified.text);
      expect(verified.header.iss).toBe("PSDNO-FSA-DEMOBANK");
    },
  );

  it.each([
    {
      name: "a body changed after signing → uk-ob-signature, at the body's end, nothing sent",
      call: { body: BODY, tamperBody: BODY.replace("123.50", "999.00") },
      code: "SIGNATURE_INVALID",
      text: ["base64url-encoded"],
    },
    {
      name: "iss naming another TPP → uk-ob-claims",
      call: { iss: "PSDNO-FSA-OTHER/software-1" },
      code: "SIGNATURE_INVALID",
      text: ["'http://openbanking.org.uk/iss'"],
    },
    {
      name: "a tan not configured → uk-ob-claims",
      call: { tan: "evil.example" },
      code: "SIGNATURE_INVALID",
      text: ["evil.example"],
    },
    {
      name: "iat ten minutes old → uk-ob-iat",
      call: { iatOffset: -600 },
      code: "TIMESTAMP_INVALID",
      text: ["behind the gateway clock"],
    },
    {
      name: "no x5c (a kid only) → uk-ob-header",
      call: { withoutX5c: true },
      code: "CERTIFICATE_MISSING",
      text: ["send the QSealC"],
    },
  ])("refuses $name", async ({ call, code, text }) => {
    const r = await ukObCall(env.gw, call as UkObCall);
    expectRejected(r, { status: 400, code, text });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses a request without a QWAC on the connection, saying why mutual TLS is needed", async () => {
    const r = prepare(env.gw, { body: BODY });
    const refused = await send(env.gw, r.method, r.target, r.headers, r.body);
    expectRejected(refused, { status: 400, code: "CERTIFICATE_MISSING", text: ["covers the body only"] });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses the same signed request again (replay, keyed on the protected header and the signature)", async () => {
    const r = prepare(env.gw, { body: BODY });
    expect((await send(env.gw, r.method, r.target, r.headers, r.body, tppA(env.gw))).status).toBe(200);
    const again = await send(env.gw, r.method, r.target, r.headers, r.body, tppA(env.gw));
    expectRejected(again, { status: 400, code: "SIGNATURE_INVALID" });
    expect(env.backend.requests).toHaveLength(1);
  });
});

describeWithJwcrypto(
  "ingress and UK OB signed by an independent JOSE implementation (python3-jwcrypto)",
  () => {
    it("passes a jwcrypto-signed payment", async () => {
      const r = await ukObCall(env.gw, { by: "jwcrypto", body: BODY });
      expect(r.status, r.text).toBe(200);
      expect(env.backend.requests[0]!.body.toString()).toBe(BODY);
    });

    it("refuses a jwcrypto-signed payment whose body changed", async () => {
      const r = await ukObCall(env.gw, { by: "jwcrypto", body: BODY, tamperBody: `${BODY} ` });
      expectRejected(r, { status: 400, code: "SIGNATURE_INVALID" });
    });
  },
);
