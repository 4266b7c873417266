/**
 * Every rule of SPEC 2.2 for the card transactions of POST /v1/sandbox/card-accounts/{id}/transactions:
 * one row per rule, each a valid baseline with one defect, refused with a text that names the
 * element's index and the field and says what to send.
 */

import { describe, expect, it } from "vitest";
import { parseCardTransactions } from "../src/card-transaction-input.js";
import { COUNTRY_CODE_TABLE, COUNTRY_CODES, CURRENCY_CODE_TABLE, CURRENCY_CODES } from "../src/iso-codes.js";
import { NOW, TODAY } from "./helpers.js";

type Body = Record<string, unknown>;

/** A foreign purchase with every field, valid on 2026-08-13 (TODAY). */
function valid(id = "tx-1"): Body {
  return {
    cardTransactionId: id,
    terminalId: "12345678",
    bookingDate: "2026-08-10",
    transactionDate: "2026-08-11",
    transactionAmount: { currency: "NOK", amount: -12_557 },
    originalAmount: { currency: "EUR", amount: -1_060 },
    merchantCategoryCode: "5812",
    currencyExchange: {
      sourceCurrency: "EUR",
      targetCurrency: "NOK",
      unitCurrency: "EUR",
      exchangeRate: "11.6420",
      quotationDate: "2026-08-11",
    },
    markupFee: { currency: "NOK", amount: 216 },
    markupFeePercentage: "1.75",
    cardAcceptorId: "123456789012345",
    cardAcceptorAddress: {
      street: "Rue du Port",
      buildingNumber: "12",
      postalCode: "75001",
      city: "Paris",
      country: "FR",
    },
    maskedPan: "492500******1234",
    transactionDetails: "Café du Port, Paris",
    invoiced: "false",
    proprietaryBankTransactionCode: "VARE",
  };
}

const noIds = new Set<string>();

function parse(body: unknown, existingIds: ReadonlySet<string> = noIds) {
  return parseCardTransactions(body, { nowMs: NOW, existingIds, currency: "NOK" });
}

/** Sets (or with `undefined`, removes) the member at a dotted path of a copy of the baseline. */
function withField(path: string, value: unknown): Body {
  const body = structuredClone(valid("tx-2"));
  const keys = path.split(".");
  let target = body as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (value === undefined) delete target[last];
  else target[last] = value;
  return body;
}

const REQUIRED = [
  "cardTransactionId",
  "terminalId",
  "bookingDate",
  "transactionDate",
  "transactionAmount",
  "originalAmount",
  "merchantCategoryCode",
  "markupFee",
  "markupFeePercentage",
  "cardAcceptorId",
  "cardAcceptorAddress",
  "maskedPan",
  "transactionDetails",
  "invoiced",
  "proprietaryBankTransactionCode",
] as const;

interface Row {
  readonly rule: string;
  readonly field: string;
  readonly value: unknown;
  /** The text also says this (what was wrong or what to send). */
  readonly says: RegExp;
}

const INT32_MAX = 2_147_483_647;
const INT32_MIN = -2_147_483_648;

