/**
 * Ingress verifying RFC 9421 requests (FAPI 2.0 HTTP Signatures with the Berlin Group's certificate
 * and keyId), end to end over TLS: signed by our signer and by an independent implementation
 * (dhensby's http-message-signatures), forwarded with their bodies; every tampering refused at its
 * step, with nothing reaching the backend; the dialect accepted only where configured.
 */

import { createPublicKey, randomUUID } from "node:crypto";
import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import { createSigner, httpbis } from "http-message-signatures";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../src/errors.js";
import { buildKeyId, keyIdTargetFromDer } from "../../src/signature/index.js";
import {
  computeContentDigest,
  type Rfc9421Algorithm,
  signFapiRequest,
  verifyContentDigest,
  verifyFapiResponse,
} from "../../src/signature/rfc9421/index.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, send, signedCall, type TestGateway } from "../helpers/gateway-fixture.js";

const env = useGatewayAndBackend({
  config: {
    verification: {
      dialects: {
        accept: ["cavage", "rfc9421"],
        routes: [{ prefix: "/v1/funds-confirmations", accept: ["cavage"] }],
      },
    },
  },
});

const PAYMENT = "/v1/payments/sepa-credit-transfers";
const BODY = '{"instructedAmount":{"currency":"EUR","amount":"123.50"},"creditorName":"Laura"}';

interface Rfc9421Call {
  readonly method?: string;
  readonly target?: string;
  readonly body?: string;
  readonly signer?: IssuedCertificate;
  /** Who signs: our signer, or the independent implementation. */
  readonly by?: "ours" | "theirs";
  readonly alg?: Rfc9421Algorithm;
  /** Seconds added to the clock at signing. */
  readonly createdOffset?: number;
  readonly keyid?: string;
  /** Headers sent but left out of the signature. */
  readonly unsigned?: Record<string, string>;
  /** Changes after signing. */
  readonly tamper?: (headers: Record<string, string>) => void;
  readonly tamperBody?: string;
}

