import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CROSS_BORDER_PRODUCT,
  DOMESTIC_PRODUCT,
  isOfferedProduct,
  PAYMENT_PRODUCTS,
  type PaymentKind,
  type PaymentRequest,
  parsePaymentRequest,
  paymentLogicalKey,
} from "../src/payment-body.js";

const TODAY = "2026-09-01";
const BEFORE_ENFORCEMENT = "2026-08-12";
const OMIT = Symbol("omit");

const encode = (value: unknown) =>
  new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));

/** A deep copy of `base` with each dotted path set to its value, or removed when the value is OMIT. */
function withChanges(base: object, changes: Readonly<Record<string, unknown>>): unknown {
  const copy = structuredClone(base) as Record<string, unknown>;
  for (const [path, value] of Object.entries(changes)) {
    const names = path.split(".");
    let target = copy;
    for (const name of names.slice(0, -1)) {
      if (typeof target[name] !== "object" || target[name] === null) target[name] = {};
      target = target[name] as Record<string, unknown>;
    }
    const last = names.at(-1)!;
    if (value === OMIT) delete target[last];
    else target[last] = value;
  }
  return copy;
}

const DOMESTIC = {
  instructedAmount: { amount: "100.00", currency: "NOK" },
  debtorAccount: { bban: "97100000000" },
  creditorAccount: { bban: "12345678903" },
  creditorName: "Per Hansen",
};

const CROSS_BORDER = {
  instructedAmount: { amount: "250.00", currency: "EUR" },
  debtorAccount: { bban: "97100000000", currency: "NOK" },
  creditorAccount: { iban: "SE4550000000058398257466", currency: "SEK" },
  creditorName: "Anna Svensson",
  creditorAgent: "ESSESESS",
  creditorAddress: {
    street: "Kungsgatan",
    buildingNumber: "1",
    postalCode: "11143",
    townName: "Stockholm",
    country: "SE",
  },
  regulatoryReportingCode: "14",
  regulatoryReportingAmount: { amount: "250.00", currency: "EUR" },
  regulatoryReportingInformation: "Goods",
};

const PERIODIC = { ...DOMESTIC, startDate: "2026-10-01", frequency: "Monthly" };

interface Row {
  readonly rule: string;
  readonly changes: Readonly<Record<string, unknown>>;
  readonly today?: string;
  /** Undefined: accepted. */
  readonly refusal?: readonly string[];
}

function check(kind: PaymentKind, product: string, base: object, row: Row): PaymentRequest | undefined {
  const result = parsePaymentRequest(
    kind,
    product,
    encode(withChanges(base, row.changes)),
    row.today ?? TODAY,
  );
  if (row.refusal === undefined) {
    if (!result.ok) throw new Error(`refused: ${result.text}`);
    return result.payment;
  }
  expect(result.ok).toBe(false);
  if (!result.ok) {
    expect(result.status).toBe(400);
    expect(result.code).toBe("FORMAT_ERROR");
    for (const part of row.refusal) expect(result.text).toContain(part);
  }
  return undefined;
}

describe("the products offered", () => {
  it("single: domestic and cross-border; periodic: domestic", () => {
    expect(PAYMENT_PRODUCTS).toEqual({
      single: [DOMESTIC_PRODUCT, CROSS_BORDER_PRODUCT],
      periodic: [DOMESTIC_PRODUCT],
    });
    expect(isOfferedProduct("periodic", CROSS_BORDER_PRODUCT)).toBe(false);
  });

  it.each([
    { kind: "single" as const, product: "sepa-credit-transfers" },
    { kind: "periodic" as const, product: CROSS_BORDER_PRODUCT },
    { kind: "periodic" as const, product: "" },
  ])("$kind $product is refused with 404 PRODUCT_UNKNOWN naming what is offered", ({ kind, product }) => {
    const result = parsePaymentRequest(kind, product, encode(DOMESTIC), TODAY);
    expect(result).toMatchObject({ ok: false, status: 404, code: "PRODUCT_UNKNOWN" });
    if (!result.ok) {
      for (const offered of PAYMENT_PRODUCTS[kind]) expect(result.text).toContain(offered);
    }
  });
});

