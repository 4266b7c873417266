import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import { buildSigningString, checkCoverage, type RequestParts } from "../../../src/signature/index.js";

const request: RequestParts = {
  method: "POST",
  target: "/v1/payments/norwegian-domestic-credit-transfers?allowLogicalDuplicate=true&x=%2F",
  headers: {
    date: "Sun, 22 Nov 2026 12:00:00 GMT",
    digest: "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
    "psu-id": "b3a2c0c4-6f7f-4b55-9c0e-6f3f2d0c1a11",
    "tpp-redirect-uri": "https://tpp.example/cb",
    accept: ["application/json", "text/plain"],
  },
};

describe("signing string (SPEC 5.6, draft-cavage 2.3)", () => {
  it("writes one lower-case 'name: value' line per listed header, in listed order, no trailing newline", () => {
    expect(buildSigningString(["digest", "x-request-id", "date"], request)).toBe(
      "digest: SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n" +
        "x-request-id: 99391c7e-ad88-49ec-a2ad-99ddcb1f7721\n" +
        "date: Sun, 22 Nov 2026 12:00:00 GMT",
    );
  });

  it("writes (request-target) as the lower-case method and the raw target, query and escapes untouched", () => {
    expect(buildSigningString(["(request-target)"], request)).toBe(
      "(request-target): post /v1/payments/norwegian-domestic-credit-transfers?allowLogicalDuplicate=true&x=%2F",
    );
  });

  it("lower-cases names listed in mixed case", () => {
    expect(buildSigningString(["X-Request-ID"], request)).toBe(
      "x-request-id: 99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
    );
  });

  it("joins a repeated header with ', '", () => {
    expect(buildSigningString(["accept"], request)).toBe("accept: application/json, text/plain");
  });

  it("writes (created) and (expires) from the signature parameters", () => {
    expect(buildSigningString(["(created)", "(expires)"], request, { created: 1, expires: 2 })).toBe(
      "(created): 1\n(expires): 2",
    );
    const r = buildSigningString(["(created)"], request);
    expect(isRejection(r) && r.text).toContain("no 'created' parameter");
  });

  it("refuses a listed header that the request lacks, naming it", () => {
    const r = buildSigningString(["date", "psu-corporate-id"], request);
    expect(isRejection(r)).toBe(true);
    if (isRejection(r)) {
      expect(r.code).toBe("SIGNATURE_INVALID");
      expect(r.text).toContain("no psu-corporate-id header");
    }
  });
});

describe("coverage rule (SPEC 5.5)", () => {
  it("passes when every eligible header present is signed", () => {
    expect(
      checkCoverage(["date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"], request.headers),
    ).toBe(true);
  });

  it("needs nothing for eligible headers the request does not carry", () => {
    expect(checkCoverage(["x-request-id"], { "x-request-id": "1" })).toBe(true);
  });

  it.each(["date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"])(
    "refuses an unsigned %s, naming it",
    (name) => {
      const signed = ["date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"].filter(
        (h) => h !== name,
      );
      const r = checkCoverage(signed, request.headers);
      expect(isRejection(r) && r.text).toContain(`${name} header that the signature does not cover`);
    },
  );

  it("covers psu-corporate-id too", () => {
    const r = checkCoverage(["date"], { date: "x", "psu-corporate-id": "c" });
    expect(isRejection(r) && r.text).toContain("psu-corporate-id");
  });
});
