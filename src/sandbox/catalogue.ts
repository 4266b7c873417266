/**
 * Every response that does not depend on the request, serialised once per state (at start and at
 * each reset): the bank is the "backend reached directly" baseline of the benchmarks, so the hot
 * path only looks up buffers and, for transaction lists, joins pre-serialised fragments.
 */

import type { Account, BankData, CardAccount, Customer } from "./model.js";
import {
  hrefs,
  type Json,
  renderAccount,
  renderAgreement,
  renderBalances,
  renderBooked,
  renderCardAccount,
  renderCardBalances,
  renderCardTransaction,
  renderCustomer,
  renderPending,
} from "./render.js";

/** A list element serialised once, with the date it is filtered by. */
export interface Fragment {
  readonly date: string;
  readonly json: string;
}

/** A transaction list response, split so that the filtered elements go between head and tail. */
export interface TransactionListParts {
  /** `{"account":{…},"transactions":{` (or `cardAccount` / `cardTransactions`). */
  readonly head: string;
  /** `"_links":{…}}}`. */
  readonly tail: string;
  /** Newest first. */
  readonly booked: readonly Fragment[];
  readonly pending: readonly Fragment[];
}

export interface AccountEntry {
  readonly account: Account;
  readonly details: Buffer;
  readonly balances: Buffer;
  readonly transactions: TransactionListParts;
  readonly transactionDetails: ReadonlyMap<string, Buffer>;
}

export interface CardEntry {
  readonly card: CardAccount;
  readonly details: Buffer;
  readonly balances: Buffer;
  readonly transactions: TransactionListParts;
}

export interface AgreementEntry {
  readonly agreement: Buffer;
  readonly engagements: Buffer;
}

export interface Catalogue {
  readonly data: BankData;
  /** Indexed by (withAccounts ? 2 : 0) + (withAgreements ? 1 : 0). */
  readonly customerLists: readonly [Buffer, Buffer, Buffer, Buffer];
  readonly customerDetails: ReadonlyMap<string, Buffer>;
  /** Keyed by `${customerId}/${agreementId}`. */
  readonly agreements: ReadonlyMap<string, AgreementEntry>;
  /** Keyed by customerId and by customerNumber. */
  readonly customersByIdOrNumber: ReadonlyMap<string, Customer>;
  readonly defaultPsuCustomer: Customer;
  readonly accountLists: ReadonlyMap<string, Buffer>;
  readonly cardAccountLists: ReadonlyMap<string, Buffer>;
  readonly accounts: ReadonlyMap<string, AccountEntry>;
  readonly cards: ReadonlyMap<string, CardEntry>;
  readonly accountsByBban: ReadonlyMap<string, Account>;
}

function serialise(value: Json): Buffer {
  return Buffer.from(JSON.stringify(value), "utf8");
}

/** `{"a":1}` → `"a":1`: the members of an object, to splice into a hand-assembled one. */
function members(value: Json): string {
  return JSON.stringify(value).slice(1, -1);
}

export function buildCatalogue(data: BankData): Catalogue {
  const customers = data.customers;
  const defaultPsuCustomer = customers.find((customer) => customer.customerType === "PRIVATE");
  if (defaultPsuCustomer === undefined) throw new Error("the sandbox data has no PRIVATE customer");

  const listFor = (withAccounts: boolean, withAgreements: boolean) =>
    serialise(customers.map((customer) => renderCustomer(customer, withAccounts, withAgreements)));

  const customerDetails = new Map<string, Buffer>();
  const agreements = new Map<string, AgreementEntry>();
  const customersByIdOrNumber = new Map<string, Customer>();
  const accountLists = new Map<string, Buffer>();
  const cardAccountLists = new Map<string, Buffer>();
  const accounts = new Map<string, AccountEntry>();
  const cards = new Map<string, CardEntry>();
  const accountsByBban = new Map<string, Account>();

  for (const customer of customers) {
    const usage = customer.customerType === "PRIVATE" ? "PRIV" : "ORGA";
    customerDetails.set(customer.customerId, serialise(renderCustomer(customer, true, true)));
    customersByIdOrNumber.set(customer.customerId, customer);
    customersByIdOrNumber.set(customer.customerNumber, customer);
    for (const agreement of customer.agreements) {
      agreements.set(`${customer.customerId}/${agreement.id}`, {
        agreement: serialise(renderAgreement(customer.customerId, agreement)),
        engagements: serialise({ engagements: agreement.engagements }),
      });
    }
    accountLists.set(
      customer.customerId,
      serialise({ accounts: customer.accounts.map((account) => renderAccount(account, usage)) }),
    );
    cardAccountLists.set(
      customer.customerId,
      serialise({ cardAccounts: customer.cardAccounts.map((card) => renderCardAccount(card, usage)) }),
    );
    for (const account of customer.accounts) {
      accounts.set(account.resourceId, accountEntry(account, usage, data.today));
      accountsByBban.set(account.bban, account);
    }
    for (const card of customer.cardAccounts) cards.set(card.resourceId, cardEntry(card, usage, data.today));
  }

  return {
    data,
    customerLists: [listFor(false, false), listFor(false, true), listFor(true, false), listFor(true, true)],
    customerDetails,
    agreements,
    customersByIdOrNumber,
    defaultPsuCustomer,
    accountLists,
    cardAccountLists,
    accounts,
    cards,
    accountsByBban,
  };
}

function accountEntry(account: Account, usage: "PRIV" | "ORGA", today: string): AccountEntry {
  const id = account.resourceId;
  const transactionDetails = new Map<string, Buffer>();
  for (const transaction of account.booked) {
    transactionDetails.set(
      transaction.transactionId,
      serialise({ transactionsDetails: renderBooked(id, transaction, true) }),
    );
  }
  return {
    account,
    details: serialise({ account: renderAccount(account, usage) }),
    balances: serialise(renderBalances(account, today)),
    transactions: {
      head: `{${members({ account: { bban: account.bban, currency: account.currency } })},"transactions":{`,
      tail: `${members({ _links: { account: { href: hrefs.account(id) } } })}}}`,
      booked: account.booked.map((transaction) => ({
        date: transaction.bookingDate,
        json: JSON.stringify(renderBooked(id, transaction, false)),
      })),
      pending: account.pending.map((transaction) => ({
        date: transaction.valueDate,
        json: JSON.stringify(renderPending(transaction)),
      })),
    },
    transactionDetails,
  };
}

function cardEntry(card: CardAccount, usage: "PRIV" | "ORGA", today: string): CardEntry {
  return {
    card,
    details: serialise({ cardAccount: renderCardAccount(card, usage) }),
    balances: serialise(renderCardBalances(card, today)),
    transactions: {
      head: `{${members({ cardAccount: { maskedPan: card.maskedPan } })},"cardTransactions":{`,
      tail: `${members({ _links: { cardAccount: { href: hrefs.cardAccount(card.resourceId) } } })}}}`,
      booked: card.booked.map((transaction) => ({
        date: transaction.bookingDate ?? transaction.transactionDate,
        json: JSON.stringify(renderCardTransaction(card, transaction)),
      })),
      // A pending card transaction has no booking date yet; the purchase date is what it is filtered by.
      pending: card.pending.map((transaction) => ({
        date: transaction.transactionDate,
        json: JSON.stringify(renderCardTransaction(card, transaction)),
      })),
    },
  };
}
