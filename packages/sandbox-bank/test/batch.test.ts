/**
 * The simulated payment batch (SPEC 1.7): 5 runs a day on the bank's clock, which the test moves;
 * approved single payments are executed and booked, periodic ones are not, pending becomes booked.
 */

import { beforeEach, describe, expect, it } from "vitest";
import { BATCH_HOURS_UTC, nextBatchAt } from "../src/batch.js";
import type { Customer } from "../src/index.js";
import { NOW, type RunningBank, startBank } from "./helpers.js";
import { walkSca } from "./sca-walk.js";

describe("the batch's schedule", () => {
  it("runs 5 times a day", () => expect(BATCH_HOURS_UTC).toHaveLength(5));

  it.each([
    ["2026-08-13T10:00:00Z", "2026-08-13T11:00:00Z"],
    ["2026-08-13T11:00:00Z", "2026-08-13T14:00:00Z"], // strictly after
    ["2026-08-13T17:30:00Z", "2026-08-14T05:00:00Z"],
    ["2026-08-13T00:00:00Z", "2026-08-13T05:00:00Z"],
  ])("after %s the next run is at %s", (after, next) => {
    expect(new Date(nextBatchAt(Date.parse(after))).toISOString()).toBe(new Date(next).toISOString());
  });
});

describe("a run, on the clock the test controls", () => {
  let now: number;
  let running: RunningBank;
  let kari: Customer;
  let ola: Customer;
  const TPP = { "X-TPP-Organization-Id": "PSDNO-FSA-BATCH", "TPP-Redirect-URI": "https://tpp.example/cb" };

  beforeEach(async () => {
    now = NOW;
    running = await startBank({ clock: () => now });
    const customers = running.bank.data.customers;
    kari = customers[0]!;
    ola = customers[1]!;
    return () => running.listener.close();
  });

  async function approvedPayment(service: "payments" | "periodic-payments", amount: string) {
    const body = {
      instructedAmount: { amount, currency: "NOK" },
      debtorAccount: { bban: kari.accounts[0]!.bban },
      creditorAccount: { bban: ola.accounts[0]!.bban },
      creditorName: "Ola Fjellheim",
      remittanceInformationUnstructured: `batch ${service}`,
      ...(service === "periodic-payments" ? { startDate: "2026-09-01", frequency: "Monthly" } : {}),
    };
    const created = await running.call(`/v1/${service}/norwegian-domestic-credit-transfers`, {
      method: "POST",
      headers: { ...TPP, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(created.status, created.text).toBe(201);
    const links = (created.json as { _links: Record<string, { href: string }> })._links;
    const started = await running.call(links.startAuthorisation!.href, { method: "POST", headers: TPP });
    await walkSca((started.json as { _links: { scaRedirect: { href: string } } })._links.scaRedirect.href, {
      identity: kari.customerNumber,
    });
    return async () =>
      ((await running.call(links.status!.href, { headers: TPP })).json as { transactionStatus: string })
        .transactionStatus;
  }

  const balance = async (customer: Customer, index = 0) => {
    const answer = await running.call(`/v1/accounts/${customer.accounts[index]!.resourceId}/balances`, {
      headers: { ...TPP, "PSU-ID": customer.customerNumber },
    });
    const balances = (
      answer.json as { balances: { balanceType: string; balanceAmount: { amount: string } }[] }
    ).balances;
    return Number(
      balances.find((b) => b.balanceType === "interimBooked")?.balanceAmount.amount ?? Number.NaN,
    );
  };

  it("executes approved single payments at the next run, books both sides; periodic ones wait", async () => {
    const single = await approvedPayment("payments", "100.00");
    const periodic = await approvedPayment("periodic-payments", "50.00");
    const [kariBefore, olaBefore] = [await balance(kari), await balance(ola)];
    now = Date.parse("2026-08-13T10:59:59Z");
    expect(await single()).toBe("ACCP");
    now = Date.parse("2026-08-13T11:00:00Z");
    expect(await single()).toBe("ACSC");
    expect(await periodic()).toBe("ACCP");
    // The run also books the pending transactions whose value date has come.
    const due = (customer: Customer) =>
      customer.accounts[0]!.pending.filter((p) => p.valueDate <= "2026-08-13").reduce(
        (sum, p) => sum + p.amount.minor / 100,
        0,
      );
    expect(await balance(kari)).toBeCloseTo(kariBefore - 100 + due(kari), 2);
    expect(await balance(ola)).toBeCloseTo(olaBefore + 100 + due(ola), 2);
    const transactions = await running.call(
      `/v1/accounts/${kari.accounts[0]!.resourceId}/transactions?bookingStatus=booked&dateFrom=2026-08-13`,
      { headers: { ...TPP, "PSU-ID": kari.customerNumber } },
    );
    const booked = (
      transactions.json as { transactions: { booked: { transactionAmount: { amount: string } }[] } }
    ).transactions.booked;
    expect(booked.map((t) => t.transactionAmount.amount)).toContain("-100.00");
  });

  it("books pending transactions whose value date has come", async () => {
    const account =
      kari.accounts.find((a) => a.pending.length > 0) ?? ola.accounts.find((a) => a.pending.length > 0);
    expect(account, "the initial data has pending transactions").toBeDefined();
    const latest = account!.pending
      .map((p) => p.valueDate)
      .sort()
      .at(-1)!;
    // The TPP's room opens at its first call, with the data as generated then.
    expect((await running.call("/v1/sandbox/customers", { headers: TPP })).status).toBe(200);
    now = Date.parse(`${latest}T18:00:00Z`);
    const owner = [kari, ola].find((c) => c.accounts.includes(account!))!;
    const answer = await running.call(`/v1/accounts/${account!.resourceId}/transactions?bookingStatus=both`, {
      headers: { ...TPP, "PSU-ID": owner.customerNumber },
    });
    const transactions = (answer.json as { transactions: { booked: unknown[]; pending: unknown[] } })
      .transactions;
    expect(transactions.pending).toEqual([]);
    expect(transactions.booked.length).toBe(account!.booked.length + account!.pending.length);
  });
});
