/** Which PSD2 role a path needs, from the configured prefix table (SPEC 1.5; issue: AIS/PIS/PIIS). */

import type { Psd2Role } from "../config/schema.js";

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
    // Longest prefix first, so a bank's specific route wins over a general one.
    this.routes = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** The role the path needs, or `undefined` when no route claims it. */
  roleFor(path: string): Psd2Role | undefined {
    for (const route of this.routes) if (underPrefix(path, route.prefix)) return route.role;
    return undefined;
  }
}

/** The path without query string. */
export function pathOf(target: string): string {
  const q = target.indexOf("?");
  return q < 0 ? target : target.slice(0, q);
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
