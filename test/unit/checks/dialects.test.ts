/**
 * The `dialect` step's choice (src/checks/dialects.ts): the path's accepted dialects in order of
 * preference, the first the request carries; refusals that say what the path accepts; and a chain
 * that refuses to be built for a dialect it has no signature step for.
 */

import type { IncomingHttpHeaders } from "node:http";
import { describe, expect, it } from "vitest";
import {
  type DialectPolicy,
  dialectChooser,
  dialectNames,
  dialectsPresent,
  dialectUnit,
  requestChecks,
} from "../../../src/checks/index.js";
import { validateConfig } from "../../../src/config/load.js";
import { isRejection } from "../../../src/errors.js";
import { BASE_CHECK_OPTIONS } from "../../helpers/body-steps.js";

const jwsHeader = (header: object) => `${Buffer.from(JSON.stringify(header)).toString("base64url")}..AAAA`;
const JADES = jwsHeader({ alg: "PS256", b64: false, crit: ["b64", "sigT", "sigD"], sigD: {} });
const UK_OB = jwsHeader({ alg: "PS256", crit: ["http://openbanking.org.uk/iat"] });
/** JSON may escape '/': the family is still UK OB. */
const UK_OB_ESCAPED = `${Buffer.from('{"alg":"PS256","crit":["http:\\/\\/openbanking.org.uk\\/iat"]}').toString("base64url")}..AAAA`;

const SIGNED = {
  cavage: { signature: 'keyId="k",signature="AA=="' },
  rfc9421: { "signature-input": 'sig1=("@method");created=1', signature: "sig1=:AA==:" },
  jades: { "x-jws-signature": JADES },
  "uk-ob": { "x-jws-signature": UK_OB },
} as const satisfies Record<string, IncomingHttpHeaders>;

describe("dialectsPresent: which signatures a request carries", () => {
  it.each([
    ["draft-cavage", SIGNED.cavage, ["cavage"]],
    ["RFC 9421 (its Signature belongs to Signature-Input)", SIGNED.rfc9421, ["rfc9421"]],
    ["JAdES", SIGNED.jades, ["jades"]],
    ["UK Open Banking", SIGNED["uk-ob"], ["uk-ob"]],
    ["UK Open Banking with escaped slashes", { "x-jws-signature": UK_OB_ESCAPED }, ["uk-ob"]],
    ["draft-cavage and JAdES", { ...SIGNED.cavage, ...SIGNED.jades }, ["cavage", "jades"]],
    ["nothing", {}, []],
  ] as const)("%s", (_what, headers, expected) => {
    expect(dialectsPresent(headers)).toEqual(expected);
  });
});

describe("dialectChooser: the path's preference decides", () => {
  const policy: DialectPolicy = {
    accept: ["cavage", "rfc9421", "jades"],
    routes: [
      { prefix: "/open-banking", accept: ["uk-ob"] },
      { prefix: "/v2", accept: ["jades", "cavage"] },
    ],
  };
  const choose = dialectChooser(policy);
  const both = { ...SIGNED.cavage, ...SIGNED.jades };

  it.each([
    ["the default list's first", "/v1/accounts", both, "cavage"],
    ["a route's own order", "/v2/accounts", both, "jades"],
    ["the only one carried", "/v1/accounts", SIGNED.rfc9421, "rfc9421"],
    ["a route of one dialect", "/open-banking/v3.1/aisp/accounts", SIGNED["uk-ob"], "uk-ob"],
  ] as const)("%s", (_what, path, headers, expected) => {
    expect(choose(headers, path)).toBe(expected);
  });

  it.each([
    [
      "a dialect the path does not accept",
      "/open-banking/v3.1/aisp/accounts",
      SIGNED.cavage,
      "signed as cavage",
    ],
    ["UK OB where it is not accepted", "/v1/accounts", SIGNED["uk-ob"], "signed as uk-ob"],
    ["no signature at all", "/v1/accounts", {}, "the request is not signed"],
  ] as const)("refuses %s with SIGNATURE_MISSING saying what is accepted", (_what, path, headers, text) => {
    const refused = choose(headers, path);
    expect(isRejection(refused) && refused.code).toBe("SIGNATURE_MISSING");
    expect(isRejection(refused) && refused.text).toContain(text);
  });

  it("does not take an RFC 9421 Signature for draft-cavage's when draft-cavage is the only dialect", () => {
    const refused = dialectChooser({ accept: ["cavage"] })(SIGNED.rfc9421, "/v1/accounts");
    expect(isRejection(refused) && refused.text).toContain("signed as rfc9421");
  });

  it("keeps draft-cavage's own text when it is the only dialect", () => {
    const refused = dialectChooser({ accept: ["cavage"] })({}, "/v1/accounts");
    expect(isRejection(refused) && refused.text).toContain("Signature header is missing");
  });
});

