/**
 * Bank-offered consent (SPEC 1.9, 5.12, 5.15, 9.3): a POST ignores its body and answers with an
 * SCA redirect, where the PSU chooses the accounts; the TPP then reads the consent's status. The
 * agreements and user operations tell a TPP who the PSU-ID is. A PSU may revoke a consent with
 * the bank at any time (the sandbox operation below stands in for that) without the TPP being told.
 */

import type { RequestContext } from "./context.js";
import { errorReply, headerValue, isReply, jsonReply, quote, type Reply, readBody } from "./http.js";
import { readIdentity } from "./identity.js";
import { identifyPsu, UNATTENDED_CALLS_PER_DAY, unattendedUntil } from "./psu.js";
import { stablePsuUuid } from "./psu-ids.js";
import { startConsent } from "./sca-flow.js";
import type { Consent } from "./sca-store.js";

/** SPEC 5.15, 8: an SCA in one TPP-Session-ID is valid for an hour. */
export const SESSION_VALIDITY_MS = 60 * 60 * 1000;
const CONSENTS = "/v1/bank-offered-consents";

/**
 * POST /v1/bank-offered-consents (and the deprecated /v1/consents). Within an hour of an SCA in
 * the same TPP-Session-ID, the PSU is not asked again: the consent is valid at once, for the
 * accounts of the PSU's newest consent with this TPP (SPEC 5.15).
 */
export async function createConsent(context: RequestContext): Promise<Reply> {
  // The body is ignored (SPEC 1.9), but read so the connection stays usable.
  const body = await readBody(context.req, context.settings.maxBodyBytes, context.settings.drainBytes);
  if (body.kind === "reply") return body.reply;
  const deprecated = context.req.url?.startsWith("/v1/consents") === true;
  const headers: Record<string, string> = deprecated
    ? { deprecation: "true", link: `<${CONSENTS}>; rel="successor-version"` }
    : {};
  const reused = consentWithinSession(context);
  if (reused !== undefined) {
    return jsonReply(201, JSON.stringify(consentBody(reused, undefined)), {
      ...headers,
      location: `${CONSENTS}/${reused.consentId}`,
    });
  }
  const started = startConsent(context);
  if (isReply(started)) return started;
  return jsonReply(201, JSON.stringify(consentBody(started.consent, started.scaRedirect)), {
    ...headers,
    location: `${CONSENTS}/${started.consent.consentId}`,
  });
}

function consentWithinSession(context: RequestContext): Consent | undefined {
  const { req, state, settings } = context;
  const psuId = headerValue(req, "psu-id");
  const tppSessionId = headerValue(req, "tpp-session-id");
  if (psuId === undefined || tppSessionId === undefined) return undefined;
  const organizationId = readIdentity(req, settings.identityHeaders).organizationId ?? "";
  const session = state.sca.session(organizationId, psuId);
  const now = settings.now();
  if (
    session === undefined ||
    session.tppSessionId !== tppSessionId ||
    now - session.scaAt > SESSION_VALIDITY_MS
  ) {
    return undefined;
  }
  const corporateId = headerValue(req, "psu-corporate-id");
  const previous = state.sca.validConsents(organizationId, psuId, corporateId).at(-1);
  if (previous === undefined || previous.customerId === undefined) return undefined;
  const consent = state.sca.createConsent(organizationId, now);
  state.sca.grantConsent(consent, {
    psuId,
    customerId: previous.customerId,
    corporate: previous.corporate,
    accounts: previous.accounts,
    scaAt: session.scaAt,
  });
  return consent;
}

function consentBody(consent: Consent, scaRedirect: string | undefined) {
  const self = `${CONSENTS}/${consent.consentId}`;
  return {
    consentStatus: consent.consentStatus,
    consentId: consent.consentId,
    _links: {
      ...(scaRedirect !== undefined ? { scaRedirect: { href: scaRedirect } } : {}),
      self: { href: self },
      status: { href: `${self}/status` },
    },
  };
}

function ownConsent(context: RequestContext): Consent | Reply {
  const consentId = context.params[0]!;
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  const consent = context.state.sca.consent(organizationId, consentId);
  if (consent === undefined) {
    return errorReply(403, "CONSENT_UNKNOWN", `No consent of this TPP has consentId ${quote(consentId)}`);
  }
  return consent;
}

