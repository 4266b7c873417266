/**
 * The `required-headers` step with the default configuration: TPP-Redirect-URI on every request
 * (SPEC 4, 5.11) except the sandbox operations, whose headers SPEC 4.2 and 4.3 list without it
 * (and without any PSU header); X-Request-ID, Signature, the certificate and a body's Digest are
 * required there as everywhere.
 */

import type { IncomingHttpHeaders } from "node:http";
import { describe, expect, it } from "vitest";
import { CheckContext, type CheckOptions, requestChecks, routingPath } from "../../../src/checks/index.js";
import { validateConfig } from "../../../src/config/load.js";
import { isRejection } from "../../../src/errors.js";
import { BASE_CHECK_OPTIONS } from "../../helpers/body-steps.js";

const defaults = validateConfig({ trust: { caDir: "/trust" }, register: { file: "/register.json" } });

const options: CheckOptions = {
  ...BASE_CHECK_OPTIONS,
  redirectUriOptionalPrefixes: defaults.verification.redirectUriOptionalPrefixes,
};

// The `dialect` step finds the signature header; `required-headers` the rest, for that dialect.
const steps = requestChecks(options).filter((s) => s.name === "dialect" || s.name === "required-headers");

/** What a sandbox call carries (SPEC 4.2): no TPP-Redirect-URI, no PSU-ID, no PSU-IP-Address. */
const SANDBOX_HEADERS: IncomingHttpHeaders = {
  "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
  signature: 'keyId="SN=1,CA=CN=x",algorithm="rsa-sha256",headers="date",signature="AA=="',
  "tpp-signature-certificate": "MIIB",
  date: "Mon, 23 Nov 2026 08:23:18 GMT",
};

function run(method: string, target: string, headers: IncomingHttpHeaders) {
  const context = new CheckContext(
    method,
    target,
    headers,
    { path: routingPath(target), role: undefined },
    undefined,
  );
  for (const step of steps) {
    const result = step.run!(context);
    if (result instanceof Promise) throw new Error(`${step.name} is synchronous`);
    if (result !== undefined) return result;
  }
  return undefined;
}

describe("required-headers with the default config: sandbox operations need no TPP-Redirect-URI", () => {
  it.each([
    ["GET", "/v1/sandbox/customers?withAccounts=true&withAgreements=false"],
    ["GET", "/v1/sandbox/customers"],
    ["GET", "/V1/Sandbox/customers"],
    ["GET", "/v1/sandbox"],
  ])("%s %s passes without TPP-Redirect-URI and PSU headers", (method, target) => {
    expect(run(method, target, SANDBOX_HEADERS)).toBeUndefined();
  });

  it("passes a sandbox POST with its Digest and JSON body (SPEC 4.3)", () => {
    const headers = {
      ...SANDBOX_HEADERS,
      digest: "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
      "content-type": "application/json",
      "content-length": "2",
    };
    expect(run("POST", "/v1/sandbox/card-accounts/c-1/transactions", headers)).toBeUndefined();
  });

  it.each([
    ["GET", "/v1/accounts"],
    ["GET", "/v1/sandboxes/customers"],
    ["GET", "/v1/sandbox-customers"],
    ["GET", "/v2/sandbox/customers"],
    ["POST", "/v1/payments/norwegian-domestic-credit-transfers"],
  ])("%s %s still needs TPP-Redirect-URI", (method, target) => {
    const r = run(method, target, SANDBOX_HEADERS);
    expect(isRejection(r) && r.code).toBe("FORMAT_ERROR");
    expect(isRejection(r) && r.text).toContain("TPP-Redirect-URI header is missing");
  });

  it.each([
    ["X-Request-ID", "x-request-id", "FORMAT_ERROR"],
    ["Signature", "signature", "SIGNATURE_MISSING"],
    ["TPP-Signature-Certificate", "tpp-signature-certificate", "CERTIFICATE_MISSING"],
  ] as const)("still needs %s on sandbox paths", (_label, name, code) => {
    const { [name]: _dropped, ...headers } = SANDBOX_HEADERS;
    const r = run("GET", "/v1/sandbox/customers", headers);
    expect(isRejection(r) && r.code).toBe(code);
  });

  it("still needs Digest and a JSON type with a body on sandbox paths", () => {
    const r = run("POST", "/v1/sandbox/card-accounts/c-1/transactions", {
      ...SANDBOX_HEADERS,
      "content-type": "application/json",
      "content-length": "2",
    });
    expect(isRejection(r) && r.text).toContain("Digest header is missing");
  });
});

// URIs that passed are kept (a TPP sends one per session): the answer must not change with it.
describe("TPP-Redirect-URI must be an absolute URI, every time", () => {
  const many = Array.from({ length: 1100 }, (_, i) => `https://tpp.example/cb?s=${i}`);
  it.each([
    ["an absolute URI", "https://tpp.example/cb?s=1", undefined],
    ["a relative reference", "/cb?s=1", "is not an absolute URI"],
    ["no scheme", "tpp.example/cb", "is not an absolute URI"],
    ["a long absolute URI", `https://tpp.example/${"x".repeat(2000)}`, undefined],
  ])("%s", (_what, uri, refusal) => {
    for (const seen of [uri, ...many, uri]) {
      const r = run("GET", "/v1/accounts", { ...SANDBOX_HEADERS, "tpp-redirect-uri": seen });
      const expected = seen === uri ? refusal : undefined;
      if (expected === undefined) expect(r).toBeUndefined();
      else expect(isRejection(r) && r.text).toContain(expected);
    }
  });
});

describe("required-headers: PSU-IP-Address must be an IP address (it lifts the unattended limit, SPEC 8)", () => {
  const headers = (value: string): IncomingHttpHeaders => ({ ...SANDBOX_HEADERS, "psu-ip-address": value });

  it.each(["192.0.2.10", "2001:db8::10", "::ffff:192.0.2.10"])("takes %s", (value) => {
    expect(run("GET", "/v1/sandbox/customers", headers(value))).toBeUndefined();
  });

  it.each(["", " ", "localhost", "192.0.2.300", "192.0.2.1, 192.0.2.2", "2001:db8::zz"])(
    "refuses %j with FORMAT_ERROR naming the header",
    (value) => {
      const result = run("GET", "/v1/sandbox/customers", headers(value));
      expect(isRejection(result) && result.code).toBe("FORMAT_ERROR");
      expect(isRejection(result) && result.text).toContain("PSU-IP-Address");
    },
  );
});
