/** Sandbox-only customer operations (SPEC 4.2): the customer list and the resources it links to. */

import type { RequestContext } from "./context.js";
import { booleanParam, errorReply, isReply, jsonReply, quote, type Reply } from "./http.js";

/**
 * GET /v1/sandbox/customers?withAccounts=&withAgreements=. Both flags default to false ("false is
 * faster" in SPEC 4.2); the fields stay present as empty arrays because SPEC 2.1 requires them.
 */
export function listCustomers({ query, state }: RequestContext): Reply {
  const withAccounts = booleanParam(query, "withAccounts", false);
  if (isReply(withAccounts)) return withAccounts;
  const withAgreements = booleanParam(query, "withAgreements", false);
  if (isReply(withAgreements)) return withAgreements;
  return jsonReply(200, state.catalogue.customerLists[(withAccounts ? 2 : 0) + (withAgreements ? 1 : 0)]!);
}

export function getCustomer({ params, state }: RequestContext): Reply {
  const customerId = params[0]!;
  const body = state.catalogue.customerDetails.get(customerId);
  return body === undefined ? unknownCustomer(customerId) : jsonReply(200, body);
}

export function getAgreement({ params, state }: RequestContext): Reply {
  const entry = state.catalogue.agreements.get(`${params[0]}/${params[1]}`);
  return entry === undefined ? unknownAgreement(params[0]!, params[1]!) : jsonReply(200, entry.agreement);
}

export function getAgreementEngagements({ params, state }: RequestContext): Reply {
  const entry = state.catalogue.agreements.get(`${params[0]}/${params[1]}`);
  return entry === undefined ? unknownAgreement(params[0]!, params[1]!) : jsonReply(200, entry.engagements);
}

function unknownCustomer(customerId: string): Reply {
  return errorReply(404, "RESOURCE_UNKNOWN", `No sandbox customer has customerId ${quote(customerId)}`);
}

function unknownAgreement(customerId: string, agreementId: string): Reply {
  return errorReply(
    404,
    "RESOURCE_UNKNOWN",
    `Sandbox customer ${quote(customerId)} has no agreement ${quote(agreementId)}`,
  );
}
