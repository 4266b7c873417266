/** Recorded header lists → the lower-cased map Node's `IncomingMessage#headers` would hold. */

import type { HeaderMap } from "../../src/signature/index.js";

/** Lower-cases names; a repeated name joins its values with ", " (RFC 7230 section 3.2.2), as Node does. */
export function toHeaderMap(pairs: readonly (readonly [string, string])[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    const previous = map[key];
    map[key] = previous === undefined ? value : `${previous}, ${value}`;
  }
  return map;
}

/** A copy without the named headers (any case). */
export function withoutHeaders(
  headers: HeaderMap,
  names: readonly string[],
): Record<string, string | readonly string[]> {
  const drop = new Set(names.map((n) => n.toLowerCase()));
  const copy: Record<string, string | readonly string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !drop.has(name)) copy[name] = value;
  }
  return copy;
}
