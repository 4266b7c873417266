/**
 * The SCA page's routes (SPEC 1.2, 1.8, 1.9, 2.4, 2.6, 5.11): GET shows the step the authorisation
 * is at, POST takes one step (identify, authorise, cancel) and answers 303 (post/redirect/get),
 * ending with the redirect to TPP-Redirect-URI and the success or failure parameters of 2.6.
 * Forms are CSRF-safe by a double submit: a random token in the form and in a SameSite=Strict
 * cookie scoped to the authorisation's path must match.
 */

import { timingSafeEqual } from "node:crypto";
import type { RequestContext } from "./context.js";
import { headerValue, type Reply, readBody } from "./http.js";
import type { Customer } from "./model.js";
import { describePaymentForSca, settlePaymentAuthorisation } from "./payments.js";
import { stablePsuUuid } from "./psu-ids.js";
import { escapeHtml, type Page, type PageStep, renderPage } from "./sca-page.js";
import type { Authorisation, CorporateContext } from "./sca-store.js";

const COOKIE = "sca_token";
/** A form is small; anything larger is not the page's. */
const MAX_FORM_BYTES = 16 * 1024;
const DEFAULT_METHOD = "one-time code (mocked)";

export function showScaPage(context: RequestContext): Reply {
  const authorisation = context.state.sca.authorisation(context.params[0]!);
  if (authorisation === undefined) return notFound();
  if (authorisation.scaStatus === "RECEIVED") authorisation.scaStatus = "STARTED";
  return page(context, authorisation, undefined, 200);
}

export async function submitScaPage(context: RequestContext): Promise<Reply> {
  const authorisation = context.state.sca.authorisation(context.params[0]!);
  if (authorisation === undefined) return notFound();
  const body = await readBody(context.req, MAX_FORM_BYTES, MAX_FORM_BYTES * 8);
  if (body.kind !== "body")
    return html(400, message("The form could not be read; reopen the link and try again."));
  const form = new URLSearchParams(body.bytes.toString("utf8"));
  if (!tokenMatches(context, authorisation, form.get("token"))) {
    return html(
      403,
      message(
        "This form has expired or was not sent from the bank's page; reopen the link from the provider.",
      ),
    );
  }
  if (isFinished(authorisation)) return page(context, authorisation, undefined, 409);
  switch (form.get("action")) {
    case "cancel":
      return fail(context, authorisation, "CANCELLED", "The PSU cancelled the authorisation");
    case "identify":
      return identify(context, authorisation, (form.get("identity") ?? "").trim());
    case "authorise":
      return authorise(context, authorisation, form);
    default:
      return page(context, authorisation, "Choose one of the buttons.", 400);
  }
}

function identify(context: RequestContext, authorisation: Authorisation, identity: string): Reply {
  const customer = context.state.catalogue.customersByIdOrNumber.get(identity);
  if (customer === undefined || customer.customerNumber !== identity) {
    return page(
      context,
      authorisation,
      "No sandbox customer has this identification number: use a customerNumber from GET /v1/sandbox/customers.",
      400,
      identity,
    );
  }
  authorisation.customerId = customer.customerId;
  authorisation.scaStatus = "PSU_IDENTIFIED";
  return seeOther(pagePath(authorisation));
}

