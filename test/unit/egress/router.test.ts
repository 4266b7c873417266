/**
 * BankRouter: which bank profile a request from the TPP's application goes to, by Host and/or
 * path prefix (whole segments, removed before forwarding). A Host-bound profile beats one
 * without; among the rest the longest prefix wins.
 */

import { describe, expect, it } from "vitest";
import { BankRouter, type Routable } from "../../../src/egress/router.js";
import { named } from "../../helpers/named-rows.js";

const DEMO: Routable = { name: "demo", prefix: "/demo" };
const BANK: Routable = { name: "bank", prefix: "/bank" };
const BANK_NORDIC: Routable = { name: "bank-nordic", prefix: "/bank/nordic" };
const BY_HOST: Routable = { name: "by-host", host: "bank.example" };
const HOSTED_SHORT: Routable = { name: "hosted-short", host: "Bank.Example", prefix: "/a" };
const LONG: Routable = { name: "long", prefix: "/a/b/c/d" };
const IPV6: Routable = { name: "ipv6", host: "[::1]" };
const LOOPBACK: Routable = { name: "loopback", prefix: "/lo" };

interface Row {
  readonly name: string;
  readonly profiles: readonly Routable[];
  readonly host: string | undefined;
  readonly target: string;
  /** The profile's name and the rewritten target; undefined when no profile serves it. */
  readonly expected: { readonly profile: string; readonly target: string } | undefined;
}

const to = (profile: string, target: string) => ({ profile, target });