/** A TPP request as RFC 9421 signs it, the headers in the form both signers take. */
async function prepare(gw: TestGateway, call: Rfc9421Call = {}) {
  const method = call.method ?? (call.body === undefined ? "GET" : "POST");
  const target = call.target ?? (call.body === undefined ? "/v1/accounts" : PAYMENT);
  const signer = call.signer ?? gw.pki.tppA.qseal;
  const url = new URL(gw.url);
  const headers: Record<string, string> = {
    host: url.host,
    "x-request-id": randomUUID(),
    "tpp-redirect-uri": "https://tpp.example/cb",
    "psu-id": "PSU-1234",
    "psu-ip-address": "192.0.2.10",
    "tpp-signature-certificate": signer.headerValue,
    ...(call.body === undefined
      ? {}
      : {
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(call.body)),
          "content-digest": computeContentDigest(call.body, "sha-256"),
        }),
  };
  const keyid = call.keyid ?? buildKeyId(keyIdTargetFromDer(signer.der));
  const alg = call.alg ?? "rsa-pss-sha512";
  const now = Date.now() + (call.createdOffset ?? 0) * 1000;
  const targetUri = `https://${url.host}${target}`;
  const fields = [
    "@method",
    "@target-uri",
    ...(call.body === undefined ? [] : ["content-digest"]),
    "tpp-signature-certificate",
    "x-request-id",
    "psu-id",
    "tpp-redirect-uri",
  ];
  let signed: Record<string, string>;
  if ((call.by ?? "ours") === "ours") {
    const result = signFapiRequest(
      { method, targetUri, headers },
      {
        privateKey: signer.privateKey,
        keyid,
        now,
        alg,
        coverAlways: ["tpp-signature-certificate", "x-request-id"],
        coverWhenPresent: ["psu-id", "tpp-redirect-uri"],
      },
    );
    if ("code" in result) throw new Error(result.text);
    signed = { ...headers, "signature-input": result.signatureInput, signature: result.signature };
  } else {
    const theirs = await httpbis.signMessage(
      {
        key: createSigner(signer.privateKey, alg, keyid),
        fields,
        params: ["created", "keyid", "alg", "tag"],
        paramValues: { tag: "fapi-2-request", created: new Date(now) },
        name: "sig1",
      },
      { method, url: targetUri, headers },
    );
    signed = Object.fromEntries(Object.entries(theirs.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
  }
  Object.assign(signed, call.unsigned ?? {});
  call.tamper?.(signed);
  delete signed.host;
  delete signed["content-length"];
  return { method, target, headers: signed, body: call.tamperBody ?? call.body };
}

async function rfc9421Call(gw: TestGateway, call: Rfc9421Call = {}) {
  const r = await prepare(gw, call);
  return send(gw, r.method, r.target, r.headers, r.body);
}

describe("ingress verifies RFC 9421 (FAPI 2.0) requests", () => {
  it.each([
    ["ours", "GET", undefined, "rsa-pss-sha512"],
    ["ours", "POST", BODY, "rsa-v1_5-sha256"],
    ["theirs", "GET", undefined, "rsa-v1_5-sha256"],
    ["theirs", "POST", BODY, "rsa-v1_5-sha256"],
  ] as const)("passes a %s-signed %s (%s) to the bank, body intact", async (by, _method, body, alg) => {
    const r = await rfc9421Call(env.gw, { by, ...(body ? { body } : {}), alg });
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests).toHaveLength(1);
    const received = env.backend.requests[0]!;
    if (body) expect(received.body.toString()).toBe(body);
    expect(received.headers["signature-input"]).toContain('tag="fapi-2-request"');
  });

  it.each([
    {
      name: "a body changed after signing → content-digest",
      call: { body: BODY, tamperBody: BODY.replace("123.50", "999.00") },
      code: "SIGNATURE_INVALID",
      text: ["Content-Digest header is sha-256=", "hashes to"],
    },
    {
      name: "a covered header changed → rfc9421-signature",
      call: { tamper: (h: Record<string, string>) => (h["psu-id"] = "PSU-9999") },
      code: "SIGNATURE_INVALID",
      text: ["does not verify"],
    },
    {
      name: "an eligible header sent but not covered → rfc9421-coverage",
      call: { unsigned: { "psu-corporate-id": "CORP-1" } },
      code: "SIGNATURE_INVALID",
      text: ['does not cover "psu-corporate-id"'],
    },
    {
      name: "created 10 minutes ago → rfc9421-created",
      call: { createdOffset: -600 },
      code: "TIMESTAMP_INVALID",
      text: ["s ago; at most 300 s"],
    },
    {
      name: "a keyid naming another certificate → rfc9421-key-id",
      call: { keyid: "SN=0BADC0DE,CA=CN=Nobody" },
      code: "SIGNATURE_INVALID",
      text: ["0BADC0DE"],
    },
    {
      name: "a signature without the FAPI tag → rfc9421-signature-input",
      call: {
        tamper: (h: Record<string, string>) => {
          h["signature-input"] = h["signature-input"]!.replace(';tag="fapi-2-request"', "");
        },
      },
      code: "SIGNATURE_MISSING",
      text: ['no signature has tag="fapi-2-request"'],
    },
    {
      name: "a Content-Digest missing on a body → required-headers",
      call: {
        body: BODY,
        tamper: (h: Record<string, string>) => {
          delete h["content-digest"];
        },
      },
      code: "FORMAT_ERROR",
      text: ["Content-Digest header is missing"],
    },
    {
      name: "an RFC 9421 signature on a path that accepts draft-cavage only → dialect",
      call: { target: "/v1/funds-confirmations" },
      code: "SIGNATURE_MISSING",
      text: ["signed as rfc9421, which this path does not accept"],
    },
  ])("refuses $name, and the bank sees nothing", async ({ call, code, text }) => {
    const r = await rfc9421Call(env.gw, call as Rfc9421Call);
    expectRejected(r, { status: 400, code, text });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses rsa-pss-sha512 signed with a salt other than RFC 9421's 64 bytes, saying so (http-message-signatures 1.0 uses the largest)", async () => {
    const r = await rfc9421Call(env.gw, { by: "theirs", alg: "rsa-pss-sha512" });
    expectRejected(r, { status: 400, code: "SIGNATURE_INVALID", text: ["requires a 64-byte salt"] });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses the same signed request again (replay, keyed on the signature base)", async () => {
    const r = await prepare(env.gw, { body: BODY });
    const first = await send(env.gw, r.method, r.target, r.headers, r.body);
    expect(first.status, first.text).toBe(200);
    const again = await send(env.gw, r.method, r.target, r.headers, r.body);
    expectRejected(again, { status: 400, code: "SIGNATURE_INVALID" });
    expect(env.backend.requests).toHaveLength(1);
  });
});

