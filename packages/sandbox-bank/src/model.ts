/**
 * The sandbox bank's own data model: what the legacy core knows about customers, accounts and
 * transactions. Amounts are integer minor units (øre) here; only the rendering turns them into
 * the decimal strings the API promises (SPEC 4 General, x-accept-fix amount-as-string).
 */

export type CustomerType = "PRIVATE" | "CORPORATE";

export interface Money {
  /** Integer minor units (øre for NOK); negative for debits. */
  readonly minor: number;
  readonly currency: string;
}

/** One member of a batch booking (SPEC 2.7): dates live on the batch, not on its members. */
export interface BatchEntry {
  readonly amount: Money;
  readonly creditorName: string;
  readonly creditorBban: string;
  readonly remittance: string;
}

export interface BookedTransaction {
  /** Stable across calls and resets with the same seed (SPEC 3 rule 4, 9.5). */
  readonly transactionId: string;
  readonly bookingDate: string;
  readonly valueDate: string;
  readonly amount: Money;
  /** The other party: creditor of a debit, debtor of a credit. */
  readonly counterpartyName: string;
  readonly counterpartyBban: string | undefined;
  readonly remittance: string;
  readonly proprietaryBankTransactionCode: string;
  /** Present on a batch booking (groupBatchTransactions, default since 2024). */
  readonly batch: readonly BatchEntry[] | undefined;
}

/** A pending transaction may still change, so it carries no transactionId. */
export interface PendingTransaction {
  readonly valueDate: string;
  readonly amount: Money;
  readonly counterpartyName: string;
  readonly remittance: string;
}

export interface Account {
  readonly resourceId: string;
  readonly bban: string;
  readonly currency: string;
  readonly name: string;
  readonly product: string;
  /** ISO 20022 ExternalCashAccountType1Code (cash-account-type-iso, default since 2024). */
  readonly cashAccountType: string;
  readonly ownerCustomerId: string;
  readonly bookedBalanceMinor: number;
  /** Newest first. */
  readonly booked: readonly BookedTransaction[];
  readonly pending: readonly PendingTransaction[];
}

export interface CurrencyExchange {
  readonly sourceCurrency: string;
  readonly targetCurrency: string;
  readonly unitCurrency: string;
  readonly exchangeRate: string;
  readonly quotationDate: string;
}

/** SPEC 2.2: only the country is required; the rest is what the merchant's terminal reported. */
export interface CardAcceptorAddress {
  readonly street: string | undefined;
  readonly buildingNumber: string | undefined;
  readonly postalCode: string | undefined;
  readonly city: string | undefined;
  /** ISO 3166-1 alpha-2. */
  readonly country: string;
}

export interface CardTransaction {
  readonly cardTransactionId: string;
  readonly terminalId: string;
  /** Undefined while the transaction is pending. */
  readonly bookingDate: string | undefined;
  readonly transactionDate: string;
  /** In the card account's currency (cardaccount-switch-originalamount-and-transactionamount). */
  readonly transactionAmount: Money;
  /** In the currency the merchant charged. */
  readonly originalAmount: Money;
  readonly currencyExchange: CurrencyExchange | undefined;
  readonly markupFee: Money;
  readonly markupFeePercentage: string;
  readonly merchantCategoryCode: string;
  readonly cardAcceptorId: string;
  readonly cardAcceptorAddress: CardAcceptorAddress;
  readonly transactionDetails: string;
  readonly invoiced: boolean;
  readonly proprietaryBankTransactionCode: string;
}

export interface CardAccount {
  readonly resourceId: string;
  readonly maskedPan: string;
  readonly currency: string;
  readonly name: string;
  readonly product: string;
  readonly ownerCustomerId: string;
  readonly creditLimitMinor: number;
  /** Newest first. */
  readonly booked: readonly CardTransaction[];
  readonly pending: readonly CardTransaction[];
}

export interface Agreement {
  readonly id: string;
  readonly name: string;
  /** resourceIds of the accounts this agreement grants (SPEC 1.8). */
  readonly engagements: readonly string[];
}

export interface Customer {
  readonly customerId: string;
  /** The mocked national identity or organisation number typed at the sandbox SCA page (SPEC 2.1). */
  readonly customerNumber: string;
  readonly customerType: CustomerType;
  readonly customerName: string;
  readonly agreements: readonly Agreement[];
  readonly accounts: readonly Account[];
  readonly cardAccounts: readonly CardAccount[];
}

export interface BankData {
  /** The day every relative date was computed from (UTC, YYYY-MM-DD). */
  readonly today: string;
  readonly customers: readonly Customer[];
}