function authorise(context: RequestContext, authorisation: Authorisation, form: URLSearchParams): Reply {
  const customer = identifiedCustomer(context, authorisation);
  if (customer === undefined)
    return page(context, authorisation, "Enter your identification number first.", 400);
  const { sca } = context.state;
  const now = context.settings.now();
  const organizationId = authorisation.organizationId;
  const psuId = stablePsuUuid(organizationId, customer.customerId);
  const subject = authorisation.subject;
  let corporate: CorporateContext | undefined;

  if (subject.kind === "consent") {
    const consent = sca.consentById(subject.consentId);
    if (consent === undefined)
      return fail(context, authorisation, "CONSENT_UNKNOWN", "The consent no longer exists");
    let allowed: readonly string[];
    if (customer.customerType === "CORPORATE") {
      const agreement = customer.agreements.find((a) => a.id === form.get("agreement"));
      if (agreement === undefined)
        return page(context, authorisation, "Choose the corporate agreement to act under.", 400);
      allowed = agreement.engagements;
      corporate = {
        customerId: customer.customerId,
        agreementId: agreement.id,
        psuCorporateId: stablePsuUuid(organizationId, customer.customerId, agreement.id),
      };
    } else {
      allowed = [
        ...customer.accounts.map((a) => a.resourceId),
        ...customer.cardAccounts.map((c) => c.resourceId),
      ];
    }
    const chosen = form.getAll("account");
    if (chosen.length === 0) return page(context, authorisation, "Choose at least one account.", 400);
    const outside = chosen.filter((id) => !allowed.includes(id));
    if (outside.length > 0) {
      return page(
        context,
        authorisation,
        `The chosen agreement does not grant ${outside.length === 1 ? "this account" : "these accounts"}: ${outside.join(", ")}.`,
        400,
      );
    }
    sca.grantConsent(consent, {
      psuId,
      customerId: customer.customerId,
      corporate,
      accounts: new Set(chosen),
      scaAt: now,
    });
  } else {
    const settled = settlePaymentAuthorisation(context.state, subject, customer, true);
    if (settled !== true) return fail(context, authorisation, "PAYMENT_FAILED", settled);
    if (customer.customerType === "CORPORATE") {
      const agreement = customer.agreements[0];
      if (agreement !== undefined) {
        corporate = {
          customerId: customer.customerId,
          agreementId: agreement.id,
          psuCorporateId: stablePsuUuid(organizationId, customer.customerId, agreement.id),
        };
      }
    }
  }

  // The PSU-ID alone names a corporate customer too, so that a call without PSU-Corporate-ID gets the 400 of SPEC 7.
  sca.remember(organizationId, psuId, { customerId: customer.customerId, corporate: undefined });
  if (corporate !== undefined)
    sca.remember(organizationId, psuId, { customerId: customer.customerId, corporate });
  sca.completeSession(organizationId, psuId, authorisation.tppSessionId, now);
  authorisation.scaStatus = "FINALISED";
  return redirectToTpp(authorisation, {
    "psu-id": psuId,
    ...(corporate !== undefined ? { "psu-corporate-id": corporate.psuCorporateId } : {}),
    ...(authorisation.tppSessionId !== undefined ? { "tpp-session-id": authorisation.tppSessionId } : {}),
    context: corporate !== undefined ? "CORPORATE" : "PRIVATE",
  });
}

/** SPEC 2.6 failure parameters; a failed SCA leaves the TPP's old session valid (5.15). */
function fail(context: RequestContext, authorisation: Authorisation, code: string, text: string): Reply {
  authorisation.scaStatus = "FAILED";
  const subject = authorisation.subject;
  if (subject.kind === "consent") {
    const consent = context.state.sca.consentById(subject.consentId);
    if (consent !== undefined && consent.consentStatus === "received") consent.consentStatus = "rejected";
  } else {
    settlePaymentAuthorisation(context.state, subject, undefined, false);
  }
  const failure = subject.kind === "consent" ? code : "PAYMENT_FAILED";
  return redirectToTpp(authorisation, { system: "sandbox-sca", status: "400", code: failure, message: text });
}

function redirectToTpp(authorisation: Authorisation, parameters: Record<string, string>): Reply {
  const target = new URL(authorisation.redirectUri);
  for (const [name, value] of Object.entries(parameters)) target.searchParams.set(name, value);
  return seeOther(target.href);
}

function page(
  context: RequestContext,
  authorisation: Authorisation,
  error: string | undefined,
  status: number,
  identity?: string,
): Reply {
  const customer = identifiedCustomer(context, authorisation);
  const view: Page = {
    action: pagePath(authorisation),
    formToken: authorisation.formToken,
    purpose: purpose(context, authorisation),
    method: authorisation.preferredMethod ?? DEFAULT_METHOD,
    appFlowRequested: !authorisation.redirectPreferred,
    step: step(context, authorisation, customer, identity),
    error,
  };
  return html(status, renderPage(view), {
    "set-cookie": `${COOKIE}=${authorisation.formToken}; Path=${pagePath(authorisation)}; HttpOnly; SameSite=Strict`,
  });
}