describe("responses to RFC 9421 requests are signed in RFC 9421 (FAPI 2.0, bound to the request)", () => {
  const signing = useGatewayAndBackend((pki) => ({
    config: {
      verification: { dialects: { accept: ["cavage", "rfc9421"] } },
      responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
    },
  }));

  it.each([
    ["GET", undefined],
    ["POST", BODY],
  ] as const)(
    "a %s: the answer carries a fapi-2-response signature the bank's certificate verifies",
    async (_method, body) => {
      const r = await prepare(signing.gw, body === undefined ? {} : { body });
      const answer = await send(signing.gw, r.method, r.target, r.headers, r.body);
      expect(answer.status, answer.text).toBe(200);
      const headers = Object.fromEntries(
        Object.entries(answer.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])),
      );
      expect(headers["signature-input"]).toContain('tag="fapi-2-response"');
      expect(headers["aspsp-signature-certificate"]).toBe(signing.gw.pki.bankQseal.headerValue);
      expect(headers["x-request-id"]).toBe(r.headers["x-request-id"]);
      const url = new URL(signing.gw.url);
      const verified = verifyFapiResponse(
        { status: answer.status, headers },
        { method: r.method, targetUri: `https://${url.host}${r.target}`, headers: r.headers },
        {
          publicKey: createPublicKey(signing.gw.pki.bankQseal.pem),
          now: Date.now(),
          coverAlways: ["aspsp-signature-certificate", "x-request-id"],
        },
      );
      expect(isRejection(verified) ? verified.text : "verified").toBe("verified");
      expect(verifyContentDigest(headers["content-digest"], Buffer.from(answer.text))).toBe(true);
      // The full profile (FAPI 2.0 HTTP Signatures draft -01): the request's digest and signature bound.
      const label = /^([a-z0-9_.*-]+)=/.exec(String(r.headers["signature-input"]))![1]!;
      expect(headers["signature-input"]).toContain(
        `"@method";req "@target-uri";req ${body === undefined ? "" : '"content-digest";req '}"signature";req;key="${label}" "signature-input";req;key="${label}" "@status"`,
      );
      // Another signature of the same request in its place: the answer no longer verifies.
      const other = await prepare(signing.gw, body === undefined ? {} : { body });
      const swapped = verifyFapiResponse(
        { status: answer.status, headers },
        {
          method: r.method,
          targetUri: `https://${url.host}${r.target}`,
          headers: { ...r.headers, signature: other.headers.signature },
        },
        {
          publicKey: createPublicKey(signing.gw.pki.bankQseal.pem),
          now: Date.now(),
          coverAlways: ["aspsp-signature-certificate", "x-request-id"],
        },
      );
      expect(other.headers.signature).not.toBe(r.headers.signature);
      expect(isRejection(swapped) && swapped.code).toBe("SIGNATURE_INVALID");
    },
  );

  it("a draft-cavage request's answer is still signed in draft-cavage", async () => {
    const r = await signedCall(signing.gw, { signer: signing.gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
    expect(r.headers["signature-input"]).toBeUndefined();
    expect(String(r.headers.signature)).toMatch(/^keyId="SN=/);
  });
});

describe("responseSigning.rfc9421Profile: method-target signs as before", () => {
  const signing = useGatewayAndBackend((pki) => ({
    config: {
      verification: { dialects: { accept: ["cavage", "rfc9421"] } },
      responseSigning: {
        qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey },
        rfc9421Profile: "method-target" as const,
      },
    },
  }));

  it("a payment's answer binds the request through @method and @target-uri only", async () => {
    const r = await prepare(signing.gw, { body: BODY });
    const answer = await send(signing.gw, r.method, r.target, r.headers, r.body);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers["signature-input"]).toMatch(
      /^sig1=\("@method";req "@target-uri";req "@status" "aspsp-signature-certificate" "x-request-id" "content-digest"\);/,
    );
  });
});

describe("a gateway configured before dialects", () => {
  const plain = useGatewayAndBackend();
  it("refuses an RFC 9421 request, saying what it accepts", async () => {
    const r = await rfc9421Call(plain.gw);
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_MISSING",
      text: ["signed as rfc9421", "draft-cavage"],
    });
    expect(plain.backend.requests).toHaveLength(0);
  });
});
