/**
 * Every response that does not depend on the request, serialised once per state (at start and at
 * each reset): the bank is the "backend reached directly" baseline of the benchmarks, so the hot
 * path only looks up buffers and, for transaction lists, joins pre-serialised fragments.
 *
 * `buildCatalogue` renders with every x-accept-fix fix active (SPEC 9.2), which is what nearly
 * every request gets. A request for which some fixes are not active (fixes.ts) is served from a
 * variant: built on first use from the same data, kept with the catalogue it came from (so it goes
 * when the data changes and the catalogue is replaced) and keyed by the set of inactive fixes.
 */

import type { IncomingMessage } from "node:http";
import { ALL_DEFAULT_FROM_MS, type FixSet, inactiveFixes } from "./fixes.js";
import type { Account, BankData, BookedTransaction, CardAccount, Customer } from "./model.js";
import {
  batchMembers,
  CURRENT_RENDERING,
  hrefs,
  type Json,
  type Rendering,
  renderAccount,
  renderAgreement,
  renderBalances,
  renderBooked,
  renderCardAccount,
  renderCardBalances,
  renderCardTransaction,
  renderCustomer,
  renderingWithout,
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

/** The parts of a catalogue that x-accept-fix fixes change; the rest a variant shares. */
type RenderedParts = Pick<Catalogue, "accountLists" | "cardAccountLists" | "accounts" | "cards">;

function serialise(value: Json): Buffer {
  return Buffer.from(JSON.stringify(value), "utf8");
}

/** `{"a":1}` → `"a":1`: the members of an object, to splice into a hand-assembled one. */
function members(value: Json): string {
  return JSON.stringify(value).slice(1, -1);
}

/** The catalogue of `data` with every x-accept-fix fix active. */
export function buildCatalogue(data: BankData): Catalogue {
  const customers = data.customers;
  const defaultPsuCustomer = customers.find((customer) => customer.customerType === "PRIVATE");
  if (defaultPsuCustomer === undefined) throw new Error("the sandbox data has no PRIVATE customer");

  const listFor = (withAccounts: boolean, withAgreements: boolean) =>
    serialise(customers.map((customer) => renderCustomer(customer, withAccounts, withAgreements)));

  const customerDetails = new Map<string, Buffer>();
  const agreements = new Map<string, AgreementEntry>();
  const customersByIdOrNumber = new Map<string, Customer>();
  const accountsByBban = new Map<string, Account>();

  for (const customer of customers) {
    customerDetails.set(customer.customerId, serialise(renderCustomer(customer, true, true)));
    customersByIdOrNumber.set(customer.customerId, customer);
    customersByIdOrNumber.set(customer.customerNumber, customer);
    for (const agreement of customer.agreements) {
      agreements.set(`${customer.customerId}/${agreement.id}`, {
        agreement: serialise(renderAgreement(customer.customerId, agreement)),
        engagements: serialise({ engagements: agreement.engagements }),
      });
    }
    for (const account of customer.accounts) accountsByBban.set(account.bban, account);
  }

  return {
    data,
    customerLists: [listFor(false, false), listFor(false, true), listFor(true, false), listFor(true, true)],
    customerDetails,
    agreements,
    customersByIdOrNumber,
    defaultPsuCustomer,
    ...renderParts(data, CURRENT_RENDERING),
    accountsByBban,
  };
}

/** The accounts and card accounts: everything in a catalogue that a fix can change. */
function renderParts(data: BankData, rendering: Rendering): RenderedParts {
  const accountLists = new Map<string, Buffer>();
  const cardAccountLists = new Map<string, Buffer>();
  const accounts = new Map<string, AccountEntry>();
  const cards = new Map<string, CardEntry>();
  for (const customer of data.customers) {
    const usage = customer.customerType === "PRIVATE" ? "PRIV" : "ORGA";
    accountLists.set(
      customer.customerId,
      serialise({ accounts: customer.accounts.map((account) => renderAccount(account, usage, rendering)) }),
    );
    cardAccountLists.set(
      customer.customerId,
      serialise({
        cardAccounts: customer.cardAccounts.map((card) => renderCardAccount(card, usage, rendering)),
      }),
    );
    for (const account of customer.accounts) {
      accounts.set(account.resourceId, accountEntry(account, usage, data.today, rendering));
    }
    for (const card of customer.cardAccounts) {
      cards.set(card.resourceId, cardEntry(card, usage, data.today, rendering));
    }
  }
  return { accountLists, cardAccountLists, accounts, cards };
}

/** Variants by catalogue, then by the set of inactive fixes; a replaced catalogue takes its own along. */
const variants = new WeakMap<Catalogue, Map<FixSet, Catalogue>>();

/**
 * `catalogue` as a request for which the fixes in `inactive` are not active sees it: the catalogue
 * itself for none (no lookup), otherwise a variant built on first use and kept with `catalogue`.
 */
export function catalogueWithout(catalogue: Catalogue, inactive: FixSet): Catalogue {
  if (inactive === 0) return catalogue;
  let byFixes = variants.get(catalogue);
  if (byFixes === undefined) {
    byFixes = new Map();
    variants.set(catalogue, byFixes);
  }
  let variant = byFixes.get(inactive);
  if (variant === undefined) {
    variant = { ...catalogue, ...renderParts(catalogue.data, renderingWithout(inactive)) };
    byFixes.set(inactive, variant);
  }
  return variant;
}

/**
 * The catalogue a request reads from: its x-accept-fix header against the bank's clock (SPEC 9.2).
 * From the last default date on (every request today) this is one clock reading and a comparison.
 */
export function catalogueFor(context: {
  // A RequestContext (context.ts) fits; named by shape, since context.ts holds a Catalogue.
  readonly state: { readonly catalogue: Catalogue };
  readonly settings: { now(): number };
  readonly req: Pick<IncomingMessage, "headers">;
}): Catalogue {
  const { catalogue } = context.state;
  const nowMs = context.settings.now();
  if (nowMs >= ALL_DEFAULT_FROM_MS) return catalogue;
  return catalogueWithout(catalogue, inactiveFixes(context.req.headers["x-accept-fix"], nowMs));
}

function accountEntry(
  account: Account,
  usage: "PRIV" | "ORGA",
  today: string,
  rendering: Rendering,
): AccountEntry {
  const id = account.resourceId;
  // Without groupBatchTransactions a batch is its members, listed and detailed one by one.
  const booked: readonly BookedTransaction[] = rendering.groupBatches
    ? account.booked
    : account.booked.flatMap(batchMembers);
  const transactionDetails = new Map<string, Buffer>();
  for (const transaction of booked) {
    transactionDetails.set(
      transaction.transactionId,
      serialise({ transactionsDetails: renderBooked(id, transaction, true, rendering) }),
    );
  }
  return {
    account,
    details: serialise({ account: renderAccount(account, usage, rendering) }),
    balances: serialise(renderBalances(account, today, rendering)),
    transactions: {
      head: `{${members({ account: { bban: account.bban, currency: account.currency } })},"transactions":{`,
      tail: `${members({ _links: { account: { href: hrefs.account(id) } } })}}}`,
      booked: booked.map((transaction) => ({
        date: transaction.bookingDate,
        json: JSON.stringify(renderBooked(id, transaction, false, rendering)),
      })),
      pending: account.pending.map((transaction) => ({
        date: transaction.valueDate,
        json: JSON.stringify(renderPending(transaction, rendering)),
      })),
    },
    transactionDetails,
  };
}

function cardEntry(
  card: CardAccount,
  usage: "PRIV" | "ORGA",
  today: string,
  rendering: Rendering,
): CardEntry {
  return {
    card,
    details: serialise({ cardAccount: renderCardAccount(card, usage, rendering) }),
    balances: serialise(renderCardBalances(card, today, rendering)),
    transactions: {
      head: `{${members({ cardAccount: { maskedPan: card.maskedPan } })},"cardTransactions":{`,
      tail: `${members({ _links: { cardAccount: { href: hrefs.cardAccount(card.resourceId) } } })}}}`,
      booked: card.booked.map((transaction) => ({
        date: transaction.bookingDate ?? transaction.transactionDate,
        json: JSON.stringify(renderCardTransaction(card, transaction, rendering)),
      })),
      // A pending card transaction has no booking date yet; the purchase date is what it is filtered by.
      pending: card.pending.map((transaction) => ({
        date: transaction.transactionDate,
        json: JSON.stringify(renderCardTransaction(card, transaction, rendering)),
      })),
    },
  };
}
