/** The path and method overrides a legacy core behind the gateway would honour: refused, by name. */

import { describe, expect, it } from "vitest";
import { OVERRIDE_HEADERS, overrideChecker } from "../../../src/checks/overrides.js";

const check = overrideChecker(["x-core-path"]);

describe("override headers", () => {
  it.each([
    ...OVERRIDE_HEADERS.map((name) => [name, name] as const),
    // CGI-style spellings of the same names (Node gives names in lower case).
    ["x_original_url", "x-original-url"],
    ["x.http.method.override", "x-http-method-override"],
    ["x_http_method", "x-http-method"],
    // A bank's own, from verification.overrideHeaders.
    ["x-core-path", "x-core-path"],
  ] as const)("%s is refused as %s", (sent, readAs) => {
    const result = check({ [sent]: "/v1/payments" }, "/v1/accounts");
    expect(result?.code).toBe("FORMAT_ERROR");
    expect(result?.text).toContain(`'${sent}'`);
    expect(result?.text).toContain(readAs);
  });

  it("says whether a path or a method was overridden", () => {
    expect(check({ "x-original-url": "/x" }, "/")?.text).toContain("another path");
    expect(check({ "x-http-method-override": "POST" }, "/")?.text).toContain("another method");
  });

  it.each([
    "/v1/accounts?_method=DELETE",
    "/v1/accounts?a=1&_method=put",
    "/v1/accounts?_method",
    // As frameworks read names: any case (ASP.NET), percent-decoded (Express, PHP), PHP's '.', ' ', '['.
    "/v1/accounts?_METHOD=DELETE",
    "/v1/accounts?_Method=DELETE",
    "/v1/accounts?%5Fmethod=DELETE",
    "/v1/accounts?%5fmethod=DELETE",
    "/v1/accounts?_m%65thod=DELETE",
    "/v1/accounts?.method=DELETE",
    "/v1/accounts?+method=DELETE",
    "/v1/accounts?%20method=DELETE",
    "/v1/accounts?[method=DELETE",
  ])("refuses the _method parameter in %s", (target) => {
    expect(check({}, target)?.text).toContain("read as _method");
  });

  it.each([
    [{ "x-request-id": "1", "psu-id": "2", "x-original": "3", "x-http-methods": "4" }, "/v1/accounts"],
    [{}, "/v1/accounts?my_method=1&x_method=2"],
    [{}, "/v1/accounts?method=GET&_methods=1&a=%20"],
  ])("lets ordinary headers and parameters pass: %o %s", (headers, target) => {
    expect(check(headers, target)).toBeUndefined();
  });
});
