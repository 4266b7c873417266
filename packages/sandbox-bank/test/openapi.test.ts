/**
 * The sandbox's OpenAPI description (src/sandbox/openapi.ts), as the bank serves it: a valid
 * OpenAPI 3.1 document by a maintained validator, describing every route the bank has, and the
 * bank's real answers (each operation driven once, plus refusals) conform to the schemas it names.
 */

import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_ROUTES } from "../src/routes.js";
import { type Answer, type RunningBank, startBank, TODAY, throughGateway } from "./helpers.js";
import { walkSca } from "./sca-walk.js";

type Document = {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
};

let running: RunningBank;
let served: Document;

beforeAll(async () => {
  running = await startBank();
  const answer = await running.call("/v1/sandbox/openapi.json");
  expect(answer.status).toBe(200);
  expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
  served = answer.json as Document;
});
afterAll(() => running.listener.close());

describe("the sandbox's OpenAPI description", () => {
  it("is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator), every $ref resolved", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(served));
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(() => validator.resolveRefs()).not.toThrow();
  });

  it("describes every route of the bank's API, and nothing it does not answer (the SCA page is HTML, not API)", () => {
    const routes = API_ROUTES.map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`);
    const described = Object.entries(served.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(described.sort()).toEqual(routes.sort());
  });
});

describe("the bank's real answers conform to it", () => {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  let compiled = false;
  const sampled: { operation: string; status: number; json: unknown }[] = [];

  /** The schema of `method template`'s answer with `status` (its own, else `default`), compiled from the served document. */
  function validatorFor(method: string, template: string, status: number) {
    if (!compiled) {
      ajv.addSchema(served, "openapi");
      compiled = true;
    }
    const responses = served.paths[template]?.[method.toLowerCase()]?.responses;
    expect(responses, `${method} ${template} is described`).toBeDefined();
    const key = String(status) in responses! ? String(status) : "default";
    const pointer = [
      "paths",
      template,
      method.toLowerCase(),
      "responses",
      key,
      "content",
      "application/json",
      "schema",
    ]
      .map((part) => part.replaceAll("~", "~0").replaceAll("/", "~1"))
      .join("/");
    return ajv.compile({ $ref: `openapi#/${pointer}` });
  }

  /** Calls the bank at `template` with `values` filled in and keeps the answer for the check below. */
  async function call(
    method: string,
    template: string,
    values: Record<string, string> = {},
    init: { headers?: Record<string, string>; body?: unknown; query?: string } = {},
  ): Promise<Answer> {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name]!));
    const response = await fetch(`${running.listener.url}${path}${init.query ?? ""}`, {
      method,
      // As the gateway forwards it: its secret, the TPP's identity.
      headers: throughGateway({
        "X-TPP-Organization-Id": "PSDNO-FSA-OPENAPI",
        "X-TPP-Roles": "PSP_AI,PSP_PI",
        "TPP-Redirect-URI": "https://tpp.example/cb",
        "content-type": "application/json",
        ...init.headers,
      }),
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    const text = await response.text();
    const json = text === "" ? undefined : (JSON.parse(text) as unknown);
    if (response.status !== 204)
      sampled.push({ operation: `${method} ${template}`, status: response.status, json });
    return { status: response.status, headers: response.headers, text, json };
  }

  it("for every operation, and for refusals", async () => {
    const customers = running.bank.data.customers;
    const kari = customers[0]!;
    const nordvik = customers[3]!;
    const account = kari.accounts[0]!;
    const card = kari.cardAccounts[0]!;
    const psu = { headers: { "PSU-ID": kari.customerId } };
    const corporatePsu = {
      headers: { "PSU-ID": nordvik.customerId, "PSU-Corporate-ID": nordvik.customerId },
    };
    const agreement = nordvik.agreements[0]!;
    const json = (answer: Answer) => answer.json as Record<string, string>;

    await call("GET", "/v1/sandbox/customers", {}, { query: "?withAccounts=true&withAgreements=true" });
    await call("GET", "/v1/sandbox/customers/{customerId}", { customerId: nordvik.customerId });
    const ids = { customerId: nordvik.customerId, agreementId: agreement.id };
    await call("GET", "/v1/sandbox/customers/{customerId}/agreements/{agreementId}", ids);
    await call("GET", "/v1/sandbox/customers/{customerId}/agreements/{agreementId}/engagements", ids);

    await call("GET", "/v1/accounts", {}, psu);
    await call("GET", "/v1/accounts", {}, corporatePsu);
    const accountId = { accountId: account.resourceId };
    await call("GET", "/v1/accounts/{accountId}", accountId, psu);
    await call("GET", "/v1/accounts/{accountId}/balances", accountId, psu);
    await call("GET", "/v1/accounts/{accountId}/transactions", accountId, {
      ...psu,
      query: "?bookingStatus=both",
    });
    const batchAccount = nordvik.accounts[0]!;
    const batch = batchAccount.booked.find((each) => each.batch !== undefined)!;
    await call(
      "GET",
      "/v1/accounts/{accountId}/transactions/{transactionId}",
      { accountId: batchAccount.resourceId, transactionId: batch.transactionId },
      corporatePsu,
    );
    const cardId = { cardAccountId: card.resourceId };
    await call("GET", "/v1/card-accounts", {}, psu);
    await call("GET", "/v1/card-accounts/{cardAccountId}", cardId, psu);
    await call("GET", "/v1/card-accounts/{cardAccountId}/balances", cardId, psu);
    await call("GET", "/v1/card-accounts/{cardAccountId}/transactions", cardId, {
      ...psu,
      query: "?bookingStatus=both",
    });

    const payment = {
      instructedAmount: { amount: "12.50", currency: "NOK" },
      debtorAccount: { bban: account.bban },
      creditorAccount: { bban: "12345678903" },
      creditorName: "Per Hansen",
    };
    const product = { product: "norwegian-domestic-credit-transfers" };
    const created = await call("POST", "/v1/payments/{product}", product, { body: payment });
    const paymentIds = { ...product, paymentId: json(created).paymentId! };
    await call("GET", "/v1/payments/{product}/{paymentId}", paymentIds);
    await call("GET", "/v1/payments/{product}/{paymentId}/status", paymentIds);
    const started = await call("POST", "/v1/payments/{product}/{paymentId}/authorisations", paymentIds);
    await call("GET", "/v1/payments/{product}/{paymentId}/authorisations", paymentIds);
    await call("GET", "/v1/payments/{product}/{paymentId}/authorisations/{authorisationId}", {
      ...paymentIds,
      authorisationId: json(started).authorisationId!,
    });
    await call("DELETE", "/v1/payments/{product}/{paymentId}", paymentIds);
    const periodic = await call("POST", "/v1/periodic-payments/{product}", product, {
      body: { ...payment, startDate: "2030-01-01", frequency: "Monthly" },
    });
    const periodicIds = { ...product, paymentId: json(periodic).paymentId! };
    await call("GET", "/v1/periodic-payments/{product}/{paymentId}", periodicIds);
    await call("GET", "/v1/periodic-payments/{product}/{paymentId}/status", periodicIds);
    const periodicAuth = await call(
      "POST",
      "/v1/periodic-payments/{product}/{paymentId}/authorisations",
      periodicIds,
    );
    await call("GET", "/v1/periodic-payments/{product}/{paymentId}/authorisations", periodicIds);
    await call("GET", "/v1/periodic-payments/{product}/{paymentId}/authorisations/{authorisationId}", {
      ...periodicIds,
      authorisationId: json(periodicAuth).authorisationId!,
    });
    await call("DELETE", "/v1/periodic-payments/{product}/{paymentId}", periodicIds);

    const inBasket = await call("POST", "/v1/payments/{product}", product, {
      body: { ...payment, remittanceInformationUnstructured: "basket" },
    });
    const basket = await call(
      "POST",
      "/v1/signing-baskets",
      {},
      { body: { paymentIds: [json(inBasket).paymentId] } },
    );
    const basketId = { basketId: json(basket).basketId! };
    await call("GET", "/v1/signing-baskets/{basketId}", basketId);
    await call("GET", "/v1/signing-baskets/{basketId}/status", basketId);
    const basketAuth = await call("POST", "/v1/signing-baskets/{basketId}/authorisations", basketId, {
      headers: {
        "x-accept-fix": "amount-as-string",
        "TPP-Session-ID": "openapi",
        "PSU-ID": kari.customerId,
        "PSU-IP-Address": "192.0.2.10",
      },
    });
    await call("GET", "/v1/signing-baskets/{basketId}/authorisations/{authorisationId}", {
      ...basketId,
      authorisationId: json(basketAuth).authorisationId!,
    });

    // A consent granted at the page, so that its GET shows access and validUntil.
    const consent = await call("POST", "/v1/bank-offered-consents", {}, { body: {} });
    const consentLinks = (consent.json as { _links: { scaRedirect: { href: string } } })._links;
    const walk = await walkSca(consentLinks.scaRedirect.href, { identity: kari.customerNumber });
    const consentId = { consentId: json(consent).consentId! };
    await call("GET", "/v1/bank-offered-consents/{consentId}", consentId);
    await call("GET", "/v1/bank-offered-consents/{consentId}/status", consentId);
    await call("POST", "/v1/sandbox/consents/{consentId}/revoke", consentId);
    await call("DELETE", "/v1/bank-offered-consents/{consentId}", consentId);
    await call("POST", "/v1/consents", {}, { body: {} });
    await call("GET", "/v1/agreements", {}, { headers: { "PSU-ID": nordvik.customerId } });
    await call("GET", "/v1/user", {}, { headers: { "PSU-ID": walk.redirect.searchParams.get("psu-id")! } });
    await call("GET", "/v1/users", {}, psu);

    const anne = await call(
      "POST",
      "/v1/sandbox/customers",
      {},
      { body: { customerType: "PRIVATE", customerName: "Anne Berg" } },
    );
    const anneCard = await call(
      "POST",
      "/v1/sandbox/card-accounts",
      {},
      { body: { customerId: json(anne).customerId } },
    );
    const cardAccount = (anneCard.json as { cardAccount: { resourceId: string } }).cardAccount;
    await call(
      "POST",
      "/v1/sandbox/card-accounts/{mockCardAccountId}/transactions",
      { mockCardAccountId: cardAccount.resourceId },
      {
        body: [
          {
            cardTransactionId: "openapi-1",
            terminalId: "12345678",
            bookingDate: TODAY,
            transactionDate: TODAY,
            transactionAmount: { currency: "NOK", amount: -12_350 },
            originalAmount: { currency: "NOK", amount: -12_350 },
            merchantCategoryCode: "5411",
            markupFee: { currency: "NOK", amount: 0 },
            markupFeePercentage: "0.00",
            cardAcceptorId: "123456789012345",
            cardAcceptorAddress: { city: "Oslo", country: "NO" },
            maskedPan: "492500******0001",
            transactionDetails: "Kiosken, Oslo",
            invoiced: "false",
            proprietaryBankTransactionCode: "VARE",
          },
        ],
      },
    );
    const anneAccount = (anne.json as { accounts: string[] }).accounts[0]!;
    await call(
      "POST",
      "/v1/sandbox/accounts/{mockAccountId}/transactions",
      { mockAccountId: anneAccount },
      { body: { transactionAmount: { currency: "NOK", amount: "-125.50" }, creditorName: "Per Hansen" } },
    );

    // Refusals: tppMessages, a 401 with its scaRedirect.
    expect((await call("GET", "/v1/accounts")).status).toBe(401);
    expect((await call("GET", "/v1/accounts/{accountId}", { accountId: "nope" }, psu)).status).toBe(404);
    expect((await call("POST", "/v1/payments/{product}", product, { body: {} })).status).toBe(400);
    expect((await call("POST", "/v1/sandbox/customers", {}, { body: { customerType: "X" } })).status).toBe(
      400,
    );
    await call("POST", "/v1/sandbox/reset");

    const failures = sampled.flatMap(({ operation, status, json: body }) => {
      const [method, template] = operation.split(" ") as [string, string];
      const validate = validatorFor(method, template, status);
      return validate(body) ? [] : [`${operation} ${status}: ${ajv.errorsText(validate.errors)}`];
    });
    expect(failures).toEqual([]);
    // Every described operation was sampled with a success.
    const succeeded = new Set(sampled.filter((each) => each.status < 300).map((each) => each.operation));
    for (const [path, methods] of Object.entries(served.paths))
      for (const method of Object.keys(methods)) {
        const operation = `${method.toUpperCase()} ${path}`;
        if (
          operation === "GET /v1/sandbox/openapi.json" ||
          (method === "delete" && path.endsWith("{consentId}"))
        )
          continue;
        expect(succeeded, operation).toContain(operation);
      }
  });
});
