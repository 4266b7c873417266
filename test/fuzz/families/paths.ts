/**
 * Path tricks by the AIS-only TPP B toward the payment routes (%2F, %5C, /./, /../, //, #, %00,
 * case, ;params, double encoding, overlong UTF-8, trailing dots and spaces), signed over exactly
 * the target sent, so only the role check stands between them and the backend. Whatever a backend
 * could resolve to a PSP_PI (or PSP_IC) route must never reach it; anything forwarded must reach
 * the backend exactly as sent.
 */

import type { Rng } from "../prng.js";
import { getHeader, serialize } from "../request.js";
import type { Family } from "../types.js";

const PI_PREFIXES = ["/v1/payments", "/v1/bulk-payments", "/v1/periodic-payments", "/v1/signing-baskets"];
const IC_PREFIXES = ["/v1/funds-confirmations"];

/** How lax a backend is beyond decoding once (each is a reading the role check must survive). */
interface Laxness {
  /** A C backend: the path ends at a fragment or a NUL. */
  readonly cutSpecial?: boolean;
  /** Percent-decodes twice (%252F is '/'). */
  readonly twice?: boolean;
  /** Reads overlong UTF-8 (%C0%AF is '/', %C0%AE is '.'). */
  readonly overlong?: boolean;
  /** Windows/IIS: trailing dots and spaces of a segment dropped. */
  readonly trims?: boolean;
}

/**
 * What a backend might make of a path: every %XX decoded once, backslashes as slashes, `;params`
 * dropped, dot and empty segments resolved, lower-cased; and what `lax` adds.
 */
export function aggressiveNormalise(target: string, lax: Laxness = { cutSpecial: true }): string {
  const cutAt = (s: string, c: string) => (s.includes(c) ? s.slice(0, s.indexOf(c)) : s);
  const decode = (s: string) =>
    s.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
  let path = cutAt(target, "?");
  if (lax.overlong) path = path.replace(/%c0%af/gi, "/").replace(/%c0%ae/gi, ".");
  path = decode(path);
  if (lax.twice) path = decode(path);
  if (lax.cutSpecial) path = cutAt(cutAt(path, "#"), "\x00");
  path = path.replaceAll("\\", "/");
  const out: string[] = [];
  for (const raw of path.split("/")) {
    let segment = raw.includes(";") ? raw.slice(0, raw.indexOf(";")) : raw;
    if (lax.trims && segment !== "." && segment !== "..") segment = segment.replace(/[. \t]+$/, "");
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  return `/${out.join("/")}`.toLowerCase();
}

function trick(rng: Rng): string {
  const target = rng.pick([
    "/v1/payments/sepa-credit-transfers",
    "/v1/periodic-payments/sepa-credit-transfers",
    "/v1/funds-confirmations",
    "/v1/bulk-payments/sepa-credit-transfers",
  ]);
  const rest = target.slice("/v1/".length);
  return rng.pick([
    `/v1/accounts/..%2F..%2F${rest.replaceAll("/", "%2F")}`,
    `/v1/accounts/../${rest}`,
    `/v1/accounts/%2e%2e/${rest}`,
    `/v1/accounts/%2E%2E%2F${rest}`,
    `/v1/accounts%2F..%2F${rest}`,
    `/v1/accounts%5C..%5C${rest.replaceAll("/", "%5C")}`,
    `/v1/accounts\\..\\${rest}`,
    `/v1/accounts/..;/${rest}`,
    `/v1/./${rest}`,
    `/v1//${rest}`,
    `//v1/${rest}`,
    `/v1/accounts/%252e%252e/${rest}`,
    `/v1/accounts#/../../${rest}`,
    `/v1/accounts%00/../${rest}`,
    `/v1/accounts/x/..%2f..%2f${rest}`,
    `/V1/${rest.toUpperCase()}`,
    `/v1/${rest.replace("payments", "Payments")}`,
    `/v1/${rest};x=y`,
    `/v1/${rest}%20`,
    `/v1/${rest.replace("/", "./")}`,
    `/v1/${rest.replace("/", "%20/")}`,
    `/v1/accounts/..%252f${rest}`,
    `/v1/accounts/%c0%ae%c0%ae/${rest}`,
    `/v1/${rest}/.`,
    `/v1/accounts/..%c0%af${rest}`,
    `/v1/%70ayments/sepa-credit-transfers`,
    `/v1/accounts?next=/v1/${rest}`,
    `/v1/accounts/%2F${rest}`,
    `/./v1/${rest}`,
    `/v1/accounts/.%2e/${rest}`,
    target,
  ]);
}

export const paths: Family = {
  name: "paths",
  weight: 2,
  async run(ctx) {
    const { rng, tpps } = ctx;
    const path = trick(rng);
    const tag = ctx.tag();
    // The tag goes into the query before a fragment; with a raw '#' in the path it lands after it.
    const pay = rng.chance(0.5);
    const signed = await ctx.sign({
      tpp: tpps.B,
      method: pay ? "POST" : "GET",
      path,
      tag,
      ...(pay ? { body: Buffer.from('{"instructedAmount":{"currency":"EUR","amount":"1.00"}}') } : {}),
    });
    const target = signed.request.target;
    const readings = [
      aggressiveNormalise(target),
      aggressiveNormalise(target, {}),
      aggressiveNormalise(target, { twice: true, overlong: true, trims: true }),
    ];
    const normalised = readings.join(" or ");
    const toward = readings.some((n) =>
      [...PI_PREFIXES, ...IC_PREFIXES].some((p) => n === p || n.startsWith(`${p}/`)),
    );
    // A raw '#' cuts the tag off the query a backend sees: such a target may reach it untagged.
    await ctx.exchange({
      requests: [
        {
          tag,
          requestId: getHeader(signed.request, "X-Request-ID"),
          label: `AIS-only TPP B ${signed.request.method} ${target} (a backend might read ${normalised})`,
          expect: toward ? "refuse" : "any",
          tpp: tpps.B,
          backendTarget: target,
        },
      ],
      writes: [{ data: serialize(signed.request) }],
    });
  },
};
