/**
 * The sandbox bank's API as an OpenAPI 3.1 description, served at GET /v1/sandbox/openapi.json so
 * that a TPP's tools can read it from the bank itself. The shapes are those the bank answers today
 * (every x-accept-fix active, SPEC 9.2: amounts as strings); a test drives the real bank and checks
 * its answers against them (test/unit/sandbox/openapi.test.ts), and that every route is described.
 */

import { SCA_STATUSES } from "./sca-store.js";

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const DATE = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "ISO 8601 date (SPEC 1.4)" };
const text = { type: "string" };
const texts = { type: "array", items: text };

/** An object whose listed members are all required and nothing else may appear. */
function exact(properties: Record<string, Schema>, optional: readonly string[] = []): Schema {
  return {
    type: "object",
    properties,
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    additionalProperties: false,
  };
}

function links(...names: string[]): Schema {
  return exact(Object.fromEntries(names.map((name) => [name, ref("Href")])));
}

const SCHEMAS: Record<string, Schema> = {
  Href: exact({ href: text }),
  Amount: {
    ...exact({
      currency: { type: "string", pattern: "^[A-Z]{3}$" },
      amount: { type: "string", pattern: "^-?\\d+\\.\\d{2}$" },
    }),
    description: "An amount as a decimal string in the currency's unit (x-accept-fix amount-as-string).",
  },
  TppMessage: exact({ category: { enum: ["ERROR", "WARNING"] }, code: text, text }, []),
  Error: {
    ...exact(
      {
        tppMessages: { type: "array", items: ref("TppMessage"), minItems: 1 },
        _links: links("scaRedirect", "consentStatus"),
      },
      ["_links"],
    ),
    description:
      "Every refusal: Berlin Group tppMessages whose text says what to fix; a 401 for consent carries the scaRedirect of a new consent.",
  },
  SandboxLink: exact({
    href: text,
    verbs: { type: "array", items: { enum: ["GET", "PUT", "POST", "DELETE"] } },
  }),
  Agreement: exact({
    id: text,
    name: text,
    engagements: texts,
    _links: exact({ self: ref("SandboxLink"), engagements: ref("SandboxLink") }),
  }),
  Customer: {
    ...exact({
      customerId: text,
      customerNumber: { type: "string", pattern: "^\\d{9}$|^\\d{11}$" },
      customerType: { enum: ["PRIVATE", "CORPORATE"] },
      customerName: text,
      agreements: { type: "array", items: ref("Agreement") },
      accounts: texts,
      cardAccounts: texts,
      _links: exact({ self: ref("SandboxLink") }),
    }),
    description: "SPEC 2.1: customerNumber is what the PSU types at the SCA page.",
  },
  Customers: { type: "array", items: ref("Customer") },
  Engagements: exact({ engagements: texts }),
  AccountReference: exact({ bban: { type: "string", pattern: "^\\d{11}$" }, currency: text }, ["currency"]),
  AccountDetails: exact(
    {
      resourceId: text,
      bban: { type: "string", pattern: "^\\d{11}$" },
      currency: text,
      name: { type: "string", maxLength: 70 },
      product: text,
      cashAccountType: text,
      status: { enum: ["enabled", "deleted", "blocked"] },
      usage: { enum: ["PRIV", "ORGA"] },
      _links: links("balances", "transactions"),
    },
    [],
  ),
  AccountList: exact({ accounts: { type: "array", items: ref("AccountDetails") } }),
  AccountResponse: exact({ account: ref("AccountDetails") }),
  Balance: exact(
    {
      balanceAmount: ref("Amount"),
      balanceType: { enum: ["interimBooked", "interimAvailable", "expected"] },
      creditLimitIncluded: { type: "boolean" },
      referenceDate: DATE,
    },
    ["creditLimitIncluded"],
  ),
  Balances: exact({ account: ref("AccountReference"), balances: { type: "array", items: ref("Balance") } }),
  EntryDetail: exact({
    transactionAmount: ref("Amount"),
    creditorName: text,
    creditorAccount: ref("AccountReference"),
    remittanceInformationUnstructured: text,
  }),
  BookedTransaction: {
    ...exact(
      {
        transactionId: text,
        bookingDate: DATE,
        valueDate: DATE,
        transactionAmount: ref("Amount"),
        creditorName: text,
        creditorAccount: ref("AccountReference"),
        debtorName: text,
        debtorAccount: ref("AccountReference"),
        batchIndicator: { type: "boolean" },
        batchNumberOfTransactions: { type: "integer", minimum: 1 },
        remittanceInformationUnstructured: text,
        proprietaryBankTransactionCode: text,
        entryDetails: { type: "array", items: ref("EntryDetail") },
        _links: links("transactionDetails"),
      },
      [
        "creditorName",
        "creditorAccount",
        "debtorName",
        "debtorAccount",
        "batchIndicator",
        "batchNumberOfTransactions",
        "entryDetails",
        "_links",
      ],
    ),
    description:
      "A debit names its creditor, a credit its debtor; a batch booking (SPEC 2.7) names neither and lists its members in the details' entryDetails.",
  },
  PendingTransaction: exact(
    {
      valueDate: DATE,
      transactionAmount: ref("Amount"),
      creditorName: text,
      debtorName: text,
      remittanceInformationUnstructured: text,
    },
    ["creditorName", "debtorName"],
  ),
  Transactions: exact({
    account: ref("AccountReference"),
    transactions: exact(
      {
        booked: { type: "array", items: ref("BookedTransaction") },
        pending: { type: "array", items: ref("PendingTransaction") },
        _links: links("account"),
      },
      ["booked", "pending"],
    ),
  }),
  TransactionDetails: exact({ transactionsDetails: ref("BookedTransaction") }),
  CardAccountDetails: exact({
    resourceId: text,
    maskedPan: text,
    currency: text,
    name: { type: "string", maxLength: 70 },
    product: text,
    status: { enum: ["enabled", "deleted", "blocked"] },
    usage: { enum: ["PRIV", "ORGA"] },
    creditLimit: ref("Amount"),
    _links: links("balances", "transactions"),
  }),
  CardAccountList: exact({ cardAccounts: { type: "array", items: ref("CardAccountDetails") } }),
  CardAccountResponse: exact({ cardAccount: ref("CardAccountDetails") }),
  MaskedPan: exact({ maskedPan: text }),
  CardBalances: exact({ cardAccount: ref("MaskedPan"), balances: { type: "array", items: ref("Balance") } }),
  CardTransaction: {
    ...exact(
      {
        cardTransactionId: text,
        terminalId: text,
        transactionDate: DATE,
        bookingDate: DATE,
        transactionAmount: ref("Amount"),
        originalAmount: ref("Amount"),
        currencyExchange: exact({
          sourceCurrency: text,
          targetCurrency: text,
          unitCurrency: text,
          exchangeRate: text,
          quotationDate: DATE,
        }),
        markupFee: ref("Amount"),
        markupFeePercentage: text,
        merchantCategoryCode: text,
        cardAcceptorId: text,
        cardAcceptorAddress: exact(
          {
            street: { type: "string", maxLength: 70 },
            buildingNumber: text,
            postalCode: text,
            city: text,
            country: { type: "string", pattern: "^[A-Z]{2}$" },
          },
          ["street", "buildingNumber", "postalCode", "city"],
        ),
        maskedPan: text,
        transactionDetails: text,
        invoiced: { enum: ["true", "false"] },
        proprietaryBankTransactionCode: text,
      },
      ["bookingDate", "currencyExchange"],
    ),
    description:
      "SPEC 2.2. transactionAmount and markupFee are in the card account's currency, originalAmount in the merchant's; a pending one has no bookingDate.",
  },
  CardTransactions: exact({
    cardAccount: ref("MaskedPan"),
    cardTransactions: exact(
      {
        booked: { type: "array", items: ref("CardTransaction") },
        pending: { type: "array", items: ref("CardTransaction") },
        _links: links("cardAccount"),
      },
      ["booked", "pending"],
    ),
  }),
  CardTransactionsResult: {
    ...exact({
      cardAccount: ref("MaskedPan"),
      cardTransactions: exact({
        booked: {
          type: "array",
          items: exact({
            cardTransactionId: text,
            bookingDate: DATE,
            transactionDate: DATE,
            transactionAmount: ref("Amount"),
            originalAmount: ref("Amount"),
            merchantCategoryCode: text,
          }),
        },
        pending: texts,
      }),
    }),
    description: "SPEC 2.3: the card transactions just created.",
  },
  TransactionStatus: { enum: ["RCVD", "ACCP", "ACSC", "RJCT", "CANC", "PDNG", "ACTC", "ACWC", "ACSP"] },
  PaymentCreated: exact({
    transactionStatus: ref("TransactionStatus"),
    paymentId: text,
    _links: links("startAuthorisation", "self", "status"),
  }),
  Payment: {
    type: "object",
    properties: {
      instructedAmount: exact({ amount: text, currency: text }),
      debtorAccount: ref("AccountReference"),
      creditorAccount: { type: "object" },
      creditorName: text,
      transactionStatus: ref("TransactionStatus"),
    },
    required: ["instructedAmount", "debtorAccount", "creditorAccount", "transactionStatus"],
    description:
      "The payment as the TPP sent it, in Berlin Group field names (periodic: startDate, frequency…; cross-border: regulatory reporting, creditor agent and address), with its status.",
  },
  PaymentStatus: exact({ transactionStatus: ref("TransactionStatus"), fundsAvailable: { type: "boolean" } }, [
    "fundsAvailable",
  ]),
  ScaStatus: { enum: [...SCA_STATUSES] },
  Authorisation: {
    ...exact({
      scaStatus: ref("ScaStatus"),
      authorisationId: text,
      _links: links("scaRedirect", "scaStatus", "status"),
    }),
    description:
      "SPEC 2.4. scaRedirect is the bank's SCA page for the PSU's browser; the link expires (sandbox.scaLinkTtlSeconds, 15 minutes by default).",
  },
  AuthorisationIds: exact({ authorisationIds: texts }),
  BasketCreated: exact({
    transactionStatus: ref("TransactionStatus"),
    basketId: text,
    _links: links("self", "status", "startAuthorisation"),
  }),
  Basket: exact({ payments: texts, transactionStatus: ref("TransactionStatus") }),
  ConsentStatus: { enum: ["received", "valid", "rejected", "revokedByPsu", "terminatedByTpp"] },
  ConsentCreated: exact(
    {
      consentStatus: ref("ConsentStatus"),
      consentId: text,
      _links: exact({ scaRedirect: ref("Href"), self: ref("Href"), status: ref("Href") }, ["scaRedirect"]),
    },
    [],
  ),
  Consent: {
    ...exact(
      {
        consentStatus: ref("ConsentStatus"),
        consentId: text,
        _links: links("self", "status"),
        access: exact({
          accounts: { type: "array", items: ref("AccountReference") },
          balances: { type: "array", items: ref("AccountReference") },
          transactions: {
            type: "array",
            items: { oneOf: [ref("AccountReference"), ref("MaskedPan")] },
          },
        }),
        recurringIndicator: { const: true },
        frequencyPerDay: { type: "integer", minimum: 1 },
        validUntil: DATE,
        lastActionDate: DATE,
      },
      ["validUntil", "lastActionDate"],
    ),
    description:
      "Bank-offered (SPEC 1.9): access is what the PSU chose at the SCA page. Without the PSU present it reaches the accounts until validUntil (180 days after the SCA) and frequencyPerDay times a day (SPEC 8).",
  },
  ConsentStatusResponse: exact({ consentStatus: ref("ConsentStatus") }),
  Revoked: exact({ consentId: text, consentStatus: { const: "revokedByPsu" } }),
  PsuAgreements: exact({
    agreements: { type: "array", items: exact({ id: text, name: text, corporateId: text }) },
  }),
  User: exact({ psuId: text, name: text, context: { enum: ["PRIVATE", "CORPORATE"] } }),
  UserResponse: exact({ user: ref("User") }),
  Users: exact({ users: { type: "array", items: ref("User") } }),
  AnyObject: { type: "object" },
};

