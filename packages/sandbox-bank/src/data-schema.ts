/**
 * What a state file's `data` must be for the bank to serve it: the shape of BankData (model.ts)
 * and the links the catalogue relies on (owners, engagements, unique ids, a PRIVATE customer).
 */

import { z } from "zod";
import { isIsoDate } from "./dates.js";
import type { BankData } from "./model.js";

const text = z.string();
const date = z.string().refine(isIsoDate, "expected a date written YYYY-MM-DD");
const money = z.object({ minor: z.int(), currency: text });

const bookedTransaction = z.object({
  transactionId: text,
  bookingDate: date,
  valueDate: date,
  amount: money,
  counterpartyName: text,
  counterpartyBban: text.optional(),
  remittance: text,
  proprietaryBankTransactionCode: text,
  batch: z
    .array(z.object({ amount: money, creditorName: text, creditorBban: text, remittance: text }))
    .optional(),
});

const account = z.object({
  resourceId: text,
  bban: text,
  currency: text,
  name: text,
  product: text,
  cashAccountType: text,
  ownerCustomerId: text,
  bookedBalanceMinor: z.int(),
  booked: z.array(bookedTransaction),
  pending: z.array(z.object({ valueDate: date, amount: money, counterpartyName: text, remittance: text })),
});

const cardTransaction = z.object({
  cardTransactionId: text,
  terminalId: text,
  bookingDate: date.optional(),
  transactionDate: date,
  transactionAmount: money,
  originalAmount: money,
  currencyExchange: z
    .object({
      sourceCurrency: text,
      targetCurrency: text,
      unitCurrency: text,
      exchangeRate: text,
      quotationDate: date,
    })
    .optional(),
  markupFee: money,
  markupFeePercentage: text,
  merchantCategoryCode: text,
  cardAcceptorId: text,
  cardAcceptorAddress: z.object({
    street: text.optional(),
    buildingNumber: text.optional(),
    postalCode: text.optional(),
    city: text.optional(),
    country: text,
  }),
  transactionDetails: text,
  invoiced: z.boolean(),
  proprietaryBankTransactionCode: text,
});

const cardAccount = z.object({
  resourceId: text,
  maskedPan: text,
  currency: text,
  name: text,
  product: text,
  ownerCustomerId: text,
  creditLimitMinor: z.int(),
  booked: z.array(cardTransaction),
  pending: z.array(cardTransaction),
});

const customer = z.object({
  customerId: text,
  customerNumber: text,
  customerType: z.enum(["PRIVATE", "CORPORATE"]),
  customerName: text,
  agreements: z.array(z.object({ id: text, name: text, engagements: z.array(text) })),
  accounts: z.array(account),
  cardAccounts: z.array(cardAccount),
});

const bankData = z.object({ today: date, customers: z.array(customer) });

/** The data, or a text saying what is wrong and where (`customers[0].accounts[1].bban: …`). */
export function parseBankData(value: unknown): BankData | string {
  const result = bankData.safeParse(value);
  if (!result.success) {
    return result.error.issues
      .slice(0, 3)
      .map((issue) => `${pathText(issue.path)}: ${issue.message}`)
      .join("; ");
  }
  // JSON has no undefined: an absent optional member reads as undefined, as the model's `T | undefined` members.
  const data = result.data as BankData;
  return linkProblem(data) ?? data;
}

function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, key) => (typeof key === "number" ? `${text}[${key}]` : `${text}.${String(key)}`),
    "data",
  );
}

function linkProblem(data: BankData): string | undefined {
  if (!data.customers.some((each) => each.customerType === "PRIVATE")) {
    return "data.customers has no PRIVATE customer; the bank needs one";
  }
  const seen = new Set<string>();
  const once = (kind: string, value: string): string | undefined => {
    const key = `${kind} ${value}`;
    if (seen.has(key)) return `${kind} ${value} occurs twice`;
    seen.add(key);
    return undefined;
  };
  for (const each of data.customers) {
    // customerId and customerNumber share one namespace: PSU-ID may be either.
    const problem = once("customer", each.customerId) ?? once("customer", each.customerNumber);
    if (problem !== undefined) return problem;
    for (const resource of [...each.accounts, ...each.cardAccounts]) {
      const clash = once("resourceId", resource.resourceId);
      if (clash !== undefined) return clash;
      if (resource.ownerCustomerId !== each.customerId) {
        return `resource ${resource.resourceId} is listed under customer ${each.customerId} but owned by ${resource.ownerCustomerId}`;
      }
    }
    for (const own of each.accounts) {
      const clash = once("bban", own.bban);
      if (clash !== undefined) return clash;
    }
    const accountIds = new Set(each.accounts.map((own) => own.resourceId));
    for (const agreement of each.agreements) {
      const foreign = agreement.engagements.find((id) => !accountIds.has(id));
      if (foreign !== undefined) {
        return `agreement ${agreement.id} of customer ${each.customerId} grants ${foreign}, which is not one of its accounts`;
      }
    }
  }
  return undefined;
}
