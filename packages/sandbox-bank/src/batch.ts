/**
 * The simulated payment batch (SPEC 1.7): it runs 5 times a day on the bank's clock and processes
 * every payment except periodic ones. A run books each accepted single payment (ACCP → ACSC: a
 * debit on the debtor account, and a credit on the creditor's when it is an account of this bank),
 * and books the pending transactions whose value date has come (SPEC 3 rule 4: pending → booked).
 * Pure: the server applies what a run returns, and catches up on runs whose time passed between
 * two requests (the clock the tests control decides, no timer).
 */

import { createHash } from "node:crypto";
import { isoDate } from "./dates.js";
import type { Account, BankData, BookedTransaction, Customer } from "./model.js";
import type { StoredPayment } from "./payment-store.js";

/** Hours (UTC) of the day's 5 runs. */
export const BATCH_HOURS_UTC: readonly number[] = [5, 8, 11, 14, 17];
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The first run strictly after `afterMs`. */
export function nextBatchAt(afterMs: number): number {
  const day = Math.floor(afterMs / DAY_MS) * DAY_MS;
  for (const offset of [0, DAY_MS]) {
    for (const hour of BATCH_HOURS_UTC) {
      const at = day + offset + hour * HOUR_MS;
      if (at > afterMs) return at;
    }
  }
  throw new Error("unreachable: a day has batch runs");
}

export interface BatchOutcome {
  readonly data: BankData;
  /** The payments the run executed (the caller marks them ACSC). */
  readonly executed: readonly StoredPayment[];
}

/** One run at `atMs` over `payments` (the ones waiting: ACCP). */
export function runBatch(data: BankData, payments: readonly StoredPayment[], atMs: number): BatchOutcome {
  const date = isoDate(atMs);
  const accounts = new Map<string, { account: Account; booked: BookedTransaction[]; balance: number }>();
  for (const customer of data.customers) {
    for (const account of customer.accounts) {
      accounts.set(account.bban, { account, booked: [], balance: account.bookedBalanceMinor });
    }
  }
  const executed: StoredPayment[] = [];
  for (const payment of payments) {
    if (payment.transactionStatus !== "ACCP" || payment.service !== "payments") continue;
    const debtor = accounts.get(payment.request.debtorBban);
    if (debtor === undefined) continue; // the account went with a reset: nothing to book on
    const request = payment.request;
    const creditorBban =
      "creditorBban" in request ? request.creditorBban : request.creditorAccount.identifier;
    const minor = request.amountMinor;
    debtor.booked.push(
      booked(payment, "debit", date, {
        minor: -minor,
        counterpartyName: request.creditorName ?? "",
        counterpartyBban: creditorBban,
      }),
    );
    debtor.balance -= minor;
    const creditor = accounts.get(creditorBban);
    if (creditor !== undefined && request.currency === creditor.account.currency) {
      creditor.booked.push(
        booked(payment, "credit", date, {
          minor,
          counterpartyName: ownerName(data.customers, debtor.account),
          counterpartyBban: request.debtorBban,
        }),
      );
      creditor.balance += minor;
    }
    executed.push(payment);
  }

  let changed = executed.length > 0;
  const customers: Customer[] = data.customers.map((customer) => ({
    ...customer,
    accounts: customer.accounts.map((account) => {
      const entry = accounts.get(account.bban)!;
      const due = account.pending.filter((pending) => pending.valueDate <= date);
      if (entry.booked.length === 0 && due.length === 0) return account;
      changed = true;
      const fromPending = due.map(
        (pending, index): BookedTransaction => ({
          transactionId: stableId(
            `pending\n${account.resourceId}\n${pending.valueDate}\n${index}\n${pending.remittance}`,
          ),
          bookingDate: date,
          valueDate: pending.valueDate,
          amount: pending.amount,
          counterpartyName: pending.counterpartyName,
          counterpartyBban: undefined,
          remittance: pending.remittance,
          proprietaryBankTransactionCode: "PMNT",
          batch: undefined,
        }),
      );
      const pendingMinor = fromPending.reduce((sum, t) => sum + t.amount.minor, 0);
      return {
        ...account,
        bookedBalanceMinor: entry.balance + pendingMinor,
        // Newest first, as the data keeps them.
        booked: [...entry.booked.reverse(), ...fromPending, ...account.booked],
        pending: account.pending.filter((pending) => pending.valueDate > date),
      };
    }),
  }));
  return { data: changed ? { ...data, customers } : data, executed };
}

function booked(
  payment: StoredPayment,
  side: "debit" | "credit",
  date: string,
  parts: { minor: number; counterpartyName: string; counterpartyBban: string },
): BookedTransaction {
  return {
    // Stable per payment and side (SPEC 9.5: stable booked transaction ids).
    transactionId: stableId(`${side}\n${payment.paymentId}`),
    bookingDate: date,
    valueDate: date,
    amount: { minor: parts.minor, currency: payment.request.currency },
    counterpartyName: parts.counterpartyName,
    counterpartyBban: parts.counterpartyBban,
    remittance: payment.request.remittance ?? "",
    proprietaryBankTransactionCode: "PMNT",
    batch: undefined,
  };
}

function ownerName(customers: readonly Customer[], account: Account): string {
  return customers.find((customer) => customer.customerId === account.ownerCustomerId)?.customerName ?? "";
}

function stableId(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 24);
}
