/**
 * What the sandbox operations do to the data: each takes the bank's data and returns new data
 * with the change (the model is immutable: what changes is copied, the rest shared). Ids come from
 * a `Draw`: crypto randomness in the bank, so that ids stay unique across restarts with a state
 * file; a SeededRandom in tests.
 */

import { randomInt, randomUUID } from "node:crypto";
import { BANK_CODE } from "./data.js";
import type { AccountTransactionInput, CardAccountInput, CustomerInput } from "./mock-input.js";
import { MAX_NAME_LENGTH } from "./mock-input.js";
import type {
  Account,
  BankData,
  BookedTransaction,
  CardAccount,
  CardTransaction,
  Customer,
  CustomerType,
} from "./model.js";
import { type DigitSource, organisationNumber, syntheticNationalId } from "./national-id.js";
import { mod11CheckDigit } from "./random.js";

export interface Draw extends DigitSource {
  uuid(): string;
  hex(count: number): string;
}

export const cryptoDraw: Draw = {
  uuid: randomUUID,
  digits: (count) => drawn(count, 10),
  hex: (count) => drawn(count, 16),
};

function drawn(count: number, radix: number): string {
  let out = "";
  for (let i = 0; i < count; i++) out += randomInt(radix).toString(radix);
  return out;
}

interface AccountKind {
  readonly name: string;
  readonly product: string;
  readonly cashAccountType: string;
}

/** As the initial customers have them: a current account, then savings (or the tax withholding account). */
const ACCOUNT_KINDS: Readonly<Record<CustomerType, readonly [AccountKind, AccountKind]>> = {
  PRIVATE: [
    { name: "Brukskonto", product: "Brukskonto", cashAccountType: "CACC" },
    { name: "Sparekonto", product: "Høyrente Spar", cashAccountType: "SVGS" },
  ],
  CORPORATE: [
    { name: "Driftskonto", product: "Bedriftskonto", cashAccountType: "CACC" },
    { name: "Skattetrekkskonto", product: "Skattetrekkskonto", cashAccountType: "TAXE" },
  ],
};

function accountName(kind: AccountKind, index: number, ownerName: string): string {
  // A third account and beyond are more current accounts, numbered so that their names differ.
  const base = index < 2 ? kind.name : `${kind.name} ${index}`;
  return `${base} ${ownerName}`.slice(0, MAX_NAME_LENGTH);
}

/** Every id and number a customer can be found by (PSU-ID, SCA page): a new one must not clash. */
function takenCustomerKeys(data: BankData): Set<string> {
  return new Set(data.customers.flatMap((customer) => [customer.customerId, customer.customerNumber]));
}

function unique(draw: () => string, taken: ReadonlySet<string>): string {
  for (;;) {
    const value = draw();
    if (!taken.has(value)) return value;
  }
}

function newBban(draw: Draw, taken: Set<string>): string {
  for (;;) {
    const body = BANK_CODE + draw.digits(10 - BANK_CODE.length);
    const check = mod11CheckDigit(body);
    const bban = body + String(check);
    if (check !== undefined && !taken.has(bban)) {
      taken.add(bban);
      return bban;
    }
  }
}

export function addCustomer(
  data: BankData,
  input: CustomerInput,
  draw: Draw,
): { data: BankData; customer: Customer } {
  const taken = takenCustomerKeys(data);
  const customerId = unique(() => draw.uuid(), taken);
  const customerNumber = unique(
    () => (input.customerType === "PRIVATE" ? syntheticNationalId(draw) : organisationNumber(draw)),
    taken,
  );
  const bbans = new Set(
    data.customers.flatMap((customer) => customer.accounts.map((account) => account.bban)),
  );
  const kinds = ACCOUNT_KINDS[input.customerType];
  const accounts = Array.from({ length: input.accounts }, (_, index): Account => {
    const kind = index === 1 ? kinds[1] : kinds[0];
    return {
      resourceId: draw.uuid(),
      bban: newBban(draw, bbans),
      currency: "NOK",
      name: accountName(kind, index, input.customerName),
      product: kind.product,
      cashAccountType: kind.cashAccountType,
      ownerCustomerId: customerId,
      bookedBalanceMinor: 0,
      booked: [],
      pending: [],
    };
  });
  const customer: Customer = {
    customerId,
    customerNumber,
    customerType: input.customerType,
    customerName: input.customerName,
    // A corporate PSU reaches only granted accounts (SPEC 1.8): one agreement grants them all.
    agreements:
      input.customerType === "CORPORATE"
        ? [
            {
              id: draw.uuid(),
              name: `Nettbank bedrift ${input.customerName}`,
              engagements: accounts.map((account) => account.resourceId),
            },
          ]
        : [],
    accounts,
    cardAccounts: [],
  };
  return { data: { ...data, customers: [...data.customers, customer] }, customer };
}

