/**
 * Signing baskets (SPEC 4.1, 3.1, 7): single payments of one TPP authorised with one SCA. Not
 * atomic: each payment keeps its own status, and the basket's is the worst of them.
 */

import type { RequestContext } from "./context.js";
import { FIX, parseAcceptFix } from "./fixes.js";
import {
  errorReply,
  formatError,
  headerValue,
  isReply,
  jsonReply,
  quote,
  type Reply,
  readBody,
} from "./http.js";
import { readIdentity } from "./identity.js";
import type { SigningBasket, StoredPayment, TransactionStatus } from "./payment-store.js";
import { authorisationBody, authorisationStatus, readScaRequest } from "./sca-flow.js";

const BASKETS = "/v1/signing-baskets";
const MAX_PAYMENTS = 100;
/**
 * Worst first: a rejected payment outweighs a cancelled one, which outweighs one still waiting for
 * authorisation, then one accepted, then one the batch executed.
 */
const WORST_FIRST: readonly TransactionStatus[] = ["RJCT", "CANC", "RCVD", "ACCP", "ACSC"];

/** POST /v1/signing-baskets {"paymentIds": [...]}: 201 RCVD with a startAuthorisation link. */
export async function createBasket(context: RequestContext): Promise<Reply> {
  const body = await readBody(context.req, context.settings.maxBodyBytes, context.settings.drainBytes);
  if (body.kind === "reply") return body.reply;
  if (body.kind === "aborted") return formatError("The request body was cut off");
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.bytes.toString("utf8"));
  } catch {
    return formatError('The body is not JSON: send {"paymentIds": ["<paymentId>", …]}');
  }
  const ids = (parsed as { paymentIds?: unknown } | null)?.paymentIds;
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > MAX_PAYMENTS ||
    !ids.every((id) => typeof id === "string")
  ) {
    return formatError(`paymentIds must be an array of 1 to ${MAX_PAYMENTS} paymentId strings`);
  }
  if (new Set(ids).size !== ids.length) return formatError("paymentIds names a payment twice");
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  const payments: StoredPayment[] = [];
  for (const id of ids as string[]) {
    const payment = context.state.payments.find(organizationId, id);
    if (payment === undefined)
      return errorReply(400, "RESOURCE_UNKNOWN", `paymentIds names an unknown payment ${quote(id)}`);
    if (payment.service !== "payments") {
      return errorReply(
        400,
        "REFERENCE_MIX_INVALID",
        `Payment ${payment.paymentId} is a ${payment.service === "bulk-payments" ? "bulk" : "periodic"} payment; a signing basket takes single payments only`,
      );
    }
    if (payment.transactionStatus !== "RCVD") {
      return errorReply(
        409,
        "STATUS_INVALID",
        `Payment ${payment.paymentId} is ${payment.transactionStatus}, already past authorisation`,
      );
    }
    payments.push(payment);
  }
  const basket: SigningBasket = {
    basketId: context.state.payments.nextId(),
    organizationId,
    paymentIds: ids as string[],
  };
  context.state.payments.addBasket(basket);
  const self = `${BASKETS}/${basket.basketId}`;
  return jsonReply(
    201,
    JSON.stringify({
      transactionStatus: basketStatus(context, basket),
      basketId: basket.basketId,
      _links: {
        self: { href: self },
        status: { href: `${self}/status` },
        startAuthorisation: { href: `${self}/authorisations` },
      },
    }),
    { location: self },
  );
}

function ownBasket(context: RequestContext): SigningBasket | Reply {
  const organizationId = readIdentity(context.req, context.settings.identityHeaders).organizationId ?? "";
  const basket = context.state.payments.findBasket(organizationId, context.params[0]!);
  return (
    basket ??
    errorReply(404, "RESOURCE_UNKNOWN", `No signing basket has basketId ${quote(context.params[0]!)}`)
  );
}

/** SPEC 3.1: the worst status over the basket's payments (a forgotten payment counts as rejected). */
function basketStatus(context: RequestContext, basket: SigningBasket): TransactionStatus {
  const statuses = basket.paymentIds.map(
    (id) => context.state.payments.findAny(id)?.transactionStatus ?? "RJCT",
  );
  return worstStatus(statuses);
}

/** The worst of the payments' statuses (SPEC 3.1): a basket is only as far as its least advanced payment. */
export function worstStatus(statuses: readonly TransactionStatus[]): TransactionStatus {
  return WORST_FIRST.find((status) => statuses.includes(status)) ?? "ACSC";
}

export function getBasket(context: RequestContext): Reply {
  const basket = ownBasket(context);
  if (isReply(basket)) return basket;
  return jsonReply(
    200,
    JSON.stringify({ payments: basket.paymentIds, transactionStatus: basketStatus(context, basket) }),
  );
}

export function getBasketStatus(context: RequestContext): Reply {
  const basket = ownBasket(context);
  if (isReply(basket)) return basket;
  return jsonReply(200, JSON.stringify({ transactionStatus: basketStatus(context, basket) }));
}

/** SPEC 4.1 headers this operation requires beyond the usual ones. */
const REQUIRED: readonly [string, string][] = [
  ["tpp-session-id", "TPP-Session-ID (the session the SCA belongs to, SPEC 5.15)"],
  ["psu-id", "PSU-ID"],
  ["psu-ip-address", "PSU-IP-Address (the PSU starts this, so is present)"],
];

/**
 * POST /v1/signing-baskets/{basketId}/authorisations: like a single payment's (SPEC 4.1), with
 * x-accept-fix: amount-as-string temporarily required, and TPP-Session-ID, PSU-ID, PSU-IP-Address.
 */
export function startBasketAuthorisation(context: RequestContext): Reply {
  const basket = ownBasket(context);
  if (isReply(basket)) return basket;
  // Requested, whatever the date (SPEC 4.1: "must be amount-as-string", temporarily required).
  if ((parseAcceptFix(context.req.headers["x-accept-fix"]) & FIX.amountAsString) === 0) {
    return formatError("x-accept-fix: amount-as-string is required to authorise a signing basket (SPEC 4.1)");
  }
  const missing = REQUIRED.filter(([name]) => headerValue(context.req, name) === undefined).map(
    ([, text]) => text,
  );
  if (missing.length > 0)
    return formatError(`Send ${missing.join(", ")} to authorise a signing basket (SPEC 4.1)`);
  if (basketStatus(context, basket) !== "RCVD") {
    return errorReply(
      409,
      "STATUS_INVALID",
      `Signing basket ${basket.basketId} is ${basketStatus(context, basket)}, past authorisation`,
    );
  }
  const request = readScaRequest(context);
  if (isReply(request)) return request;
  const authorisation = context.state.sca.startAuthorisation(
    request,
    { kind: "basket", basketId: basket.basketId },
    context.settings.now(),
  );
  return jsonReply(
    201,
    JSON.stringify(authorisationBody(context, `${BASKETS}/${basket.basketId}`, authorisation)),
  );
}

export function getBasketAuthorisation(context: RequestContext): Reply {
  const basket = ownBasket(context);
  if (isReply(basket)) return basket;
  return authorisationStatus(
    context,
    { kind: "basket", basketId: basket.basketId },
    `${BASKETS}/${basket.basketId}`,
    `Signing basket ${basket.basketId}`,
    context.params[1]!,
  );
}