/** GET /v1/bank-offered-consents/{consentId}: status and the accounts granted. */
export function getConsent(context: RequestContext): Reply {
  const consent = ownConsent(context);
  if (isReply(consent)) return consent;
  const granted = [...consent.accounts];
  const { catalogue } = context.state;
  const accounts = granted.flatMap((id) => {
    const account = catalogue.accounts.get(id)?.account;
    return account === undefined ? [] : [{ bban: account.bban, currency: account.currency }];
  });
  const cards = granted.flatMap((id) => {
    const card = catalogue.cards.get(id)?.card;
    return card === undefined ? [] : [{ maskedPan: card.maskedPan }];
  });
  return jsonReply(
    200,
    JSON.stringify({
      ...consentBody(consent, undefined),
      access: { accounts, balances: accounts, transactions: [...accounts, ...cards] },
      // The terms the SCA page showed the PSU: recurring, valid without the PSU for 180 days after
      // the SCA, 4 calls a day then (SPEC 8); with the PSU present it lasts until revoked.
      recurringIndicator: true,
      frequencyPerDay: UNATTENDED_CALLS_PER_DAY,
      ...(consent.scaAt !== undefined
        ? {
            validUntil: unattendedUntil(consent.scaAt),
            lastActionDate: new Date(consent.scaAt).toISOString().slice(0, 10),
          }
        : {}),
    }),
  );
}

export function getConsentStatus(context: RequestContext): Reply {
  const consent = ownConsent(context);
  if (isReply(consent)) return consent;
  return jsonReply(200, JSON.stringify({ consentStatus: consent.consentStatus }));
}

/** DELETE /v1/bank-offered-consents/{consentId}: the TPP ends it. */
export function deleteConsent(context: RequestContext): Reply {
  const consent = ownConsent(context);
  if (isReply(consent)) return consent;
  consent.consentStatus = "terminatedByTpp";
  return { status: 204, body: "" };
}

/**
 * POST /v1/sandbox/consents/{consentId}/revoke: the PSU revokes it with the bank; the TPP is not
 * told (SPEC 1.9, 6.1). Only the TPP the consent was given to can play this: another gets 404.
 */
export function revokeConsent(context: RequestContext): Reply {
  const consentId = context.params[0]!;
  // The calling TPP's consent only: the sandbox plays the PSU of that TPP's own tests.
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  const consent = context.state.sca.consent(organizationId, consentId);
  if (consent === undefined)
    return errorReply(404, "RESOURCE_UNKNOWN", `No consent has consentId ${quote(consentId)}`);
  consent.consentStatus = "revokedByPsu";
  return jsonReply(200, JSON.stringify({ consentId, consentStatus: consent.consentStatus }));
}

/**
 * GET /v1/agreements (SPEC 5.12): the corporate agreements of the PSU named by PSU-ID, each with
 * the corporateId to send in PSU-Corporate-ID; a consent flow in that context follows.
 */
export function listAgreements(context: RequestContext): Reply {
  const customer = identifyPsu(context);
  if (isReply(customer)) return customer;
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  return jsonReply(
    200,
    JSON.stringify({
      agreements: customer.agreements.map((agreement) => ({
        id: agreement.id,
        name: agreement.name,
        corporateId: stablePsuUuid(organizationId, customer.customerId, agreement.id),
      })),
    }),
  );
}

/** GET /v1/user: who PSU-ID names (SPEC 4.5: PSU identification through SCA). */
export function getUser(context: RequestContext): Reply {
  const customer = identifyPsu(context);
  if (isReply(customer)) return customer;
  return jsonReply(200, JSON.stringify({ user: userBody(context, customer) }));
}

/** GET /v1/users: the PSU and the corporate contexts it may act in. */
export function listUsers(context: RequestContext): Reply {
  const customer = identifyPsu(context);
  if (isReply(customer)) return customer;
  return jsonReply(200, JSON.stringify({ users: [userBody(context, customer)] }));
}

function userBody(context: RequestContext, customer: { customerName: string; customerType: string }) {
  return {
    psuId: headerValue(context.req, "psu-id"),
    name: customer.customerName,
    context: customer.customerType,
  };
}