interface Operation {
  readonly summary: string;
  readonly ok: number;
  /** The schema of the success answer; undefined for 204. */
  readonly schema: string | undefined;
  readonly body?: string;
  readonly psu?: boolean;
}

const PSU_HEADERS = [
  { $ref: "#/components/parameters/PSU-ID" },
  { $ref: "#/components/parameters/PSU-Corporate-ID" },
];

function operation(path: string, op: Operation): Schema {
  const parameters = [
    ...[...path.matchAll(/\{(\w+)\}/g)].map((match) => ({
      name: match[1],
      in: "path",
      required: true,
      schema: text,
    })),
    { $ref: "#/components/parameters/X-Request-ID" },
    ...(op.psu === true ? PSU_HEADERS : []),
  ];
  return {
    summary: op.summary,
    parameters,
    ...(op.body !== undefined
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: { type: "object", description: op.body } } },
          },
        }
      : {}),
    responses: {
      [String(op.ok)]:
        op.schema === undefined
          ? { description: "Done" }
          : { description: "Success", content: { "application/json": { schema: ref(op.schema) } } },
      default: {
        description: "A refusal (4xx) or a failure (5xx)",
        content: { "application/json": { schema: ref("Error") } },
      },
    },
  };
}

const get = (summary: string, schema: string, psu = false): Operation => ({ summary, ok: 200, schema, psu });
const post = (summary: string, schema: string, body?: string, ok = 201): Operation => ({
  summary,
  ok,
  schema,
  ...(body !== undefined ? { body } : {}),
});

