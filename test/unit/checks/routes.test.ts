import { describe, expect, it } from "vitest";
import { ambiguousPath, RoleTable, routingPath } from "../../../src/checks/routes.js";

describe("routing path for role decisions", () => {
  it.each([
    ["/v1/payments/x?y=1", "/v1/payments/x"],
    ["/v1/%70ayments/x", "/v1/payments/x"],
    ["/V1/Payments/x", "/v1/payments/x"],
    ["//v1//payments/x", "/v1/payments/x"],
    ["/v1/accounts/../payments/x", "/v1/payments/x"],
    ["/v1/./payments/x", "/v1/payments/x"],
    ["/v1/payments;jsessionid=1/x", "/v1/payments/x"],
    ["/v1/payments%2Fx", "/v1/payments%2fx"],
  ])("%s is routed as %s", (target, expected) => {
    expect(routingPath(target)).toBe(expected);
  });

  it("leaves a plain path untouched (the fast path)", () => {
    const target = "/v1/accounts/a1/balances";
    expect(routingPath(target)).toBe(target);
  });

  it("finds the longest configured prefix on whole segments, case-insensitively", () => {
    const table = new RoleTable([
      { prefix: "/v1/payments", role: "PSP_PI" },
      { prefix: "/v1/Payments/Special", role: "PSP_IC" },
    ]);
    expect(table.roleFor(routingPath("/v1/payments/special/1"))).toBe("PSP_IC");
    expect(table.roleFor(routingPath("/v1/payments/x"))).toBe("PSP_PI");
    expect(table.roleFor(routingPath("/v1/paymentsx"))).toBeUndefined();
  });
});

describe("paths a backend could route differently from the role check", () => {
  it.each([
    ["/v1/accounts/..%2Fpayments/x", "an encoded slash or backslash (%2F, %5C)"],
    ["/v1%2fpayments/x", "an encoded slash or backslash (%2F, %5C)"],
    ["/v1/payments%5Cx", "an encoded slash or backslash (%2F, %5C)"],
    ["/v1\\payments", "a backslash"],
    ["//v1/payments", "an empty segment (//)"],
    ["/v1//payments", "an empty segment (//)"],
    ["/v1/./payments", "a dot segment (/./ or /../)"],
    ["/v1/accounts/../payments", "a dot segment (/./ or /../)"],
    ["/v1/%2e%2e/payments", "a dot segment (/./ or /../)"],
    ["/v1/%2E/payments", "a dot segment (/./ or /../)"],
    ["/v1/accounts/..;x/payments", "a dot segment (/./ or /../)"],
    ["/v1/accounts/..", "a dot segment (/./ or /../)"],
    ["/v1/funds-confirmations#x", "a fragment (#)"],
    ["/v1/accounts?dateFrom=2026-01-01#x", "a fragment (#)"],
    ["/v1/funds-confirmations%00.json", "an encoded NUL (%00)"],
    ["/v1/payments./sepa-credit-transfers", "a segment ending in a dot or encoded whitespace"],
    ["/v1/payments%2E/sepa-credit-transfers", "a segment ending in a dot or encoded whitespace"],
    ["/v1/payments%20/sepa-credit-transfers", "a segment ending in a dot or encoded whitespace"],
    ["/v1/payments%09;x/sepa-credit-transfers", "a segment ending in a dot or encoded whitespace"],
    ["/v1/accounts/...", "a segment ending in a dot or encoded whitespace"],
    ["/v1/accounts/acc-1.", "a segment ending in a dot or encoded whitespace"],
    ["/v1/accounts/%zz", "a '%' not followed by two hex digits"],
    ["/v1/accounts/100%", "a '%' not followed by two hex digits"],
    ["/v1/accounts/%252e%252e/payments", "a double-encoded character (%25 followed by hex digits)"],
    ["/v1/accounts/..%252Fpayments", "a double-encoded character (%25 followed by hex digits)"],
    [
      "/v1/accounts/..%c0%afpayments",
      "percent-encoded bytes that are not UTF-8 (such as the overlong %C0%AF)",
    ],
    [
      "/v1/accounts/%e0%80%ae%e0%80%ae",
      "percent-encoded bytes that are not UTF-8 (such as the overlong %C0%AF)",
    ],
    ["/v1/accounts/%ff", "percent-encoded bytes that are not UTF-8 (such as the overlong %C0%AF)"],
  ])("%s is refused: it holds %s", (target, reason) => {
    expect(ambiguousPath(target)).toBe(reason);
  });

  it.each([
    "/v1/accounts",
    "/v1/accounts/",
    "/v1/accounts/a.b/transactions?dateFrom=2026-01-01&x=%2F..%2F",
    "/v1/%70ayments/x",
    "/v1/payments;jsessionid=1/x",
    "/v1/accounts/%C3%A5se",
    "/v1/accounts/a%20b/balances",
    "/v1/accounts/a.b.c",
  ])("%s is forwarded: the backend routes it as the role check reads it", (target) => {
    expect(ambiguousPath(target)).toBeUndefined();
  });
});
