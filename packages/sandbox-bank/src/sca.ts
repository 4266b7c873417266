/**
 * The SCA page's routes (SPEC 1.2, 1.8, 1.9, 2.4, 2.6, 5.11): GET shows the step the authorisation
 * is at, POST takes one step (identify with number and one-time code, authorise, cancel) and answers
 * 303 (post/redirect/get), ending with the redirect to TPP-Redirect-URI and the success or failure
 * parameters of 2.6. A link is usable for the bank's scaLinkTtl from its creation, then answers 410.
 * Forms are CSRF-safe by a double submit: a random token in the form and in a SameSite=Strict
 * cookie scoped to the authorisation's path must match.
 */

import { timingSafeEqual } from "node:crypto";
import type { RequestContext } from "./context.js";
import { headerValue, type Reply, readBody } from "./http.js";
import type { Agreement, Customer } from "./model.js";
import { debtorAccountsOf, describePaymentForSca, settlePaymentAuthorisation } from "./payments.js";
import { UNATTENDED_CALLS_PER_DAY, unattendedUntil } from "./psu.js";
import { stablePsuUuid } from "./psu-ids.js";
import { type ConsentTerms, type Page, type PageStep, renderMessage, renderPage } from "./sca-page.js";
import type { Authorisation, CorporateContext } from "./sca-store.js";

const COOKIE = "sca_token";
/** A form is small; anything larger is not the page's. */
const MAX_FORM_BYTES = 16 * 1024;
const DEFAULT_METHOD = "one-time code";
/**
 * The test environment's one-time code: fixed and public (docs/sandbox.md, the page's help line), so that
 * the page can ask for one as a real bank's does without a device to send it to.
 */
export const SANDBOX_ONE_TIME_CODE = "123456";
/** Wrong codes the page takes before the authorisation fails, as a bank locks a code after a few. */
export const MAX_WRONG_CODES = 3;

export function showScaPage(context: RequestContext): Reply {
  const authorisation = context.state.sca.authorisation(context.params[0]!);
  if (authorisation === undefined) return notFound();
  if (linkExpired(context, authorisation)) return expired(context, authorisation);
  if (authorisation.scaStatus === "RECEIVED") authorisation.scaStatus = "STARTED";
  return page(context, authorisation, undefined, 200);
}

export async function submitScaPage(context: RequestContext): Promise<Reply> {
  const authorisation = context.state.sca.authorisation(context.params[0]!);
  if (authorisation === undefined) return notFound();
  const body = await readBody(context.req, MAX_FORM_BYTES, MAX_FORM_BYTES * 8);
  if (body.kind !== "body")
    return html(400, renderMessage("The form could not be read; reopen the link and try again."));
  const form = new URLSearchParams(body.bytes.toString("utf8"));
  if (!tokenMatches(context, authorisation, form.get("token"))) {
    return html(
      403,
      renderMessage(
        "This form has expired or was not sent from the bank's page; reopen the link from the provider.",
      ),
    );
  }
  if (linkExpired(context, authorisation)) return expired(context, authorisation);
  if (isFinished(authorisation)) return page(context, authorisation, undefined, 409);
  switch (form.get("action")) {
    case "cancel":
      return fail(
        context,
        authorisation,
        "CANCELLED",
        "The PSU cancelled the authorisation",
        "you cancelled it",
      );
    case "identify":
      return identify(
        context,
        authorisation,
        (form.get("identity") ?? "").trim(),
        (form.get("code") ?? "").trim(),
      );
    case "authorise":
      return authorise(context, authorisation, form);
    default:
      return page(context, authorisation, "Choose one of the buttons.", 400);
  }
}

function identify(
  context: RequestContext,
  authorisation: Authorisation,
  identity: string,
  code: string,
): Reply {
  const customer = context.state.catalogue.customersByIdOrNumber.get(identity);
  if (customer === undefined || customer.customerNumber !== identity) {
    return page(
      context,
      authorisation,
      "No customer of the bank has this identification number: check it and type it again.",
      400,
      identity,
    );
  }
  if (code !== SANDBOX_ONE_TIME_CODE) {
    authorisation.wrongCodes += 1;
    const left = MAX_WRONG_CODES - authorisation.wrongCodes;
    if (left <= 0) {
      return fail(
        context,
        authorisation,
        "PSU_CREDENTIALS_INVALID",
        `The one-time code was wrong ${MAX_WRONG_CODES} times`,
        `the one-time code was wrong ${MAX_WRONG_CODES} times`,
      );
    }
    return page(
      context,
      authorisation,
      `${code === "" ? "Type the one-time code" : "The one-time code is not right"}: ${left === 1 ? "one more try" : `${left} more tries`} before this authorisation is stopped. In the test environment the code is ${SANDBOX_ONE_TIME_CODE}.`,
      400,
      identity,
    );
  }
  authorisation.customerId = customer.customerId;
  authorisation.scaStatus = "PSU_AUTHENTICATED";
  return seeOther(pagePath(authorisation));
}