export function addCardAccount(
  data: BankData,
  owner: Customer,
  input: CardAccountInput,
  draw: Draw,
): { data: BankData; card: CardAccount } {
  const card: CardAccount = {
    resourceId: draw.uuid(),
    maskedPan: `492500******${draw.digits(4)}`,
    currency: input.currency,
    name: input.name ?? `Visa Kredittkort ${owner.customerName}`.slice(0, MAX_NAME_LENGTH),
    product: "Visa Kredittkort",
    ownerCustomerId: owner.customerId,
    creditLimitMinor: input.creditLimitMinor,
    booked: [],
    pending: [],
  };
  const updated = updateCustomer(data, owner.customerId, (customer) => ({
    ...customer,
    cardAccounts: [...customer.cardAccounts, card],
  }));
  return { data: updated, card };
}

/** Newest first by booking date (a stable sort: among equal dates, the order given). */
export function newestCardFirst(transactions: readonly CardTransaction[]): CardTransaction[] {
  return [...transactions].sort((a, b) =>
    compareDescending(a.bookingDate ?? a.transactionDate, b.bookingDate ?? b.transactionDate),
  );
}

/** Adds booked card transactions; among equal booking dates the added ones come first. */
export function addCardTransactions(
  data: BankData,
  card: CardAccount,
  transactions: readonly CardTransaction[],
): BankData {
  const booked = newestCardFirst([...transactions, ...card.booked]);
  return updateCustomer(data, card.ownerCustomerId, (customer) => ({
    ...customer,
    cardAccounts: customer.cardAccounts.map((each) =>
      each.resourceId === card.resourceId ? { ...each, booked } : each,
    ),
  }));
}

export function addAccountTransaction(
  data: BankData,
  account: Account,
  input: AccountTransactionInput,
  draw: Draw,
): { data: BankData; transaction: BookedTransaction } {
  const transaction: BookedTransaction = {
    transactionId: draw.hex(24),
    bookingDate: input.bookingDate,
    valueDate: input.valueDate,
    amount: input.amount,
    counterpartyName: input.counterpartyName,
    counterpartyBban: input.counterpartyBban,
    remittance: input.remittance,
    proprietaryBankTransactionCode: input.proprietaryBankTransactionCode,
    batch: undefined,
  };
  const booked = [transaction, ...account.booked].sort((a, b) =>
    compareDescending(a.bookingDate, b.bookingDate),
  );
  const updated = updateCustomer(data, account.ownerCustomerId, (customer) => ({
    ...customer,
    accounts: customer.accounts.map((each) =>
      each.resourceId === account.resourceId
        ? { ...each, booked, bookedBalanceMinor: each.bookedBalanceMinor + input.amount.minor }
        : each,
    ),
  }));
  return { data: updated, transaction };
}

function updateCustomer(
  data: BankData,
  customerId: string,
  update: (customer: Customer) => Customer,
): BankData {
  return {
    ...data,
    customers: data.customers.map((customer) =>
      customer.customerId === customerId ? update(customer) : customer,
    ),
  };
}

/** For a stable sort, newest first: ISO dates compare as strings. */
function compareDescending(a: string, b: string): number {
  return a < b ? 1 : a > b ? -1 : 0;
}
