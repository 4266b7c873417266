/**
 * Ingress verifying JAdES requests (Berlin Group openFinance API Framework 2.x: a detached JWS in
 * x-jws-signature over the headers sigD.pars lists, the QSealC in x5c), end to end over TLS:
 * signed by our signer and by an independent JOSE implementation (Debian's python3-jwcrypto),
 * forwarded with their bodies; every tampering refused at its step, nothing reaching the backend.
 */

import { randomUUID } from "node:crypto";
import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../src/errors.js";
import { computeDigestHeader } from "../../src/signature/index.js";
import {
  buildHttpHeadersPayload,
  formatSigT,
  HTTP_HEADERS_MID,
  signJades,
  verifyJades,
} from "../../src/signature/jws/index.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, send, type TestGateway } from "../helpers/gateway-fixture.js";
import { describeWithJwcrypto, runJwcrypto } from "../helpers/jwcrypto.js";

const env = useGatewayAndBackend({
  config: { verification: { dialects: { accept: ["cavage", "jades"] } } },
});

const PAYMENT = "/v1/payments/sepa-credit-transfers";
const BODY = '{"instructedAmount":{"currency":"EUR","amount":"123.50"},"creditorName":"Laura"}';
const PARS = ["(request-target)", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"];

interface JadesCall {
  readonly body?: string;
  readonly signer?: IssuedCertificate;
  readonly by?: "ours" | "jwcrypto";
  readonly alg?: "PS256" | "RS256";
  readonly pars?: readonly string[];
  /** Milliseconds added to sigT. */
  readonly sigTOffset?: number;
  /** Headers sent but not listed in sigD.pars. */
  readonly unsigned?: Record<string, string>;
  readonly protectedOverrides?: Record<string, unknown>;
  readonly tamper?: (headers: Record<string, string>) => void;
  readonly tamperBody?: string;
}

function prepare(gw: TestGateway, call: JadesCall = {}) {
  const method = call.body === undefined ? "GET" : "POST";
  const target = call.body === undefined ? "/v1/accounts" : PAYMENT;
  const signer = call.signer ?? gw.pki.tppA.qseal;
  const headers: Record<string, string> = {
    "x-request-id": randomUUID(),
    "tpp-redirect-uri": "https://tpp.example/cb",
    "psu-id": "PSU-1234",
    "psu-ip-address": "192.0.2.10",
    digest: computeDigestHeader(call.body ?? ""),
    ...(call.body === undefined ? {} : { "content-type": "application/json" }),
  };
  const pars = call.pars ?? PARS;
  const sigT = Date.now() + (call.sigTOffset ?? 0);
  const alg = call.alg ?? "PS256";
  let value: string;
  if ((call.by ?? "ours") === "ours" && call.protectedOverrides === undefined) {
    value = signJades({
      key: signer.privateKey,
      certificateChain: [signer.der],
      alg,
      pars,
      sigT,
      message: { method, target, headers },
    });
  } else {
    const payload = buildHttpHeadersPayload(pars, { method, target, headers });
    if (!Buffer.isBuffer(payload)) throw new Error(payload.text);
    const [result] = runJwcrypto([
      {
        op: "sign",
        key: signer.keyPem,
        protected: {
          alg,
          b64: false,
          crit: ["b64", "sigT", "sigD"],
          sigT: formatSigT(sigT),
          sigD: { mId: HTTP_HEADERS_MID, pars },
          x5c: [signer.headerValue],
          ...call.protectedOverrides,
        },
        payload: payload.toString("base64"),
      },
    ]);
    if (!result?.jws) throw new Error(`jwcrypto did not sign: ${result?.error}`);
    value = result.jws;
  }
  const sent: Record<string, string> = { ...headers, "x-jws-signature": value, ...(call.unsigned ?? {}) };
  call.tamper?.(sent);
  return { method, target, headers: sent, body: call.tamperBody ?? call.body };
}

async function jadesCall(gw: TestGateway, call: JadesCall = {}) {
  const r = prepare(gw, call);
  return send(gw, r.method, r.target, r.headers, r.body);
}

describe("ingress verifies JAdES (openFinance 2.x) requests", () => {
  it.each([
    ["GET", undefined, "PS256"],
    ["POST", BODY, "RS256"],
  ] as const)("passes our signed %s (%s) to the bank, body intact", async (_method, body, alg) => {
    const r = await jadesCall(env.gw, { ...(body ? { body } : {}), alg });
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests).toHaveLength(1);
    if (body) expect(env.backend.requests[0]!.body.toString()).toBe(body);
    expect(env.backend.requests[0]!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
  });

  it.each([
    {
      name: "a body changed after signing → digest",
      call: { body: BODY, tamperBody: BODY.replace("123.50", "999.00") },
      code: "SIGNATURE_INVALID",
      text: ["Digest header is SHA-256="],
    },
    {
      name: "a listed header changed → jades-signature",
      call: { tamper: (h: Record<string, string>) => (h["psu-id"] = "PSU-9999") },
      code: "SIGNATURE_INVALID",
      text: ["sigD.pars"],
    },
    {
      name: "an eligible header sent but not listed → jades-coverage",
      call: { unsigned: { "psu-corporate-id": "CORP-1" } },
      code: "SIGNATURE_INVALID",
      text: ["does not list 'psu-corporate-id'"],
    },
    {
      name: "(request-target) not listed → jades-coverage",
      call: { pars: ["digest", "x-request-id", "psu-id", "tpp-redirect-uri"] },
      code: "SIGNATURE_INVALID",
      text: ["'(request-target)'"],
    },
    {
      name: "sigT ten minutes old → jades-sig-t",
      call: { sigTOffset: -600_000 },
      code: "TIMESTAMP_INVALID",
      text: ["behind the gateway clock"],
    },
    {
      name: "a certificate not trusted → certificate",
      call: { signer: undefined as unknown as IssuedCertificate, untrusted: true },
      code: "CERTIFICATE_INVALID",
      text: [],
    },
  ])("refuses $name, and the bank sees nothing", async ({ call, code, text }) => {
    const resolved = (call as { untrusted?: boolean }).untrusted ? { signer: env.gw.pki.untrusted } : call;
    const r = await jadesCall(env.gw, resolved as JadesCall);
    expectRejected(r, { status: 400, code, text });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("names x5c[0], not TPP-Signature-Certificate, when the certificate in x5c is not one", async () => {
    const r = prepare(env.gw, {});
    const jws = r.headers["x-jws-signature"]!;
    const header = JSON.parse(Buffer.from(jws.split(".")[0]!, "base64url").toString());
    header.x5c = ["AAAA"];
    delete header["x5t#S256"];
    r.headers["x-jws-signature"] =
      `${Buffer.from(JSON.stringify(header)).toString("base64url")}..${jws.split("..")[1]}`;
    const answer = await send(env.gw, r.method, r.target, r.headers, r.body);
    const text = expectRejected(answer, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["x5c[0] of the JWS"],
    });
    expect(text).not.toContain("TPP-Signature-Certificate");
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses the same signed request again (replay, keyed on the signing input)", async () => {
    const r = prepare(env.gw, { body: BODY });
    expect((await send(env.gw, r.method, r.target, r.headers, r.body)).status).toBe(200);
    const again = await send(env.gw, r.method, r.target, r.headers, r.body);
    expectRejected(again, { status: 400, code: "SIGNATURE_INVALID" });
    expect(env.backend.requests).toHaveLength(1);
  });
});

describe("responses to JAdES requests are signed in JAdES", () => {
  const signing = useGatewayAndBackend((pki) => ({
    config: {
      verification: { dialects: { accept: ["jades"] } },
      responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
    },
  }));

  it("the answer carries an x-jws-signature over Digest and X-Request-ID with the bank's QSealC in x5c", async () => {
    const r = prepare(signing.gw, { body: BODY });
    const answer = await send(signing.gw, r.method, r.target, r.headers, r.body);
    expect(answer.status, answer.text).toBe(200);
    const headers = Object.fromEntries(
      Object.entries(answer.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])),
    );
    expect(headers["x-request-id"]).toBe(r.headers["x-request-id"]);
    expect(headers.digest).toBe(computeDigestHeader(answer.text));
    const verified = verifyJades(headers["x-jws-signature"], { headers }, { now: Date.now() });
    if (isRejection(verified)) throw new Error(verified.text);
    expect(verified.header.pars).toEqual(["digest", "x-request-id"]);
    expect(verified.header.x5c.base64[0]).toBe(signing.gw.pki.bankQseal.headerValue);
  });
});

describeWithJwcrypto(
  "ingress and JAdES signed by an independent JOSE implementation (python3-jwcrypto)",
  () => {
    it.each(["PS256", "RS256"] as const)("passes a jwcrypto-signed payment (%s)", async (alg) => {
      const r = await jadesCall(env.gw, { by: "jwcrypto", body: BODY, alg });
      expect(r.status, r.text).toBe(200);
      expect(env.backend.requests[0]!.body.toString()).toBe(BODY);
    });

    it.each([
      [
        "an unknown crit name",
        { crit: ["b64", "sigT", "sigD", "http://example.com/unknown"], "http://example.com/unknown": 1 },
        "SIGNATURE_INVALID",
      ],
      ["b64 left out", { b64: true }, "SIGNATURE_INVALID"],
    ] as const)("refuses %s", async (_what, overrides, code) => {
      const r = await jadesCall(env.gw, { by: "jwcrypto", protectedOverrides: overrides });
      expectRejected(r, { status: 400, code });
      expect(env.backend.requests).toHaveLength(0);
    });
  },
);