function step(
  context: RequestContext,
  authorisation: Authorisation,
  customer: Customer | undefined,
  identity: string | undefined,
): PageStep {
  if (isFinished(authorisation)) return { kind: "finished", scaStatus: authorisation.scaStatus };
  if (customer === undefined) {
    return { kind: "identify", identity: identity ?? authorisation.preselectedIdentity ?? "" };
  }
  const subject = authorisation.subject;
  if (subject.kind !== "consent") {
    return {
      kind: "payment",
      customerName: customer.customerName,
      lines: describePaymentForSca(context.state, subject),
    };
  }
  const corporate = customer.customerType === "CORPORATE";
  const accounts = [
    ...customer.accounts.map((a) => ({
      resourceId: a.resourceId,
      label: `${a.name} (${a.bban}, ${a.currency})`,
      checked: true,
    })),
    ...customer.cardAccounts.map((c) => ({
      resourceId: c.resourceId,
      label: `${c.name} (card ${c.maskedPan})`,
      checked: true,
    })),
  ];
  const bban = new Map(customer.accounts.map((a) => [a.resourceId, a.bban]));
  return {
    kind: "consent",
    customerName: customer.customerName,
    context: corporate ? "CORPORATE" : "PRIVATE",
    agreements: customer.agreements.map((agreement, index) => ({
      id: agreement.id,
      name: agreement.name,
      accounts: agreement.engagements.map((id) => bban.get(id) ?? id),
      checked: index === 0,
    })),
    accounts,
  };
}

function purpose(context: RequestContext, authorisation: Authorisation): string {
  const who =
    authorisation.organizationId === "" ? "A provider" : `The provider ${authorisation.organizationId}`;
  switch (authorisation.subject.kind) {
    case "consent":
      return `${who} asks to read your accounts.`;
    case "payment":
      return `${who} asks you to approve a payment.`;
    case "basket":
      return `${who} asks you to approve a basket of payments.`;
  }
  return context.req.method ?? "";
}

function identifiedCustomer(context: RequestContext, authorisation: Authorisation): Customer | undefined {
  return authorisation.customerId === undefined
    ? undefined
    : context.state.catalogue.customersByIdOrNumber.get(authorisation.customerId);
}

function isFinished(authorisation: Authorisation): boolean {
  return authorisation.scaStatus === "FINALISED" || authorisation.scaStatus === "FAILED";
}

function tokenMatches(context: RequestContext, authorisation: Authorisation, sent: string | null): boolean {
  const cookie = headerValue(context.req, "cookie") ?? "";
  const fromCookie = cookie
    .split(";")
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${COOKIE}=`))
    ?.slice(COOKIE.length + 1);
  const expected = Buffer.from(authorisation.formToken);
  return [sent, fromCookie].every(
    (value) =>
      value !== null &&
      value !== undefined &&
      value.length === expected.length &&
      timingSafeEqual(Buffer.from(value), expected),
  );
}

function pagePath(authorisation: Authorisation): string {
  return `/sca/${authorisation.authorisationId}`;
}

function seeOther(location: string): Reply {
  return { status: 303, body: "", headers: { location, "content-type": "text/plain; charset=utf-8" } };
}

function html(status: number, body: string, headers: Record<string, string> = {}): Reply {
  return {
    status,
    body,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http: https:; frame-ancestors 'none'",
      ...headers,
    },
  };
}

function message(text: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sandbox Bank</title></head><body><main><h1>Sandbox Bank</h1><p role="alert">${escapeHtml(text)}</p></main></body></html>`;
}

function notFound(): Reply {
  return html(
    404,
    message("This authorisation link is unknown or has expired; start again from the provider's app."),
  );
}
