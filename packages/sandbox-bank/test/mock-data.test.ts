/** The pure side of the sandbox operations: generated customer numbers, and data copied, never changed. */

import { describe, expect, it } from "vitest";
import { buildInitialData, DEFAULT_SEED } from "../src/data.js";
import { addAccountTransaction, addCardAccount, addCardTransactions, addCustomer } from "../src/mock-data.js";
import {
  isValidNationalId,
  isValidOrganisationNumber,
  organisationNumber,
  syntheticNationalId,
} from "../src/national-id.js";
import { SeededRandom } from "../src/random.js";
import { NOW, TODAY } from "./helpers.js";

describe("customer numbers of created customers", () => {
  it("checks national ids and organisation numbers with MOD11 as published", () => {
    for (const valid of ["15076500565", "01010750160"]) expect(isValidNationalId(valid), valid).toBe(true);
    for (const invalid of ["15076500566", "1507650056", "1507650056x"])
      expect(isValidNationalId(invalid)).toBe(false);
    for (const valid of ["974760673", "923609016"])
      expect(isValidOrganisationNumber(valid), valid).toBe(true);
    for (const invalid of ["974760674", "97476067"]) expect(isValidOrganisationNumber(invalid)).toBe(false);
  });

  it("draws synthetic national ids (month + 80) and organisation numbers that pass those checks", () => {
    const random = new SeededRandom(7);
    for (let i = 0; i < 500; i++) {
      const id = syntheticNationalId(random);
      expect(isValidNationalId(id), id).toBe(true);
      const month = Number(id.slice(2, 4));
      expect(month >= 81 && month <= 92, id).toBe(true);
      const number = organisationNumber(random);
      expect(isValidOrganisationNumber(number), number).toBe(true);
    }
  });
});

describe("the data operations", () => {
  it("copy what they change and share the rest: the data they were given stays as it was", () => {
    const data = buildInitialData(DEFAULT_SEED, NOW);
    const frozen = structuredClone(data);
    const random = new SeededRandom(1);
    const added = addCustomer(
      data,
      { customerType: "CORPORATE", customerName: "Berg AS", accounts: 3 },
      random,
    );
    const kari = data.customers[0]!;
    const withCard = addCardAccount(
      added.data,
      kari,
      { customerId: kari.customerId, currency: "NOK", name: undefined, creditLimitMinor: 100 },
      random,
    );
    const card = kari.cardAccounts[0]!;
    const transaction = {
      ...card.booked[0]!,
      cardTransactionId: "new",
      bookingDate: TODAY,
      transactionDate: TODAY,
    };
    const withCardTransaction = addCardTransactions(withCard.data, card, [transaction]);
    const account = kari.accounts[0]!;
    const booked = addAccountTransaction(
      withCardTransaction,
      account,
      {
        amount: { minor: -500, currency: "NOK" },
        counterpartyName: "X",
        counterpartyBban: undefined,
        remittance: "",
        bookingDate: TODAY,
        valueDate: TODAY,
        proprietaryBankTransactionCode: "OVERFORING",
      },
      random,
    );

    expect(data).toEqual(frozen);
    expect(added.data.customers).toHaveLength(5);
    expect(added.customer.accounts.map((each) => each.cashAccountType)).toEqual(["CACC", "TAXE", "CACC"]);
    expect(added.customer.accounts[2]!.name).toBe("Driftskonto 2 Berg AS");
    expect(withCard.data.customers[0]!.cardAccounts.map((each) => each.resourceId)).toEqual([
      card.resourceId,
      withCard.card.resourceId,
    ]);
    const newKari = booked.data.customers[0]!;
    expect(newKari.cardAccounts[0]!.booked[0]!.cardTransactionId).toBe("new");
    expect(newKari.accounts[0]!.booked[0]).toBe(booked.transaction);
    expect(newKari.accounts[0]!.bookedBalanceMinor).toBe(account.bookedBalanceMinor - 500);
    // Untouched customers and accounts are the same objects, not copies.
    expect(booked.data.customers[1]).toBe(data.customers[1]);
    expect(newKari.accounts[1]).toBe(kari.accounts[1]);
  });
});
