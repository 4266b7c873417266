/**
 * Path tricks against the egress gateway's prefix router: encoded slashes and dots, `..` and `.`
 * segments, double slashes, a prefix that only starts a segment (`/bankx`), another case
 * (`/BANK`), `;params`, `?` and `#` right after the prefix, absolute-form and asterisk targets,
 * unknown prefixes, and the same under the Host-routed profile. The router works on the raw
 * target and whole segments (docs/egress.md): a request it routes reaches that profile's
 * base path with the rest of the target exactly as sent (and signed, `(request-target)` over what
 * the bank got); one it does not route is a 404 RESOURCE_UNKNOWN that never reaches a bank.
 */

import type { EgressFamily } from "../types.js";
import { appRequest, bytesOf, forwardOf } from "./egress-common.js";
import { routeOf } from "./egress-headers.js";

/** Targets as an application might write them; `{p}` is the bank profile's prefix. */
const TRICKS = [
  "{p}/v1/accounts",
  "{p}",
  "{p}/",
  "{p}?x=1",
  "{p}//v1/accounts",
  "{p}/./v1/accounts",
  "{p}/../v1/accounts",
  "{p}/../../etc/passwd",
  "{p}/%2e%2e/v1/accounts",
  "{p}%2F..%2Fv1/accounts",
  "{p}%2fv1/accounts",
  "{p}/..%2F..%2Fadmin",
  "{p}\\..\\admin",
  "{p};x=y/v1/accounts",
  "{p}/v1/accounts;jsessionid=1",
  "{p}#/v1/accounts",
  "{p}/v1/%00/accounts",
  "{p}/v1/acc%C3%B8unts",
  "{p}x/v1/accounts",
  "{p}-other/v1/accounts",
  "{P}/v1/accounts",
  "/{p}/v1/accounts",
  "//{p}/v1/accounts",
  "/./{p}/v1/accounts",
  "/x/..{p}/v1/accounts",
  "%2F{p}/v1/accounts",
  "/v1/accounts",
  "/elsewhere/v1/accounts",
  "/",
  "*",
  "http://alt.bank.example{p}/v1/accounts",
  "http://localhost{p}/v1/accounts",
];

export const egressPaths: EgressFamily = {
  name: "egress-paths",
  weight: 2,
  target: "egress",
  async run(ctx) {
    const { rng, banks } = ctx;
    const alt = rng.chance(0.3);
    const raw = rng
      .pick(TRICKS)
      .replaceAll("{p}", banks.prefix)
      .replaceAll("{P}", banks.prefix.toUpperCase());
    const app = appRequest(ctx, { profile: alt ? "alt" : "bank" });
    // The tag goes into the query, before any fragment, whatever the target looks like.
    const hash = raw.indexOf("#");
    const base = hash >= 0 ? raw.slice(0, hash) : raw;
    const fragment = hash >= 0 ? raw.slice(hash) : "";
    const target = `${base}${base.includes("?") ? "&" : "?"}fz=${app.tag}${fragment}`;
    const host = app.host ?? undefined;
    // Node's parser reads a target only in origin, absolute or asterisk form.
    const parsed = /^[/*]|^http:\/\//.test(raw);
    const route = parsed ? routeOf(banks, host, target) : undefined;
    const backendTarget =
      route === "alt"
        ? `${banks.altBase}${target}`
        : `${banks.bankBase}${target.slice(banks.prefix.length).replace(/^(?=\?)|^$/, "/")}`;
    await ctx.exchange({
      requests: [
        {
          ...forwardOf({ ...app, backendTarget }, route ?? "unrouted"),
          label: `${route ?? (parsed ? "unrouted" : "not a target")}: ${JSON.stringify(raw)} with Host ${host}`,
          // Routed: forwarded exactly as sent (the bank may still refuse it). Unrouted: 404.
          // An asterisk target is Node's to accept (it is OPTIONS-only HTTP).
          expect: route === undefined ? "refuse" : raw === "*" ? "any" : "forward",
          ...(route === undefined
            ? {
                refusedWith: parsed
                  ? { status: 404, code: "RESOURCE_UNKNOWN" }
                  : { status: 400, code: "FORMAT_ERROR" },
              }
            : {}),
        },
      ],
      writes: [{ data: bytesOf({ ...app, request: { ...app.request, target } }) }],
    });
  },
};
