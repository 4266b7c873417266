/**
 * The Host header as an authority (RFC 9110 7.2, RFC 3986 3.2.2-3.2.3), and the host step that
 * refuses anything else: a table of values a client may send and what becomes of them.
 */

import { describe, expect, it } from "vitest";
import { parseAuthority, servedAuthority } from "../../../src/checks/authority.js";
import { CheckContext } from "../../../src/checks/context.js";
import { requestChecks } from "../../../src/checks/index.js";
import { isRejection } from "../../../src/errors.js";
import { BASE_CHECK_OPTIONS } from "../../helpers/body-steps.js";

const VALID: readonly [string, { host: string; port: string | undefined }][] = [
  ["localhost", { host: "localhost", port: undefined }],
  ["localhost:9443", { host: "localhost", port: "9443" }],
  ["API.Bank.example", { host: "API.Bank.example", port: undefined }],
  ["127.0.0.1:8443", { host: "127.0.0.1", port: "8443" }],
  ["[::1]:8443", { host: "[::1]", port: "8443" }],
  ["[2001:db8::7]", { host: "[2001:db8::7]", port: undefined }],
  ["xn--bnk-ula.example", { host: "xn--bnk-ula.example", port: undefined }],
];

const INVALID: readonly [string, string][] = [
  ["localhost:9443/v1", "the port"],
  ["localhost/v1", "host name"],
  ["bank.example?x=1", "host name"],
  ["user@bank.example", "host name"],
  ["bank.example#frag", "host name"],
  ["bank.example:", "the port"],
  ["bank.example:99999", "the port"],
  ["bank.example:80:80", "the port"],
  ["[::1", "must end with ']'"],
  ["[not-an-ip]", "not an IPv6"],
  ["[::1]x", "the port"],
  ["bank example", "host name"],
  ["", "empty"],
];

describe("parseAuthority", () => {
  it.each(VALID)("takes %s", (value, parts) => {
    expect(parseAuthority(value)).toEqual(parts);
  });

  it.each(INVALID)("refuses %s (%s)", (value, why) => {
    const refused = parseAuthority(value);
    expect(isRejection(refused) && refused.code).toBe("FORMAT_ERROR");
    expect(isRejection(refused) && refused.text).toContain(why);
  });

  it("names: the host without case, the port only when the name has one", () => {
    const names = ["api.bank.example", "sandbox.bank.example:8443"];
    expect(servedAuthority({ host: "API.bank.example", port: "443" }, names)).toBe(true);
    expect(servedAuthority({ host: "sandbox.bank.example", port: "8443" }, names)).toBe(true);
    expect(servedAuthority({ host: "sandbox.bank.example", port: "9443" }, names)).toBe(false);
    expect(servedAuthority({ host: "evil.example", port: undefined }, names)).toBe(false);
  });
});

describe("the host step", () => {
  const hostStep = (hostNames?: string[]) =>
    requestChecks({ ...BASE_CHECK_OPTIONS, ...(hostNames ? { hostNames } : {}) }).find(
      (s) => s.name === "host",
    )!;
  const context = (host: string | undefined) =>
    new CheckContext(
      "GET",
      "/v1/consents",
      host === undefined ? {} : { host },
      { path: "/v1/consents", role: undefined },
      undefined,
    );

  it("refuses a Host that carries a path, and closes the connection", () => {
    const c = context("localhost:9443/v1");
    expect(hostStep().run!(c)).toMatchObject({ code: "FORMAT_ERROR" });
    expect(c.closeConnection).toBe(true);
  });

  it("refuses two Host lines (Node keeps the first; another hop may take the second) and closes", () => {
    const c = context("localhost:9443");
    c.rawHeaders = ["Host", "localhost:9443", "X-Request-ID", "1", "HOST", "evil.example"];
    expect(hostStep().run!(c)).toMatchObject({
      code: "FORMAT_ERROR",
      text: expect.stringContaining("more than one Host header"),
    });
    expect(c.closeConnection).toBe(true);
    c.rawHeaders = ["Host", "localhost:9443", "X-Host", "evil.example"];
    expect(hostStep().run!(c)).toBeUndefined();
  });

  it("keeps the parsed authority for what is built from it", () => {
    const c = context("localhost:9443");
    expect(hostStep().run!(c)).toBeUndefined();
    expect(c.authority).toEqual({ host: "localhost", port: "9443" });
  });

  it("with listen.hostNames, refuses a valid Host that is not one of them", () => {
    const c = context("evil.example");
    expect(hostStep(["api.bank.example"]).run!(c)).toMatchObject({
      code: "FORMAT_ERROR",
      text: expect.stringContaining("not a name this gateway serves"),
    });
    expect(hostStep(["api.bank.example"]).run!(context("api.bank.example:8443"))).toBeUndefined();
  });
});