const REFUSED: readonly Row[] = [
  // Required fields (SPEC 2.2 "Required: yes").
  ...REQUIRED.map((field) => ({
    rule: `${field} is required`,
    field,
    value: undefined,
    says: /is required/,
  })),
  { rule: "required strings are not empty", field: "terminalId", value: "  ", says: /must not be empty/ },
  // Types.
  { rule: "cardTransactionId is a string", field: "cardTransactionId", value: 42, says: /number 42/ },
  { rule: "terminalId is a string", field: "terminalId", value: 12_345_678, says: /number/ },
  { rule: "merchantCategoryCode is a string", field: "merchantCategoryCode", value: 5812, says: /"5411"/ },
  { rule: "markupFeePercentage is a string", field: "markupFeePercentage", value: 1.75, says: /"1.75"/ },
  { rule: "cardAcceptorId is a string", field: "cardAcceptorId", value: null, says: /null/ },
  { rule: "maskedPan is a string", field: "maskedPan", value: ["4925"], says: /an array/ },
  { rule: "transactionDetails is a string", field: "transactionDetails", value: {}, says: /an object/ },
  {
    rule: "proprietaryBankTransactionCode is a string",
    field: "proprietaryBankTransactionCode",
    value: 1,
    says: /"VARE"/,
  },
  { rule: "bookingDate is a string", field: "bookingDate", value: 20_260_810, says: /YYYY-MM-DD/ },
  {
    rule: "transactionAmount is an object",
    field: "transactionAmount",
    value: "-125.57",
    says: /"amount": -12350/,
  },
  {
    rule: "cardAcceptorAddress is an object",
    field: "cardAcceptorAddress",
    value: "Paris",
    says: /"country": "NO"/,
  },
  {
    rule: "currencyExchange is an object when present",
    field: "currencyExchange",
    value: [],
    says: /sourceCurrency/,
  },
  // Amounts {currency string, amount int32}.
  {
    rule: "transactionAmount.amount is required",
    field: "transactionAmount.amount",
    value: undefined,
    says: /minor units/,
  },
  {
    rule: "transactionAmount.currency is required",
    field: "transactionAmount.currency",
    value: undefined,
    says: /is required/,
  },
  {
    rule: "amount is a number, not a string",
    field: "transactionAmount.amount",
    value: "-125.57",
    says: /minor units/,
  },
  {
    rule: "amount is whole (minor units)",
    field: "originalAmount.amount",
    value: -10.6,
    says: /whole number/,
  },
  {
    rule: "amount is at most int32 max",
    field: "markupFee.amount",
    value: INT32_MAX + 1,
    says: /2147483647/,
  },
  {
    rule: "amount is at least int32 min",
    field: "transactionAmount.amount",
    value: INT32_MIN - 1,
    says: /-2147483648/,
  },
  {
    rule: "markupFee.currency is required",
    field: "markupFee.currency",
    value: undefined,
    says: /is required/,
  },
  // Currency codes: the SPEC 2.2 table only.
  {
    rule: "transactionAmount.currency is in the table",
    field: "transactionAmount.currency",
    value: "XYZ",
    says: /"XYZ"/,
  },
  {
    rule: "a currency code is upper case",
    field: "originalAmount.currency",
    value: "eur",
    says: /upper case/,
  },
  {
    rule: "a current ISO code not in the table is refused",
    field: "originalAmount.currency",
    value: "ZWL",
    says: /SPEC 2.2 table/,
  },
  { rule: "markupFee.currency is in the table", field: "markupFee.currency", value: "NKR", says: /"NOK"/ },
  // What the card account is charged is in its currency, so its balances never add up two currencies.
  {
    rule: "transactionAmount is in the card account's currency",
    field: "transactionAmount.currency",
    value: "EUR",
    says: /must be NOK, the card account's currency/,
  },
  {
    rule: "markupFee is in the card account's currency",
    field: "markupFee.currency",
    value: "SEK",
    says: /must be NOK, the card account's currency/,
  },
  // currencyExchange: every member required when present, currencies from the table, quotationDate a date.
  ...["sourceCurrency", "targetCurrency", "unitCurrency", "exchangeRate", "quotationDate"].map((member) => ({
    rule: `currencyExchange.${member} is required`,
    field: `currencyExchange.${member}`,
    value: undefined,
    says: /is required/,
  })),
  ...["sourceCurrency", "targetCurrency", "unitCurrency"].map((member) => ({
    rule: `currencyExchange.${member} is in the table`,
    field: `currencyExchange.${member}`,
    value: "EURO",
    says: /ISO 4217/,
  })),
  {
    rule: "exchangeRate is a string",
    field: "currencyExchange.exchangeRate",
    value: 11.642,
    says: /"11.6420"/,
  },
  {
    rule: "quotationDate is a date",
    field: "currencyExchange.quotationDate",
    value: "11.08.2026",
    says: /YYYY-MM-DD/,
  },
  {
    rule: "quotationDate is a real day",
    field: "currencyExchange.quotationDate",
    value: "2026-02-30",
    says: /YYYY-MM-DD/,
  },
  // Country: the 3166 table, at most 2 characters.
  {
    rule: "country is required",
    field: "cardAcceptorAddress.country",
    value: undefined,
    says: /is required/,
  },
  {
    rule: "country has at most 2 characters",
    field: "cardAcceptorAddress.country",
    value: "NOR",
    says: /at most 2/,
  },
  { rule: "country is in the table", field: "cardAcceptorAddress.country", value: "XX", says: /"XX"/ },
  { rule: "country is upper case", field: "cardAcceptorAddress.country", value: "fr", says: /upper case/ },
  // Address: street at most 70 characters; the optional members are strings.
  {
    rule: "street has at most 70 characters",
    field: "cardAcceptorAddress.street",
    value: "x".repeat(71),
    says: /71 characters long: send at most 70/,
  },
  { rule: "street is a string", field: "cardAcceptorAddress.street", value: 12, says: /at most 70/ },
  { rule: "city is a string", field: "cardAcceptorAddress.city", value: true, says: /boolean/ },
  {
    rule: "buildingNumber is a string",
    field: "cardAcceptorAddress.buildingNumber",
    value: 12,
    says: /number 12/,
  },
  { rule: "postalCode is a string", field: "cardAcceptorAddress.postalCode", value: 150, says: /number 150/ },
  // Dates.
  { rule: "bookingDate is a date", field: "bookingDate", value: "10.08.2026", says: /YYYY-MM-DD/ },
  { rule: "bookingDate is a real day", field: "bookingDate", value: "2026-02-30", says: /YYYY-MM-DD/ },
  {
    rule: "bookingDate lies before the current time",
    field: "bookingDate",
    value: "2026-08-14",
    says: /lies after today/,
  },
  {
    rule: "transactionDate is a date",
    field: "transactionDate",
    value: "2026-08-11T10:00:00Z",
    says: /YYYY-MM-DD/,
  },
  {
    rule: "transactionDate lies before the current time",
    field: "transactionDate",
    value: "2026-09-01",
    says: /lies after today/,
  },
  {
    rule: "bookingDate is not later than the value date (transactionDate)",
    field: "bookingDate",
    value: "2026-08-12",
    says: /later than transactionDate 2026-08-11, which is the value date/,
  },
  // invoiced: the string "true" or "false".
  { rule: "invoiced is a string, not a boolean", field: "invoiced", value: false, says: /the boolean false/ },
  { rule: 'invoiced is "true" or "false"', field: "invoiced", value: "yes", says: /"yes"/ },
  { rule: "invoiced is lower case", field: "invoiced", value: "TRUE", says: /"TRUE"/ },
  // SPEC 1.3: characters the core cannot process.
  { rule: "no emoji in texts", field: "transactionDetails", value: "Kiosk 🍦", says: /cannot process/ },
];