describe("a single cross-border credit transfer", () => {
  it("is read completely", () => {
    const payment = check("single", CROSS_BORDER_PRODUCT, CROSS_BORDER, { rule: "", changes: {} });
    expect(payment).toEqual({
      kind: "single",
      product: CROSS_BORDER_PRODUCT,
      amount: "250.00",
      amountMinor: 25_000,
      currency: "EUR",
      debtorBban: "97100000000",
      debtorCurrency: "NOK",
      creditorAccount: { scheme: "iban", identifier: "SE4550000000058398257466", currency: "SEK" },
      creditorName: "Anna Svensson",
      creditorAgent: "ESSESESS",
      creditorAddress: {
        street: "Kungsgatan",
        buildingNumber: "1",
        postalCode: "11143",
        townName: "Stockholm",
        country: "SE",
      },
      regulatoryReporting: {
        code: "14",
        amount: { amount: "250.00", amountMinor: 25_000, currency: "EUR" },
        information: "Goods",
      },
      remittance: undefined,
    });
  });

  const rows: readonly Row[] = [
    // accepted
    { rule: "a foreign bban instead of an iban", changes: { creditorAccount: { bban: "12345678" } } },
    {
      rule: "any currency, NOK included",
      changes: { "instructedAmount.currency": "NOK", "regulatoryReportingAmount.currency": "NOK" },
    },
    {
      rule: "the deprecated creditorAddress.city instead of townName",
      changes: { "creditorAddress.townName": OMIT, "creditorAddress.city": "Stockholm" },
    },
    { rule: "townName and city alike", changes: { "creditorAddress.city": "Stockholm" } },
    { rule: "an 11-character BIC", changes: { creditorAgent: "ESSESESSXXX" } },
    { rule: "no regulatoryReportingInformation", changes: { regulatoryReportingInformation: OMIT } },
    {
      rule: "a reported amount below the instructed one",
      changes: { "regulatoryReportingAmount.amount": "100" },
    },
    {
      rule: "a reported amount above, in another currency",
      changes: { regulatoryReportingAmount: { amount: "2800", currency: "NOK" } },
    },
    { rule: "no debtor account currency", changes: { "debtorAccount.currency": OMIT } },
    { rule: "a message to the creditor", changes: { remittanceInformationUnstructured: "Invoice 42" } },
    {
      rule: "no street, building number or postal code",
      changes: { creditorAddress: { townName: "Stockholm", country: "SE" } },
    },
    {
      rule: "before 2026-08-13: no creditor name, address or agent",
      changes: { creditorName: OMIT, creditorAddress: OMIT, creditorAgent: OMIT },
      today: BEFORE_ENFORCEMENT,
    },
    // refused
    {
      rule: "instructedAmount missing",
      changes: { instructedAmount: OMIT },
      refusal: ["instructedAmount must be an object"],
    },
    {
      rule: "amount as a JSON number",
      changes: { "instructedAmount.amount": 250 },
      refusal: ["instructedAmount.amount must be a decimal string"],
    },
    {
      rule: "amount with 3 decimals",
      changes: { "instructedAmount.amount": "1.005" },
      refusal: ["instructedAmount.amount", "at most 2 decimals"],
    },
    {
      rule: "amount zero",
      changes: { "instructedAmount.amount": "0.00" },
      refusal: ["instructedAmount.amount must be a positive"],
    },
    {
      rule: "amount negative",
      changes: { "instructedAmount.amount": "-5" },
      refusal: ["instructedAmount.amount must be a positive"],
    },
    {
      rule: "currency not 3 letters",
      changes: { "instructedAmount.currency": "EURO" },
      refusal: ["instructedAmount.currency", "3 upper-case letters"],
    },
    {
      rule: "currency in lower case",
      changes: { "instructedAmount.currency": "eur" },
      refusal: ["instructedAmount.currency"],
    },
    {
      rule: "debtorAccount missing",
      changes: { debtorAccount: OMIT },
      refusal: ["debtorAccount must be an object"],
    },
    {
      rule: "debtor bban not 11 digits",
      changes: { "debtorAccount.bban": "1234" },
      refusal: ["debtorAccount.bban must be an 11-digit"],
    },
    {
      rule: "debtor currency malformed",
      changes: { "debtorAccount.currency": "kr" },
      refusal: ["debtorAccount.currency"],
    },
    {
      rule: "creditorAccount missing",
      changes: { creditorAccount: OMIT },
      refusal: ["creditorAccount must be an object"],
    },
    {
      rule: "creditorAccount without iban or bban",
      changes: { creditorAccount: { currency: "SEK" } },
      refusal: ["creditorAccount must hold iban"],
    },
    {
      rule: "creditorAccount with both iban and bban",
      changes: { "creditorAccount.bban": "12345678" },
      refusal: ["creditorAccount holds both iban and bban"],
    },
    {
      rule: "iban with a wrong check",
      changes: { "creditorAccount.iban": "SE4550000000058398257467" },
      refusal: ["creditorAccount.iban", "check digits"],
    },
    {
      rule: "iban with spaces",
      changes: { "creditorAccount.iban": "SE45 5000 0000 0583 9825 7466" },
      refusal: ["creditorAccount.iban", "without spaces"],
    },
    {
      rule: "foreign bban with spaces",
      changes: { creditorAccount: { bban: "1234 5678" } },
      refusal: ["creditorAccount.bban"],
    },
    {
      rule: "creditor currency malformed",
      changes: { "creditorAccount.currency": 752 },
      refusal: ["creditorAccount.currency"],
    },
    {
      rule: "creditorName blank",
      changes: { creditorName: "  " },
      refusal: ["creditorName must be a non-empty string"],
    },
    {
      rule: "creditorName over 70 characters",
      changes: { creditorName: "x".repeat(71) },
      refusal: ["creditorName is 71 characters long"],
    },
    {
      rule: "creditorName with an emoji",
      changes: { creditorName: "Anna 😀" },
      refusal: ["creditorName contains a character"],
    },
    {
      rule: "creditorAgent too short to be a BIC",
      changes: { creditorAgent: "ESSESE" },
      refusal: ["creditorAgent", "is not a BIC", "8 or 11"],
    },
    {
      rule: "creditorAgent with an unknown country",
      changes: { creditorAgent: "ESSEXXSS" },
      refusal: ["creditorAgent", "not a country code"],
    },
    {
      rule: "creditorAgent not a string",
      changes: { creditorAgent: { bic: "ESSESESS" } },
      refusal: ["creditorAgent must be"],
    },
    {
      rule: "townName and city differ",
      changes: { "creditorAddress.city": "Göteborg" },
      refusal: ["creditorAddress.townName", "creditorAddress.city", "send townName only"],
    },
    {
      rule: "country not a code",
      changes: { "creditorAddress.country": "Sweden" },
      refusal: ["creditorAddress.country"],
    },
    {
      rule: "regulatoryReportingCode missing",
      changes: { regulatoryReportingCode: OMIT },
      refusal: ["regulatoryReportingCode is required"],
    },
    {
      rule: "regulatoryReportingCode not 2 digits",
      changes: { regulatoryReportingCode: "140" },
      refusal: ["regulatoryReportingCode must be the 2-digit"],
    },
    {
      rule: "regulatoryReportingCode a number",
      changes: { regulatoryReportingCode: 14 },
      refusal: ["regulatoryReportingCode must be the 2-digit"],
    },
    {
      rule: "regulatoryReportingAmount missing",
      changes: { regulatoryReportingAmount: OMIT },
      refusal: ["regulatoryReportingAmount is required"],
    },
    {
      rule: "regulatoryReportingAmount amount a number",
      changes: { "regulatoryReportingAmount.amount": 250 },
      refusal: ["regulatoryReportingAmount.amount must be a decimal string"],
    },
    {
      rule: "regulatoryReportingAmount without currency",
      changes: { "regulatoryReportingAmount.currency": OMIT },
      refusal: ["regulatoryReportingAmount.currency"],
    },
    {
      rule: "reported amount above the instructed one",
      changes: { "regulatoryReportingAmount.amount": "250.01" },
      refusal: ["regulatoryReportingAmount.amount 250.01 exceeds instructedAmount.amount 250.00"],
    },
    {
      rule: "regulatoryReportingInformation over 35 characters",
      changes: { regulatoryReportingInformation: "x".repeat(36) },
      refusal: ["regulatoryReportingInformation is 36 characters long; at most 35"],
    },
    {
      rule: "remittance over 140 characters",
      changes: { remittanceInformationUnstructured: "x".repeat(141) },
      refusal: ["remittanceInformationUnstructured is 141 characters long"],
    },
    // the structured-address rule (SPEC 9.4), from 2026-08-13
    {
      rule: "from 2026-08-13: creditor name, town name, country and agent all missing",
      changes: { creditorName: OMIT, creditorAddress: OMIT, creditorAgent: OMIT },
      refusal: [
        "2026-08-13",
        "missing: creditorName, creditorAddress.townName, creditorAddress.country, creditorAgent",
      ],
    },
    {
      rule: "on 2026-08-13 itself: creditor agent missing",
      changes: { creditorAgent: OMIT },
      today: "2026-08-13",
      refusal: ["missing: creditorAgent."],
    },
    {
      rule: "from 2026-08-13: creditor name missing",
      changes: { creditorName: OMIT },
      refusal: ["missing: creditorName."],
    },
    {
      rule: "from 2026-08-13: town name missing",
      changes: { "creditorAddress.townName": OMIT },
      refusal: ["missing: creditorAddress.townName."],
    },
    {
      rule: "from 2026-08-13: country code missing",
      changes: { "creditorAddress.country": OMIT },
      refusal: ["missing: creditorAddress.country."],
    },
  ];

  it.each(rows)("$rule", (row) => {
    check("single", CROSS_BORDER_PRODUCT, CROSS_BORDER, row);
  });

  it("keeps townName from the deprecated city", () => {
    const payment = check("single", CROSS_BORDER_PRODUCT, CROSS_BORDER, {
      rule: "",
      changes: { "creditorAddress.townName": OMIT, "creditorAddress.city": "Malmö" },
    });
    expect(payment?.product === CROSS_BORDER_PRODUCT && payment.creditorAddress?.townName).toBe("Malmö");
  });
});

