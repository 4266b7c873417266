/**
 * The bodies of the sandbox operations that create mock customers, card accounts and account
 * transactions (SPEC 4.5 names them; their shapes are this bank's own, kept close to Berlin Group):
 *
 * POST /v1/sandbox/customers
 *   { "customerType": "PRIVATE" | "CORPORATE", "customerName": "Anne Berg", "accounts": 2 }
 *   accounts: how many mock accounts, 1 to 10, default 2.
 *
 * POST /v1/sandbox/card-accounts
 *   { "customerId": "…", "currency": "NOK", "name": "Visa Anne", "creditLimit": "20000.00" }
 *   currency (SPEC 2.2 table), name (at most 70 characters, SPEC 8) and creditLimit are optional.
 *
 * POST /v1/sandbox/accounts/{mockAccountId}/transactions: a booked transaction as the lists show
 * one, without its id:
 *   { "transactionAmount": { "currency": "NOK", "amount": "-125.50" },
 *     "creditorName": "…", "creditorAccount": { "bban": "…" },   (a debit: who is paid)
 *     "debtorName": "…", "debtorAccount": { "bban": "…" },       (a credit: who pays)
 *     "remittanceInformationUnstructured": "…", "bookingDate": "2026-08-13",
 *     "valueDate": "2026-08-13", "proprietaryBankTransactionCode": "OVERFORING" }
 *   A negative amount is a debit, whose debtor is the account itself: a debtorAccount naming
 *   another account is refused (SPEC 4.5). A credit names its debtor. bookingDate defaults to
 *   today and must not lie after it; valueDate defaults to bookingDate.
 */

import {
  currencyCode,
  describe,
  isObject,
  type JsonObject,
  member,
  optionalDate,
  optionalObject,
  optionalString,
  type Parsed,
  parsing,
  pathOf,
  refuse,
  requiredObject,
  requiredString,
} from "./input-fields.js";
import type { CustomerType, Money } from "./model.js";
import { parsePositiveAmount } from "./money.js";

/** SPEC 8: account and card account names. */
export const MAX_NAME_LENGTH = 70;
export const MAX_MOCK_ACCOUNTS = 10;
const DEFAULT_MOCK_ACCOUNTS = 2;
const MAX_REMITTANCE = 140;
const BBAN = /^\d{11}$/;

function bodyObject(body: unknown, fields: string): JsonObject {
  if (!isObject(body)) refuse(`The body must be a JSON object with ${fields}; got ${describe(body)}`);
  return body;
}

export interface CustomerInput {
  readonly customerType: CustomerType;
  readonly customerName: string;
  readonly accounts: number;
}

export function parseCustomerInput(body: unknown): Parsed<CustomerInput> {
  return parsing(() => {
    const object = bodyObject(body, "customerType, customerName and optionally accounts");
    const customerType = requiredString(object, "", "customerType", { hint: '"PRIVATE" or "CORPORATE"' });
    if (customerType !== "PRIVATE" && customerType !== "CORPORATE") {
      refuse(`customerType must be "PRIVATE" or "CORPORATE"; got ${describe(customerType)}`);
    }
    const customerName = requiredString(object, "", "customerName", {
      hint: `the customer's name, at most ${MAX_NAME_LENGTH} characters, such as "Anne Berg"`,
      maxLength: MAX_NAME_LENGTH,
    });
    const accounts = member(object, "accounts") ?? DEFAULT_MOCK_ACCOUNTS;
    if (
      typeof accounts !== "number" ||
      !Number.isInteger(accounts) ||
      accounts < 1 ||
      accounts > MAX_MOCK_ACCOUNTS
    ) {
      refuse(
        `accounts must be a whole number from 1 to ${MAX_MOCK_ACCOUNTS} (default ${DEFAULT_MOCK_ACCOUNTS}); got ${describe(accounts)}`,
      );
    }
    return { customerType, customerName, accounts };
  });
}

export interface CardAccountInput {
  readonly customerId: string;
  readonly currency: string;
  readonly name: string | undefined;
  readonly creditLimitMinor: number;
}

const DEFAULT_CREDIT_LIMIT_MINOR = 20_000_00;

export function parseCardAccountInput(body: unknown): Parsed<CardAccountInput> {
  return parsing(() => {
    const object = bodyObject(body, "customerId and optionally currency, name and creditLimit");
    const customerId = requiredString(object, "", "customerId", {
      hint: "the customerId of a sandbox customer (GET /v1/sandbox/customers lists them)",
    });
    const currency = member(object, "currency") == null ? "NOK" : currencyCode(object, "", "currency");
    const name = optionalString(object, "", "name", {
      hint: `a name of at most ${MAX_NAME_LENGTH} characters`,
      maxLength: MAX_NAME_LENGTH,
    });
    const limitText = optionalString(object, "", "creditLimit", {
      hint: 'a positive decimal string such as "20000.00"',
    });
    const creditLimitMinor =
      limitText === undefined ? DEFAULT_CREDIT_LIMIT_MINOR : parsePositiveAmount(limitText);
    if (creditLimitMinor === undefined) {
      refuse(
        `creditLimit must be a positive decimal string with at most 2 decimals, such as "20000.00"; got ${describe(limitText)}`,
      );
    }
    return { customerId, currency, name, creditLimitMinor };
  });
}

