/**
 * x-accept-fix (SPEC 9.2): opt-in breaking changes, chosen per request, each of which became the
 * default on a date. A fix is active for a request when the request asks for it or when the bank's
 * today (its clock, `settings.now()`, in UTC as every date here) is on or after its default date;
 * after that date it cannot be switched off. The bank renders the all-active view by default
 * (catalogue.ts); a request with fixes inactive gets a variant built once per catalogue and set of
 * inactive fixes.
 *
 * The header: values separated by commas, compared without regard to case and with surrounding
 * whitespace (spaces, tabs) ignored; empty items are skipped, and so are unknown values: an
 * opt-in header is for asking, so a value this bank does not know (a newer fix, a typo) changes
 * nothing and is never a 400. Repeated header lines count together (Node joins them with commas).
 *
 * What each fix changes when it is NOT active (the behaviour before it, as far as SPEC 9.2, 8 and
 * 2.7 describe it; the details are this sandbox's design):
 * - amount-as-string: every `amount` member (balances, transactions, entry details, card credit
 *   limits, markup fees) is a JSON number such as 1234.5 or -0.05 instead of the string "1234.50".
 *   Other decimal strings (exchangeRate, markupFeePercentage) are not amounts and stay strings.
 * - cardaccount-switch-originalamount-and-transactionamount: card transactions carry the old,
 *   wrong mapping: `transactionAmount` holds the amount in the merchant's currency and
 *   `originalAmount` the amount charged to the card account. Card balances are unaffected.
 * - longer-names: account and card account names are cut to 35 characters (Unicode code points);
 *   with the fix they go up to 70 (SPEC 8).
 * - groupBatchTransactions: a batch booking is listed as its member transactions, one booked
 *   transaction per member with the batch's dates, proprietary code and the member's amount,
 *   creditor and remittance, and the id `<batch id>-<n>` (n from 1 in entryDetails order; stable,
 *   as booked ids are, SPEC 9.5). Their details are fetched by those ids; the batch's own id is
 *   then unknown (404), since without the fix the batch is not a transaction the TPP sees. offset
 *   and limit count members.
 * - cash-account-type-iso: `cashAccountType` is the bank's proprietary account category
 *   (`PROPRIETARY_CASH_ACCOUNT_TYPES`: CACC → CurrentAccount, SVGS → SavingsAccount, LOAN → Loan,
 *   TAXE → TaxAccount, …) instead of the ISO 20022 ExternalCashAccountType1Code; a code outside
 *   the table is passed through unchanged, as the old mapping had no name of its own for it.
 */

/** Fix sets are bit masks of these. */
export const FIX = {
  amountAsString: 1,
  cardAmountSwitch: 2,
  longerNames: 4,
  groupBatchTransactions: 8,
  cashAccountTypeIso: 16,
} as const;

/** A set of fixes as a bit mask of `FIX` values (0: none). */
export type FixSet = number;

export interface FixDefinition {
  /** As written in x-accept-fix (SPEC 9.2). */
  readonly value: string;
  readonly bit: number;
  /** The day (UTC, YYYY-MM-DD) from which the fix is active for every request. */
  readonly defaultSince: string;
}

/** SPEC 9.2, row for row. */
export const FIXES: readonly FixDefinition[] = [
  { value: "amount-as-string", bit: FIX.amountAsString, defaultSince: "2020-08-01" },
  {
    value: "cardaccount-switch-originalamount-and-transactionamount",
    bit: FIX.cardAmountSwitch,
    defaultSince: "2024-11-13",
  },
  { value: "longer-names", bit: FIX.longerNames, defaultSince: "2024-10-01" },
  { value: "groupBatchTransactions", bit: FIX.groupBatchTransactions, defaultSince: "2024-10-01" },
  { value: "cash-account-type-iso", bit: FIX.cashAccountTypeIso, defaultSince: "2024-11-13" },
];

export const ALL_FIXES: FixSet = FIXES.reduce((mask, fix) => mask | fix.bit, 0);

const BY_VALUE: ReadonlyMap<string, number> = new Map(FIXES.map((fix) => [fix.value.toLowerCase(), fix.bit]));

/** Default dates as epoch milliseconds (UTC midnight), newest first. */
const DEFAULTS_MS: readonly { readonly atMs: number; readonly bit: number }[] = FIXES.map((fix) => ({
  atMs: Date.parse(`${fix.defaultSince}T00:00:00Z`),
  bit: fix.bit,
})).sort((a, b) => b.atMs - a.atMs);

/** From this instant every fix is a default: the header no longer matters. */
export const ALL_DEFAULT_FROM_MS: number = DEFAULTS_MS[0]!.atMs;

/** The known fixes an x-accept-fix value asks for; unknown values are ignored (see above). */
export function parseAcceptFix(header: string | readonly string[] | undefined): FixSet {
  if (header === undefined) return 0;
  const text = typeof header === "string" ? header : header.join(",");
  let requested = 0;
  for (const item of text.split(",")) {
    const bit = BY_VALUE.get(item.trim().toLowerCase());
    if (bit !== undefined) requested |= bit;
  }
  return requested;
}

/** The fixes whose default date is on or before the bank's today. */
export function defaultFixes(nowMs: number): FixSet {
  let mask = 0;
  for (const { atMs, bit } of DEFAULTS_MS) if (nowMs >= atMs) mask |= bit;
  return mask;
}

/**
 * The fixes NOT active for a request at `nowMs` with this x-accept-fix header: neither asked for
 * nor default yet. 0 (the common case, and always so from ALL_DEFAULT_FROM_MS on) is the bank's
 * current rendering.
 */
export function inactiveFixes(header: string | readonly string[] | undefined, nowMs: number): FixSet {
  if (nowMs >= ALL_DEFAULT_FROM_MS) return 0;
  return ALL_FIXES & ~(parseAcceptFix(header) | defaultFixes(nowMs));
}

/**
 * cash-account-type-iso off: the bank's proprietary account categories by ISO 20022
 * ExternalCashAccountType1Code.
 */
export const PROPRIETARY_CASH_ACCOUNT_TYPES: Readonly<Record<string, string>> = {
  CACC: "CurrentAccount",
  CARD: "CardAccount",
  CASH: "CashPaymentAccount",
  LOAN: "Loan",
  MOMA: "MoneyMarketAccount",
  ODFT: "OverdraftAccount",
  OTHR: "OtherAccount",
  SLRY: "SalaryAccount",
  SVGS: "SavingsAccount",
  TAXE: "TaxAccount",
  TRAN: "TransactingAccount",
};

export function proprietaryCashAccountType(isoCode: string): string {
  return Object.hasOwn(PROPRIETARY_CASH_ACCOUNT_TYPES, isoCode)
    ? PROPRIETARY_CASH_ACCOUNT_TYPES[isoCode]!
    : isoCode;
}
