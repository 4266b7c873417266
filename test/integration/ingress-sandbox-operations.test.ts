/**
 * Sandbox operations are test tooling, not PSU journeys: through a gateway with the default
 * configuration, `/v1/sandbox/...` calls go through without TPP-Redirect-URI and without PSU
 * headers (SPEC 4.2, 4.3 list them without), while their signature, Digest and certificate are
 * checked as on every other path.
 */

import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, signedCall } from "../helpers/gateway-fixture.js";

/** The headers SPEC 4.2 and 4.3 do not list for the sandbox operations. */
const NOT_SENT = ["TPP-Redirect-URI", "PSU-ID", "PSU-IP-Address"];

describe("sandbox operations through the gateway (default config)", () => {
  const env = useGatewayAndBackend();

  it("forwards GET /v1/sandbox/customers and a sandbox POST without TPP-Redirect-URI or PSU headers", async () => {
    const { gw, backend } = env;
    const list = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/sandbox/customers?withAccounts=true&withAgreements=false",
      omitHeaders: NOT_SENT,
    });
    expect(list.status, list.text).toBe(200);

    const body = JSON.stringify([{ bookingDate: "2026-11-20", valueDate: "2026-11-21" }]);
    const created = await signedCall(gw, {
      signer: gw.pki.tppB.qseal,
      method: "POST",
      target: "/v1/sandbox/card-accounts/c-1/transactions",
      body,
      omitHeaders: NOT_SENT,
    });
    expect(created.status, created.text).toBe(200);

    expect(backend.requests.map((r) => `${r.method} ${r.target}`)).toEqual([
      "GET /v1/sandbox/customers?withAccounts=true&withAgreements=false",
      "POST /v1/sandbox/card-accounts/c-1/transactions",
    ]);
    expect(backend.requests[1]!.body.toString()).toBe(body);
    for (const r of backend.requests) {
      expect(r.headers["tpp-redirect-uri"]).toBeUndefined();
      expect(r.headers["x-psu-present"]).toBe("false");
    }
  });

  it("still checks the signature, the Digest and the certificate there", async () => {
    const { gw, backend } = env;
    const target = "/v1/sandbox/customers";
    expectRejected(
      await signedCall(gw, {
        signer: gw.pki.tppA.qseal,
        target,
        omitHeaders: NOT_SENT,
        tamper: ({ headers }) => {
          const { Signature: _dropped, ...rest } = headers;
          return { headers: rest };
        },
      }),
      { status: 400, code: "SIGNATURE_MISSING" },
    );
    expectRejected(
      await signedCall(gw, {
        signer: gw.pki.tppA.qseal,
        method: "POST",
        target: "/v1/sandbox/card-accounts/c-1/transactions",
        body: '[{"bookingDate":"2026-11-20"}]',
        omitHeaders: NOT_SENT,
        tamper: ({ headers }) => ({ headers, body: '[{"bookingDate":"2026-11-21"}]' }),
      }),
      { status: 400, code: "SIGNATURE_INVALID", text: ["Digest"] },
    );
    expectRejected(await signedCall(gw, { signer: gw.pki.expired, target, omitHeaders: NOT_SENT }), {
      status: 400,
      code: "CERTIFICATE_EXPIRED",
    });
    // Nothing refused reached the backend whole (the tampered body's tail is held back).
    expect(backend.requests.filter((r) => r.complete)).toHaveLength(0);
  });

  it("still demands TPP-Redirect-URI on every other path", async () => {
    const { gw, backend } = env;
    for (const target of ["/v1/accounts", "/v1/sandboxes/customers"]) {
      expectRejected(await signedCall(gw, { signer: gw.pki.tppA.qseal, target, omitHeaders: NOT_SENT }), {
        status: 400,
        code: "FORMAT_ERROR",
        text: ["TPP-Redirect-URI header is missing"],
      });
    }
    expect(backend.requests).toHaveLength(0);
  });
});
