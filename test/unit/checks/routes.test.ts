import { describe, expect, it } from "vitest";
import { RoleTable, routingPath } from "../../../src/checks/routes.js";

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
