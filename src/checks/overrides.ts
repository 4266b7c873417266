/**
 * Headers and parameters that make a backend serve another path or method than the one the
 * gateway checked: IIS URL Rewrite's X-Original-URL / X-Rewrite-URL, framework method overrides
 * (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, `_method`). The legacy cores behind
 * the gateway honour them, so a signed GET checked against the read role could become a payment:
 * the request is refused instead.
 */

import { type Rejection, reject } from "../errors.js";

/** Path overrides (lower case, '-' spelling). */
const PATH_OVERRIDES = [
  "x-original-url",
  "x-rewrite-url",
  "x-override-url",
  "x-original-uri",
  "x-forwarded-uri",
  "x-forwarded-path",
  "x-envoy-original-path",
];

/** Method overrides. */
const METHOD_OVERRIDES = [
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-method",
];

export const OVERRIDE_HEADERS: readonly string[] = [...PATH_OVERRIDES, ...METHOD_OVERRIDES];

/** What a CGI-style backend reads a name as: every character but letters, digits and '-' as '-'. */
const NOT_A_DASH = /[^a-z0-9-]/;
const NOT_A_DASH_ALL = /[^a-z0-9-]/g;
/** `_method` as a query parameter (Rails, Laravel, Symfony read it as the method). */
const METHOD_PARAMETER = /[?&]_method(?:=|&|$)/i;

/** A refusal when `headers` or `target` carry an override; `extra` are a bank's own names. */
export function overrideChecker(
  extra: readonly string[] = [],
): (headers: Readonly<Record<string, unknown>>, target: string) => Rejection | undefined {
  const refused = new Set([...OVERRIDE_HEADERS, ...extra.map((n) => n.toLowerCase())]);
  return (headers, target) => {
    for (const name in headers) {
      let readAs = name;
      if (!refused.has(name)) {
        if (!NOT_A_DASH.test(name)) continue;
        readAs = name.replace(NOT_A_DASH_ALL, "-");
        if (!refused.has(readAs)) continue;
      }
      const kind = METHOD_OVERRIDES.includes(readAs) ? "method" : "path";
      return reject(
        "FORMAT_ERROR",
        `header '${name}' would make the bank's systems serve another ${kind} than the one checked; send the request to its own path with its own method, without ${readAs}`,
      );
    }
    if (target.includes("_method") && METHOD_PARAMETER.test(target)) {
      return reject(
        "FORMAT_ERROR",
        "query parameter '_method' would make the bank's systems serve another method than the one checked; send the request with its own method",
      );
    }
    return undefined;
  };
}