/** The bank's operations by path and method (routes.ts holds the same table for the router). */
const OPERATIONS: Record<string, Record<string, Operation>> = {
  "/v1/sandbox/openapi.json": { get: get("This description", "AnyObject") },
  "/v1/sandbox/customers": {
    get: get(
      "The sandbox customers (SPEC 4.2); withAccounts=true, withAgreements=true fill the lists",
      "Customers",
    ),
    post: post(
      "Creates a mock customer (SPEC 4.5)",
      "Customer",
      '{"customerType": "PRIVATE" | "CORPORATE", "customerName": "…", "accounts": 1..10}',
    ),
  },
  "/v1/sandbox/customers/{customerId}": { get: get("One sandbox customer", "Customer") },
  "/v1/sandbox/customers/{customerId}/agreements/{agreementId}": { get: get("One agreement", "Agreement") },
  "/v1/sandbox/customers/{customerId}/agreements/{agreementId}/engagements": {
    get: get("The accounts an agreement grants", "Engagements"),
  },
  "/v1/sandbox/reset": { post: post("Back to the initial state (SPEC 1.7)", "Customers", undefined, 200) },
  "/v1/sandbox/card-accounts": {
    post: post(
      "Creates a mock card account (SPEC 4.5)",
      "CardAccountResponse",
      '{"customerId": "…", "currency": "NOK", "name": "…", "creditLimit": "20000.00"}',
    ),
  },
  "/v1/sandbox/card-accounts/{mockCardAccountId}/transactions": {
    post: post(
      "Books card transactions (SPEC 2.2, 4.3)",
      "CardTransactionsResult",
      "An array of SPEC 2.2 card transactions",
    ),
  },
  "/v1/sandbox/accounts/{mockAccountId}/transactions": {
    post: post(
      "Books an account transaction (SPEC 4.5)",
      "TransactionDetails",
      '{"transactionAmount": {"currency": "NOK", "amount": "-125.50"}, "creditorName" | "debtorName": "…", …}',
    ),
  },
  "/v1/sandbox/consents/{consentId}/revoke": {
    post: post("The PSU revokes a consent with the bank (SPEC 1.9)", "Revoked", undefined, 200),
  },
  "/v1/accounts": { get: get("The PSU's accounts the consent covers", "AccountList", true) },
  "/v1/accounts/{accountId}": { get: get("One account", "AccountResponse", true) },
  "/v1/accounts/{accountId}/balances": { get: get("Its balances", "Balances", true) },
  "/v1/accounts/{accountId}/transactions": {
    get: get(
      "Its transactions; bookingStatus, dateFrom, dateTo, offset, limit (SPEC 4.5)",
      "Transactions",
      true,
    ),
  },
  "/v1/accounts/{accountId}/transactions/{transactionId}": {
    get: get("One booked transaction", "TransactionDetails", true),
  },
  "/v1/card-accounts": { get: get("The PSU's card accounts", "CardAccountList", true) },
  "/v1/card-accounts/{cardAccountId}": { get: get("One card account", "CardAccountResponse", true) },
  "/v1/card-accounts/{cardAccountId}/balances": { get: get("Its balances", "CardBalances", true) },
  "/v1/card-accounts/{cardAccountId}/transactions": {
    get: get("Its card transactions", "CardTransactions", true),
  },
  "/v1/signing-baskets": {
    post: post("A signing basket of single payments (SPEC 4.1)", "BasketCreated", '{"paymentIds": ["…"]}'),
  },
  "/v1/signing-baskets/{basketId}": { get: get("The basket", "Basket") },
  "/v1/signing-baskets/{basketId}/status": { get: get("Its status (SPEC 3.1)", "PaymentStatus") },
  "/v1/signing-baskets/{basketId}/authorisations": {
    post: post("Starts its authorisation (SPEC 4.1)", "Authorisation"),
  },
  "/v1/signing-baskets/{basketId}/authorisations/{authorisationId}": {
    get: get("The authorisation's scaStatus", "Authorisation"),
  },
  "/v1/bank-offered-consents": {
    post: post("A bank-offered consent; the body is ignored (SPEC 1.9)", "ConsentCreated", "Ignored"),
  },
  "/v1/consents": {
    post: post("Deprecated name of /v1/bank-offered-consents (SPEC 9.3)", "ConsentCreated", "Ignored"),
  },
  "/v1/bank-offered-consents/{consentId}": {
    get: get("The consent", "Consent"),
    delete: { summary: "The TPP ends it", ok: 204, schema: undefined },
  },
  "/v1/bank-offered-consents/{consentId}/status": { get: get("Its status", "ConsentStatusResponse") },
  "/v1/agreements": { get: get("The PSU's corporate agreements (SPEC 5.12)", "PsuAgreements", true) },
  "/v1/user": { get: get("Who PSU-ID is", "UserResponse", true) },
  "/v1/users": { get: get("The PSU and its contexts", "Users", true) },
};