describe("a chain accepts only dialects it can verify", () => {
  it("refuses to build a chain for a dialect without its signature step (every named one has one now)", () => {
    const unknown = "cavage-13";
    expect(() =>
      requestChecks({
        ...BASE_CHECK_OPTIONS,
        dialects: { accept: ["cavage"], routes: [{ prefix: "/x", accept: [unknown] }] },
      }),
    ).toThrow(/'cavage-13' is accepted but the chain cannot verify it/);
    const tls = { mode: "request", requireSameOrganization: false } as const;
    for (const dialect of ["cavage", "rfc9421", "jades", "uk-ob"] as const) {
      expect(() =>
        requestChecks({ ...BASE_CHECK_OPTIONS, clientCertificate: tls, dialects: { accept: [dialect] } }),
      ).not.toThrow();
    }
  });

  it("states per dialect what its signature authenticates: only UK OB signs the body alone", () => {
    const authenticates = Object.fromEntries(dialectNames().map((d) => [d, dialectUnit(d)!.authenticates]));
    expect(authenticates).toEqual({ cavage: "head", rfc9421: "head", jades: "head", "uk-ob": "body" });
  });

  it("refuses to build a chain accepting a body-only dialect without mutual TLS, on any path", () => {
    for (const dialects of [
      { accept: ["uk-ob"] },
      { accept: ["cavage"], routes: [{ prefix: "/ob", accept: ["uk-ob"] }] },
    ] as const) {
      expect(() => requestChecks({ ...BASE_CHECK_OPTIONS, dialects })).toThrow(
        /'uk-ob' signs the body only, so its requests must come over mutual TLS/,
      );
    }
    // verify without a config explains a request, not a connection: it builds one all the same.
    const explain = { mode: "not-checked", requireSameOrganization: true } as const;
    expect(() =>
      requestChecks({ ...BASE_CHECK_OPTIONS, clientCertificate: explain, dialects: { accept: ["uk-ob"] } }),
    ).not.toThrow();
  });

  it("the configuration refuses uk-ob without a client certificate, naming the key to set", () => {
    const config = (clientCertificate: string) =>
      validateConfig({
        trust: { caDir: "/trust" },
        register: { file: "/register.json" },
        listen: { clientCertificate },
        verification: { dialects: { accept: ["cavage"], routes: [{ prefix: "/ob", accept: ["uk-ob"] }] } },
      });
    expect(() => config("none")).toThrow(/set listen.clientCertificate to request or require/);
    expect(config("request").listen.clientCertificate).toBe("request");
  });

  it("the configuration names only dialects the chain verifies", () => {
    const config = (accept: string[]) =>
      validateConfig({
        trust: { caDir: "/trust" },
        register: { file: "/register.json" },
        verification: { dialects: { accept } },
      });
    expect(config(["cavage"]).verification.dialects.accept).toEqual(["cavage"]);
    expect(() => config(["cavage", "cavage"])).toThrow(/each dialect once/);
  });
});
