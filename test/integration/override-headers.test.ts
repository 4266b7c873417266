/**
 * Issue 25, points 3 and 4, over real TLS: headers that change the path or method behind the
 * gateway (honoured by IIS-style and older framework backends, the legacy cores it stands in
 * front of) reached the backend verbatim: an AIS-only TPP's signed GET carrying
 * `X-Original-URL: /v1/payments/…` was a role bypass, and `X-HTTP-Method-Override: GET` on a POST
 * escaped the unattended limit. Now they are refused (400 FORMAT_ERROR naming the header), the
 * forwarding headers are the gateway's own, HEAD counts as the read it is and an empty or made-up
 * PSU-IP-Address no longer passes for a present PSU.
 */

import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall } from "../helpers/gateway-fixture.js";
import { UNATTENDED } from "../helpers/shared-store-gateways.js";

const OVERRIDES: readonly [string, string][] = [
  ["X-Original-URL", "/v1/payments/norwegian-domestic-credit-transfers"],
  ["X-Rewrite-URL", "/v1/payments/norwegian-domestic-credit-transfers"],
  ["X-Original-URI", "/v1/payments"],
  ["X-Forwarded-Uri", "/v1/payments"],
  ["X-HTTP-Method-Override", "POST"],
  ["X-HTTP-Method", "DELETE"],
  ["X-Method-Override", "PUT"],
  // CGI-style backends read these as the names above.
  ["X_Original_URL", "/v1/payments"],
  ["X.HTTP.Method.Override", "POST"],
];

describe("path and method override headers", () => {
  const env = useGatewayAndBackend();

  it.each(OVERRIDES)(
    "%s is refused with FORMAT_ERROR naming it, and nothing reaches the backend",
    async (name, value) => {
      env.backend.reset();
      const r = await signedCall(env.gw, {
        // The AIS-only TPP: a path override would have been a payment it may not make.
        signer: env.gw.pki.tppB.qseal,
        target: "/v1/accounts",
        headers: { [name]: value },
      });
      expect(r.status).toBe(400);
      expect(r.json.tppMessages?.[0]?.code).toBe("FORMAT_ERROR");
      expect(r.json.tppMessages?.[0]?.text).toContain(`'${name.toLowerCase()}'`);
      expect(env.backend.requests).toHaveLength(0);
    },
  );

  it("refuses a _method query parameter", async () => {
    env.backend.reset();
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      target: "/v1/accounts?_method=DELETE",
    });
    expect(r.status).toBe(400);
    expect(r.json.tppMessages?.[0]?.text).toContain("_method");
    expect(env.backend.requests).toHaveLength(0);
  });

  it("cannot escape the unattended limit with a POST that says it is a GET", async () => {
    env.backend.reset();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await signedCall(env.gw, {
        signer: env.gw.pki.tppA.qseal,
        method: "POST",
        body: "{}",
        target: "/v1/accounts/acc-override/balances",
        headers: { "X-HTTP-Method-Override": "GET" },
        ...UNATTENDED,
      });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([400, 400, 400, 400, 400, 400]);
    expect(env.backend.requests).toHaveLength(0);
  });
});

describe("the unattended limit (SPEC 8)", () => {
  const env = useGatewayAndBackend();

  it("counts HEAD as the read it is: GET and HEAD share the 4 calls", async () => {
    const statuses: number[] = [];
    for (const method of ["GET", "HEAD", "HEAD", "GET", "HEAD", "GET"]) {
      const r = await signedCall(env.gw, {
        signer: env.gw.pki.tppA.qseal,
        method,
        target: "/v1/accounts/acc-head/balances",
        ...UNATTENDED,
      });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });

  it.each([
    ["empty", ""],
    ["not an address", "the-psu"],
    ["two addresses", "192.0.2.1, 192.0.2.2"],
  ])("refuses a PSU-IP-Address that is %s: it would count as a present PSU", async (_what, value) => {
    env.backend.reset();
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      target: "/v1/accounts/acc-ip/balances",
      headers: { "PSU-IP-Address": value },
    });
    expect(r.status).toBe(400);
    expect(r.json.tppMessages?.[0]?.code).toBe("FORMAT_ERROR");
    expect(r.json.tppMessages?.[0]?.text).toContain("PSU-IP-Address");
    expect(env.backend.requests).toHaveLength(0);
  });

  it.each(["192.0.2.10", "2001:db8::10"])("takes %s as a present PSU", async (address) => {
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      target: "/v1/accounts/acc-ip/balances",
      headers: { "PSU-IP-Address": address },
    });
    expect(r.status).toBe(200);
  });
});

/** What a client says about where it came from, none of which the backend may believe. */
const SPOOFED = {
  "X-Forwarded-For": "10.0.0.1",
  Forwarded: "for=10.0.0.1;host=internal.bank;proto=http",
  "X-Forwarded-Host": "internal.bank",
  "X-Forwarded-Proto": "http",
  "X-Forwarded-Port": "1",
  "X-Forwarded-Prefix": "/admin",
  "X-Real-IP": "10.0.0.2",
  "True-Client-IP": "10.0.0.3",
  X_Forwarded_For: "10.0.0.4",
};

describe("forwarding headers: written by the gateway from what it saw", () => {
  const env = useGatewayAndBackend();

  it("replaces every client-sent forwarding header with the gateway's own", async () => {
    env.backend.reset();
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: SPOOFED,
    });
    expect(r.status).toBe(200);
    const seen = env.backend.requests[0]!.headers;
    const port = new URL(env.gw.url).port;
    expect(seen["x-forwarded-for"]).toBe("127.0.0.1");
    expect(seen["x-real-ip"]).toBe("127.0.0.1");
    expect(seen["x-forwarded-proto"]).toBe("https");
    expect(seen["x-forwarded-host"]).toBe(`localhost:${port}`);
    expect(seen["x-forwarded-port"]).toBe(port);
    expect(seen.forwarded).toBe(`for=127.0.0.1;host="localhost:${port}";proto=https`);
    expect(seen["x-forwarded-prefix"]).toBeUndefined();
    expect(seen["true-client-ip"]).toBeUndefined();
    expect(seen.x_forwarded_for).toBeUndefined();
    expect(JSON.stringify(seen)).not.toMatch(/10\.0\.0\.|internal\.bank|\/admin/);
  });
});

describe("forwarding headers behind a trusted proxy, with configured names", () => {
  const env = useGatewayAndBackend({
    config: {
      listen: { trustedProxies: ["127.0.0.1"] },
      backend: { forwardedHeaders: { for: "x-client-address", forwarded: false, port: false } },
    },
  });

  it("extends the proxy's values and writes the configured names only", async () => {
    env.backend.reset();
    const r = await signedCall(env.gw, {
      signer: env.gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: {
        "X-Client-Address": "203.0.113.7",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-For": "10.9.9.9",
      },
    });
    expect(r.status).toBe(200);
    const seen = env.backend.requests[0]!.headers;
    expect(seen["x-client-address"]).toBe("203.0.113.7, 127.0.0.1");
    expect(seen["x-real-ip"]).toBe("203.0.113.7");
    // The standard name is stripped even when another is configured.
    expect(seen["x-forwarded-for"]).toBeUndefined();
    expect(seen.forwarded).toBeUndefined();
    expect(seen["x-forwarded-port"]).toBeUndefined();
  });
});
