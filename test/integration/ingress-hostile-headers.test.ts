/**
 * Issue 11, defect 7: requests whose meaning would change behind the gateway. Each is signed
 * correctly, so only the check for the class stops it:
 *
 * - a `Connection` header naming a signed or PSD2 header (the forwarder would remove it after it
 *   was verified) is refused; hop-by-hop names of the client's own are still stripped;
 * - header names a CGI-style backend reads as a PSD2 header (`PSU_ID` → HTTP_PSU_ID) are refused;
 *   look-alikes of the headers the gateway sets itself are stripped;
 * - paths a backend could route differently from the role check (encoded slashes, backslashes,
 *   empty and dot segments, fragments) are refused, whichever TPP signs them: the AIS-only TPP B
 *   could otherwise reach a payment route, and TPP A a route its request was not checked for.
 *
 * Everything is sent over a raw TLS connection, byte for byte as written here.
 */

import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  expectRejected,
  prepareSignedCall,
  rawExchange,
  rawHead,
  type TestGateway,
} from "../helpers/gateway-fixture.js";
import { named } from "../helpers/named-rows.js";

type Signer = "tppA" | "tppB";

function qseal(gw: TestGateway, signer: Signer): IssuedCertificate {
  return gw.pki[signer].qseal;
}

/** Signs `target` as `signer` would, adds `extra` headers after signing, sends it raw. */
async function sendSigned(
  gw: TestGateway,
  options: {
    signer?: Signer;
    method?: string;
    target: string;
    extra?: Record<string, string>;
    body?: string;
  },
) {
  const prepared = await prepareSignedCall({
    signer: qseal(gw, options.signer ?? "tppA"),
    method: options.method ?? "GET",
    target: options.target,
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  const headers: Record<string, string> = { ...prepared.headers, ...(options.extra ?? {}) };
  if (options.body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(options.body));
  const response = await rawExchange(gw, rawHead({ ...prepared, headers }) + (options.body ?? ""));
  return { response, requestId: prepared.headers["X-Request-ID"]! };
}

// ---------------------------------------------------------------------------------------------

interface ConnectionRow {
  readonly name: string;
  readonly connection: string;
  /** The name the refusal must quote (lower case). */
  readonly names: string;
}

const REFUSED_CONNECTION: readonly ConnectionRow[] = [
  { name: "Connection: psu-id (signed)", connection: "psu-id", names: "psu-id" },
  { name: "Connection: digest (signed)", connection: "digest", names: "digest" },
  { name: "Connection: x-request-id (signed)", connection: "x-request-id", names: "x-request-id" },
  { name: "Connection: keep-alive, PSU-ID", connection: "keep-alive, PSU-ID", names: "psu-id" },
  { name: "Connection: date (signed)", connection: "date", names: "date" },
  {
    name: "Connection: tpp-redirect-uri (signed)",
    connection: "tpp-redirect-uri",
    names: "tpp-redirect-uri",
  },
  { name: "Connection: signature", connection: "signature", names: "signature" },
  {
    name: "Connection: tpp-signature-certificate",
    connection: "tpp-signature-certificate",
    names: "tpp-signature-certificate",
  },
  {
    name: "Connection: psu-ip-address (PSD2, unsigned)",
    connection: "psu-ip-address",
    names: "psu-ip-address",
  },
  { name: "Connection: consent-id", connection: "consent-id", names: "consent-id" },
  {
    name: "Connection: x-tpp-organization-id (identity)",
    connection: "x-tpp-organization-id",
    names: "x-tpp-organization-id",
  },
  {
    name: "Connection: content-length (framing)",
    connection: "close,content-length",
    names: "content-length",
  },
  { name: "Connection: host", connection: "host", names: "host" },
  { name: "Connection: close,\\tpsu-id (tab)", connection: "close,\tpsu-id", names: "psu-id" },
];

interface NameRow {
  readonly name: string;
  readonly header: string;
  /** How a CGI-style backend would read it. */
  readonly readAs: string;
}

const REFUSED_NAMES: readonly NameRow[] = [
  { name: "psu_id", header: "psu_id", readAs: "psu-id" },
  { name: "PSU_ID", header: "PSU_ID", readAs: "psu-id" },
  { name: "tpp_redirect_uri", header: "tpp_redirect_uri", readAs: "tpp-redirect-uri" },
  { name: "x_request_id", header: "x_request_id", readAs: "x-request-id" },
  { name: "psu_ip_address", header: "psu_ip_address", readAs: "psu-ip-address" },
  { name: "Consent_ID", header: "Consent_ID", readAs: "consent-id" },
  {
    name: "tpp_signature_certificate",
    header: "tpp_signature_certificate",
    readAs: "tpp-signature-certificate",
  },
  { name: "PSU.ID (Apache maps every non-alphanumeric to _)", header: "PSU.ID", readAs: "psu-id" },
  { name: "psu-corporate_id (mixed)", header: "psu-corporate_id", readAs: "psu-corporate-id" },
];

interface PathRow {
  readonly name: string;
  readonly target: string;
  /** A fragment of the refusal text. */
  readonly reason: string;
}

const REFUSED_PATHS: readonly PathRow[] = [
  { name: "..%2F", target: "/v1/accounts/..%2Fpayments/x", reason: "encoded slash" },
  { name: "%2F", target: "/v1%2Fpayments/x", reason: "encoded slash" },
  { name: "%2f (lower case)", target: "/v1/accounts%2f..%2fpayments/x", reason: "encoded slash" },
  { name: "%5C", target: "/v1/payments%5Cx", reason: "encoded slash or backslash" },
  { name: "//", target: "/v1//payments/x", reason: "empty segment" },
  { name: "leading //", target: "//v1/payments/x", reason: "empty segment" },
  { name: "/./", target: "/v1/./payments/x", reason: "dot segment" },
  { name: "/../", target: "/v1/accounts/../payments/x", reason: "dot segment" },
  { name: "%2e%2e", target: "/v1/%2e%2e/payments", reason: "dot segment" },
  { name: ".%2E", target: "/v1/accounts/.%2E/payments/x", reason: "dot segment" },
  { name: "..; (servlet path parameter)", target: "/v1/accounts/..;/payments/x", reason: "dot segment" },
  { name: "backslash", target: "/v1\\payments", reason: "backslash" },
  { name: "fragment", target: "/v1/funds-confirmations#x", reason: "fragment" },
  { name: "fragment after a segment", target: "/v1/signing-baskets#/x", reason: "fragment" },
  { name: "encoded NUL", target: "/v1/funds-confirmations%00.json", reason: "NUL" },
  { name: "absolute form", target: "https://localhost/v1/payments/x", reason: "not a path" },
];

describe("headers and paths that would change meaning behind the gateway", () => {
  const env = useGatewayAndBackend();

  describe("a Connection header naming a signed, PSD2, identity or framing header is refused", () => {
    it.each(named(REFUSED_CONNECTION))(
      "%s → 400 FORMAT_ERROR naming it; the backend saw nothing",
      async (_n, row) => {
        const { gw, backend } = env;
        const { response, requestId } = await sendSigned(gw, {
          target: "/v1/accounts",
          extra: { Connection: row.connection },
        });
        expectRejected(response, {
          status: 400,
          code: "FORMAT_ERROR",
          text: [`Connection header names '${row.names}'`],
          requestId,
        });
        expect(backend.requests).toHaveLength(0);
      },
    );

    it("two Connection headers (keep-alive, then psu-id) are read together and refused", async () => {
      const { gw, backend } = env;
      const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
      const head = rawHead({ ...prepared, headers: { ...prepared.headers, Connection: "keep-alive" } });
      const response = await rawExchange(gw, head.replace(/\r\n\r\n$/, "\r\nConnection: psu-id\r\n\r\n"));
      expectRejected(response, {
        status: 400,
        code: "FORMAT_ERROR",
        text: ["Connection header names 'psu-id'"],
      });
      expect(backend.requests).toHaveLength(0);
    });

    it("Connection: keep-alive, X-Hop is still forwarded, without X-Hop", async () => {
      const { gw, backend } = env;
      const { response } = await sendSigned(gw, {
        target: "/v1/accounts",
        extra: { Connection: "keep-alive, X-Hop", "X-Hop": "for the next hop only", "X-End-To-End": "kept" },
      });
      expect(response.status, response.body).toBe(200);
      expect(backend.requests).toHaveLength(1);
      const seen = backend.requests[0]!.headers;
      expect(seen["x-hop"]).toBeUndefined();
      expect(seen["x-end-to-end"]).toBe("kept");
      expect(seen["psu-id"]).toBe("9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a");
    });
  });

  describe("header names a CGI-style backend reads as a PSD2 header are refused", () => {
    it.each(named(REFUSED_NAMES))(
      "%s → 400 FORMAT_ERROR naming it; the backend saw nothing",
      async (_n, row) => {
        const { gw, backend } = env;
        const { response, requestId } = await sendSigned(gw, {
          target: "/v1/accounts",
          extra: { [row.header]: "00000000-0000-4000-8000-000000000000" },
        });
        expectRejected(response, {
          status: 400,
          code: "FORMAT_ERROR",
          text: [`header '${row.header.toLowerCase()}'`, row.readAs],
          requestId,
        });
        expect(backend.requests).toHaveLength(0);
      },
    );

    it("look-alikes of the headers the gateway sets (x_tpp_*, x.tpp.*, x_forwarded_*) are stripped; others pass", async () => {
      const { gw, backend } = env;
      const { response } = await sendSigned(gw, {
        signer: "tppB",
        target: "/v1/accounts",
        extra: {
          x_tpp_organization_id: "PSDNO-FSA-DEMO0001",
          x_tpp_roles: "PSP_AI,PSP_PI",
          "x.tpp.roles": "PSP_AI,PSP_PI,PSP_IC",
          x_forwarded_for: "203.0.113.66",
          x_forwarded_proto: "http",
          x_custom_flag: "kept",
        },
      });
      expect(response.status, response.body).toBe(200);
      const seen = backend.requests[0]!.headers;
      expect(seen["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0002");
      for (const name of [
        "x_tpp_organization_id",
        "x_tpp_roles",
        "x.tpp.roles",
        "x_forwarded_for",
        "x_forwarded_proto",
      ]) {
        expect(seen[name], name).toBeUndefined();
      }
      expect(seen["x-forwarded-for"]).toBe("127.0.0.1");
      expect(seen.x_custom_flag).toBe("kept");
    });
  });

  describe("paths a backend could route differently from the role check are refused", () => {
    const rows = REFUSED_PATHS.flatMap((row) =>
      (["tppB", "tppA"] as const).map((signer) => ({
        ...row,
        signer,
        name: `${row.target} (${row.name}), signed by ${signer === "tppB" ? "the AIS-only TPP B" : "TPP A (PIS)"}`,
      })),
    );

    it.each(named(rows))("%s → 400 FORMAT_ERROR; the backend saw nothing", async (_n, row) => {
      const { gw, backend } = env;
      const { response, requestId } = await sendSigned(gw, { signer: row.signer, target: row.target });
      expectRejected(response, { status: 400, code: "FORMAT_ERROR", text: [row.reason], requestId });
      expect(backend.requests).toHaveLength(0);
    });

    it("a POST to a payment route by way of ..%2F from an AIS path, by the AIS-only TPP: refused, never executed", async () => {
      const { gw, backend } = env;
      const { response } = await sendSigned(gw, {
        signer: "tppB",
        method: "POST",
        target: "/v1/accounts/..%2Fpayments/norwegian-domestic-credit-transfers",
        body: JSON.stringify({ instructedAmount: { amount: "1.00", currency: "NOK" } }),
      });
      expectRejected(response, { status: 400, code: "FORMAT_ERROR", text: ["encoded slash"] });
      expect(backend.requests).toHaveLength(0);
    });
  });

  describe("paths the role check reads as the backend does are forwarded byte-exact", () => {
    it.each([
      "/v1/accounts/",
      "/v1/accounts",
      "/v1/accounts/a.b/transactions?dateFrom=2026-01-01&x=%2F..%2F",
    ])("%s (AIS, TPP B) → 200, the backend got exactly this target", async (target) => {
      const { gw, backend } = env;
      const { response } = await sendSigned(gw, { signer: "tppB", target });
      expect(response.status, response.body).toBe(200);
      expect(backend.requests.map((r) => r.target)).toEqual([target]);
    });

    it.each(["/v1/%70ayments/x", "/V1/Payments/x", "/v1/payments;jsessionid=1/x", "/v1/funds-confirmations"])(
      "%s needs the payment/PIIS role: refused for TPP B with ROLE_INVALID",
      async (target) => {
        const { gw, backend } = env;
        const { response } = await sendSigned(gw, { signer: "tppB", target });
        expectRejected(response, { status: 400, code: "ROLE_INVALID" });
        expect(backend.requests).toHaveLength(0);
      },
    );

    it("/v1/%70ayments/x by TPP A → forwarded with exactly that target", async () => {
      const { gw, backend } = env;
      const { response } = await sendSigned(gw, { signer: "tppA", target: "/v1/%70ayments/x" });
      expect(response.status, response.body).toBe(200);
      expect(backend.requests.map((r) => r.target)).toEqual(["/v1/%70ayments/x"]);
    });
  });
});
