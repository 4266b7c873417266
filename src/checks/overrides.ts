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
/**
 * `_method` as a query parameter name as frameworks read it (Rails, Laravel, Symfony, ASP.NET):
 * percent-decoded, `+` a space, PHP's `.`, space and `[` as `_`, any case.
 */
function isMethodParameter(name: string): boolean {
  let decoded = name.replaceAll("+", " ");
  if (decoded.includes("%")) {
    try {
      decoded = decodeURIComponent(decoded);
    } catch {
      // A malformed escape is refused by the request-target step; compare it as it is.
    }
  }
  return decoded.replace(/[. []/g, "_").toLowerCase() === "_method";
}

const MAYBE_METHOD = /method|%/i;

/** The query's parameter names that could be read as `_method` (letters `method`, any case or escape). */
function methodParameter(target: string): string | undefined {
  const query = target.indexOf("?");
  // Only a query that spells `method` or escapes anything can hold one.
  if (query < 0 || !MAYBE_METHOD.test(target.slice(query))) return undefined;
  for (const pair of target.slice(query + 1).split("&")) {
    const name = pair.split("=", 1)[0]!;
    if (isMethodParameter(name)) return name;
  }
  return undefined;
}

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
    const parameter = methodParameter(target);
    if (parameter !== undefined) {
      return reject(
        "FORMAT_ERROR",
        `query parameter '${parameter.slice(0, 40)}' would be read as _method and make the bank's systems serve another method than the one checked; send the request with its own method`,
      );
    }
    return undefined;
  };
}