const ROWS: readonly Row[] = [
  // A prefix matches whole segments and is removed.
  { name: "prefix alone", profiles: [DEMO], host: undefined, target: "/demo", expected: to("demo", "/") },
  {
    name: "prefix with trailing slash",
    profiles: [DEMO],
    host: undefined,
    target: "/demo/",
    expected: to("demo", "/"),
  },
  {
    name: "below the prefix",
    profiles: [DEMO],
    host: undefined,
    target: "/demo/x",
    expected: to("demo", "/x"),
  },
  {
    name: "below the prefix, with a query",
    profiles: [DEMO],
    host: "127.0.0.1:8090",
    target: "/demo/v1/accounts?withBalance=true",
    expected: to("demo", "/v1/accounts?withBalance=true"),
  },
  {
    name: "prefix then a query",
    profiles: [DEMO],
    host: undefined,
    target: "/demo?x=1",
    expected: to("demo", "/?x=1"),
  },
  { name: "not /demo2", profiles: [DEMO], host: undefined, target: "/demo2", expected: undefined },
  { name: "not /demo2/x", profiles: [DEMO], host: undefined, target: "/demo2/x", expected: undefined },
  { name: "not /demo-x", profiles: [DEMO], host: undefined, target: "/demo-x/v1", expected: undefined },
  { name: "not the root", profiles: [DEMO], host: undefined, target: "/", expected: undefined },
  { name: "not deeper down", profiles: [DEMO], host: undefined, target: "/v1/demo/x", expected: undefined },
  {
    name: "paths are case-sensitive",
    profiles: [DEMO],
    host: undefined,
    target: "/Demo/x",
    expected: undefined,
  },
  { name: "no profiles", profiles: [], host: "bank.example", target: "/demo", expected: undefined },

  // The longest prefix wins, whatever the configured order.
  {
    name: "longest prefix, shorter listed first",
    profiles: [BANK, BANK_NORDIC],
    host: undefined,
    target: "/bank/nordic/v1/accounts",
    expected: to("bank-nordic", "/v1/accounts"),
  },
  {
    name: "longest prefix, longer listed first",
    profiles: [BANK_NORDIC, BANK],
    host: undefined,
    target: "/bank/nordic/v1/accounts",
    expected: to("bank-nordic", "/v1/accounts"),
  },
  {
    name: "longest prefix, exactly",
    profiles: [BANK, BANK_NORDIC],
    host: undefined,
    target: "/bank/nordic",
    expected: to("bank-nordic", "/"),
  },
  {
    name: "longer prefix not on a segment boundary: the shorter one",
    profiles: [BANK, BANK_NORDIC],
    host: undefined,
    target: "/bank/nordics/v1",
    expected: to("bank", "/nordics/v1"),
  },
  {
    name: "only the shorter prefix matches",
    profiles: [BANK_NORDIC, BANK],
    host: undefined,
    target: "/bank/v1",
    expected: to("bank", "/v1"),
  },

  // A Host-bound profile beats a prefix-only one; its target is left as it is.
  {
    name: "Host-bound beats prefix-only",
    profiles: [DEMO, BY_HOST],
    host: "bank.example",
    target: "/demo/v1",
    expected: to("by-host", "/demo/v1"),
  },
  {
    name: "another Host: prefix-only",
    profiles: [DEMO, BY_HOST],
    host: "other.example",
    target: "/demo/v1",
    expected: to("demo", "/v1"),
  },
  {
    name: "no Host: prefix-only",
    profiles: [BY_HOST, DEMO],
    host: undefined,
    target: "/demo/v1",
    expected: to("demo", "/v1"),
  },
  {
    name: "Host-bound only, another Host",
    profiles: [BY_HOST],
    host: "other.example",
    target: "/v1",
    expected: undefined,
  },
  {
    name: "Host-bound only, no Host",
    profiles: [BY_HOST],
    host: undefined,
    target: "/v1",
    expected: undefined,
  },
  {
    name: "Host-bound with a short prefix beats a longer prefix-only one",
    profiles: [LONG, HOSTED_SHORT],
    host: "bank.example",
    target: "/a/b/c/d/x",
    expected: to("hosted-short", "/b/c/d/x"),
  },
  {
    name: "Host-bound prefix /a does not take /ab, nor does any other",
    profiles: [LONG, HOSTED_SHORT],
    host: "bank.example",
    target: "/ab/c",
    expected: undefined,
  },
  {
    name: "Host-bound prefix that does not match: the prefix-only one that does",
    profiles: [HOSTED_SHORT, DEMO],
    host: "bank.example",
    target: "/demo/x",
    expected: to("demo", "/x"),
  },
  {
    name: "Host-bound with prefix, another Host: the longer prefix-only one",
    profiles: [LONG, HOSTED_SHORT],
    host: "other.example",
    target: "/a/b/c/d/x",
    expected: to("long", "/x"),
  },

  // The Host compare ignores the port and case.
  {
    name: "Host with a port",
    profiles: [BY_HOST],
    host: "bank.example:8443",
    target: "/v1",
    expected: to("by-host", "/v1"),
  },
  {
    name: "Host in upper case",
    profiles: [BY_HOST],
    host: "BANK.Example",
    target: "/v1",
    expected: to("by-host", "/v1"),
  },
  {
    name: "profile Host in mixed case, Host with a port",
    profiles: [HOSTED_SHORT],
    host: "bank.example:443",
    target: "/a/v1",
    expected: to("hosted-short", "/v1"),
  },
  {
    name: "Host with white space around it",
    profiles: [BY_HOST],
    host: " bank.example:80 ",
    target: "/v1",
    expected: to("by-host", "/v1"),
  },
  {
    name: "not a longer Host",
    profiles: [BY_HOST],
    host: "bank.example.evil:80",
    target: "/v1",
    expected: undefined,
  },
  {
    name: "not a sub-domain",
    profiles: [BY_HOST],
    host: "api.bank.example",
    target: "/v1",
    expected: undefined,
  },
  { name: "not an empty Host", profiles: [BY_HOST], host: "", target: "/v1", expected: undefined },

  // IPv6 literals: the port after the brackets is ignored, the colons inside are kept.
  {
    name: "IPv6 Host with a port",
    profiles: [LOOPBACK, IPV6],
    host: "[::1]:8090",
    target: "/lo/v1",
    expected: to("ipv6", "/lo/v1"),
  },
  {
    name: "IPv6 Host without a port",
    profiles: [IPV6],
    host: "[::1]",
    target: "/v1",
    expected: to("ipv6", "/v1"),
  },
  {
    name: "a profile host written as a bare IPv6 address",
    profiles: [{ name: "bare-v6", host: "::1" }],
    host: "[::1]:8090",
    target: "/v1",
    expected: to("bare-v6", "/v1"),
  },
  {
    name: "a profile host written with a port: the port is ignored on both sides",
    profiles: [{ name: "with-port", host: "bank.example:8443" }],
    host: "bank.example:8090",
    target: "/v1",
    expected: to("with-port", "/v1"),
  },
  {
    name: "another IPv6 Host: prefix-only",
    profiles: [LOOPBACK, IPV6],
    host: "[::2]:8090",
    target: "/lo/v1",
    expected: to("loopback", "/v1"),
  },
  {
    name: "IPv6 Host in upper case",
    profiles: [{ name: "v6", host: "[fe80::abcd]" }],
    host: "[FE80::ABCD]:8090",
    target: "/v1",
    expected: to("v6", "/v1"),
  },
];

describe("BankRouter.route", () => {
  it.each(named(ROWS))("%s", (_name, row) => {
    const route = new BankRouter(row.profiles).route(row.host, row.target);
    expect(route && { profile: route.profile.name, target: route.target }).toEqual(row.expected);
  });

  it("returns the configured profile object itself", () => {
    const profile = { name: "demo", prefix: "/demo", url: "https://bank.example" };
    expect(new BankRouter([profile]).route(undefined, "/demo/v1")?.profile).toBe(profile);
  });
});

describe("BankRouter.describe", () => {
  it("lists every bank with how it is reached", () => {
    const profiles = [DEMO, BANK, BANK_NORDIC, BY_HOST, HOSTED_SHORT, IPV6];
    const text = new BankRouter(profiles).describe();
    for (const p of profiles) expect(text.split(`${p.name} (`).length - 1).toBe(1);
    expect(text).toContain("demo (/demo/…)");
    expect(text).toContain("bank-nordic (/bank/nordic/…)");
    expect(text).toContain("by-host (Host bank.example)");
    expect(text).toContain("hosted-short (Host Bank.Example, /a/…)");
    expect(text).toContain("ipv6 (Host [::1])");
    expect(text.split("; ")).toHaveLength(profiles.length);
  });

  it("is empty without banks", () => {
    expect(new BankRouter([]).describe()).toBe("");
  });
});
