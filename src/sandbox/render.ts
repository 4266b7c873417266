/**
 * How the legacy core's data looks on the wire: Berlin Group NextGenPSD2 shapes for accounts,
 * balances and transactions, SPEC 2.1 for sandbox customers. Plain objects, rendered once per
 * state by catalogue.ts; every amount goes through `amount()` so none can leave as a number.
 */

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

export function amount(money: Money): Json {
  return { currency: money.currency, amount: formatMinor(money.minor) };
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

export function renderAccount(account: Account, usage: "PRIV" | "ORGA"): Json {
  return {
    resourceId: account.resourceId,
    bban: account.bban,
    currency: account.currency,
    name: account.name.slice(0, 70),
    product: account.product,
    cashAccountType: account.cashAccountType,
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

export function renderBalances(account: Account, today: string): Json {
  const money = (minor: number): Money => ({ minor, currency: account.currency });
  return {
    account: { bban: account.bban, currency: account.currency },
    balances: [
      {
        balanceAmount: amount(money(account.bookedBalanceMinor)),
        balanceType: "interimBooked",
        referenceDate: today,
      },
      {
        balanceAmount: amount(money(availableMinor(account, today))),
        balanceType: "interimAvailable",
        creditLimitIncluded: false,
        referenceDate: today,
      },
      {
        balanceAmount: amount(money(account.bookedBalanceMinor + sumMinor(account.pending))),
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
export function renderBooked(accountId: string, transaction: BookedTransaction, detailed: boolean): Json {
  const batch = transaction.batch;
  return {
    transactionId: transaction.transactionId,
    bookingDate: transaction.bookingDate,
    valueDate: transaction.valueDate,
    transactionAmount: amount(transaction.amount),
    ...(batch === undefined
      ? counterparty(transaction.amount.minor, transaction.counterpartyName, transaction.counterpartyBban)
      : { batchIndicator: true, batchNumberOfTransactions: batch.length }),
    remittanceInformationUnstructured: transaction.remittance,
    proprietaryBankTransactionCode: transaction.proprietaryBankTransactionCode,
    entryDetails:
      detailed && batch !== undefined
        ? batch.map((entry) => ({
            transactionAmount: amount(entry.amount),
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

export function renderPending(transaction: PendingTransaction): Json {
  return {
    valueDate: transaction.valueDate,
    transactionAmount: amount(transaction.amount),
    ...counterparty(transaction.amount.minor, transaction.counterpartyName, undefined),
    remittanceInformationUnstructured: transaction.remittance,
  };
}

export function renderCardAccount(card: CardAccount, usage: "PRIV" | "ORGA"): Json {
  return {
    resourceId: card.resourceId,
    maskedPan: card.maskedPan,
    currency: card.currency,
    name: card.name.slice(0, 70),
    product: card.product,
    status: "enabled",
    usage,
    creditLimit: amount({ minor: card.creditLimitMinor, currency: card.currency }),
    _links: {
      balances: { href: hrefs.cardBalances(card.resourceId) },
      transactions: { href: hrefs.cardTransactions(card.resourceId) },
    },
  };
}

export function renderCardBalances(card: CardAccount, today: string): Json {
  const used = sumCardMinor(card.booked);
  const reserved = sumCardMinor(card.pending);
  const money = (minor: number): Money => ({ minor, currency: card.currency });
  return {
    cardAccount: { maskedPan: card.maskedPan },
    balances: [
      { balanceAmount: amount(money(used)), balanceType: "interimBooked", referenceDate: today },
      {
        balanceAmount: amount(money(card.creditLimitMinor + used + reserved)),
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

export function renderCardTransaction(card: CardAccount, transaction: CardTransaction): Json {
  const exchange = transaction.currencyExchange;
  return {
    cardTransactionId: transaction.cardTransactionId,
    terminalId: transaction.terminalId,
    transactionDate: transaction.transactionDate,
    bookingDate: transaction.bookingDate,
    transactionAmount: amount(transaction.transactionAmount),
    originalAmount: amount(transaction.originalAmount),
    currencyExchange: exchange === undefined ? undefined : { ...exchange },
    markupFee: amount(transaction.markupFee),
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
