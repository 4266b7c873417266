/** Every operation the sandbox bank answers. Paths and shapes: SPEC 4 and Berlin Group NextGenPSD2. */

import {
  getAccount,
  getBalances,
  getCardAccount,
  getCardBalances,
  getCardTransactions,
  getTransactionDetails,
  getTransactions,
  listAccounts,
  listCardAccounts,
} from "./accounts.js";
import {
  createBasket,
  getBasket,
  getBasketAuthorisation,
  getBasketStatus,
  startBasketAuthorisation,
} from "./baskets.js";
import {
  createConsent,
  deleteConsent,
  getConsent,
  getConsentStatus,
  getUser,
  listAgreements,
  listUsers,
  revokeConsent,
} from "./consents.js";
import type { RouteHandler } from "./context.js";
import { getAgreement, getAgreementEngagements, getCustomer, listCustomers } from "./customers.js";
import { jsonReply } from "./http.js";
import {
  createAccountTransaction,
  createCardAccount,
  createCardTransactions,
  createCustomer,
  resetSandbox,
} from "./mock-operations.js";
import { SANDBOX_OPENAPI_JSON } from "./openapi.js";
import {
  cancelPayment,
  createPayment,
  getAuthorisationStatus,
  getPayment,
  getPaymentStatus,
  listAuthorisations,
  startAuthorisation,
} from "./payments.js";
import type { RouteDefinition } from "./router.js";
import { showScaPage, submitScaPage } from "./sca.js";

/** The bank's API: only the gateway reaches it (server.ts checks the gateway's secret first). */
export const API_ROUTES: readonly RouteDefinition<RouteHandler>[] = [
  // This API described in OpenAPI 3.1 (openapi.ts).
  { method: "GET", path: "/v1/sandbox/openapi.json", handler: () => jsonReply(200, SANDBOX_OPENAPI_JSON) },
  { method: "GET", path: "/v1/sandbox/customers", handler: listCustomers },
  { method: "GET", path: "/v1/sandbox/customers/:customerId", handler: getCustomer },
  { method: "GET", path: "/v1/sandbox/customers/:customerId/agreements/:agreementId", handler: getAgreement },
  {
    method: "GET",
    path: "/v1/sandbox/customers/:customerId/agreements/:agreementId/engagements",
    handler: getAgreementEngagements,
  },
  // Mock data (SPEC 1.7, 4.3, 4.5). SPEC 1.7 names no path for initialising the sandbox: this one is ours.
  { method: "POST", path: "/v1/sandbox/reset", handler: resetSandbox },
  { method: "POST", path: "/v1/sandbox/customers", handler: createCustomer },
  { method: "POST", path: "/v1/sandbox/card-accounts", handler: createCardAccount },
  {
    method: "POST",
    path: "/v1/sandbox/card-accounts/:mockCardAccountId/transactions",
    handler: createCardTransactions,
  },
  {
    method: "POST",
    path: "/v1/sandbox/accounts/:mockAccountId/transactions",
    handler: createAccountTransaction,
  },

  { method: "GET", path: "/v1/accounts", handler: listAccounts },
  { method: "GET", path: "/v1/accounts/:accountId", handler: getAccount },
  { method: "GET", path: "/v1/accounts/:accountId/balances", handler: getBalances },
  { method: "GET", path: "/v1/accounts/:accountId/transactions", handler: getTransactions },
  {
    method: "GET",
    path: "/v1/accounts/:accountId/transactions/:transactionId",
    handler: getTransactionDetails,
  },
  { method: "GET", path: "/v1/card-accounts", handler: listCardAccounts },
  { method: "GET", path: "/v1/card-accounts/:cardAccountId", handler: getCardAccount },
  { method: "GET", path: "/v1/card-accounts/:cardAccountId/balances", handler: getCardBalances },
  { method: "GET", path: "/v1/card-accounts/:cardAccountId/transactions", handler: getCardTransactions },

  // Single and periodic payments share their handlers; the path's service tells them apart.
  ...["payments", "periodic-payments"].flatMap((service): RouteDefinition<RouteHandler>[] => [
    { method: "POST", path: `/v1/${service}/:product`, handler: createPayment },
    { method: "GET", path: `/v1/${service}/:product/:paymentId`, handler: getPayment },
    { method: "DELETE", path: `/v1/${service}/:product/:paymentId`, handler: cancelPayment },
    { method: "GET", path: `/v1/${service}/:product/:paymentId/status`, handler: getPaymentStatus },
    {
      method: "POST",
      path: `/v1/${service}/:product/:paymentId/authorisations`,
      handler: startAuthorisation,
    },
    { method: "GET", path: `/v1/${service}/:product/:paymentId/authorisations`, handler: listAuthorisations },
    {
      method: "GET",
      path: `/v1/${service}/:product/:paymentId/authorisations/:authorisationId`,
      handler: getAuthorisationStatus,
    },
  ]),

  // Signing baskets (SPEC 4.1).
  { method: "POST", path: "/v1/signing-baskets", handler: createBasket },
  { method: "GET", path: "/v1/signing-baskets/:basketId", handler: getBasket },
  { method: "GET", path: "/v1/signing-baskets/:basketId/status", handler: getBasketStatus },
  { method: "POST", path: "/v1/signing-baskets/:basketId/authorisations", handler: startBasketAuthorisation },
  {
    method: "GET",
    path: "/v1/signing-baskets/:basketId/authorisations/:authorisationId",
    handler: getBasketAuthorisation,
  },

  // Consent and PSU identification (SPEC 1.9, 5.12); /v1/consents is the deprecated name (9.3).
  { method: "POST", path: "/v1/bank-offered-consents", handler: createConsent },
  { method: "POST", path: "/v1/consents", handler: createConsent },
  { method: "GET", path: "/v1/bank-offered-consents/:consentId", handler: getConsent },
  { method: "GET", path: "/v1/bank-offered-consents/:consentId/status", handler: getConsentStatus },
  { method: "DELETE", path: "/v1/bank-offered-consents/:consentId", handler: deleteConsent },
  { method: "POST", path: "/v1/sandbox/consents/:consentId/revoke", handler: revokeConsent },
  { method: "GET", path: "/v1/agreements", handler: listAgreements },
  { method: "GET", path: "/v1/user", handler: getUser },
  { method: "GET", path: "/v1/users", handler: listUsers },
];

/** The SCA page the PSU's browser opens (HTML, not the API): the only routes of the public listener. */
export const SCA_ROUTES: readonly RouteDefinition<RouteHandler>[] = [
  { method: "GET", path: "/sca/:authorisationId", handler: showScaPage },
  { method: "POST", path: "/sca/:authorisationId", handler: submitScaPage },
];