describe("parseCardTransactions: every SPEC 2.2 rule", () => {
  it("accepts the baseline and maps every field", () => {
    const result = parse([valid()]);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toEqual([
      {
        cardTransactionId: "tx-1",
        terminalId: "12345678",
        bookingDate: "2026-08-10",
        transactionDate: "2026-08-11",
        transactionAmount: { minor: -12_557, currency: "NOK" },
        originalAmount: { minor: -1_060, currency: "EUR" },
        currencyExchange: {
          sourceCurrency: "EUR",
          targetCurrency: "NOK",
          unitCurrency: "EUR",
          exchangeRate: "11.6420",
          quotationDate: "2026-08-11",
        },
        markupFee: { minor: 216, currency: "NOK" },
        markupFeePercentage: "1.75",
        merchantCategoryCode: "5812",
        cardAcceptorId: "123456789012345",
        cardAcceptorAddress: {
          street: "Rue du Port",
          buildingNumber: "12",
          postalCode: "75001",
          city: "Paris",
          country: "FR",
        },
        transactionDetails: "Café du Port, Paris",
        invoiced: false,
        proprietaryBankTransactionCode: "VARE",
      },
    ]);
  });

  it.each(REFUSED.map((row) => [row.rule, row] as const))("refuses when not so: %s", (_rule, row) => {
    // The defect is in the second element, so the text must name index 1, not 0.
    const result = parse([valid(), withField(row.field, row.value)]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.text).toMatch(/^Card transaction \[1\]: /);
    expect(result.text).toContain(row.field);
    expect(result.text).toMatch(row.says);
    // Says what to send: a hint, an example or the allowed form.
    expect(result.text).toMatch(/send|must be|such as/);
  });

  it.each([
    ["currencyExchange left out", withField("currencyExchange", undefined)],
    ["currencyExchange null", withField("currencyExchange", null)],
    ["an address with only the country", withField("cardAcceptorAddress", { country: "NO" })],
    ["a street of exactly 70 characters", withField("cardAcceptorAddress.street", "x".repeat(70))],
    ["booking and transaction today", { ...valid("tx-2"), bookingDate: TODAY, transactionDate: TODAY }],
    ["bookingDate equal to the value date", { ...valid("tx-2"), bookingDate: "2026-08-11" }],
    ["amounts at the int32 bounds", withField("transactionAmount.amount", INT32_MIN)],
    ["amounts at the int32 bounds (max)", withField("markupFee.amount", INT32_MAX)],
    ['invoiced "true"', withField("invoiced", "true")],
    ["a quotation date in the future (no rule)", withField("currencyExchange.quotationDate", "2027-01-01")],
    ["members the SPEC does not list (ignored)", { ...valid("tx-2"), note: "extra" }],
  ])("accepts %s", (_name, element) => {
    const result = parse([valid(), element]);
    expect(result.ok, result.ok ? "" : result.text).toBe(true);
  });

  it("refuses a body that is not an array, an empty array and an element that is not an object", () => {
    const notArray = parse(valid());
    expect(notArray.ok === false && notArray.text).toMatch(/JSON array of card transactions.*got an object/);
    const empty = parse([]);
    expect(empty.ok === false && empty.text).toMatch(/at least one/);
    const element = parse([valid(), "tx"]);
    expect(element.ok === false && element.text).toMatch(
      /^Card transaction \[1\]: the element must be an object/,
    );
  });

  it("refuses a cardTransactionId used twice in the body or already on the card account", () => {
    const twice = parse([valid("a"), valid("b"), valid("a")]);
    expect(twice.ok === false && twice.text).toMatch(
      /^Card transaction \[2\]: cardTransactionId "a" is also that of card transaction \[0\]/,
    );
    const existing = parse([valid("old")], new Set(["old"]));
    expect(existing.ok === false && existing.text).toMatch(/already on this card account: send a new id/);
  });

  it("never throws, whatever the JSON", () => {
    for (const body of [
      null,
      1,
      "x",
      [null],
      [[]],
      [{ transactionAmount: { amount: {} } }],
      [{ constructor: "x" }],
    ]) {
      expect(parse(body).ok).toBe(false);
    }
  });
});

describe("the SPEC 2.2 code tables", () => {
  it("hold every code of the SPEC's rows once, grouped by first letter", () => {
    for (const [table, set, length, size] of [
      [CURRENCY_CODE_TABLE, CURRENCY_CODES, 3, 162],
      [COUNTRY_CODE_TABLE, COUNTRY_CODES, 2, 249],
    ] as const) {
      const all = table.flatMap(([letters, codes]) => {
        const row = codes.split(/[\s/]+/).filter((each) => each.length > 0);
        for (const code of row) {
          expect(code).toMatch(new RegExp(`^[A-Z]{${length}}$`));
          expect(letters.split(/,\s*/)).toContain(code[0]);
        }
        return row;
      });
      expect(all).toHaveLength(size);
      expect(set.size).toBe(size);
    }
    for (const code of ["NOK", "EUR", "SEK", "BYR", "SPL", "OMR", "YER"])
      expect(CURRENCY_CODES.has(code)).toBe(true);
    for (const code of ["ZWL", "VES", "nok"]) expect(CURRENCY_CODES.has(code)).toBe(false);
    for (const code of ["NO", "SE", "OM", "WF", "YT"]) expect(COUNTRY_CODES.has(code)).toBe(true);
  });
});
