/** Payment initiation (PIS): create a payment, authorise it by redirect, read it and its status, cancel it. */

import type { BankState, RequestContext } from "./context.js";
import { isoDate } from "./dates.js";
import {
  booleanParam,
  errorReply,
  formatError,
  isReply,
  jsonReply,
  quote,
  type Reply,
  readBody,
} from "./http.js";
import { readIdentity } from "./identity.js";
import type { Customer } from "./model.js";
import {
  CROSS_BORDER_PRODUCT,
  isOfferedProduct,
  PAYMENT_PRODUCTS,
  type PaymentRequest,
  parsePaymentRequest,
  paymentLogicalKey,
} from "./payment-body.js";
import type { PaymentService, StoredPayment } from "./payment-store.js";
import { availableMinor } from "./render.js";
import { authorisationBody, authorisationStatus, readScaRequest } from "./sca-flow.js";
import type { AuthorisationSubject } from "./sca-store.js";

/** Where a payment lives: /v1/payments/… or /v1/periodic-payments/…, by the service it was made under. */
export function paymentPath(payment: {
  service: PaymentService;
  product: string;
  paymentId: string;
}): string {
  return `/v1/${payment.service}/${payment.product}/${payment.paymentId}`;
}

/** The payment service a request's path names (the routes give both the same handlers). */
function serviceOf(context: RequestContext): PaymentService {
  return context.req.url?.startsWith("/v1/periodic-payments/") === true ? "periodic-payments" : "payments";
}

/**
 * POST /v1/payments/{product} and /v1/periodic-payments/{product} (?allowLogicalDuplicate=):
 * domestic and cross-border credit transfers (SPEC 2.5, 4.4, 9.4), periodic ones with months of
 * execution (9.5), KID references (7). Created RCVD with a startAuthorisation link (4.5).
 */
export async function createPayment(context: RequestContext): Promise<Reply> {
  const { req, query, state, settings } = context;
  const service = serviceOf(context);
  const product = context.params[0]!;
  const kind = service === "periodic-payments" ? "periodic" : "single";
  if (!isOfferedProduct(kind, product)) {
    return errorReply(
      404,
      "PRODUCT_UNKNOWN",
      `Payment product ${quote(product)} is not offered under /v1/${service}; this sandbox offers ${PAYMENT_PRODUCTS[kind].join(", ")}`,
    );
  }
  const allowDuplicate = booleanParam(query, "allowLogicalDuplicate", false);
  if (isReply(allowDuplicate)) return allowDuplicate;

  const body = await readBody(req, settings.maxBodyBytes, settings.drainBytes);
  if (body.kind === "reply") return body.reply;
  if (body.kind === "aborted") return formatError("The request body was cut off");
  const parsed = parsePaymentRequest(kind, product, body.bytes, isoDate(settings.now()));
  if (!parsed.ok) return errorReply(parsed.status, parsed.code, parsed.text);
  const request = parsed.payment;

  const debtor = state.catalogue.accountsByBban.get(request.debtorBban);
  if (debtor === undefined) {
    return formatError(
      `debtorAccount.bban ${request.debtorBban} is not an account of this bank; GET /v1/accounts lists the PSU's accounts`,
    );
  }
  if (creditorOf(request) === request.debtorBban) {
    return formatError("creditorAccount.bban is the debtor account; a credit transfer needs two accounts");
  }

  const organizationId = readIdentity(req, settings.identityHeaders).organizationId ?? "";
  const key = paymentLogicalKey(request);
  if (!allowDuplicate) {
    const original = state.payments.duplicateOf(organizationId, key);
    if (original !== undefined) {
      return errorReply(
        400,
        "PAYMENT_FAILED",
        `This payment is a logical duplicate of payment ${original.paymentId} (same debtor, creditor, amount and remittance information); send allowLogicalDuplicate=true to make it anyway`,
      );
    }
  }

  const payment: StoredPayment = {
    paymentId: state.payments.nextId(),
    service,
    product,
    organizationId,
    request,
    logicalKey: key,
    fundsAvailable: availableMinor(debtor, state.catalogue.data.today) >= request.amountMinor,
    transactionStatus: "RCVD",
  };
  state.payments.add(payment);
  const self = paymentPath(payment);
  return jsonReply(
    201,
    JSON.stringify({
      transactionStatus: payment.transactionStatus,
      paymentId: payment.paymentId,
      _links: {
        startAuthorisation: { href: `${self}/authorisations` },
        self: { href: self },
        status: { href: `${self}/status` },
      },
    }),
    { location: self },
  );
}

/** The creditor's account as one string (a BBAN, or a cross-border IBAN or account number). */
function creditorOf(request: PaymentRequest): string {
  return request.product === CROSS_BORDER_PRODUCT ? request.creditorAccount.identifier : request.creditorBban;
}

