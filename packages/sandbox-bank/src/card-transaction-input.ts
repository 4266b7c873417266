/**
 * The body of POST /v1/sandbox/card-accounts/{id}/transactions (SPEC 2.2, 4.3): an array of card
 * transactions, every rule of SPEC 2.2 checked. Pure: the clock's time and the ids the card account
 * already holds come in as arguments. A refusal names the element's index and the field.
 *
 * Where the SPEC leaves a choice open:
 * - `amount` ({currency, amount int32}) is a whole number of minor units, hundredths of the
 *   currency unit (øre, cents) whatever the currency: an int32 cannot carry decimals, and card
 *   purchases have them. Negative for a purchase (money leaves the card account), as the lists show
 *   it; the lists show it as a decimal string (-12350 → "-123.50", SPEC 4 General).
 * - SPEC 2.2 and 4.3 speak of a value date, but 2.2 has no valueDate field: transactionDate is the
 *   value date, so bookingDate must not be later than transactionDate.
 * - Dates are calendar dates (YYYY-MM-DD). A date "lies before the current time" when it is not
 *   after today (UTC, by the bank's clock): today's purchases are allowed.
 * - Only cardAcceptorAddress.country is marked required; street, buildingNumber, postalCode and
 *   city are optional strings.
 * - maskedPan is required and checked as a string; the lists show the card account's own.
 * - cardTransactionId must be unique on the card account, so that each id names one transaction.
 * - transactionAmount and markupFee are what the card account is charged, so they are in its
 *   currency: its balances add them up, and a sum of kroner and euros would mean nothing.
 */

import { isoDate } from "./dates.js";
import {
  currencyCode,
  describe,
  isObject,
  type JsonObject,
  member,
  optionalObject,
  optionalString,
  type Parsed,
  parsing,
  pathOf,
  refuse,
  requiredDate,
  requiredObject,
  requiredString,
  within,
} from "./input-fields.js";
import { COUNTRY_CODES } from "./iso-codes.js";
import type { CardAcceptorAddress, CardTransaction, CurrencyExchange, Money } from "./model.js";

export interface CardTransactionLimits {
  /** The bank's clock: dates must not lie after its day. */
  readonly nowMs: number;
  /** cardTransactionIds the card account already holds. */
  readonly existingIds: ReadonlySet<string>;
  /** The card account's currency: what it is charged (transactionAmount, markupFee) is in it. */
  readonly currency: string;
}

export const MAX_STREET_LENGTH = 70;
export const MAX_COUNTRY_LENGTH = 2;
const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

const MONEY_SHAPE =
  'an object {"currency": "NOK", "amount": -12350} (amount in minor units: -12350 is -123.50)';
const AMOUNT_HINT = `a whole number of minor units within int32 (${INT32_MIN} to ${INT32_MAX}), such as -12350 for -123.50`;
const EXCHANGE_SHAPE =
  "an object {sourceCurrency, targetCurrency, unitCurrency, exchangeRate, quotationDate}";
const ADDRESS_SHAPE =
  'an object {"country": "NO"}, with street, buildingNumber, postalCode and city as optional strings';
const COUNTRY_HINT = 'an ISO 3166-1 alpha-2 country code of the SPEC 2.2 table, in upper case, such as "NO"';

export function parseCardTransactions(
  body: unknown,
  limits: CardTransactionLimits,
): Parsed<readonly CardTransaction[]> {
  return parsing(() => {
    if (!Array.isArray(body)) {
      refuse(`The body must be a JSON array of card transactions (SPEC 2.2); got ${describe(body)}`);
    }
    if (body.length === 0) refuse("The body is an empty array: send at least one card transaction");
    const today = isoDate(limits.nowMs);
    const firstIndexOf = new Map<string, number>();
    return body.map((element: unknown, index) =>
      within(`Card transaction [${index}]: `, () => {
        const transaction = readTransaction(element, today, limits.currency);
        const id = transaction.cardTransactionId;
        if (limits.existingIds.has(id)) {
          refuse(`cardTransactionId ${JSON.stringify(id)} is already on this card account: send a new id`);
        }
        const earlier = firstIndexOf.get(id);
        if (earlier !== undefined) {
          refuse(
            `cardTransactionId ${JSON.stringify(id)} is also that of card transaction [${earlier}]: send a unique id per transaction`,
          );
        }
        firstIndexOf.set(id, index);
        return transaction;
      }),
    );
  });
}

