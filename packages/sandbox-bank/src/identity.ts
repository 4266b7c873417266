/**
 * Who is calling, as the gateway in front tells it. The bank verifies no signature: it trusts the
 * gateway, which adds these headers after its own checks (names configurable, defaults below).
 */

import type { IncomingMessage } from "node:http";
import { headerValue } from "./http.js";

export interface IdentityHeaderNames {
  readonly organizationId: string;
  /** The TPP's registered name (register entry, else the certificate's organizationName), URL-encoded. */
  readonly name: string;
  readonly roles: string;
  readonly psuPresent: string;
}

export const DEFAULT_IDENTITY_HEADERS: IdentityHeaderNames = {
  organizationId: "X-TPP-Organization-Id",
  name: "X-TPP-Name",
  roles: "X-TPP-Roles",
  psuPresent: "X-PSU-Present",
};

export interface GatewayIdentity {
  /** The TPP's organisation identifier; undefined when the bank is called directly. */
  readonly organizationId: string | undefined;
  /** The TPP's registered name, as a PSU knows the provider; undefined when not told. */
  readonly name: string | undefined;
  /** PSD2 roles as the gateway lists them (comma or space separated), e.g. PSP_AI, PSP_PI. */
  readonly roles: readonly string[];
  /** False for unattended access (no PSU present, SPEC 5.16 and 8); undefined when not told. */
  readonly psuPresent: boolean | undefined;
}

/** Header names lower-cased once, as node:http keys `req.headers`. */
export function normaliseIdentityHeaders(names?: Partial<IdentityHeaderNames>): IdentityHeaderNames {
  const merged = { ...DEFAULT_IDENTITY_HEADERS, ...names };
  return {
    organizationId: merged.organizationId.toLowerCase(),
    name: merged.name.toLowerCase(),
    roles: merged.roles.toLowerCase(),
    psuPresent: merged.psuPresent.toLowerCase(),
  };
}

export function readIdentity(req: IncomingMessage, names: IdentityHeaderNames): GatewayIdentity {
  const present = headerValue(req, names.psuPresent)?.trim().toLowerCase();
  return {
    organizationId: headerValue(req, names.organizationId),
    name: decodedName(headerValue(req, names.name)),
    roles: (headerValue(req, names.roles) ?? "").split(/[\s,]+/).filter((role) => role.length > 0),
    psuPresent: present === "true" ? true : present === "false" ? false : undefined,
  };
}

/** The gateway URL-encodes the name (it may hold any Unicode); a value that does not decode is not shown. */
function decodedName(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const name = decodeURIComponent(value).trim();
    return name.length > 0 ? name : undefined;
  } catch {
    return undefined;
  }
}