/** The calling TPP's payment named by the path; other TPPs' payments do not exist for it. */
export function ownPayment(context: RequestContext): StoredPayment | Reply {
  const [product, paymentId] = context.params as [string, string];
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  const payment = context.state.payments.find(organizationId, paymentId);
  if (payment === undefined || payment.product !== product || payment.service !== serviceOf(context)) {
    return errorReply(
      404,
      "RESOURCE_UNKNOWN",
      `No ${quote(product)} payment has paymentId ${quote(paymentId)}`,
    );
  }
  return payment;
}

/**
 * DELETE /v1/payments/{product}/{paymentId}: cancels a payment not yet executed (CANC). Its id
 * stays valid: status and details still answer (SPEC 3.5).
 */
export function cancelPayment(context: RequestContext): Reply {
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  if (payment.transactionStatus !== "RCVD" && payment.transactionStatus !== "ACCP") {
    return errorReply(
      409,
      "STATUS_INVALID",
      `Payment ${payment.paymentId} is ${payment.transactionStatus} and can no longer be cancelled`,
    );
  }
  payment.transactionStatus = "CANC";
  return jsonReply(200, JSON.stringify({ transactionStatus: payment.transactionStatus }));
}

/** GET /v1/payments/{product}/{paymentId}/status: fundsAvailable shows a hold for lack of funds (SPEC 3 rule 2). */
export function getPaymentStatus(context: RequestContext): Reply {
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  return jsonReply(
    200,
    JSON.stringify({ transactionStatus: payment.transactionStatus, fundsAvailable: payment.fundsAvailable }),
  );
}

export function getPayment(context: RequestContext): Reply {
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  return jsonReply(
    200,
    JSON.stringify({ ...renderRequest(payment.request), transactionStatus: payment.transactionStatus }),
  );
}

/** The payment as the TPP sent it, in Berlin Group field names (amounts as strings). */
function renderRequest(request: PaymentRequest): Record<string, unknown> {
  const common = {
    instructedAmount: { amount: request.amount, currency: request.currency },
    debtorAccount: { bban: request.debtorBban },
    ...(request.creditorName !== undefined ? { creditorName: request.creditorName } : {}),
    ...(request.remittance !== undefined ? { remittanceInformationUnstructured: request.remittance } : {}),
  };
  if (request.product === CROSS_BORDER_PRODUCT) {
    return {
      ...common,
      creditorAccount: {
        [request.creditorAccount.scheme]: request.creditorAccount.identifier,
        ...(request.creditorAccount.currency !== undefined
          ? { currency: request.creditorAccount.currency }
          : {}),
      },
      ...(request.creditorAgent !== undefined ? { creditorAgent: request.creditorAgent } : {}),
      ...(request.creditorAddress !== undefined ? { creditorAddress: request.creditorAddress } : {}),
      regulatoryReportingCode: request.regulatoryReporting.code,
      regulatoryReportingAmount: {
        amount: request.regulatoryReporting.amount.amount,
        currency: request.regulatoryReporting.amount.currency,
      },
      ...(request.regulatoryReporting.information !== undefined
        ? { regulatoryReportingInformation: request.regulatoryReporting.information }
        : {}),
    };
  }
  const domestic = {
    ...common,
    creditorAccount: { bban: request.creditorBban },
    ...(request.kid !== undefined
      ? { remittanceInformationStructuredArray: [{ reference: request.kid, referenceType: "KID" }] }
      : {}),
  };
  if (request.kind !== "periodic") return domestic;
  return {
    ...domestic,
    startDate: request.startDate,
    ...(request.endDate !== undefined ? { endDate: request.endDate } : {}),
    frequency: request.frequency,
    ...(request.executionRule !== undefined ? { executionRule: request.executionRule } : {}),
    ...(request.dayOfExecution !== undefined ? { dayOfExecution: request.dayOfExecution } : {}),
    ...(request.monthsOfExecution !== undefined ? { monthsOfExecution: request.monthsOfExecution } : {}),
  };
}

/**
 * POST {startAuthorisation} (empty body, SPEC 4.5): an authorisation resource whose scaRedirect
 * link the PSU opens; the payment stays RCVD until the PSU approves it at the SCA page (then
 * ACCP) or cancels (RJCT, and the failure redirect says PAYMENT_FAILED, SPEC 7). A payment needs
 * SCA with dynamic linking, so an SCA session of TPP-Session-ID never exempts it (SPEC 5.15).
 */
