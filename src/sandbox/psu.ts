/**
 * Which sandbox customer a request acts for. The real bank learns this through SCA and consent;
 * the sandbox maps the PSU headers deterministically instead:
 *
 * - no PSU-ID: 401 CONSENT_INVALID with an scaRedirect link (SPEC 4.5, 5.11, 7);
 * - PSU-Corporate-ID equal to a CORPORATE customer's customerId or customerNumber: that customer
 *   (corporate context, SPEC 1.8); any other PSU-Corporate-ID: 401 with scaRedirect, as there is
 *   no consent for that corporate context;
 * - PSU-ID equal to a PRIVATE customer's customerId or customerNumber: that customer;
 * - PSU-ID naming a CORPORATE customer without PSU-Corporate-ID: 400 (SPEC 7);
 * - any other PSU-ID (a TPP's own UUID, SPEC 2.6): the first PRIVATE customer.
 */

import type { RequestContext } from "./context.js";
import { errorReply, headerValue, quote, type Reply } from "./http.js";
import type { Customer } from "./model.js";

export function resolvePsu({ req, state, settings }: RequestContext): Customer | Reply {
  const psuId = headerValue(req, "psu-id");
  const scaRedirect = { scaRedirect: { href: settings.scaRedirectUrl } };
  if (psuId === undefined) {
    return errorReply(
      401,
      "CONSENT_INVALID",
      "No PSU-ID: send the PSU to the scaRedirect link, then repeat the request with the psu-id of the redirect in PSU-ID",
      { links: scaRedirect },
    );
  }
  const catalogue = state.catalogue;
  const corporateId = headerValue(req, "psu-corporate-id");
  if (corporateId !== undefined) {
    const corporate = catalogue.customersByIdOrNumber.get(corporateId);
    if (corporate?.customerType === "CORPORATE") return corporate;
    return errorReply(
      401,
      "CONSENT_INVALID",
      `No consent for the corporate context PSU-Corporate-ID ${quote(corporateId)}: send the PSU to the scaRedirect link to choose a corporate agreement`,
      { links: scaRedirect },
    );
  }
  const customer = catalogue.customersByIdOrNumber.get(psuId);
  if (customer === undefined) return catalogue.defaultPsuCustomer;
  if (customer.customerType === "CORPORATE") {
    return errorReply(
      400,
      "FORMAT_ERROR",
      `PSU-ID ${quote(psuId)} is a corporate customer: send the corporate customer in PSU-Corporate-ID`,
    );
  }
  return customer;
}
