/**
 * Path and method overrides, and the PSU-IP-Address that lifts the unattended limit (issue 25):
 *
 * - a valid signed request carrying one or more path or method override headers (X-Original-URL,
 *   X-Rewrite-URL, X-HTTP-Method-Override, …) in any spelling a backend may read as them (case,
 *   `_`, `.` and the other token characters a CGI-style backend maps to `-`): refused, 400
 *   FORMAT_ERROR naming the header, nothing reaches the backend;
 * - a `_method` query parameter (with or without a value, anywhere in the query): refused likewise,
 *   naming `_method`; and its look-alikes, which backends read as `_method` too (other case,
 *   percent-encoded, PHP's `.` and space): expected refused, but forwarded by the gateway for now
 *   (METHOD_PARAMETER_LOOKALIKES);
 * - near misses (`X-Original`, `X-HTTP-Methods`, `my_method=`, `_method` inside a value, …):
 *   forwarded, the header with its value and the target as sent;
 * - the unattended limit (SPEC 8) with HEAD: GET and HEAD on a limited read route share the 4
 *   calls without PSU-IP-Address (the 5th is a 429), and with one there is no limit;
 * - a PSU-IP-Address that is not an IP address (empty, a name, two addresses, a port, brackets):
 *   refused, 400 FORMAT_ERROR naming the header, as GET or HEAD.
 *
 * Can fail (FUZZ_FAMILIES=overrides FUZZ_COUNT=3000 FUZZ_SEED=31, 2,020 cases): 206 violations
 * with the gateway as it is, all of them the look-alikes' 103 cases (refused-reached-backend and
 * the refusal); with the override-headers step returning undefined (src/checks/steps.ts) 1,992;
 * with the PSU-IP-Address check off (src/checks/required-headers.ts) 682; with HEAD not counted
 * (unattended.ts classify: GET only) 626, 210 of them unattended-limit.
 */

import type { Rng } from "../prng.js";
import type { ParsedResponse } from "../raw-client.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, paymentBody, serialize } from "../request.js";
import type { CaseContext, ExchangeResult, ExpectedRequest, Family } from "../types.js";
import { validSigned } from "./common.js";

/** Every override header the gateway refuses by name (src/checks/overrides.ts), as sent in the wild. */
const PATH_OVERRIDES = [
  "X-Original-URL",
  "X-Rewrite-URL",
  "X-Override-URL",
  "X-Original-URI",
  "X-Forwarded-Uri",
  "X-Forwarded-Path",
  "X-Envoy-Original-Path",
];
const METHOD_OVERRIDES = [
  "X-HTTP-Method-Override",
  "X-HTTP-Method",
  "X-Method-Override",
  "X-Original-Method",
];

/** Names that are not overrides, however a backend reads them: forwarded as they are. */
const NEAR_MISS_HEADERS = [
  "X-Original",
  "X-Original-URLs",
  "X-Originally-URL",
  "Original-URL",
  "X-Rewrite",
  "X-URL",
  "X-Override",
  "X-HTTP-Methods",
  "X-HTTP-Method-Overrides",
  "X-Method",
  "X-Methods-Override",
  "X-Original-Methods",
  "HTTP-Method-Override",
  "X-Envoy-Original",
];

/** Query parameters that are not `_method`: forwarded, the target as sent. */
const NEAR_MISS_PARAMETERS = [
  "my_method=DELETE",
  "_methods=PUT",
  "method=DELETE",
  "x_method=POST",
  "__method=PUT",
  "_method_=1",
  "_methodx=GET",
  "note=_method",
  "q=x%26_method%3DDELETE",
  "a_method",
];

/**
 * `_method` as backends may read it. Express/qs and PHP percent-decode parameter names
 * (`%5Fmethod`, `_m%65thod`), PHP turns `.` and space (`+`, `%20`) in a name into `_` (Laravel
 * and Symfony then read `_method`), and ASP.NET compares query keys without case. The gateway's
 * check (src/checks/overrides.ts) forwards every one of these: its `/i` pattern is only tried when
 * the target holds `_method` in lower case, and names are not decoded. A finding of this family
 * (issue 25), left failing until the gateway decides; the variant is `method-parameter-lookalike`.
 */
