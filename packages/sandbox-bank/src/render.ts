/**
 * How the legacy core's data looks on the wire: Berlin Group NextGenPSD2 shapes for accounts,
 * balances and transactions, SPEC 2.1 for sandbox customers. Plain objects, rendered once per
 * state by catalogue.ts. A `Rendering` says which x-accept-fix fixes (SPEC 9.2, fixes.ts) shape
 * the output; the default, `CURRENT_RENDERING`, has them all active, and every amount goes
 * through `amountOf()` so that only an inactive amount-as-string lets one leave as a number.
 */

import { FIX, type FixSet, proprietaryCashAccountType } from "./fixes.js";
import type {
  Account,
  Agreement,
  BookedTransaction,
  CardAccount,
  CardTransaction,
  Customer,
  Money,
  PendingTransaction,
} from "./model.js";
import { formatMinor } from "./money.js";

export type Json =
  | string
  | number
  | boolean
  | null
  | readonly Json[]
  | { readonly [key: string]: Json | undefined };

export const hrefs = {
  customer: (customerId: string) => `/v1/sandbox/customers/${customerId}`,
  agreement: (customerId: string, agreementId: string) =>
    `/v1/sandbox/customers/${customerId}/agreements/${agreementId}`,
  account: (resourceId: string) => `/v1/accounts/${resourceId}`,
  balances: (resourceId: string) => `/v1/accounts/${resourceId}/balances`,
  transactions: (resourceId: string) => `/v1/accounts/${resourceId}/transactions`,
  transaction: (resourceId: string, transactionId: string) =>
    `/v1/accounts/${resourceId}/transactions/${transactionId}`,
  cardAccount: (resourceId: string) => `/v1/card-accounts/${resourceId}`,
  cardBalances: (resourceId: string) => `/v1/card-accounts/${resourceId}/balances`,
  cardTransactions: (resourceId: string) => `/v1/card-accounts/${resourceId}/transactions`,
  payment: (product: string, paymentId: string) => `/v1/payments/${product}/${paymentId}`,
  paymentStatus: (product: string, paymentId: string) => `/v1/payments/${product}/${paymentId}/status`,
  authorisations: (product: string, paymentId: string) =>
    `/v1/payments/${product}/${paymentId}/authorisations`,
  authorisation: (product: string, paymentId: string, authorisationId: string) =>
    `/v1/payments/${product}/${paymentId}/authorisations/${authorisationId}`,
};

/** The rendering choices the x-accept-fix fixes make (fixes.ts describes each). */
export interface Rendering {
  /** amount-as-string: "1234.50" rather than 1234.5. */
  readonly amountsAsStrings: boolean;
  /**
   * cardaccount-switch-originalamount-and-transactionamount: transactionAmount is what the card
   * account was charged and originalAmount what the merchant charged; false swaps them.
   */
  readonly correctCardAmounts: boolean;
  /** SPEC 8: 70 with longer-names, 35 before. */
  readonly maxNameLength: number;
  /** groupBatchTransactions: a batch booking is one transaction; false lists its members. */
  readonly groupBatches: boolean;
  /** cash-account-type-iso: ISO 20022 codes; false gives the bank's proprietary categories. */
  readonly isoCashAccountType: boolean;
}

export const LONG_NAME_LENGTH = 70;
export const SHORT_NAME_LENGTH = 35;

/** Every fix active: what the bank renders unless a request asks for less. */
export const CURRENT_RENDERING: Rendering = renderingWithout(0);

/** The rendering of a request for which the fixes in `inactive` are not active. */
export function renderingWithout(inactive: FixSet): Rendering {
  return {
    amountsAsStrings: (inactive & FIX.amountAsString) === 0,
    correctCardAmounts: (inactive & FIX.cardAmountSwitch) === 0,
    maxNameLength: (inactive & FIX.longerNames) === 0 ? LONG_NAME_LENGTH : SHORT_NAME_LENGTH,
    groupBatches: (inactive & FIX.groupBatchTransactions) === 0,
    isoCashAccountType: (inactive & FIX.cashAccountTypeIso) === 0,
  };
}

/** An amount as the API carries it (SPEC 4 General: strings). */
export function amount(money: Money): Json {
  return { currency: money.currency, amount: formatMinor(money.minor) };
}

/** Without amount-as-string the amount is a JSON number: minor / 100 prints as the exact decimal. */
export function amountOf(money: Money, rendering: Rendering): Json {
  return rendering.amountsAsStrings ? amount(money) : { currency: money.currency, amount: money.minor / 100 };
}

