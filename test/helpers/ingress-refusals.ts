/**
 * Every refusal of the ingress checks as a row: what is sent (a request signed as a TPP would, with
 * one defect) and what comes back (the code and fragments of the text). Shared by the end-to-end
 * rejection tests and by the test that `verify --config` judges each one as the gateway does.
 */

import { randomBytes, randomUUID } from "node:crypto";
import type { DevPki, IssuedCertificate } from "@psd2-gateway/dev-pki";
import { expect } from "vitest";
import {
  buildKeyId,
  computeDigestHeader,
  formatHttpDate,
  keyIdTargetFromDer,
} from "../../src/signature/index.js";
import {
  type CallResult,
  type PreparedCall,
  prepareSignedCall,
  type SignedCall,
  send,
  signManually,
  type TestGateway,
} from "./gateway-fixture.js";

export const ACCOUNTS = "/v1/accounts";
export const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
export const PAYMENT_BODY = JSON.stringify({
  instructedAmount: { amount: "125.50", currency: "NOK" },
  creditorName: "Kari Nordmann",
  creditorAccount: { bban: "12345678903" },
});
/** A payment initiation: POST with a JSON body. */
export const PAYMENT = { method: "POST", target: PAYMENTS, body: PAYMENT_BODY } as const;
export const EMPTY_SHA256 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

// ---------------------------------------------------------------------------------------------
// What a row sends.

type Signer = "tppA" | "tppB" | "untrusted" | "expired" | "revoked" | "unregistered";

function certificateOf(pki: DevPki, signer: Signer): IssuedCertificate {
  return signer === "tppA" || signer === "tppB" ? pki[signer].qseal : pki[signer];
}

