/** Payment initiation (PIS): create a domestic credit transfer, authorise it, read it and its status. */

import type { RequestContext } from "./context.js";
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
import { DOMESTIC_PRODUCT, logicalKey, parseDomesticPayment } from "./payment-body.js";
import type { StoredPayment } from "./payment-store.js";
import { resolvePsu } from "./psu.js";
import { availableMinor, hrefs } from "./render.js";

/** POST /v1/payments/{product} for any product but the one this bank offers. */
export function unknownProduct({ params }: RequestContext): Reply {
  return errorReply(
    404,
    "PRODUCT_UNKNOWN",
    `Payment product ${quote(params[0]!)} is not offered; this sandbox offers ${DOMESTIC_PRODUCT}`,
  );
}

/** POST /v1/payments/norwegian-domestic-credit-transfers?allowLogicalDuplicate= */
export async function createDomesticPayment(context: RequestContext): Promise<Reply> {
  const { req, query, state, settings } = context;
  const allowDuplicate = booleanParam(query, "allowLogicalDuplicate", false);
  if (isReply(allowDuplicate)) return allowDuplicate;

  const body = await readBody(req, settings.maxBodyBytes, settings.drainBytes);
  if (body.kind === "reply") return body.reply;
  if (body.kind === "aborted") return formatError("The request body was cut off");
  const parsed = parseDomesticPayment(body.bytes);
  if (!parsed.ok) return formatError(parsed.text);
  const request = parsed.payment;

  const debtor = state.catalogue.accountsByBban.get(request.debtorBban);
  if (debtor === undefined) {
    return formatError(
      `debtorAccount.bban ${request.debtorBban} is not an account of this bank; GET /v1/accounts lists the PSU's accounts`,
    );
  }
  if (request.creditorBban === request.debtorBban) {
    return formatError("creditorAccount.bban is the debtor account; a credit transfer needs two accounts");
  }

  const organizationId = readIdentity(req, settings.identityHeaders).organizationId ?? "";
  const key = logicalKey(request);
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
    product: DOMESTIC_PRODUCT,
    organizationId,
    request,
    logicalKey: key,
    fundsAvailable: availableMinor(debtor, state.catalogue.data.today) >= request.amountMinor,
    transactionStatus: "RCVD",
  };
  state.payments.add(payment);
  const self = hrefs.payment(DOMESTIC_PRODUCT, payment.paymentId);
  return jsonReply(
    201,
    JSON.stringify({
      transactionStatus: payment.transactionStatus,
      paymentId: payment.paymentId,
      _links: {
        startAuthorisation: { href: hrefs.authorisations(DOMESTIC_PRODUCT, payment.paymentId) },
        self: { href: self },
        status: { href: hrefs.paymentStatus(DOMESTIC_PRODUCT, payment.paymentId) },
      },
    }),
    { location: self },
  );
}

/** The calling TPP's payment named by the path; other TPPs' payments do not exist for it. */
function ownPayment(context: RequestContext): StoredPayment | Reply {
  const [product, paymentId] = context.params as [string, string];
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  const payment = context.state.payments.find(organizationId, paymentId);
  if (payment === undefined || payment.product !== product) {
    return errorReply(
      404,
      "RESOURCE_UNKNOWN",
      `No ${quote(product)} payment has paymentId ${quote(paymentId)}`,
    );
  }
  return payment;
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
  const request = payment.request;
  return jsonReply(
    200,
    JSON.stringify({
      instructedAmount: { amount: request.amount, currency: request.currency },
      debtorAccount: { bban: request.debtorBban },
      creditorAccount: { bban: request.creditorBban },
      creditorName: request.creditorName,
      remittanceInformationUnstructured: request.remittance,
      transactionStatus: payment.transactionStatus,
    }),
  );
}

/**
 * POST {startAuthorisation}: the sandbox has no SCA page, so it exempts the authorisation at once
 * (scaStatus EXEMPTED, SPEC 2.4) and the payment becomes ACCP. The body is ignored, as the SPEC
 * has TPPs post an empty one. The PSU must be identified (PSU-ID), as for account information.
 */
export function startAuthorisation(context: RequestContext): Reply {
  const psu = resolvePsu(context);
  if (isReply(psu)) return psu;
  const payment = ownPayment(context);
  if (isReply(payment)) return payment;
  payment.transactionStatus = "ACCP";
  return jsonReply(
    201,
    JSON.stringify({
      scaStatus: "EXEMPTED",
      authorisationId: context.state.payments.nextId(),
      _links: { status: { href: hrefs.paymentStatus(payment.product, payment.paymentId) } },
    }),
  );
}
