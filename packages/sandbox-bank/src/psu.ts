/**
 * Which sandbox customer a request acts for, and which of their accounts it may reach:
 *
 * - no PSU-ID: 401 CONSENT_INVALID with the scaRedirect link of a new consent (SPEC 4.5, 5.11, 7);
 * - the psu-id (and psu-corporate-id) a completed SCA redirect gave this TPP (SPEC 2.6): the accounts
 *   of its valid consents in that context (SPEC 1.8, 1.9); none left (revoked, never granted):
 *   401 with a new scaRedirect; unattended (X-PSU-Present: false) after 180 days without SCA:
 *   401 CONSENT_EXPIRED (SPEC 8);
 * - sandbox tooling: a customer's customerId or customerNumber as PSU-ID (a corporate one's in
 *   PSU-Corporate-ID) reaches all that customer's accounts without consent, so tests and
 *   benchmarks need no browser. Production has no such shortcut; TPPs should go through SCA;
 * - a corporate PSU without PSU-Corporate-ID: 400 (SPEC 7);
 * - anything else: 401 with a new scaRedirect (no consent for an unknown PSU).
 */

import type { RequestContext } from "./context.js";
import { errorReply, headerValue, quote, type Reply } from "./http.js";
import { readIdentity } from "./identity.js";
import type { Customer } from "./model.js";
import { consentRequired } from "./sca-flow.js";
import type { Consent } from "./sca-store.js";

/** SPEC 8: accounts the PSU accessed online with SCA within the last 180 days. */
export const SCA_RENEWAL_MS = 180 * 86_400_000;

/**
 * SPEC 8: without the PSU present, balances and transactions each at most 4 times in 24 hours
 * (the gateway counts them): a consent's frequencyPerDay.
 */
export const UNATTENDED_CALLS_PER_DAY = 4;

/** The last day a consent granted at `scaAt` reaches accounts without the PSU present (SPEC 8). */
export function unattendedUntil(scaAt: number): string {
  return new Date(scaAt + SCA_RENEWAL_MS).toISOString().slice(0, 10);
}

export interface PsuAccess {
  readonly customer: Customer;
  /** resourceIds of the accounts and card accounts the request may reach; undefined: all the customer's. */
  readonly granted: ReadonlySet<string> | undefined;
  /** The consents it acts under (empty for the tooling shortcut). */
  readonly consents: readonly Consent[];
}

export function mayReach(access: PsuAccess, resourceId: string, ownerCustomerId: string): boolean {
  if (ownerCustomerId !== access.customer.customerId) return false;
  return access.granted === undefined || access.granted.has(resourceId);
}

export function resolvePsu(context: RequestContext): PsuAccess | Reply {
  const { req, state, settings } = context;
  const psuId = headerValue(req, "psu-id");
  if (psuId === undefined) return consentRequired(context, "CONSENT_INVALID", "No PSU-ID");
  const corporateId = headerValue(req, "psu-corporate-id");
  const catalogue = state.catalogue;

  // Sandbox tooling: the customer named directly.
  const direct = catalogue.customersByIdOrNumber.get(corporateId ?? psuId);
  if (direct !== undefined && (corporateId === undefined || direct.customerType === "CORPORATE")) {
    if (direct.customerType === "CORPORATE" && corporateId === undefined) return corporateIdMissing(psuId);
    return { customer: direct, granted: undefined, consents: [] };
  }

  const organizationId = readIdentity(req, settings.identityHeaders).organizationId ?? "";
  const identity = state.sca.identity(organizationId, psuId, corporateId);
  if (identity === undefined) {
    if (corporateId === undefined && state.sca.identity(organizationId, psuId, undefined) === undefined) {
      return consentRequired(context, "CONSENT_INVALID", `No consent for PSU-ID ${quote(psuId)}`);
    }
    return consentRequired(
      context,
      "CONSENT_INVALID",
      `No consent for PSU-ID ${quote(psuId)} in the corporate context ${quote(corporateId ?? "")}`,
    );
  }
  const customer = catalogue.customersByIdOrNumber.get(identity.customerId);
  if (customer === undefined) {
    return consentRequired(
      context,
      "CONSENT_INVALID",
      "The PSU's consent names a customer the bank no longer has",
    );
  }
  if (customer.customerType === "CORPORATE" && identity.corporate === undefined)
    return corporateIdMissing(psuId);

  const consents = state.sca.validConsents(organizationId, psuId, corporateId);
  if (consents.length === 0) {
    return consentRequired(
      context,
      "CONSENT_INVALID",
      "The PSU has no valid consent for this TPP (revoked or never granted)",
    );
  }
  const unattended = readIdentity(req, settings.identityHeaders).psuPresent === false;
  const now = settings.now();
  const usable = unattended
    ? consents.filter((consent) => consent.scaAt !== undefined && now - consent.scaAt <= SCA_RENEWAL_MS)
    : consents;
  if (usable.length === 0) {
    return consentRequired(
      context,
      "CONSENT_EXPIRED",
      "Without the PSU present, accounts are reachable for 180 days after the PSU's last SCA; that time has passed",
    );
  }
  const granted = new Set<string>();
  for (const consent of usable) for (const id of consent.accounts) granted.add(id);
  return { customer, granted, consents: usable };
}

/**
 * Who PSU-ID names, whatever the consent or context (SPEC 5.12: for a PSU already known, before a
 * corporate context is chosen): the customer, or 401 with a new scaRedirect.
 */
export function identifyPsu(context: RequestContext): Customer | Reply {
  const { req, state, settings } = context;
  const psuId = headerValue(req, "psu-id");
  if (psuId === undefined) return consentRequired(context, "CONSENT_INVALID", "No PSU-ID");
  const direct = state.catalogue.customersByIdOrNumber.get(psuId);
  if (direct !== undefined) return direct;
  const organizationId = readIdentity(req, settings.identityHeaders).organizationId ?? "";
  const identity = state.sca.identity(organizationId, psuId, undefined);
  const customer = identity && state.catalogue.customersByIdOrNumber.get(identity.customerId);
  return customer ?? consentRequired(context, "CONSENT_INVALID", `No PSU is known by PSU-ID ${quote(psuId)}`);
}

function corporateIdMissing(psuId: string): Reply {
  return errorReply(
    400,
    "FORMAT_ERROR",
    `PSU-ID ${quote(psuId)} is a corporate customer: send the corporate context in PSU-Corporate-ID (the psu-corporate-id of the SCA redirect, or GET /v1/agreements)`,
  );
}