/** The headers and body of a signed request, as `tamper` sees and changes them. */
interface Sent {
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** Leaves headers out after signing. */
const drop =
  (...names: string[]) =>
  (sent: Sent): Sent => {
    const headers = { ...sent.headers };
    for (const name of names) delete headers[name];
    return { ...sent, headers };
  };

/** Sets a header after signing. */
const set =
  (name: string, value: () => string) =>
  (sent: Sent): Sent => ({ ...sent, headers: { ...sent.headers, [name]: value() } });

/** Replaces one parameter of a (not MIME-encoded) Signature header. */
function withSignatureParam(sent: Sent, param: string, value: string): Sent {
  const re = new RegExp(`${param}="[^"]*"`);
  expect(sent.headers.Signature).toMatch(re);
  return {
    ...sent,
    headers: { ...sent.headers, Signature: sent.headers.Signature!.replace(re, `${param}="${value}"`) },
  };
}

const keyIdOf = (cert: IssuedCertificate) => buildKeyId(keyIdTargetFromDer(cert.der));
const serialIn = (keyId: string) => /^SN=([0-9A-F]+),/.exec(keyId)![1]!;

/** A GET /v1/accounts signed by hand over exactly these headers (RequestSigner signs all eligible ones). */
export function handSigned(pki: DevPki, signed: readonly string[]) {
  const headers: Record<string, string> = {
    Date: formatHttpDate(Date.now()),
    "X-Request-ID": randomUUID(),
    "TPP-Redirect-URI": "https://tpp.example/cb",
    "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
  };
  return {
    method: "GET",
    target: ACCOUNTS,
    headers: signManually(pki.tppA.qseal, { method: "GET", target: ACCOUNTS, headers, signed }),
  };
}
export const SIGNED_BUT_PSU_ID = ["(request-target)", "date", "x-request-id", "tpp-redirect-uri"];

type Fragments = readonly (string | RegExp)[];

export interface Refusal {
  readonly name: string;
  // What is sent: a GET /v1/accounts signed by TPP A's QSealC as RequestSigner signs it (PSU-ID,
  // TPP-Redirect-URI and PSU-IP-Address filled in), unless a field below says otherwise.
  readonly signer?: Signer;
  readonly method?: "GET" | "POST";
  readonly target?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly signRequestTarget?: false;
  /** The signed Date is this far from the gateway's clock. */
  readonly dateOffsetMs?: number;
  /** Changes the request after signing. */
  readonly tamper?: (sent: Sent, pki: DevPki) => Sent;
  /** Sent to this target instead of the one signed. */
  readonly sendTo?: string;
  /** Instead of all the above: a request signed by hand. */
  readonly handMade?: (pki: DevPki) => { method: string; target: string; headers: Record<string, string> };
  // What comes back. The status depends on the profile; the X-Request-ID sent is echoed (none if
  // none was sent); the backend sees nothing.
  readonly code: string;
  readonly text: Fragments | ((pki: DevPki) => Fragments);
}

export const REFUSALS: readonly Refusal[] = [
  // Required headers
  {
    name: "missing X-Request-ID → FORMAT_ERROR, no X-Request-ID in the answer",
    tamper: drop("X-Request-ID"),
    code: "FORMAT_ERROR",
    text: ["X-Request-ID header is missing", "UUID"],
  },
  {
    name: "X-Request-ID that is not a UUID → FORMAT_ERROR naming the value, echoed back",
    headers: { "X-Request-ID": "request-42" },
    code: "FORMAT_ERROR",
    text: ["X-Request-ID 'request-42' is not a UUID", "send e.g."],
  },
  {
    name: "missing TPP-Redirect-URI → FORMAT_ERROR",
    tamper: drop("TPP-Redirect-URI"),
    code: "FORMAT_ERROR",
    text: ["TPP-Redirect-URI header is missing", "required on every request"],
  },
  {
    name: "TPP-Redirect-URI that is not an absolute URI → FORMAT_ERROR naming the value",
    headers: { "TPP-Redirect-URI": "/relative/callback" },
    code: "FORMAT_ERROR",
    text: ["TPP-Redirect-URI '/relative/callback' is not an absolute URI"],
  },
  {
    name: "missing Signature → SIGNATURE_MISSING",
    tamper: drop("Signature"),
    code: "SIGNATURE_MISSING",
    text: ["Signature header is missing", "QSealC"],
  },
  {
    name: "missing TPP-Signature-Certificate → CERTIFICATE_MISSING",
    tamper: drop("TPP-Signature-Certificate"),
    code: "CERTIFICATE_MISSING",
    text: ["TPP-Signature-Certificate header is missing", "base64 DER"],
  },
  {
    name: "a body without Digest → FORMAT_ERROR saying how to compute it",
    ...PAYMENT,
    signRequestTarget: false,
    tamper: drop("Digest"),
    code: "FORMAT_ERROR",
    text: ["Digest header is missing", "SHA-256=<base64"],
  },
  {
    name: "a non-JSON Content-Type → FORMAT_ERROR naming the type and the one accepted",
    ...PAYMENT,
    body: "<Document/>",
    headers: { "Content-Type": "application/xml" },
    code: "FORMAT_ERROR",
    text: ["Content-Type 'application/xml' is not accepted", "application/json"],
  },
  // Date
  {
    name: "a Date 2 minutes behind → TIMESTAMP_INVALID saying how far off and what is allowed",
    dateOffsetMs: -120_000,
    code: "TIMESTAMP_INVALID",
    text: [/is 1(19|20|21) s behind the gateway clock/, "at most 60 s either way"],
  },
  {
    name: "a Date 2 minutes ahead → TIMESTAMP_INVALID",
    dateOffsetMs: 120_000,
    code: "TIMESTAMP_INVALID",
    text: [/is 1(19|20|21) s ahead of the gateway clock/],
  },
  // The Signature header and what it signs
  {
    name: "a malformed Signature header → SIGNATURE_INVALID saying what is wrong with it",
    tamper: set("Signature", () => 'keyId="SN=1,CA=CN=x" algorithm="rsa-sha256"'),
    code: "SIGNATURE_INVALID",
    text: ["Signature header parameter 'keyid' is followed by 'a' instead of ','"],
  },
  {
    name: "a Signature whose signature value is not base64 → SIGNATURE_INVALID",
    tamper: (sent) => withSignatureParam(sent, "signature", "not*base64"),
    code: "SIGNATURE_INVALID",
    text: ["'signature' parameter is not valid base64"],
  },
  {
    name: "wrong signature bytes → SIGNATURE_INVALID naming the signed headers",
    tamper: (sent) => withSignatureParam(sent, "signature", randomBytes(256).toString("base64")),
    code: "SIGNATURE_INVALID",
    text: [
      "Signature does not verify with the certificate's public key",
      "(request-target) date digest x-request-id psu-id tpp-redirect-uri",
    ],
  },
  {
    name: "a signed header changed after signing (PSU-ID swapped) → SIGNATURE_INVALID",
    tamper: set("PSU-ID", randomUUID),
    code: "SIGNATURE_INVALID",
    text: ["Signature does not verify", "exact values sent"],
  },
  {
    name: "the request target changed after signing → SIGNATURE_INVALID",
    target: "/v1/accounts/1/balances",
    sendTo: "/v1/accounts/2/balances",
    code: "SIGNATURE_INVALID",
    text: ["Signature does not verify"],
  },
  {
    name: "keyId naming another serial → SIGNATURE_INVALID naming both serials and the expected keyId",
    tamper: (sent, pki) => withSignatureParam(sent, "keyId", keyIdOf(pki.tppB.qseal)),
    code: "SIGNATURE_INVALID",
    text: (pki) => {
      const [own, other] = [keyIdOf(pki.tppA.qseal), keyIdOf(pki.tppB.qseal)];
      expect(serialIn(other), "TPP A and TPP B have different serials").not.toBe(serialIn(own));
      return [
        `SN=${serialIn(other)} does not match the certificate serial ${serialIn(own)}`,
        `expected keyId '${own}'`,
      ];
    },
  },
  {
    name: "PSU-ID sent but not in `headers` → SIGNATURE_INVALID telling to sign psu-id",
    handMade: (pki) => handSigned(pki, SIGNED_BUT_PSU_ID),
    code: "SIGNATURE_INVALID",
    text: ["carries a psu-id header that the signature does not cover", "add 'psu-id'"],
  },
  {
    name: "a GET whose Digest is not the digest of zero bytes → SIGNATURE_INVALID naming both values",
    tamper: set("Digest", () => computeDigestHeader('{"a":1}')),
    code: "SIGNATURE_INVALID",
    text: [
      `Digest header is ${computeDigestHeader('{"a":1}')}`,
      "the request has no body",
      `SHA-256=${EMPTY_SHA256}`,
    ],
  },
  // The certificate
  {
    name: "a garbage certificate → CERTIFICATE_INVALID saying what was found",
    tamper: set("TPP-Signature-Certificate", () => "!!not-a-certificate!!"),
    code: "CERTIFICATE_INVALID",
    text: ["TPP-Signature-Certificate is not base64 DER or PEM", "character '!'"],
  },
  {
    name: "base64 of a DER SEQUENCE that is no certificate → CERTIFICATE_INVALID, never 500",
    tamper: set("TPP-Signature-Certificate", () =>
      Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]).toString("base64"),
    ),
    code: "CERTIFICATE_INVALID",
    text: ["X.509 certificate"],
  },
  {
    name: "a certificate from an untrusted CA → CERTIFICATE_INVALID naming the issuer",
    signer: "untrusted",
    code: "CERTIFICATE_INVALID",
    text: ["CN=Rogue Root", "not in the gateway's trust store"],
  },
  {
    name: "an expired certificate → CERTIFICATE_EXPIRED with the expiry date",
    signer: "expired",
    code: "CERTIFICATE_EXPIRED",
    text: (pki) => ["expired on", pki.expired.certificate.notAfter.toISOString().slice(0, 16), "renew it"],
  },
  {
    name: "a revoked certificate → CERTIFICATE_REVOKED",
    signer: "revoked",
    code: "CERTIFICATE_REVOKED",
    text: ["was revoked by", "Demo Qualified Issuing CA", "obtain a new certificate"],
  },
  {
    name: "a TPP not in the register → CERTIFICATE_BLOCKED naming the organisation",
    signer: "unregistered",
    code: "CERTIFICATE_BLOCKED",
    text: ["PSDNO-FSA-NOTREG01 is not in the TPP register"],
  },
  // The role the path needs, decided on the normalised path (RFC 3986 6.2.2.2 makes `%70` and `p`
  // equivalent, and backends decode, lower-case or collapse paths in many ways: routes.ts).
  {
    name: "the AIS-only TPP B calling POST /v1/payments/… → ROLE_INVALID naming the role needed and held",
    signer: "tppB",
    ...PAYMENT,
    code: "ROLE_INVALID",
    text: [`${PAYMENTS} needs the PSD2 role PSP_PI`, "PSDNO-FSA-DEMO0002 only: PSP_AI"],
  },
  ...[
    "/v1/%70ayments/norwegian-domestic-credit-transfers",
    "/V1/PAYMENTS/norwegian-domestic-credit-transfers",
    "/v1/payments;jsessionid=1/norwegian-domestic-credit-transfers",
  ].map(
    (target): Refusal => ({
      name: `the path variant ${target} still needs PSP_PI`,
      signer: "tppB",
      ...PAYMENT,
      target,
      code: "ROLE_INVALID",
      text: ["PSP_PI"],
    }),
  ),
  // A path a backend could route differently from the role check is refused before any role is read.
  {
    name: "the path variant //v1//payments/… (empty segments) → FORMAT_ERROR",
    signer: "tppB",
    ...PAYMENT,
    target: "//v1//payments/norwegian-domestic-credit-transfers",
    code: "FORMAT_ERROR",
    text: ["an empty segment (//)"],
  },
];

/** A row's request as it is sent: signed (or made by hand), tampered with, to its target. */
export async function refusalRequest(pki: DevPki, row: Refusal): Promise<PreparedCall> {
  if (row.handMade) return row.handMade(pki);
  const call: SignedCall = {
    signer: certificateOf(pki, row.signer ?? "tppA"),
    method: row.method,
    target: row.target ?? ACCOUNTS,
    headers: row.headers,
    body: row.body,
    signRequestTarget: row.signRequestTarget,
    now: row.dateOffsetMs === undefined ? undefined : Date.now() + row.dateOffsetMs,
    tamper: row.tamper && ((sent) => row.tamper!(sent, pki)),
  };
  const prepared = await prepareSignedCall(call);
  return { ...prepared, target: row.sendTo ?? prepared.target };
}

/** Signs and sends a row's request; returns the response and the X-Request-ID that went out (if any). */
export async function attempt(
  gw: TestGateway,
  row: Refusal,
): Promise<{ r: CallResult; requestId: string | undefined }> {
  const sent = await refusalRequest(gw.pki, row);
  return {
    r: await send(gw, sent.method, sent.target, sent.headers, sent.body),
    requestId: sent.headers["X-Request-ID"],
  };
}