export function startAuthorisation(context: RequestContext): Reply {
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  if (payment.transactionStatus !== "RCVD") {
    return errorReply(
      409,
      "STATUS_INVALID",
      `Payment ${payment.paymentId} is ${payment.transactionStatus}: only a payment waiting for authorisation (RCVD) can be authorised`,
    );
  }
  const request = readScaRequest(context);
  if (isReply(request)) return request;
  const subject = { kind: "payment", product: payment.product, paymentId: payment.paymentId } as const;
  const authorisation = context.state.sca.startAuthorisation(request, subject, context.settings.now());
  return jsonReply(201, JSON.stringify(authorisationBody(context, paymentPath(payment), authorisation)), {
    location: `${paymentPath(payment)}/authorisations/${authorisation.authorisationId}`,
  });
}

/** GET /v1/payments/{product}/{paymentId}/authorisations: the ids of its authorisations. */
export function listAuthorisations(context: RequestContext): Reply {
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  const ids = context.state.sca
    .authorisationsOf({ kind: "payment", product: payment.product, paymentId: payment.paymentId })
    .map((a) => a.authorisationId);
  return jsonReply(200, JSON.stringify({ authorisationIds: ids }));
}

/** GET /v1/payments/{product}/{paymentId}/authorisations/{authorisationId}: SPEC 2.4. */
export function getAuthorisationStatus(context: RequestContext): Reply {
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  const subject = { kind: "payment", product: payment.product, paymentId: payment.paymentId } as const;
  return authorisationStatus(
    context,
    subject,
    paymentPath(payment),
    `Payment ${payment.paymentId}`,
    context.params[2]!,
  );
}

/** What the SCA page shows the PSU before approval (dynamic linking: amount and payee). */
export function describePaymentForSca(state: BankState, subject: AuthorisationSubject): [string, string][] {
  if (subject.kind === "consent") return [];
  const lines: [string, string][] = [];
  const payments = subjectPayments(state, subject);
  payments.forEach((payment, index) => {
    const request = payment.request;
    const n = payments.length > 1 ? ` ${index + 1}` : "";
    lines.push([`Amount${n}`, `${request.amount} ${request.currency}`]);
    lines.push([`To${n}`, `${request.creditorName ?? "(no name)"} (${creditorOf(request)})`]);
    if (request.kind === "periodic")
      lines.push([`Every${n}`, `${request.frequency} from ${request.startDate}`]);
    const debtor = state.catalogue.accountsByBban.get(request.debtorBban);
    lines.push([
      `From account${n}`,
      debtor === undefined ? request.debtorBban : `${debtor.name} (${request.debtorBban})`,
    ]);
    if (request.remittance !== undefined) lines.push([`Message${n}`, request.remittance]);
  });
  return lines.length > 0 ? lines : [["Payment", "no longer known"]];
}

/** The resourceIds of the bank's accounts the payments of `subject` are paid from. */
export function debtorAccountsOf(state: BankState, subject: AuthorisationSubject): string[] {
  const ids = subjectPayments(state, subject).flatMap(
    (payment) => state.catalogue.accountsByBban.get(payment.request.debtorBban)?.resourceId ?? [],
  );
  return [...new Set(ids)];
}

/** The payments an authorisation approves: one, or a basket's. */
function subjectPayments(state: BankState, subject: AuthorisationSubject): StoredPayment[] {
  const ids =
    subject.kind === "payment"
      ? [subject.paymentId]
      : subject.kind === "basket"
        ? (state.payments.findBasket(undefined, subject.basketId)?.paymentIds ?? [])
        : [];
  return ids.flatMap((id) => state.payments.findAny(id) ?? []);
}

/**
 * The PSU approved (`approved`) or cancelled the payment at the SCA page. Approval needs the
 * debtor account to be the PSU's; the answer is true or the reason it failed.
 */
export function settlePaymentAuthorisation(
  state: BankState,
  subject: AuthorisationSubject,
  customer: Customer | undefined,
  approved: boolean,
): true | string {
  const payments = subjectPayments(state, subject).filter((p) => p.transactionStatus === "RCVD");
  if (payments.length === 0) return "the payment no longer waits for authorisation";
  if (!approved || customer === undefined) {
    for (const payment of payments) payment.transactionStatus = "RJCT";
    return "the PSU did not approve the payment";
  }
  // Not atomic (SPEC 3.1): in a basket each payment stands or falls on its own debtor account.
  const refused: string[] = [];
  for (const payment of payments) {
    const debtor = state.catalogue.accountsByBban.get(payment.request.debtorBban);
    if (debtor === undefined || debtor.ownerCustomerId !== customer.customerId) {
      payment.transactionStatus = "RJCT";
      refused.push(payment.request.debtorBban);
    } else {
      payment.transactionStatus = "ACCP";
    }
  }
  if (refused.length < payments.length) return true;
  return `the debtor account ${refused.join(", ")} is not an account of ${customer.customerName}`;
}