function readTransaction(element: unknown, today: string, cardCurrency: string): CardTransaction {
  if (!isObject(element)) {
    refuse(
      `the element must be an object with the SPEC 2.2 card transaction fields; got ${describe(element)}`,
    );
  }
  const cardTransactionId = requiredString(element, "", "cardTransactionId", {
    hint: 'the transaction\'s id as a string, such as "c0ffee01"',
  });
  const terminalId = requiredString(element, "", "terminalId", {
    hint: 'the card terminal\'s id as a string, such as "12345678"',
  });
  const bookingDate = notAfterToday(requiredDate(element, "", "bookingDate", today), "bookingDate", today);
  const transactionDate = notAfterToday(
    requiredDate(element, "", "transactionDate", today),
    "transactionDate",
    today,
  );
  if (bookingDate > transactionDate) {
    refuse(
      `bookingDate ${bookingDate} is later than transactionDate ${transactionDate}, which is the value date: send a bookingDate on or before ${transactionDate}`,
    );
  }
  const transactionAmount = charged(money(element, "transactionAmount"), "transactionAmount", cardCurrency);
  const originalAmount = money(element, "originalAmount");
  const merchantCategoryCode = requiredString(element, "", "merchantCategoryCode", {
    hint: 'a merchant category code as a string, such as "5411"',
  });
  const currencyExchange = exchange(element, today);
  const markupFee = charged(money(element, "markupFee"), "markupFee", cardCurrency);
  const markupFeePercentage = requiredString(element, "", "markupFeePercentage", {
    hint: 'a percentage as a string, such as "1.75"',
  });
  const cardAcceptorId = requiredString(element, "", "cardAcceptorId", {
    hint: 'the merchant\'s id as a string, such as "123456789012345"',
  });
  const cardAcceptorAddress = address(element);
  requiredString(element, "", "maskedPan", { hint: 'the masked card number, such as "492500******1234"' });
  const transactionDetails = requiredString(element, "", "transactionDetails", {
    hint: 'a description as a string, such as "Kiosken Stasjonen, Oslo"',
  });
  const invoiced = requiredString(element, "", "invoiced", { hint: 'the string "true" or "false"' });
  if (invoiced !== "true" && invoiced !== "false") {
    refuse(`invoiced must be the string "true" or "false"; got ${describe(invoiced)}`);
  }
  const proprietaryBankTransactionCode = requiredString(element, "", "proprietaryBankTransactionCode", {
    hint: 'a bank transaction code as a string, such as "VARE"',
  });
  return {
    cardTransactionId,
    terminalId,
    bookingDate,
    transactionDate,
    transactionAmount,
    originalAmount,
    currencyExchange,
    markupFee,
    markupFeePercentage,
    merchantCategoryCode,
    cardAcceptorId,
    cardAcceptorAddress,
    transactionDetails,
    invoiced: invoiced === "true",
    proprietaryBankTransactionCode,
  };
}

function notAfterToday(date: string, path: string, today: string): string {
  if (date > today) {
    refuse(
      `${path} ${date} lies after today (${today}, UTC): it must lie before the current time, so send ${today} or earlier`,
    );
  }
  return date;
}

function money(object: JsonObject, name: string): Money {
  const value = requiredObject(object, "", name, MONEY_SHAPE);
  const currency = currencyCode(value, name, "currency");
  const path = pathOf(name, "amount");
  const amount = member(value, "amount");
  if (amount === undefined) refuse(`${path} is required: send ${AMOUNT_HINT}`);
  if (typeof amount !== "number" || !Number.isInteger(amount) || amount < INT32_MIN || amount > INT32_MAX) {
    refuse(`${path} must be ${AMOUNT_HINT}; got ${describe(amount)}`);
  }
  return { minor: amount, currency };
}

/** What the card account is charged is in its own currency; the merchant's is originalAmount's. */
function charged(amount: Money, name: string, cardCurrency: string): Money {
  if (amount.currency !== cardCurrency) {
    refuse(
      `${name}.currency must be ${cardCurrency}, the card account's currency (what the card is charged); the merchant's currency goes in originalAmount; got ${describe(amount.currency)}`,
    );
  }
  return amount;
}

function exchange(object: JsonObject, today: string): CurrencyExchange | undefined {
  const name = "currencyExchange";
  const value = optionalObject(object, "", name, EXCHANGE_SHAPE);
  if (value === undefined) return undefined;
  return {
    sourceCurrency: currencyCode(value, name, "sourceCurrency"),
    targetCurrency: currencyCode(value, name, "targetCurrency"),
    unitCurrency: currencyCode(value, name, "unitCurrency"),
    exchangeRate: requiredString(value, name, "exchangeRate", {
      hint: 'the rate as a string, such as "11.6420"',
    }),
    quotationDate: requiredDate(value, name, "quotationDate", today),
  };
}

function address(object: JsonObject): CardAcceptorAddress {
  const name = "cardAcceptorAddress";
  const value = requiredObject(object, "", name, ADDRESS_SHAPE);
  const text = { hint: "a string" };
  const street = optionalString(value, name, "street", {
    hint: `a string of at most ${MAX_STREET_LENGTH} characters`,
    maxLength: MAX_STREET_LENGTH,
  });
  const buildingNumber = optionalString(value, name, "buildingNumber", text);
  const postalCode = optionalString(value, name, "postalCode", text);
  const city = optionalString(value, name, "city", text);
  const path = pathOf(name, "country");
  const country = requiredString(value, name, "country", { hint: COUNTRY_HINT });
  if (country.length > MAX_COUNTRY_LENGTH) {
    refuse(
      `${path} is ${country.length} characters long: send at most ${MAX_COUNTRY_LENGTH}, ${COUNTRY_HINT}; got ${describe(country)}`,
    );
  }
  if (!COUNTRY_CODES.has(country)) refuse(`${path} must be ${COUNTRY_HINT}; got ${describe(country)}`);
  return { street, buildingNumber, postalCode, city, country };
}