describe("a periodic domestic credit transfer", () => {
  it("is read completely", () => {
    const payment = check("periodic", DOMESTIC_PRODUCT, PERIODIC, {
      rule: "",
      changes: {
        endDate: "2027-10-01",
        frequency: "MonthlyVariable",
        monthsOfExecution: ["01", "4", "7", "10"],
        executionRule: "preceding",
        dayOfExecution: "05",
      },
    });
    expect(payment).toEqual({
      kind: "periodic",
      product: DOMESTIC_PRODUCT,
      amount: "100.00",
      amountMinor: 10_000,
      currency: "NOK",
      debtorBban: "97100000000",
      creditorBban: "12345678903",
      creditorName: "Per Hansen",
      remittance: undefined,
      kid: undefined,
      startDate: "2026-10-01",
      endDate: "2027-10-01",
      frequency: "MonthlyVariable",
      executionRule: "preceding",
      dayOfExecution: "5",
      monthsOfExecution: ["1", "4", "7", "10"],
    });
  });

  const rows: readonly Row[] = [
    // accepted
    ...[
      "Daily",
      "Weekly",
      "EveryTwoWeeks",
      "Monthly",
      "EveryTwoMonths",
      "Quarterly",
      "SemiAnnual",
      "Annual",
    ].map((frequency) => ({ rule: `frequency ${frequency}`, changes: { frequency } })),
    {
      rule: "frequency MonthlyVariable with its months",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: ["3", "12"] },
    },
    { rule: "startDate today", changes: { startDate: TODAY } },
    { rule: "no endDate", changes: { endDate: OMIT } },
    { rule: "executionRule following", changes: { executionRule: "following" } },
    { rule: "dayOfExecution 31", changes: { dayOfExecution: "31" } },
    { rule: "dayOfExecution 1", changes: { dayOfExecution: "1" } },
    {
      rule: "a KID, as in a single payment",
      changes: { remittanceInformationStructuredArray: [{ reference: "79927398713" }] },
    },
    // refused: the domestic members are checked as for a single payment
    {
      rule: "domestic member wrong: currency",
      changes: { "instructedAmount.currency": "EUR" },
      refusal: ['instructedAmount.currency must be "NOK"'],
    },
    {
      rule: "domestic member wrong: invalid KID",
      changes: { remittanceInformationStructuredArray: [{ reference: "79927398710" }] },
      refusal: ["remittanceInformationStructuredArray[0].reference", "KID"],
    },
    // refused: dates
    { rule: "startDate missing", changes: { startDate: OMIT }, refusal: ["startDate is required", TODAY] },
    {
      rule: "startDate not a date",
      changes: { startDate: "01.10.2026" },
      refusal: ["startDate must be a calendar date written YYYY-MM-DD"],
    },
    {
      rule: "startDate not a calendar date",
      changes: { startDate: "2026-02-30" },
      refusal: ["startDate must be a calendar date"],
    },
    {
      rule: "startDate a date-time",
      changes: { startDate: "2026-10-01T00:00:00+02:00" },
      refusal: ["startDate must be a calendar date"],
    },
    {
      rule: "startDate in the past",
      changes: { startDate: "2026-08-31" },
      refusal: ["startDate 2026-08-31 is in the past", `send ${TODAY} or a later date`],
    },
    {
      rule: "endDate not a date",
      changes: { endDate: "someday" },
      refusal: ["endDate must be a calendar date"],
    },
    {
      rule: "endDate before startDate",
      changes: { endDate: "2026-09-30" },
      refusal: ["endDate 2026-09-30 must be after startDate 2026-10-01"],
    },
    {
      rule: "endDate equal to startDate",
      changes: { endDate: "2026-10-01" },
      refusal: ["endDate 2026-10-01 must be after startDate"],
    },
    // refused: frequency and execution
    {
      rule: "frequency missing",
      changes: { frequency: OMIT },
      refusal: ["frequency must be one of Daily, Weekly"],
    },
    {
      rule: "frequency unknown",
      changes: { frequency: "Fortnightly" },
      refusal: ["frequency must be one of", "Fortnightly"],
    },
    {
      rule: "frequency in the wrong case",
      changes: { frequency: "monthly" },
      refusal: ["frequency must be one of"],
    },
    {
      rule: "executionRule unknown",
      changes: { executionRule: "nearest" },
      refusal: ['executionRule must be "following" or "preceding"'],
    },
    {
      rule: "dayOfExecution 32",
      changes: { dayOfExecution: "32" },
      refusal: ['dayOfExecution must be a day of the month as a string, "1" to "31"'],
    },
    { rule: "dayOfExecution 0", changes: { dayOfExecution: "0" }, refusal: ["dayOfExecution"] },
    { rule: "dayOfExecution a number", changes: { dayOfExecution: 5 }, refusal: ["dayOfExecution"] },
    // refused: months of execution (SPEC 7, 9.5)
    {
      rule: "monthsOfExecution missing with MonthlyVariable",
      changes: { frequency: "MonthlyVariable" },
      refusal: ["monthsOfExecution is required with frequency MonthlyVariable"],
    },
    {
      rule: "monthsOfExecution with another frequency",
      changes: { monthsOfExecution: ["1"] },
      refusal: ["monthsOfExecution is only allowed with frequency MonthlyVariable", "Monthly"],
    },
    {
      rule: "monthsOfExecution empty",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: [] },
      refusal: ["monthsOfExecution must be a non-empty array"],
    },
    {
      rule: "monthsOfExecution not an array",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: "1,4" },
      refusal: ["monthsOfExecution must be a non-empty array"],
    },
    {
      rule: "month 13",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: ["1", "13"] },
      refusal: ['monthsOfExecution[1] must be a month as a string, "1" to "12"'],
    },
    {
      rule: "month as a number",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: [1] },
      refusal: ["monthsOfExecution[0]"],
    },
    {
      rule: "duplicate month",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: ["1", "4", "4"] },
      refusal: ["monthsOfExecution names month 4 twice"],
    },
    {
      rule: "duplicate month written two ways",
      changes: { frequency: "MonthlyVariable", monthsOfExecution: ["01", "6", "1"] },
      refusal: ['month 1 twice ("01" and "1")'],
    },
  ];

  it.each(rows)("$rule", (row) => {
    check("periodic", DOMESTIC_PRODUCT, PERIODIC, row);
  });
});