/** At most `max` characters, counted as Unicode code points so that no surrogate pair is cut. */
export function truncateName(name: string, max: number): string {
  if (name.length <= max) return name;
  const points = Array.from(name);
  return points.length <= max ? name : points.slice(0, max).join("");
}

/** SPEC 2.1 Link: href and the verbs it accepts. */
function link(href: string): Json {
  return { href, verbs: ["GET"] };
}

export function renderAgreement(customerId: string, agreement: Agreement): Json {
  const self = hrefs.agreement(customerId, agreement.id);
  return {
    id: agreement.id,
    name: agreement.name,
    engagements: agreement.engagements,
    _links: { self: link(self), engagements: link(`${self}/engagements`) },
  };
}

/** SPEC 2.1: every field is required, so left-out parts are empty arrays rather than absent. */
export function renderCustomer(customer: Customer, withAccounts: boolean, withAgreements: boolean): Json {
  return {
    customerId: customer.customerId,
    customerNumber: customer.customerNumber,
    customerType: customer.customerType,
    customerName: customer.customerName,
    agreements: withAgreements
      ? customer.agreements.map((agreement) => renderAgreement(customer.customerId, agreement))
      : [],
    accounts: withAccounts ? customer.accounts.map((account) => account.resourceId) : [],
    cardAccounts: withAccounts ? customer.cardAccounts.map((card) => card.resourceId) : [],
    _links: { self: link(hrefs.customer(customer.customerId)) },
  };
}

export function renderAccount(
  account: Account,
  usage: "PRIV" | "ORGA",
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  return {
    resourceId: account.resourceId,
    bban: account.bban,
    currency: account.currency,
    name: truncateName(account.name, rendering.maxNameLength),
    product: account.product,
    cashAccountType: rendering.isoCashAccountType
      ? account.cashAccountType
      : proprietaryCashAccountType(account.cashAccountType),
    status: "enabled",
    usage,
    _links: {
      balances: { href: hrefs.balances(account.resourceId) },
      transactions: { href: hrefs.transactions(account.resourceId) },
    },
  };
}

function sumMinor(transactions: readonly { readonly amount: Money }[]): number {
  let sum = 0;
  for (const transaction of transactions) sum += transaction.amount.minor;
  return sum;
}

/**
 * What can be spent today: the booked balance less the pending debits already due (reservations);
 * pending credits and debits scheduled for a later day do not count yet.
 */
export function availableMinor(account: Account, today: string): number {
  let minor = account.bookedBalanceMinor;
  for (const pending of account.pending) {
    if (pending.amount.minor < 0 && pending.valueDate <= today) minor += pending.amount.minor;
  }
  return minor;
}

export function renderBalances(
  account: Account,
  today: string,
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  const money = (minor: number): Money => ({ minor, currency: account.currency });
  return {
    account: { bban: account.bban, currency: account.currency },
    balances: [
      {
        balanceAmount: amountOf(money(account.bookedBalanceMinor), rendering),
        balanceType: "interimBooked",
        referenceDate: today,
      },
      {
        balanceAmount: amountOf(money(availableMinor(account, today)), rendering),
        balanceType: "interimAvailable",
        creditLimitIncluded: false,
        referenceDate: today,
      },
      {
        balanceAmount: amountOf(money(account.bookedBalanceMinor + sumMinor(account.pending)), rendering),
        balanceType: "expected",
        referenceDate: today,
      },
    ],
  };
}

function counterparty(
  minor: number,
  name: string,
  bban: string | undefined,
): Record<string, Json | undefined> {
  const party = bban === undefined ? undefined : { bban };
  return minor < 0
    ? { creditorName: name, creditorAccount: party }
    : { debtorName: name, debtorAccount: party };
}

/** A booked transaction as listed; `detailed` adds the batch members (SPEC 2.7) and drops the link. */
export function renderBooked(
  accountId: string,
  transaction: BookedTransaction,
  detailed: boolean,
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  const batch = transaction.batch;
  return {
    transactionId: transaction.transactionId,
    bookingDate: transaction.bookingDate,
    valueDate: transaction.valueDate,
    transactionAmount: amountOf(transaction.amount, rendering),
    ...(batch === undefined
      ? counterparty(transaction.amount.minor, transaction.counterpartyName, transaction.counterpartyBban)
      : { batchIndicator: true, batchNumberOfTransactions: batch.length }),
    remittanceInformationUnstructured: transaction.remittance,
    proprietaryBankTransactionCode: transaction.proprietaryBankTransactionCode,
    entryDetails:
      detailed && batch !== undefined
        ? batch.map((entry) => ({
            transactionAmount: amountOf(entry.amount, rendering),
            creditorName: entry.creditorName,
            creditorAccount: { bban: entry.creditorBban },
            remittanceInformationUnstructured: entry.remittance,
          }))
        : undefined,
    _links: detailed
      ? undefined
      : { transactionDetails: { href: hrefs.transaction(accountId, transaction.transactionId) } },
  };
}