/** The account a transaction is booked on, as far as reading the body needs it. */
export interface TargetAccount {
  readonly bban: string;
  readonly currency: string;
}

export interface AccountTransactionInput {
  /** Signed: negative for a debit. */
  readonly amount: Money;
  readonly counterpartyName: string;
  readonly counterpartyBban: string | undefined;
  readonly remittance: string;
  readonly bookingDate: string;
  readonly valueDate: string;
  readonly proprietaryBankTransactionCode: string;
}

const SIGNED_AMOUNT =
  'a non-zero decimal string with at most 2 decimals, negative for a debit, such as "-125.50"';

export function parseAccountTransactionInput(
  body: unknown,
  account: TargetAccount,
  today: string,
): Parsed<AccountTransactionInput> {
  return parsing(() => {
    const object = bodyObject(body, "transactionAmount and a creditorName (debit) or debtorName (credit)");
    const money = requiredObject(
      object,
      "",
      "transactionAmount",
      `an object {"currency": "${account.currency}", "amount": "-125.50"}`,
    );
    const currency = currencyCode(money, "transactionAmount", "currency");
    if (currency !== account.currency) {
      refuse(
        `transactionAmount.currency must be ${account.currency}, the account's currency; got ${describe(currency)}`,
      );
    }
    const amountText = requiredString(money, "transactionAmount", "amount", { hint: SIGNED_AMOUNT });
    const negative = amountText.startsWith("-");
    const magnitude = parsePositiveAmount(negative ? amountText.slice(1) : amountText);
    if (magnitude === undefined)
      refuse(`transactionAmount.amount must be ${SIGNED_AMOUNT}; got ${describe(amountText)}`);

    // Debit: the account pays the creditor. Credit: the debtor pays the account.
    const own = negative ? "debtor" : "creditor";
    const other = negative ? "creditor" : "debtor";
    const ownBban = bbanOf(object, `${own}Account`);
    if (ownBban !== undefined && ownBban !== account.bban) {
      refuse(
        negative
          ? `debtorAccount.bban ${ownBban} is another account: a debit on this account has the account itself (${account.bban}) as debtor; leave debtorAccount out, or send a positive amount with debtorAccount to book a credit from ${ownBban}`
          : `creditorAccount.bban ${ownBban} is another account: a credit on this account has the account itself (${account.bban}) as creditor; leave creditorAccount out`,
      );
    }
    const counterpartyName = requiredString(object, "", `${other}Name`, {
      hint: `the name of the ${other} of this ${negative ? "debit" : "credit"}, at most ${MAX_NAME_LENGTH} characters`,
      maxLength: MAX_NAME_LENGTH,
    });
    const counterpartyBban = bbanOf(object, `${other}Account`);
    if (counterpartyBban === account.bban) {
      refuse(`${other}Account.bban is this account itself: a transaction needs another party`);
    }
    const remittance =
      optionalString(object, "", "remittanceInformationUnstructured", {
        hint: `a text of at most ${MAX_REMITTANCE} characters`,
        maxLength: MAX_REMITTANCE,
      }) ?? "";
    const bookingDate = optionalDate(object, "", "bookingDate", today) ?? today;
    if (bookingDate > today) {
      refuse(
        `bookingDate ${bookingDate} lies after today (${today}, UTC): send ${today} or earlier, or leave it out for today`,
      );
    }
    const valueDate = optionalDate(object, "", "valueDate", today) ?? bookingDate;
    const proprietaryBankTransactionCode =
      optionalString(object, "", "proprietaryBankTransactionCode", {
        hint: 'a bank transaction code such as "OVERFORING"',
        maxLength: 35,
      }) ?? "OVERFORING";
    return {
      amount: { minor: negative ? -magnitude : magnitude, currency },
      counterpartyName,
      counterpartyBban,
      remittance,
      bookingDate,
      valueDate,
      proprietaryBankTransactionCode,
    };
  });
}

function bbanOf(object: JsonObject, name: string): string | undefined {
  const account = optionalObject(object, "", name, '{"bban": "12345678903"}');
  if (account === undefined) return undefined;
  const bban = member(account, "bban");
  if (typeof bban !== "string" || !BBAN.test(bban)) {
    refuse(
      `${pathOf(name, "bban")} must be an 11-digit Norwegian account number string; got ${describe(bban)}`,
    );
  }
  return bban;
}
