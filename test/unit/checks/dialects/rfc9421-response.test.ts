/**
 * Egress's check of a bank's RFC 9421 answer (the RFC 9421 unit's responseChecks) against answers signed by an
 * independent implementation, http-message-signatures 1.0 (rsa-pss-sha512 with RFC 9421's 64-byte
 * salt), with the bank's QSealC of the dev PKI: the full FAPI 2.0 HTTP Signatures profile (draft -01)
 * binds the request egress sent, down to its Content-Digest and signature, and the `method-target`
 * profile still takes a bank that binds only the method and URI.
 */

import { constants, sign as cryptoSign } from "node:crypto";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { createSigner, httpbis } from "http-message-signatures";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type RequestOfResponse,
  type ResponseToVerify,
  rfc9421ResponseChecks,
  StepsResponseVerifier,
} from "../../../../src/checks/index.js";
import { TppVerifier } from "../../../../src/eidas/index.js";
import { isRejection } from "../../../../src/errors.js";
import { buildKeyId, keyIdTargetFromDer } from "../../../../src/signature/index.js";
import {
  computeContentDigest,
  type FapiResponseProfile,
  signFapiRequest,
} from "../../../../src/signature/rfc9421/index.js";
import { loadTrustMaterial } from "../../../../src/trust/trust-material.js";
import { testPki } from "../../../helpers/gateway-fixture.js";

const BODY = '{"instructedAmount":{"currency":"EUR","amount":"12.00"},"creditorName":"Kari"}';
const ANSWER = '{"transactionStatus":"RCVD","paymentId":"p-1"}';
const TARGET = "/v1/payments/sepa-credit-transfers";
const REQUEST_ID = "5a0d4d0e-53a4-4b47-9f0e-0b1a1cda2f64";

const FULL = [
  '"@method";req',
  '"@target-uri";req',
  '"content-digest";req',
  '"signature";req;key="sig1"',
  '"signature-input";req;key="sig1"',
  "@status",
  "aspsp-signature-certificate",
  "x-request-id",
  "content-digest",
];
const METHOD_TARGET = [
  '"@method";req',
  '"@target-uri";req',
  "@status",
  "aspsp-signature-certificate",
  "x-request-id",
  "content-digest",
];

let pki: DevPki;
let sent: RequestOfResponse;

beforeAll(async () => {
  pki = await testPki();
  // The request as egress sends it: signed per FAPI 2.0 with the TPP's QSealC.
  const headers = {
    host: "bank.example",
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(BODY)),
    "content-digest": computeContentDigest(BODY, "sha-256"),
    "x-request-id": REQUEST_ID,
    "tpp-signature-certificate": pki.tppA.qseal.headerValue,
  };
  const targetUri = `https://bank.example${TARGET}`;
  const signed = signFapiRequest(
    { method: "POST", targetUri, headers },
    {
      privateKey: pki.tppA.qseal.privateKey,
      keyid: buildKeyId(keyIdTargetFromDer(pki.tppA.qseal.der)),
      now: Date.now(),
      coverAlways: ["tpp-signature-certificate", "x-request-id"],
    },
  );
  if (isRejection(signed)) throw new Error(signed.text);
  sent = {
    method: "POST",
    target: TARGET,
    requestId: REQUEST_ID,
    targetUri,
    headers: { ...headers, "signature-input": signed.signatureInput, signature: signed.signature },
  };
}, 120_000);

/** The bank's answer, signed by http-message-signatures with the bank's QSealC. */
async function theirAnswer(fields: readonly string[], request: RequestOfResponse): Promise<ResponseToVerify> {
  const key = pki.bankQseal.privateKey;
  const signer = {
    ...createSigner(key, "rsa-pss-sha512", buildKeyId(keyIdTargetFromDer(pki.bankQseal.der))),
    // RFC 9421 3.3.1: a 64-byte salt (their createSigner leaves Node's largest).
    sign: async (data: Buffer) =>
      cryptoSign("sha512", data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 }),
  };
  const headers = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(ANSWER)),
    "content-digest": computeContentDigest(ANSWER, "sha-256"),
    "aspsp-signature-certificate": pki.bankQseal.headerValue,
    "x-request-id": REQUEST_ID,
  };
  const signed = await httpbis.signMessage(
    {
      key: signer,
      fields: [...fields],
      params: ["created", "keyid", "alg", "tag"],
      paramValues: { tag: "fapi-2-response" },
      name: "sig1",
    },
    { status: 201, headers },
    { method: request.method, url: request.targetUri!, headers: request.headers as Record<string, string> },
  );
  const lower = Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { status: 201, headers: lower, body: Buffer.from(ANSWER), request };
}

function verifier(profile?: FapiResponseProfile): StepsResponseVerifier {
  const trust = loadTrustMaterial(pki.paths.trustDir);
  return new StepsResponseVerifier(
    rfc9421ResponseChecks({
      certificates: new TppVerifier({
        trustStore: () => trust.store,
        revocation: () => trust.revocation,
        cacheTtlMs: 300_000,
        failureTtlMs: 10_000,
        maxEntries: 100,
      }),
      certificateHeader: "aspsp-signature-certificate",
      dateToleranceMs: 60_000,
      algorithms: ["rsa-pss-sha512"],
      ...(profile ? { profile } : {}),
    }),
  );
}

function outcome(result: true | { code: string; text: string }): string {
  return result === true ? "verified" : `${result.code}: ${result.text}`;
}

describe("egress checks a bank's RFC 9421 answer signed by http-message-signatures", () => {
  it("the full profile (the default): verified", async () => {
    const answer = await theirAnswer(FULL, sent);
    expect(outcome(await verifier().verify(answer))).toBe("verified");
  });

  const altered: [string, (h: Record<string, unknown>) => Record<string, unknown>][] = [
    ["its Content-Digest", (h) => ({ ...h, "content-digest": computeContentDigest("{}", "sha-256") })],
    [
      "its Signature",
      (h) => ({ ...h, signature: String(h.signature).replace(/:[A-Za-z0-9+/]{4}/, ":AAAA") }),
    ],
    [
      "its Signature-Input",
      (h) => ({ ...h, "signature-input": String(h["signature-input"]).replace(/created=\d+/, "created=1") }),
    ],
  ];
  for (const [what, tamper] of altered) {
    it(`the request's ${what.slice(4)} altered after the answer was signed: SIGNATURE_INVALID`, async () => {
      const answer = await theirAnswer(FULL, sent);
      const request = {
        ...sent,
        headers: tamper(sent.headers as Record<string, unknown>) as RequestOfResponse["headers"],
      };
      expect(request.headers).not.toEqual(sent.headers);
      const result = await verifier().verify({ ...answer, request });
      expect(outcome(result)).toMatch(/^SIGNATURE_INVALID: /);
    });
  }

  it("an answer bound by method and URI only: refused by the full profile, naming what is missing", async () => {
    const answer = await theirAnswer(METHOD_TARGET, sent);
    expect(outcome(await verifier().verify(answer))).toBe(
      'SIGNATURE_INVALID: Signature sig1 does not cover "content-digest";req, "signature";req;key="sig1", "signature-input";req;key="sig1"; a FAPI 2.0 response signature must (profile full; a signer that binds the request by "@method";req and "@target-uri";req only is profile method-target)',
    );
  });

  it("the same answer with responses.rfc9421Profile: method-target: verified", async () => {
    const answer = await theirAnswer(METHOD_TARGET, sent);
    expect(outcome(await verifier("method-target").verify(answer))).toBe("verified");
  });
});