describe("logical-duplicate keys", () => {
  const withKid = { ...DOMESTIC, remittanceInformationStructuredArray: [{ reference: "79927398713" }] };
  /** The payments the rows change: kind, product and the body the changes apply to. */
  const ON = {
    domestic: { kind: "single", product: DOMESTIC_PRODUCT, base: DOMESTIC },
    domesticWithKid: { kind: "single", product: DOMESTIC_PRODUCT, base: withKid },
    crossBorder: { kind: "single", product: CROSS_BORDER_PRODUCT, base: CROSS_BORDER },
    periodic: { kind: "periodic", product: DOMESTIC_PRODUCT, base: PERIODIC },
  } as const satisfies Record<string, { kind: PaymentKind; product: string; base: object }>;
  interface KeyRow {
    readonly rule: string;
    readonly on: keyof typeof ON;
    readonly changes: Readonly<Record<string, unknown>>;
  }
  const key = (kind: PaymentKind, product: string, body: unknown) => {
    const result = parsePaymentRequest(kind, product, encode(body), TODAY);
    if (!result.ok) throw new Error(result.text);
    return paymentLogicalKey(result.payment);
  };
  /** The key of the row's payment as changed, and of the payment as it was. */
  const keys = ({ on, changes }: KeyRow) => {
    const { kind, product, base } = ON[on];
    return [key(kind, product, withChanges(base, changes)), key(kind, product, base)] as const;
  };

  it.each<KeyRow>([
    {
      rule: "domestic: the amount as written",
      on: "domestic",
      changes: { "instructedAmount.amount": "100" },
    },
    { rule: "domestic: the creditor's name", on: "domestic", changes: { creditorName: "P. Hansen" } },
    {
      rule: "domestic KID: the deprecated single member",
      on: "domesticWithKid",
      changes: {
        remittanceInformationStructuredArray: OMIT,
        remittanceInformationStructured: { reference: "79927398713" },
      },
    },
    {
      rule: "cross-border: the creditor's address and agent",
      on: "crossBorder",
      changes: { "creditorAddress.street": "Drottninggatan", creditorAgent: "HANDSESS" },
    },
    {
      rule: "cross-border: the regulatory report",
      on: "crossBorder",
      changes: { regulatoryReportingCode: "29" },
    },
    { rule: "periodic: the end date", on: "periodic", changes: { endDate: "2027-01-01" } },
  ])("the same payment whatever $rule", (row) => {
    const [changed, unchanged] = keys(row);
    expect(changed).toBe(unchanged);
  });

  it.each<KeyRow>([
    { rule: "domestic: debtor", on: "domestic", changes: { "debtorAccount.bban": "97100000001" } },
    { rule: "domestic: creditor", on: "domestic", changes: { "creditorAccount.bban": "12345678904" } },
    { rule: "domestic: amount", on: "domestic", changes: { "instructedAmount.amount": "100.01" } },
    {
      rule: "domestic: remittance text",
      on: "domestic",
      changes: { remittanceInformationUnstructured: "Rent" },
    },
    {
      rule: "domestic: KID",
      on: "domestic",
      changes: { remittanceInformationStructuredArray: [{ reference: "79927398713" }] },
    },
    {
      rule: "domestic: a KID and a text of the same digits",
      on: "domesticWithKid",
      changes: {
        remittanceInformationStructuredArray: OMIT,
        remittanceInformationUnstructured: "79927398713",
      },
    },
    {
      rule: "cross-border: creditor account",
      on: "crossBorder",
      changes: { "creditorAccount.iban": "DE89370400440532013000" },
    },
    {
      rule: "cross-border: currency",
      on: "crossBorder",
      changes: { "instructedAmount.currency": "SEK", "regulatoryReportingAmount.currency": "SEK" },
    },
    {
      rule: "cross-border: remittance",
      on: "crossBorder",
      changes: { remittanceInformationUnstructured: "Invoice 42" },
    },
    { rule: "periodic: start date", on: "periodic", changes: { startDate: "2026-10-02" } },
    { rule: "periodic: frequency", on: "periodic", changes: { frequency: "Weekly" } },
  ])("a different payment when $rule differs", (row) => {
    const [changed, unchanged] = keys(row);
    expect(changed).not.toBe(unchanged);
  });

  it("a periodic payment is not a duplicate of the single payment it repeats", () => {
    expect(key("periodic", DOMESTIC_PRODUCT, PERIODIC)).not.toBe(key("single", DOMESTIC_PRODUCT, PERIODIC));
  });
});