for (const service of ["payments", "periodic-payments"]) {
  const base = `/v1/${service}/{product}`;
  const what = service === "payments" ? "a payment" : "a periodic payment";
  OPERATIONS[base] = {
    post: post(`Initiates ${what} (SPEC 2.5, 4.4, 4.5)`, "PaymentCreated", "A Berlin Group payment"),
  };
  OPERATIONS[`${base}/{paymentId}`] = {
    get: get("The payment", "Payment"),
    delete: { summary: "Cancels it (SPEC 3.5)", ok: 200, schema: "PaymentStatus" },
  };
  OPERATIONS[`${base}/{paymentId}/status`] = { get: get("Its status", "PaymentStatus") };
  OPERATIONS[`${base}/{paymentId}/authorisations`] = {
    post: post("Starts its authorisation, empty body (SPEC 4.5)", "Authorisation"),
    get: get("Its authorisations", "AuthorisationIds"),
  };
  OPERATIONS[`${base}/{paymentId}/authorisations/{authorisationId}`] = {
    get: get("The authorisation's scaStatus (SPEC 2.4)", "Authorisation"),
  };
}

export const SANDBOX_OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "psd2-gateway sandbox bank",
    version: "1.23.6",
    description:
      "The built-in demo bank behind the gateway (SPEC 1.7–4, Berlin Group NextGenPSD2 shapes). TPPs reach it only through the gateway, which verifies every request's signature and certificate and tells the bank who is calling; the SCA page (scaRedirect) is HTML for the PSU's browser and not part of this API.",
  },
  paths: Object.fromEntries(
    Object.entries(OPERATIONS).map(([path, methods]) => [
      path,
      Object.fromEntries(Object.entries(methods).map(([method, op]) => [method, operation(path, op)])),
    ]),
  ),
  components: {
    schemas: SCHEMAS,
    parameters: {
      "X-Request-ID": { name: "X-Request-ID", in: "header", required: false, schema: text },
      "PSU-ID": {
        name: "PSU-ID",
        in: "header",
        required: false,
        description: "The psu-id of the SCA redirect (SPEC 2.6, 5.12); without it: 401 with an scaRedirect",
        schema: text,
      },
      "PSU-Corporate-ID": {
        name: "PSU-Corporate-ID",
        in: "header",
        required: false,
        description: "The psu-corporate-id of a corporate PSU (SPEC 7: required then)",
        schema: text,
      },
    },
  },
};

/** Serialised once: the answer of GET /v1/sandbox/openapi.json. */
export const SANDBOX_OPENAPI_JSON = JSON.stringify(SANDBOX_OPENAPI);
