/** Which PSD2 role a path needs, from the configured prefix table (SPEC 1.5; issue: AIS/PIS/PIIS). */

import type { Psd2Role } from "../eidas/index.js";

export interface RoleRoute {
  readonly prefix: string;
  readonly role: Psd2Role;
}

/** True when `path` is `prefix` or lies below it on a segment boundary. */
export function underPrefix(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  const next = path.charCodeAt(prefix.length);
  return Number.isNaN(next) || next === 0x2f /* / */ || prefix.endsWith("/");
}

export class RoleTable {
  private readonly routes: RoleRoute[];

  constructor(routes: readonly RoleRoute[]) {
    // Longest prefix first, so a bank's specific route wins over a general one. Matched against
    // routingPath(), which is lower-case.
    this.routes = routes
      .map((r) => ({ ...r, prefix: r.prefix.toLowerCase() }))
      .sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** The role a routingPath() needs, or `undefined` when no route claims it. */
  roleFor(path: string): Psd2Role | undefined {
    return this.routeFor(path)?.role;
  }

  /** The configured route (prefix and role) that claims a routingPath(), if any. */
  routeFor(path: string): RoleRoute | undefined {
    for (const route of this.routes) if (underPrefix(path, route.prefix)) return route;
    return undefined;
  }
}

/** The path without query string. */
export function pathOf(target: string): string {
  const q = target.indexOf("?");
  return q < 0 ? target : target.slice(0, q);
}

const NEEDS_NORMALISING = /[%A-Z;]|\/\/|\/\.|\/$/;

function isUnreserved(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    c === 0x2d ||
    c === 0x2e ||
    c === 0x5f ||
    c === 0x7e
  );
}

/**
 * The path as the backend will most likely route it, for deciding which role it needs: unreserved
 * characters percent-decoded (RFC 3986 6.2.2.2), lower-cased, empty and dot segments resolved,
 * `;parameters` dropped (Java servlet containers ignore them). The target forwarded and signed is
 * never changed; only the decision uses this form, so `/v1/%70ayments` and `//V1/payments;x` need
 * PSP_PI like `/v1/payments`.
 */
export function routingPath(target: string): string {
  const path = pathOf(target);
  if (!NEEDS_NORMALISING.test(path)) return path;
  const decoded = path.replace(/%([0-9A-Fa-f]{2})/g, (percentEscape, hex: string) => {
    const c = Number.parseInt(hex, 16);
    return isUnreserved(c) ? String.fromCharCode(c) : percentEscape.toUpperCase();
  });
  const segments: string[] = [];
  for (const raw of decoded.toLowerCase().split("/")) {
    const semicolon = raw.indexOf(";");
    const segment = semicolon < 0 ? raw : raw.slice(0, semicolon);
    if (segment === "" || segment === ".") continue;
    if (segment === "..") segments.pop();
    else segments.push(segment);
  }
  return `/${segments.join("/")}`;
}

/** Route class for metrics and logs: a bounded label, never the path itself. */
export function routeClass(role: Psd2Role | undefined): string {
  switch (role) {
    case "PSP_AI":
      return "ais";
    case "PSP_PI":
      return "pis";
    case "PSP_IC":
      return "piis";
    case "PSP_AS":
      return "as";
    default:
      return "other";
  }
}

/**
 * Why a path cannot be forwarded as the role check reads it, or undefined. The role is decided on
 * routingPath(); a backend that decodes an encoded slash, treats a backslash as a separator or
 * resolves dot segments itself (or trims trailing dots, or decodes twice, or reads overlong UTF-8)
 * could route such a path elsewhere, so those forms are refused instead of guessed at.
 */
export function ambiguousPath(target: string): string | undefined {
  // Never part of a request target (RFC 9112 3.2); a backend drops what follows, so
  // `/v1/funds-confirmations#x` would be routed to a path the role table does not see.
  if (target.includes("#")) return "a fragment (#)";
  const path = pathOf(target);
  const encoded = path.includes("%");
  if (encoded && /%(?:2f|5c)/i.test(path)) return "an encoded slash or backslash (%2F, %5C)";
  // A backend in C, or a file-system lookup, ends the path there.
  if (encoded && path.includes("%00")) return "an encoded NUL (%00)";
  if (path.includes("\\")) return "a backslash";
  if (path.includes("//")) return "an empty segment (//)";
  // Dots may also arrive percent-encoded (%2E), which RFC 3986 says means the same.
  const dots = encoded ? path.replace(/%2e/gi, ".") : path;
  if (dots.includes("/.") && /\/\.\.?(?:\/|;|$)/.test(dots)) return "a dot segment (/./ or /../)";
  // Windows and IIS drop a segment's trailing dots and spaces: `payments.` would be `payments`.
  if (/(?:\.|%20|%09)(?:\/|;|$)/i.test(dots)) return "a segment ending in a dot or encoded whitespace";
  if (encoded) {
    if (/%(?![0-9a-f]{2})/i.test(path)) return "a '%' not followed by two hex digits";
    // A backend that decodes twice reads %252F as '/'.
    if (/%25[0-9a-f]{2}/i.test(path)) return "a double-encoded character (%25 followed by hex digits)";
    // Overlong forms (%C0%AF for '/', %C0%AE for '.') pass a lax UTF-8 decoder as those characters.
    try {
      decodeURIComponent(path);
    } catch {
      return "percent-encoded bytes that are not UTF-8 (such as the overlong %C0%AF)";
    }
  }
  return undefined;
}