/**
 * Without groupBatchTransactions: a batch booking as its members, each a booked transaction of its
 * own with the batch's dates and code and the id `<batch id>-<n>` (fixes.ts). A transaction that is
 * not a batch is returned alone.
 */
export function batchMembers(transaction: BookedTransaction): readonly BookedTransaction[] {
  const batch = transaction.batch;
  if (batch === undefined) return [transaction];
  return batch.map(
    (entry, index): BookedTransaction => ({
      transactionId: `${transaction.transactionId}-${index + 1}`,
      bookingDate: transaction.bookingDate,
      valueDate: transaction.valueDate,
      amount: entry.amount,
      counterpartyName: entry.creditorName,
      counterpartyBban: entry.creditorBban,
      remittance: entry.remittance,
      proprietaryBankTransactionCode: transaction.proprietaryBankTransactionCode,
      batch: undefined,
    }),
  );
}

export function renderPending(
  transaction: PendingTransaction,
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  return {
    valueDate: transaction.valueDate,
    transactionAmount: amountOf(transaction.amount, rendering),
    ...counterparty(transaction.amount.minor, transaction.counterpartyName, undefined),
    remittanceInformationUnstructured: transaction.remittance,
  };
}

export function renderCardAccount(
  card: CardAccount,
  usage: "PRIV" | "ORGA",
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  return {
    resourceId: card.resourceId,
    maskedPan: card.maskedPan,
    currency: card.currency,
    name: truncateName(card.name, rendering.maxNameLength),
    product: card.product,
    status: "enabled",
    usage,
    creditLimit: amountOf({ minor: card.creditLimitMinor, currency: card.currency }, rendering),
    _links: {
      balances: { href: hrefs.cardBalances(card.resourceId) },
      transactions: { href: hrefs.cardTransactions(card.resourceId) },
    },
  };
}

export function renderCardBalances(
  card: CardAccount,
  today: string,
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  const used = sumCardMinor(card.booked);
  const reserved = sumCardMinor(card.pending);
  const money = (minor: number): Money => ({ minor, currency: card.currency });
  return {
    cardAccount: { maskedPan: card.maskedPan },
    balances: [
      { balanceAmount: amountOf(money(used), rendering), balanceType: "interimBooked", referenceDate: today },
      {
        balanceAmount: amountOf(money(card.creditLimitMinor + used + reserved), rendering),
        balanceType: "interimAvailable",
        creditLimitIncluded: true,
        referenceDate: today,
      },
    ],
  };
}

function sumCardMinor(transactions: readonly CardTransaction[]): number {
  let sum = 0;
  for (const transaction of transactions) sum += transaction.transactionAmount.minor;
  return sum;
}

export function renderCardTransaction(
  card: CardAccount,
  transaction: CardTransaction,
  rendering: Rendering = CURRENT_RENDERING,
): Json {
  const exchange = transaction.currencyExchange;
  // Without the cardaccount-switch fix the two amounts come out the old, wrong way round.
  const [charged, original] = rendering.correctCardAmounts
    ? [transaction.transactionAmount, transaction.originalAmount]
    : [transaction.originalAmount, transaction.transactionAmount];
  return {
    cardTransactionId: transaction.cardTransactionId,
    terminalId: transaction.terminalId,
    transactionDate: transaction.transactionDate,
    bookingDate: transaction.bookingDate,
    transactionAmount: amountOf(charged, rendering),
    originalAmount: amountOf(original, rendering),
    currencyExchange: exchange === undefined ? undefined : { ...exchange },
    markupFee: amountOf(transaction.markupFee, rendering),
    markupFeePercentage: transaction.markupFeePercentage,
    merchantCategoryCode: transaction.merchantCategoryCode,
    cardAcceptorId: transaction.cardAcceptorId,
    cardAcceptorAddress: { ...transaction.cardAcceptorAddress },
    maskedPan: card.maskedPan,
    transactionDetails: transaction.transactionDetails,
    invoiced: String(transaction.invoiced),
    proprietaryBankTransactionCode: transaction.proprietaryBankTransactionCode,
  };
}
