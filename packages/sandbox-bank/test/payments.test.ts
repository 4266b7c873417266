/**
 * The payment products through the sandbox bank's HTTP interface (SPEC 2.5, 3.5, 4.1, 4.4, 7,
 * 9.4, 9.5): what payment-request.test.ts checks row by row on the parser, seen here as a TPP
 * sees it — created, refused, read back, cancelled, and refused from a signing basket.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Customer } from "../src/index.js";
import { NOW, type RunningBank, startBank } from "./helpers.js";

let running: RunningBank;
let kari: Customer;

beforeAll(async () => {
  running = await startBank({ clock: () => NOW });
  kari = running.bank.data.customers[0]!;
});
afterAll(() => running.listener.close());

const TPP = { "X-TPP-Organization-Id": "PSDNO-FSA-PAY", "content-type": "application/json" };
let unique = 0;

function post(path: string, body: unknown) {
  return running.call(path, { method: "POST", headers: TPP, body: JSON.stringify(body) });
}

const domestic = () => ({
  instructedAmount: { amount: "100.00", currency: "NOK" },
  debtorAccount: { bban: kari.accounts[0]!.bban },
  creditorAccount: { bban: "12345678903" },
  creditorName: "Per Hansen",
  remittanceInformationUnstructured: `payments test ${++unique}`,
});

const crossBorder = () => ({
  instructedAmount: { amount: "250.00", currency: "EUR" },
  debtorAccount: { bban: kari.accounts[0]!.bban, currency: "NOK" },
  creditorAccount: { iban: "SE4550000000058398257466", currency: "SEK" },
  creditorName: "Anna Svensson",
  creditorAgent: "ESSESESS",
  creditorAddress: {
    street: "Kungsgatan",
    buildingNumber: "1",
    postalCode: "11143",
    townName: "Stockholm",
    country: "SE",
  },
  regulatoryReportingCode: "14",
  regulatoryReportingAmount: { amount: "250.00", currency: "EUR" },
  remittanceInformationUnstructured: `payments test ${++unique}`,
});

const periodic = (extra: object = {}) => ({
  ...domestic(),
  startDate: "2026-10-01",
  frequency: "Monthly",
  ...extra,
});

const code = (json: unknown) => (json as { tppMessages?: { code: string }[] }).tppMessages?.[0]?.code;

describe("creating payments", () => {
  it.each([
    [
      "a domestic credit transfer",
      "/v1/payments/norwegian-domestic-credit-transfers",
      domestic,
      201,
      undefined,
    ],
    [
      "a cross-border one with regulatory reporting",
      "/v1/payments/norwegian-cross-border-credit-transfers",
      crossBorder,
      201,
      undefined,
    ],
    [
      "a periodic one",
      "/v1/periodic-payments/norwegian-domestic-credit-transfers",
      () => periodic(),
      201,
      undefined,
    ],
    [
      "a MonthlyVariable one with a month twice (SPEC 7)",
      "/v1/periodic-payments/norwegian-domestic-credit-transfers",
      () => periodic({ frequency: "MonthlyVariable", monthsOfExecution: ["1", "6", "06"] }),
      400,
      "FORMAT_ERROR",
    ],
    [
      "an invalid KID (SPEC 7)",
      "/v1/payments/norwegian-domestic-credit-transfers",
      () => {
        const { remittanceInformationUnstructured: _, ...body } = domestic();
        return {
          ...body,
          remittanceInformationStructuredArray: [{ reference: "12345678", referenceType: "KID" }],
        };
      },
      400,
      "FORMAT_ERROR",
    ],
    [
      "a cross-border one without the creditor's town (SPEC 9.4, enforced from 2026-08-13)",
      "/v1/payments/norwegian-cross-border-credit-transfers",
      () => ({ ...crossBorder(), creditorAddress: { country: "SE" } }),
      400,
      "FORMAT_ERROR",
    ],
    ["an unknown product", "/v1/payments/instant-moon-transfers", domestic, 404, "PRODUCT_UNKNOWN"],
    [
      "cross-border as periodic",
      "/v1/periodic-payments/norwegian-cross-border-credit-transfers",
      crossBorder,
      404,
      "PRODUCT_UNKNOWN",
    ],
  ])("%s → %i", async (_what, path, body, status, expectedCode) => {
    const answer = await post(path, body());
    expect(answer.status, answer.text).toBe(status);
    if (expectedCode !== undefined) expect(code(answer.json)).toBe(expectedCode);
    else {
      const links = (answer.json as { _links: Record<string, { href: string }> })._links;
      expect(links.self!.href.startsWith(path)).toBe(true);
      const read = await running.call(links.self!.href, { headers: TPP });
      expect(read.status).toBe(200);
      expect((read.json as { instructedAmount: unknown }).instructedAmount).toEqual(body().instructedAmount);
    }
  });

  it("refuses a logical duplicate unless allowLogicalDuplicate=true", async () => {
    const body = periodic();
    const path = "/v1/periodic-payments/norwegian-domestic-credit-transfers";
    expect((await post(path, body)).status).toBe(201);
    expect(code((await post(path, body)).json)).toBe("PAYMENT_FAILED");
    expect((await post(`${path}?allowLogicalDuplicate=true`, body)).status).toBe(201);
  });
});

describe("cancellation (SPEC 3.5)", () => {
  it("cancels a payment; its id stays valid for status and details", async () => {
    const created = await post("/v1/payments/norwegian-domestic-credit-transfers", domestic());
    const self = (created.json as { _links: { self: { href: string } } })._links.self.href;
    const cancelled = await running.call(self, { method: "DELETE", headers: TPP });
    expect(cancelled.json).toEqual({ transactionStatus: "CANC" });
    expect(
      ((await running.call(`${self}/status`, { headers: TPP })).json as { transactionStatus: string })
        .transactionStatus,
    ).toBe("CANC");
    expect((await running.call(self, { headers: TPP })).status).toBe(200);
    expect((await running.call(self, { method: "DELETE", headers: TPP })).status).toBe(409);
  });
});

describe("signing baskets take single payments only (SPEC 4.1, 7)", () => {
  it("refuses a periodic payment with REFERENCE_MIX_INVALID", async () => {
    const single = await post("/v1/payments/norwegian-domestic-credit-transfers", domestic());
    const repeating = await post("/v1/periodic-payments/norwegian-domestic-credit-transfers", periodic());
    const ids = [single, repeating].map((a) => (a.json as { paymentId: string }).paymentId);
    const basket = await post("/v1/signing-baskets", { paymentIds: ids });
    expect(basket.status).toBe(400);
    expect(code(basket.json)).toBe("REFERENCE_MIX_INVALID");
    expect(basket.text).toContain(ids[1]);
  });
});