describe("whatever the bytes", () => {
  const targets: readonly [PaymentKind, string, object][] = [
    ["single", DOMESTIC_PRODUCT, DOMESTIC],
    ["single", CROSS_BORDER_PRODUCT, CROSS_BORDER],
    ["periodic", DOMESTIC_PRODUCT, PERIODIC],
  ];
  const target = fc.constantFrom(...targets);
  const refusedWithText = (result: ReturnType<typeof parsePaymentRequest>) => {
    if (!result.ok) {
      expect(["FORMAT_ERROR", "PRODUCT_UNKNOWN"]).toContain(result.code);
      expect(result.text.length).toBeGreaterThan(0);
    }
  };

  it("never throws on arbitrary bytes, JSON or text, for any kind, product and date", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<PaymentKind>("single", "periodic"),
        fc.oneof(fc.constantFrom(DOMESTIC_PRODUCT, CROSS_BORDER_PRODUCT), fc.string()),
        fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.jsonValue().map(encode), fc.string().map(encode)),
        fc.oneof(fc.constant(TODAY), fc.string({ maxLength: 12 })),
        (kind, product, bytes, today) => refusedWithText(parsePaymentRequest(kind, product, bytes, today)),
      ),
    );
  });

  it("never throws when any member of a valid body holds any JSON", () => {
    const paths = [
      "instructedAmount",
      "instructedAmount.amount",
      "instructedAmount.currency",
      "debtorAccount",
      "debtorAccount.bban",
      "debtorAccount.currency",
      "creditorAccount",
      "creditorAccount.bban",
      "creditorAccount.iban",
      "creditorName",
      "creditorAgent",
      "creditorAddress",
      "creditorAddress.townName",
      "creditorAddress.city",
      "creditorAddress.country",
      "regulatoryReportingCode",
      "regulatoryReportingAmount",
      "regulatoryReportingAmount.amount",
      "regulatoryReportingInformation",
      "remittanceInformationUnstructured",
      "remittanceInformationStructured",
      "remittanceInformationStructuredArray",
      "startDate",
      "endDate",
      "frequency",
      "executionRule",
      "dayOfExecution",
      "monthsOfExecution",
      "__proto__",
      "constructor",
    ];
    fc.assert(
      fc.property(target, fc.constantFrom(...paths), fc.jsonValue(), ([kind, product, base], path, value) => {
        refusedWithText(
          parsePaymentRequest(kind, product, encode(withChanges(base, { [path]: value })), TODAY),
        );
      }),
    );
  });
});