const METHOD_PARAMETER_LOOKALIKES = [
  "_METHOD",
  "_Method",
  "%5Fmethod",
  "%5fmethod",
  "_m%65thod",
  "%5F%6D%65%74%68%6F%64",
  ".method",
  "%2Emethod",
  "+method",
  "%20method",
];

/** Characters a CGI-style backend reads as `-` in a header name (any token character but letters and digits). */
const ODD_SEPARATORS = ["~", "+", "!", "*", "'", "^", "|", "`", "#", "$", "%", "&"];

function respell(rng: Rng, name: string): string {
  const kind = rng.weighted<string>([
    [4, "as-is"],
    [2, "lower"],
    [1, "upper"],
    [2, "underscores"],
    [1, "one-underscore"],
    [1, "dots"],
    [1, "one-dot"],
    [1, "mixed"],
    [1, "odd"],
    [1, "case-noise"],
  ]);
  switch (kind) {
    case "lower":
      return name.toLowerCase();
    case "upper":
      return name.toUpperCase();
    case "underscores":
      return name.replaceAll("-", "_");
    case "one-underscore":
      return name.replace("-", "_");
    case "dots":
      return name.replaceAll("-", ".");
    case "one-dot":
      return name.replace("-", ".");
    case "mixed":
      return name.replace(/-/g, () => rng.pick(["-", "_", "."]));
    case "odd":
      return name.replace(/-/g, () => rng.pick(ODD_SEPARATORS));
    case "case-noise":
      return [...name].map((c) => (rng.chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join("");
    default:
      return name;
  }
}

function overrideValue(rng: Rng, name: string): string {
  if (METHOD_OVERRIDES.includes(name))
    return rng.weighted([
      [5, rng.pick(["POST", "DELETE", "PUT", "PATCH", "GET", "HEAD"])],
      [1, "post"],
      [1, ""],
    ]);
  return rng.weighted([
    [5, rng.pick([PAYMENT_PATH, "/v1/payments/norwegian-domestic-credit-transfers", "/v1/consents"])],
    [2, `${ACCOUNTS_PATH}/acc-${rng.int(100)}/balances`],
    [1, "/admin/config"],
    [1, `http://internal.bank.example${PAYMENT_PATH}`],
    [1, ""],
  ]);
}

/** The gateway's answer echoing `requestId` (a refusal of HEAD has no tppMessages body to tell it by). */
function answerTo(result: ExchangeResult, requestId: string): ParsedResponse | undefined {
  return (
    result.refusal(requestId) ??
    result.outcome.responses.find(
      (r) => r.headers["x-request-id"] === requestId && r.headers["x-backend-seq"] === undefined,
    )
  );
}

/** A refusal of the gateway's own: 400 FORMAT_ERROR whose text names one of `names` (none to read for HEAD). */
function checkRefusal(
  ctx: CaseContext,
  label: string,
  answer: ParsedResponse | undefined,
  names: readonly string[],
  head: boolean,
): void {
  const text = answer?.body.toString("utf8") ?? "";
  const code = /"code":"([A-Z_]+)"/.exec(text)?.[1];
  ctx.check(
    answer !== undefined &&
      answer.status === 400 &&
      (head || (code === "FORMAT_ERROR" && names.some((n) => text.includes(n)))),
    "refusal",
    label,
    `400${head ? "" : ` FORMAT_ERROR naming ${names.map((n) => `'${n}'`).join(" or ")}`}`,
    () => (answer ? `${answer.status} ${text.slice(0, 300)}` : "no refusal echoing its X-Request-ID"),
  );
}

export const overrides: Family = {
  name: "overrides",
  weight: 2,
  async run(ctx) {
    const { rng } = ctx;
    const variant = rng.weighted<string>([
      [5, "override-header"],
      [3, "method-parameter"],
      [1, "method-parameter-lookalike"],
      [3, "near-miss-header"],
      [2, "near-miss-parameter"],
      [2, "unattended"],
      [2, "psu-ip-not-an-ip"],
    ]);
    switch (variant) {
      case "override-header": {
        const valid = await validSigned(ctx);
        const added: [string, string][] = [];
        for (let i = rng.range(1, 3); i > 0; i--) {
          const base = rng.pick(rng.chance(0.5) ? PATH_OVERRIDES : METHOD_OVERRIDES);
          added.push([respell(rng, base), overrideValue(rng, base)]);
        }
        // Now and then beside a harmless near miss.
        if (rng.chance(0.2)) added.push([rng.pick(NEAR_MISS_HEADERS), "harmless"]);
        const headers = [...valid.request.headers];
        for (const line of added) headers.splice(rng.int(headers.length + 1), 0, line);
        const label = `${added.map(([n, v]) => `${n}: ${v}`).join(" / ")} on ${valid.describe}`;
        const result = await ctx.exchange({
          requests: [{ tag: valid.tag, requestId: valid.requestId, label, expect: "refuse", tpp: valid.tpp }],
          writes: [{ data: serialize({ ...valid.request, headers }) }],
        });
        checkRefusal(
          ctx,
          label,
          answerTo(result, valid.requestId),
          added.map(([n]) => `'${n.toLowerCase()}'`),
          false,
        );
        return;
      }
      case "method-parameter":
      case "method-parameter-lookalike": {
        const name = variant === "method-parameter" ? "_method" : rng.pick(METHOD_PARAMETER_LOOKALIKES);
        const parameter = rng.weighted([
          [5, `${name}=${rng.pick(["DELETE", "PUT", "POST", "GET", "PATCH", "delete"])}`],
          [1, `${name}=`],
          [1, name],
        ]);
        const pay = rng.chance(0.4);
        const tpp = pay
          ? rng.pick([ctx.tpps.A, ctx.tpps.EC])
          : rng.pick([ctx.tpps.A, ctx.tpps.B, ctx.tpps.EC]);
        const base = pay ? PAYMENT_PATH : rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`]);
        const query = rng.pick([
          `?${parameter}`,
          `?withBalance=true&${parameter}`,
          `?${parameter}&withBalance=true`,
        ]);
        const signed = await ctx.sign({
          tpp,
          path: `${base}${query}`,
          ...(pay ? { method: "POST", body: paymentBody(`${rng.range(1, 999)}.00`) } : {}),
        });
        const label = `${pay ? "POST" : "GET"} ${base}${query} by TPP ${tpp.name}`;
        const result = await ctx.exchange({
          requests: [{ tag: signed.tag, requestId: signed.requestId, label, expect: "refuse", tpp }],
          writes: [{ data: serialize(signed.request) }],
        });
        checkRefusal(ctx, label, answerTo(result, signed.requestId), ["_method"], false);
        return;
      }
      case "near-miss-header": {
        const names = rng.shuffle([...NEAR_MISS_HEADERS]).slice(0, rng.range(1, 3));
        const added: [string, string][] = names.map((n) => [
          rng.chance(0.7) ? n : rng.pick([n.toLowerCase(), n.toUpperCase()]),
          overrideValue(rng, rng.pick([...PATH_OVERRIDES, ...METHOD_OVERRIDES])) || "x",
        ]);
        const valid = await validSigned(ctx);
        const headers = [...valid.request.headers];
        for (const line of added) headers.splice(rng.int(headers.length + 1), 0, line);
        await ctx.exchange({
          requests: [
            {
              tag: valid.tag,
              requestId: valid.requestId,
              label: `near miss ${added.map(([n, v]) => `${n}: ${v}`).join(" / ")} on ${valid.describe}`,
              expect: "forward",
              tpp: valid.tpp,
              backendHeaders: Object.fromEntries(added.map(([n, v]) => [n.toLowerCase(), v])),
              backendTarget: valid.request.target,
            },
          ],
          writes: [{ data: serialize({ ...valid.request, headers }) }],
        });
        return;
      }
      case "near-miss-parameter": {
        const parameter = rng.pick(NEAR_MISS_PARAMETERS);
        const tpp = rng.pick([ctx.tpps.A, ctx.tpps.B, ctx.tpps.EC]);
        const path = `${rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`])}?${parameter}`;
        const signed = await ctx.sign({ tpp, path });
        await ctx.exchange({
          requests: [
            {
              tag: signed.tag,
              requestId: signed.requestId,
              label: `near miss GET ${path} by TPP ${tpp.name}`,
              expect: "forward",
              tpp,
              backendTarget: signed.request.target,
            },
          ],
          writes: [{ data: serialize(signed.request) }],
        });
        return;
      }
      case "unattended": {
        // One account of its own: GET and HEAD share its calls; with the PSU present, none is counted.
        const present = rng.chance(0.3);
        const psuIp = rng.pick(["192.0.2.10", "2001:db8::10", "198.51.100.7"]);
        const tpp = rng.pick([ctx.tpps.A, ctx.tpps.B]);
        const path = `${rng.pick(["/v1/accounts", "/v1/card-accounts"])}/acc-ua-${ctx.caseIndex}/balances`;
        const calls = rng.range(5, 6);
        const methods = Array.from({ length: calls }, () => (rng.chance(0.5) ? "HEAD" : "GET"));
        // Always a HEAD among the 4 that count, and now and then as the 5th.
        if (!methods.slice(0, 4).includes("HEAD")) methods[rng.int(4)] = "HEAD";
        for (const [i, method] of methods.entries()) {
          const signed = await ctx.sign({
            tpp,
            method,
            path,
            // A 2xx: only a served call keeps its slot.
            headers: { "X-Fuzz-Answer": "json", ...(present ? { "PSU-IP-Address": psuIp } : {}) },
            omit: present ? [] : ["PSU-IP-Address"],
          });
          const over = !present && i >= 4;
          const label = `${method} ${path} #${i + 1} by TPP ${tpp.name} ${present ? `with PSU-IP-Address ${psuIp}` : "unattended"} (${methods.join(",")})`;
          const expected: ExpectedRequest = {
            tag: signed.tag,
            requestId: signed.requestId,
            label,
            expect: over ? "refuse" : "forward",
            tpp,
          };
          const result = await ctx.exchange({
            requests: [expected],
            writes: [{ data: serialize(signed.request) }],
            ...(method === "HEAD" ? { bodiless: [0] } : {}),
          });
          if (over) {
            const answer = answerTo(result, signed.requestId);
            const text = answer?.body.toString("utf8") ?? "";
            ctx.check(
              answer?.status === 429 && (method === "HEAD" || text.includes('"ACCESS_EXCEEDED"')),
              "unattended-limit",
              label,
              "429 ACCESS_EXCEEDED: GET and HEAD share the 4 unattended calls",
              () => (answer ? `${answer.status} ${text.slice(0, 200)}` : "no refusal"),
            );
          }
        }
        return;
      }
      default: {
        // PSU-IP-Address that is no IP address, signed as sent: only that check may refuse it.
        const value = rng.pick([
          "",
          "the-psu",
          "unknown",
          "-",
          "localhost",
          "192.0.2.1, 192.0.2.2",
          "999.1.1.1",
          "192.0.2.10:443",
          "[2001:db8::1]",
          "127.1",
          "1.2.3.4.5",
          "0x7f000001",
          "192.0.2",
          "2001:db8::g",
          "192.0.2.10/32",
        ]);
        const twice = rng.chance(0.15);
        const head = rng.chance(0.4);
        const tpp = rng.pick([ctx.tpps.A, ctx.tpps.B, ctx.tpps.EC]);
        const path = rng.pick([ACCOUNTS_PATH, `/v1/accounts/acc-ip-${ctx.caseIndex}/balances`]);
        const signed = await ctx.sign({
          tpp,
          path,
          ...(head ? { method: "HEAD" } : {}),
          headers: { "PSU-IP-Address": twice ? "192.0.2.10" : value },
        });
        // Two header lines of addresses: Node joins them, no longer one address.
        if (twice) signed.request.headers.push(["PSU-IP-Address", "192.0.2.11"]);
        const label = `${head ? "HEAD" : "GET"} ${path} with PSU-IP-Address ${twice ? "192.0.2.10 and again 192.0.2.11" : JSON.stringify(value)} by TPP ${tpp.name}`;
        const result = await ctx.exchange({
          requests: [{ tag: signed.tag, requestId: signed.requestId, label, expect: "refuse", tpp }],
          writes: [{ data: serialize(signed.request) }],
          ...(head ? { bodiless: [0] } : {}),
        });
        checkRefusal(ctx, label, answerTo(result, signed.requestId), ["PSU-IP-Address"], head);
      }
    }
  },
};
