import { describe, expect, it } from "vitest";
import { parseCardTransactions } from "../src/card-transaction-input.js";
import { buildInitialData, DEFAULT_SEED } from "../src/data.js";
import {
  parseAccountTransactionInput,
  parseCardAccountInput,
  parseCustomerInput,
} from "../src/mock-input.js";
import type { BookedTransaction, CardAccount, CardTransaction } from "../src/model.js";
import { formatMinor, parsePositiveAmount } from "../src/money.js";
import { isValidNationalId, isValidOrganisationNumber } from "../src/national-id.js";
import { mod11CheckDigit } from "../src/random.js";
import { daysBefore, NOW, TODAY } from "./helpers.js";

const data = buildInitialData(DEFAULT_SEED, NOW);
const accounts = data.customers.flatMap((customer) => customer.accounts);
const cards = data.customers.flatMap((customer) => customer.cardAccounts);

describe("the sandbox's initial data (SPEC 1.7)", () => {
  it("is the same for the same seed and day, and different for another seed", () => {
    expect(buildInitialData(DEFAULT_SEED, NOW)).toEqual(data);
    const other = buildInitialData(DEFAULT_SEED + 1, NOW);
    expect(other.customers.map((customer) => customer.customerId)).not.toEqual(
      data.customers.map((customer) => customer.customerId),
    );
    expect(other.customers.map((customer) => customer.customerName)).toEqual(
      data.customers.map((customer) => customer.customerName),
    );
  });

  it("has Norwegian account numbers: 11 digits with a valid MOD11 check digit, in NOK", () => {
    for (const account of accounts) {
      expect(account.bban).toMatch(/^\d{11}$/);
      expect(mod11CheckDigit(account.bban.slice(0, 10))).toBe(Number(account.bban[10]));
      expect(account.currency).toBe("NOK");
      expect(account.name.length).toBeLessThanOrEqual(70);
    }
    expect(new Set(accounts.map((account) => account.bban)).size).toBe(accounts.length);
  });

  it("gives every id once across the whole bank", () => {
    const ids = [
      ...data.customers.map((customer) => customer.customerId),
      ...data.customers.flatMap((customer) => customer.agreements.map((agreement) => agreement.id)),
      ...accounts.map((account) => account.resourceId),
      ...cards.map((card) => card.resourceId),
      ...accounts.flatMap((account) => account.booked.map((transaction) => transaction.transactionId)),
      ...cards.flatMap((card) =>
        [...card.booked, ...card.pending].map((transaction) => transaction.cardTransactionId),
      ),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("gives every account booked transactions within and beyond 90 days, none in the future, and pending ones", () => {
    for (const account of accounts) {
      const dates = account.booked.map((transaction) => transaction.bookingDate);
      expect(
        dates.some((date) => date < daysBefore(90)),
        account.name,
      ).toBe(true);
      expect(
        dates.some((date) => date >= daysBefore(90)),
        account.name,
      ).toBe(true);
      expect(dates.every((date) => date <= TODAY)).toBe(true);
      expect(account.pending.length).toBeGreaterThan(0);
      for (const transaction of account.booked)
        expect(transaction.bookingDate <= transaction.valueDate).toBe(true);
    }
  });

  it("makes a batch booking's amount the sum of its members (SPEC 2.7)", () => {
    const batches = accounts.flatMap((account) =>
      account.booked.filter((transaction) => transaction.batch !== undefined),
    );
    expect(batches.length).toBeGreaterThan(0);
    for (const batch of batches) {
      const sum = batch.batch!.reduce((total, entry) => total + entry.amount.minor, 0);
      expect(sum).toBe(batch.amount.minor);
    }
  });

  it("books card transactions on the purchase day (SPEC 2.2), all in the past, with foreign ones converted to NOK", () => {
    for (const card of cards) {
      expect(card.maskedPan).toMatch(/^\d{6}\*{6}\d{4}$/);
      for (const transaction of card.booked) {
        expect(transaction.bookingDate).toBe(transaction.transactionDate);
        expect(transaction.bookingDate! <= TODAY).toBe(true);
        expect(transaction.transactionAmount.currency).toBe("NOK");
      }
      const foreign = card.booked.filter((transaction) => transaction.currencyExchange !== undefined);
      expect(foreign.length).toBeGreaterThan(0);
      for (const transaction of foreign) {
        expect(transaction.originalAmount.currency).toBe(transaction.currencyExchange!.sourceCurrency);
        // The NOK amount is the original times the rate, plus the markup fee.
        const converted = Math.round(
          Math.abs(transaction.originalAmount.minor) * Number(transaction.currencyExchange!.exchangeRate),
        );
        expect(Math.abs(transaction.transactionAmount.minor) - transaction.markupFee.minor).toBe(converted);
      }
    }
  });
});

/**
 * A generated record as the sandbox operation that creates its like would receive it, so that the
 * bank's own validators judge the bank's own data. The JSON round trip drops undefined members.
 */
function cardTransactionInput(card: CardAccount, transaction: CardTransaction): unknown {
  return JSON.parse(
    JSON.stringify({
      ...transaction,
      // A pending purchase has no booking yet: it is judged with the one it will get, on its day.
      bookingDate: transaction.bookingDate ?? transaction.transactionDate,
      transactionAmount: {
        currency: transaction.transactionAmount.currency,
        amount: transaction.transactionAmount.minor,
      },
      originalAmount: {
        currency: transaction.originalAmount.currency,
        amount: transaction.originalAmount.minor,
      },
      markupFee: { currency: transaction.markupFee.currency, amount: transaction.markupFee.minor },
      maskedPan: card.maskedPan,
      invoiced: String(transaction.invoiced),
    }),
  );
}

function accountTransactionInput(transaction: BookedTransaction): unknown {
  const debit = transaction.amount.minor < 0;
  const other = debit ? "creditor" : "debtor";
  return JSON.parse(
    JSON.stringify({
      transactionAmount: {
        currency: transaction.amount.currency,
        amount: formatMinor(transaction.amount.minor),
      },
      [`${other}Name`]: transaction.counterpartyName,
      [`${other}Account`]:
        transaction.counterpartyBban === undefined ? undefined : { bban: transaction.counterpartyBban },
      remittanceInformationUnstructured: transaction.remittance,
      bookingDate: transaction.bookingDate,
      valueDate: transaction.valueDate,
      proprietaryBankTransactionCode: transaction.proprietaryBankTransactionCode,
    }),
  );
}

describe("the initial data passes the bank's own rules", () => {
  it.each([DEFAULT_SEED, 1, 7, 424242])(
    "seed %i: every generated record is accepted by the sandbox's validators",
    (seed) => {
      const generated = buildInitialData(seed, NOW);
      for (const customer of generated.customers) {
        const valid = customer.customerType === "PRIVATE" ? isValidNationalId : isValidOrganisationNumber;
        expect(valid(customer.customerNumber), customer.customerNumber).toBe(true);
        expect(
          parseCustomerInput({
            customerType: customer.customerType,
            customerName: customer.customerName,
            accounts: customer.accounts.length,
          }),
        ).toMatchObject({ ok: true });
        for (const account of customer.accounts) {
          for (const transaction of account.booked) {
            const parsed = parseAccountTransactionInput(accountTransactionInput(transaction), account, TODAY);
            expect(parsed, `${account.name} ${transaction.transactionId}`).toMatchObject({ ok: true });
          }
        }
        for (const card of customer.cardAccounts) {
          expect(
            parseCardAccountInput({
              customerId: customer.customerId,
              currency: card.currency,
              name: card.name,
              creditLimit: formatMinor(card.creditLimitMinor),
            }),
          ).toMatchObject({ ok: true });
          const all = [...card.booked, ...card.pending];
          const parsed = parseCardTransactions(
            all.map((transaction) => cardTransactionInput(card, transaction)),
            { nowMs: NOW, existingIds: new Set(), currency: card.currency },
          );
          expect(parsed, card.name).toMatchObject({ ok: true });
        }
      }
    },
  );
});

describe("amounts as decimal strings", () => {
  it("formats minor units with two decimals and a sign", () => {
    expect(formatMinor(123456)).toBe("1234.56");
    expect(formatMinor(5)).toBe("0.05");
    expect(formatMinor(-5)).toBe("-0.05");
    expect(formatMinor(-100)).toBe("-1.00");
    expect(formatMinor(0)).toBe("0.00");
  });

  it("reads positive decimals with at most two decimals and nothing else", () => {
    expect(parsePositiveAmount("10")).toBe(1000);
    expect(parsePositiveAmount("10.5")).toBe(1050);
    expect(parsePositiveAmount("10.05")).toBe(1005);
    expect(parsePositiveAmount("0.01")).toBe(1);
    for (const bad of [
      "0",
      "0.00",
      "-1",
      "+1",
      "1.",
      ".5",
      "1.005",
      "1e3",
      "01",
      " 1",
      "1,00",
      "",
      "NaN",
      "9".repeat(14),
    ])
      expect(parsePositiveAmount(bad), bad).toBeUndefined();
  });
});