function authorise(context: RequestContext, authorisation: Authorisation, form: URLSearchParams): Reply {
  const customer = identifiedCustomer(context, authorisation);
  if (customer === undefined)
    return page(context, authorisation, "Type your identification number and one-time code first.", 400);
  const { sca } = context.state;
  const now = context.settings.now();
  const organizationId = authorisation.organizationId;
  const psuId = stablePsuUuid(organizationId, customer.customerId);
  const subject = authorisation.subject;
  const corporateContext = (agreement: Agreement): CorporateContext => ({
    customerId: customer.customerId,
    agreementId: agreement.id,
    psuCorporateId: stablePsuUuid(organizationId, customer.customerId, agreement.id),
  });
  let corporate: CorporateContext | undefined;

  if (subject.kind === "consent") {
    const consent = sca.consentById(subject.consentId);
    if (consent === undefined)
      return fail(
        context,
        authorisation,
        "CONSENT_UNKNOWN",
        "The consent no longer exists",
        "the consent no longer exists",
      );
    let allowed: readonly string[];
    if (customer.customerType === "CORPORATE") {
      const agreement = customer.agreements.find((a) => a.id === form.get("agreement"));
      if (agreement === undefined)
        return page(context, authorisation, "Choose the company agreement to act under.", 400);
      allowed = agreement.engagements;
      corporate = corporateContext(agreement);
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
        `The chosen agreement does not cover ${outside.length === 1 ? "this account" : "these accounts"}: ${outside.map((id) => accountName(customer, id)).join(", ")}.`,
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
    if (customer.customerType === "CORPORATE") {
      // The PSU approves under the agreement it chose, which must cover the accounts it pays from.
      const agreement = customer.agreements.find((a) => a.id === form.get("agreement"));
      if (agreement === undefined)
        return page(context, authorisation, "Choose the company agreement to approve under.", 400);
      const uncovered = ownDebtorAccounts(context, authorisation, customer).filter(
        (id) => !agreement.engagements.includes(id),
      );
      if (uncovered.length > 0) {
        return page(
          context,
          authorisation,
          `The agreement ${agreement.name} does not cover ${uncovered.map((id) => accountName(customer, id)).join(", ")}: choose one that does.`,
          400,
        );
      }
      corporate = corporateContext(agreement);
    }
    const settled = settlePaymentAuthorisation(context.state, subject, customer, true);
    if (settled !== true)
      return fail(context, authorisation, "PAYMENT_FAILED", settled, `the payment was refused: ${settled}`);
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

/**
 * SPEC 2.6 failure parameters; a failed SCA leaves the TPP's old session valid (5.15). `failure`
 * says to the PSU what happened, should the link be opened again.
 */
function fail(
  context: RequestContext,
  authorisation: Authorisation,
  code: string,
  text: string,
  failure: string,
): Reply {
  end(context, authorisation, failure);
  const failureCode = authorisation.subject.kind === "consent" ? code : "PAYMENT_FAILED";
  return redirectToTpp(authorisation, {
    system: "sandbox-sca",
    status: "400",
    code: failureCode,
    message: text,
  });
}

/** FAILED: a consent waiting for it is rejected, payments waiting for it too. */
function end(context: RequestContext, authorisation: Authorisation, failure: string): void {
  authorisation.scaStatus = "FAILED";
  authorisation.failure = failure;
  const subject = authorisation.subject;
  if (subject.kind === "consent") {
    const consent = context.state.sca.consentById(subject.consentId);
    if (consent !== undefined && consent.consentStatus === "received") consent.consentStatus = "rejected";
  } else {
    settlePaymentAuthorisation(context.state, subject, undefined, false);
  }
}

function linkExpired(context: RequestContext, authorisation: Authorisation): boolean {
  return context.settings.now() - authorisation.createdAt >= context.settings.scaLinkTtlMs;
}

/**
 * 410 once the link's time is over; an authorisation still open then fails (fail closed: an old
 * link found in a browser's history approves nothing). The TPP reads FAILED in its scaStatus.
 */
function expired(context: RequestContext, authorisation: Authorisation): Reply {
  if (!isFinished(authorisation)) end(context, authorisation, "the link expired");
  return html(
    410,
    renderMessage(
      `This link has expired: a link to the bank's page can be used for ${duration(context.settings.scaLinkTtlMs)}. Return to the provider's app and start again there.`,
    ),
  );
}

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds % 60 !== 0) return seconds === 1 ? "1 second" : `${seconds} seconds`;
  const minutes = seconds / 60;
  return minutes === 1 ? "1 minute" : `${minutes} minutes`;
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
    purpose: purpose(authorisation),
    provider: providerLine(authorisation),
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
  if (isFinished(authorisation)) {
    return {
      kind: "finished",
      outcome: outcome(authorisation),
      done: authorisation.scaStatus === "FINALISED",
    };
  }
  if (customer === undefined) {
    const preferred = authorisation.preferredMethod;
    return {
      kind: "identify",
      identity: identity ?? authorisation.preselectedIdentity ?? "",
      method:
        preferred === undefined
          ? DEFAULT_METHOD
          : `${preferred} (the test environment asks for a one-time code)`,
      oneTimeCode: SANDBOX_ONE_TIME_CODE,
    };
  }
  const subject = authorisation.subject;
  const names = new Map(customer.accounts.map((a) => [a.resourceId, a.name]));
  if (subject.kind !== "consent") {
    const debtors = ownDebtorAccounts(context, authorisation, customer);
    const covering = customer.agreements.find((a) => debtors.every((id) => a.engagements.includes(id)));
    return {
      kind: "payment",
      customerName: customer.customerName,
      lines: describePaymentForSca(context.state, subject),
      agreements:
        customer.customerType === "CORPORATE"
          ? customer.agreements.map((agreement, index) => ({
              id: agreement.id,
              name: agreement.name,
              accounts: agreement.engagements.map((id) => names.get(id) ?? id),
              checked: covering === undefined ? index === 0 : agreement === covering,
            }))
          : [],
    };
  }
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
  return {
    kind: "consent",
    customerName: customer.customerName,
    context: customer.customerType === "CORPORATE" ? "CORPORATE" : "PRIVATE",
    terms: consentTerms(context.settings.now()),
    agreements: customer.agreements.map((agreement, index) => ({
      id: agreement.id,
      name: agreement.name,
      accounts: agreement.engagements.map((id) => names.get(id) ?? id),
      checked: index === 0,
    })),
    accounts,
  };
}

/** What a consent granted now allows, as consents.ts answers it (SPEC 1.9, 8). */
function consentTerms(now: number): ConsentTerms {
  return {
    access: "Account details, balances and transactions of the accounts you choose below",
    validUntil: `${longDate(unattendedUntil(now))} for reading while you are away; while you use the provider's app, until you revoke it with the bank`,
    frequency: `Up to ${UNATTENDED_CALLS_PER_DAY} times a day while you are away; while you use the provider's app, as often as you use it`,
  };
}

function longDate(isoDay: string): string {
  return new Date(`${isoDay}T00:00:00Z`).toLocaleDateString("en-GB", {
    day: "numeric",
    month: "long",
    year: "numeric",
    timeZone: "UTC",
  });
}

/** What happened, in words, for a link opened again after the end. */
function outcome(authorisation: Authorisation): string {
  if (authorisation.scaStatus === "FAILED") {
    return `Nothing was done: ${authorisation.failure ?? "the authorisation did not go through"}.`;
  }
  switch (authorisation.subject.kind) {
    case "consent":
      return `Done: you allowed ${providerName(authorisation)} to read the accounts you chose.`;
    case "payment":
      return "Done: you approved the payment.";
    case "basket":
      return "Done: you approved the payments.";
  }
}

/** The registered name the gateway told, else its register id; a direct call tells neither. */
function providerName(authorisation: Authorisation): string {
  return (
    authorisation.organizationName ??
    (authorisation.organizationId === "" ? "The provider" : authorisation.organizationId)
  );
}

function providerLine(authorisation: Authorisation): string {
  const { organizationName: name, organizationId: id } = authorisation;
  if (name !== undefined && id !== "") return `Provider: ${name}, registered as ${id}.`;
  if (id !== "") return `Provider registered as ${id}.`;
  return "The provider did not say who it is.";
}

function purpose(authorisation: Authorisation): string {
  const who = providerName(authorisation);
  switch (authorisation.subject.kind) {
    case "consent":
      return `${who} asks to read your accounts.`;
    case "payment":
      return `${who} asks you to approve a payment.`;
    case "basket":
      return `${who} asks you to approve a basket of payments.`;
  }
}

/** The customer's own accounts the authorisation's payments are paid from. */
function ownDebtorAccounts(
  context: RequestContext,
  authorisation: Authorisation,
  customer: Customer,
): string[] {
  const own = new Set(customer.accounts.map((a) => a.resourceId));
  return debtorAccountsOf(context.state, authorisation.subject).filter((id) => own.has(id));
}

function accountName(customer: Customer, resourceId: string): string {
  return (
    customer.accounts.find((a) => a.resourceId === resourceId)?.name ??
    customer.cardAccounts.find((c) => c.resourceId === resourceId)?.name ??
    resourceId
  );
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

function notFound(): Reply {
  return html(
    404,
    renderMessage(
      "The bank does not know this link (or no longer keeps it); start again from the provider's app.",
    ),
  );
}
