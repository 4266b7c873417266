/**
 * Starting an SCA by redirect (SPEC 5.11–5.15): what the TPP's headers ask of it, the link to the
 * SCA page, and the 401 that sends a PSU without consent there.
 */

import type { RequestContext } from "./context.js";
import { errorReply, formatError, headerValue, isReply, jsonReply, quote, type Reply } from "./http.js";
import { readIdentity } from "./identity.js";
import type { Authorisation, AuthorisationSubject, Consent, ScaRequest } from "./sca-store.js";

/** The SCA page of one authorisation, where the PSU's browser is sent. */
export function scaPageUrl(context: RequestContext, authorisationId: string): string {
  return `${context.settings.publicUrl.value}/sca/${authorisationId}`;
}

/**
 * The TPP's SCA headers. TPP-Redirect-URI is where the PSU returns (SPEC 2.6), so an SCA cannot
 * start without an absolute http(s) one.
 */
export function readScaRequest(context: RequestContext): ScaRequest | Reply {
  const { req, settings } = context;
  const redirectUri = headerValue(req, "tpp-redirect-uri");
  if (redirectUri === undefined) {
    return formatError(
      "TPP-Redirect-URI is required to start SCA: send the address the PSU returns to after the SCA page",
    );
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(redirectUri);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    return formatError(`TPP-Redirect-URI ${quote(redirectUri)} is not an absolute http(s) URL`);
  }
  const preferred = headerValue(req, "tpp-redirect-preferred")?.toLowerCase();
  if (preferred !== undefined && preferred !== "true" && preferred !== "false") {
    return formatError(`TPP-Redirect-Preferred must be true or false; got ${quote(preferred)}`);
  }
  const identity = readIdentity(req, settings.identityHeaders);
  return {
    organizationId: identity.organizationId ?? "",
    organizationName: identity.name,
    redirectUri: parsed.href,
    tppSessionId: headerValue(req, "tpp-session-id"),
    preselectedIdentity: headerValue(req, "x-psu-identity"),
    preferredMethod: headerValue(req, "x-psu-authmethod-preferred"),
    redirectPreferred: preferred !== "false",
  };
}

/** A new bank-offered consent waiting for the PSU at the SCA page (SPEC 1.9). */
export function startConsent(context: RequestContext): { consent: Consent; scaRedirect: string } | Reply {
  const request = readScaRequest(context);
  if (isReply(request)) return request;
  const { sca } = context.state;
  const now = context.settings.now();
  const consent = sca.createConsent(request.organizationId, now);
  const authorisation = sca.startAuthorisation(
    request,
    { kind: "consent", consentId: consent.consentId },
    now,
  );
  return { consent, scaRedirect: scaPageUrl(context, authorisation.authorisationId) };
}

/**
 * SPEC 5.11, 7: a request without PSU-ID, or without consent, answers 401 with the scaRedirect
 * link of a new consent. Without TPP-Redirect-URI there is nowhere to send the PSU back to, so
 * the text says to send it instead of giving a link.
 */
export function consentRequired(
  context: RequestContext,
  code: "CONSENT_INVALID" | "CONSENT_EXPIRED",
  why: string,
): Reply {
  const started = startConsent(context);
  if (isReply(started)) {
    return errorReply(
      401,
      code,
      `${why}; send TPP-Redirect-URI so the bank can answer with an scaRedirect link for the PSU to grant consent`,
    );
  }
  return errorReply(
    401,
    code,
    `${why}: send the PSU to the scaRedirect link, then repeat the request with the psu-id of the redirect in PSU-ID`,
    {
      links: {
        scaRedirect: { href: started.scaRedirect },
        consentStatus: { href: `/v1/bank-offered-consents/${started.consent.consentId}/status` },
      },
    },
  );
}

/**
 * An authorisation resource of a payment or basket at `resource` (SPEC 2.4): its scaStatus, the
 * page the PSU opens, and where to read both again.
 */
export function authorisationBody(context: RequestContext, resource: string, authorisation: Authorisation) {
  return {
    scaStatus: authorisation.scaStatus,
    authorisationId: authorisation.authorisationId,
    _links: {
      scaRedirect: { href: scaPageUrl(context, authorisation.authorisationId) },
      scaStatus: { href: `${resource}/authorisations/${authorisation.authorisationId}` },
      status: { href: `${resource}/status` },
    },
  };
}

/** GET …/authorisations/{authorisationId} of a payment or basket (SPEC 2.4); `owner` names it in the 404. */
export function authorisationStatus(
  context: RequestContext,
  subject: AuthorisationSubject,
  resource: string,
  owner: string,
  authorisationId: string,
): Reply {
  const authorisation = context.state.sca.authorisationOf(subject, authorisationId);
  if (authorisation === undefined) {
    return errorReply(404, "RESOURCE_UNKNOWN", `${owner} has no authorisation ${quote(authorisationId)}`);
  }
  return jsonReply(200, JSON.stringify(authorisationBody(context, resource, authorisation)));
}
