import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DOMESTIC_PRODUCT,
  logicalKey,
  parseDomesticPayment,
  parsePaymentRequest,
} from "../src/payment-body.js";

const encode = (value: unknown) =>
  new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));

const validBody = fc.record({
  whole: fc.integer({ min: 0, max: 9_999_999 }),
  cents: fc.option(fc.integer({ min: 0, max: 99 }), { nil: undefined }),
  debtor: fc.stringMatching(/^\d{11}$/),
  creditor: fc.stringMatching(/^\d{11}$/),
  creditorName: fc
    .string({ minLength: 1, maxLength: 70 })
    .filter((name) => name.trim().length > 0 && !/[\ud800-\udfff]/.test(name)),
  remittance: fc.option(
    fc.string({ maxLength: 140 }).filter((text) => !/[\ud800-\udfff]/.test(text)),
    { nil: undefined },
  ),
});

describe("reading a domestic credit transfer body", () => {
  it("never throws, whatever the bytes", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.jsonValue().map(encode), fc.string().map(encode)),
        (bytes) => {
          const result = parseDomesticPayment(bytes);
          if (!result.ok) expect(result.text.length).toBeGreaterThan(0);
        },
      ),
    );
  });

  it("accepts every well-formed payment and keeps its amount exactly", () => {
    fc.assert(
      fc.property(validBody, (body) => {
        fc.pre(body.whole > 0 || (body.cents ?? 0) > 0);
        const amount =
          body.cents === undefined
            ? String(body.whole)
            : `${body.whole}.${String(body.cents).padStart(2, "0")}`;
        const result = parseDomesticPayment(
          encode({
            instructedAmount: { amount, currency: "NOK" },
            debtorAccount: { bban: body.debtor },
            creditorAccount: { bban: body.creditor },
            creditorName: body.creditorName,
            remittanceInformationUnstructured: body.remittance,
          }),
        );
        expect(result.ok).toBe(true);
        if (result.ok) {
          expect(result.payment.amountMinor).toBe(body.whole * 100 + (body.cents ?? 0));
          expect(result.payment.amount).toBe(amount);
          expect(result.payment.remittance).toBe(body.remittance);
        }
      }),
    );
  });

  it("treats 10, 10.0 and 10.00 as the same amount for duplicate detection", () => {
    const keys = ["10", "10.0", "10.00"].map((amount) => {
      const result = parseDomesticPayment(
        encode({
          instructedAmount: { amount, currency: "NOK" },
          debtorAccount: { bban: "97100000000" },
          creditorAccount: { bban: "12345678903" },
          creditorName: "Per",
        }),
      );
      if (!result.ok) throw new Error(result.text);
      return logicalKey(result.payment);
    });
    expect(new Set(keys).size).toBe(1);
  });

  it("refuses an amount sent as a JSON number, whatever the number", () => {
    fc.assert(
      fc.property(fc.double(), (amount) => {
        const result = parseDomesticPayment(
          encode({
            instructedAmount: { amount, currency: "NOK" },
            debtorAccount: { bban: "97100000000" },
            creditorAccount: { bban: "12345678903" },
            creditorName: "Per",
          }),
        );
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.text).toContain("instructedAmount.amount");
      }),
    );
  });
});

describe("the payment reference (KID) of a domestic credit transfer", () => {
  const base = {
    instructedAmount: { amount: "100.00", currency: "NOK" },
    debtorAccount: { bban: "97100000000" },
    creditorAccount: { bban: "12345678903" },
    creditorName: "Per",
  };
  const parse = (extra: object) =>
    parsePaymentRequest("single", DOMESTIC_PRODUCT, encode({ ...base, ...extra }), "2026-09-01");

  it.each([
    {
      rule: "in the array, MOD10",
      extra: { remittanceInformationStructuredArray: [{ reference: "79927398713" }] },
      kid: "79927398713",
    },
    {
      rule: "in the array, MOD11 ending in '-'",
      extra: { remittanceInformationStructuredArray: [{ reference: "104-" }] },
      kid: "104-",
    },
    {
      rule: "with referenceType KID",
      extra: { remittanceInformationStructuredArray: [{ reference: "1234560", referenceType: "KID" }] },
      kid: "1234560",
    },
    {
      rule: "with referenceType SCOR and an issuer",
      extra: {
        remittanceInformationStructuredArray: [
          { reference: "1234560", referenceType: "SCOR", referenceIssuer: "Nets" },
        ],
      },
      kid: "1234560",
    },
    {
      rule: "in the deprecated single member",
      extra: { remittanceInformationStructured: { reference: "79927398713" } },
      kid: "79927398713",
    },
    {
      rule: "in both, alike",
      extra: {
        remittanceInformationStructured: { reference: "1008" },
        remittanceInformationStructuredArray: [{ reference: "1008" }],
      },
      kid: "1008",
    },
    { rule: "none", extra: {}, kid: undefined },
  ])("accepted: $rule", ({ extra, kid }) => {
    const result = parse(extra);
    if (!result.ok) throw new Error(result.text);
    expect(result.payment).toMatchObject({ kind: "single", product: DOMESTIC_PRODUCT, kid });
  });

  it.each([
    {
      rule: "wrong check digit",
      extra: { remittanceInformationStructuredArray: [{ reference: "79927398710" }] },
      text: [
        'remittanceInformationStructuredArray[0].reference "79927398710" is not a valid payment reference (KID)',
        "MOD10",
        "MOD11",
      ],
    },
    {
      rule: "too short",
      extra: { remittanceInformationStructuredArray: [{ reference: "7" }] },
      text: ["remittanceInformationStructuredArray[0].reference", "2 to 25"],
    },
    {
      rule: "too long",
      extra: { remittanceInformationStructuredArray: [{ reference: "1".repeat(26) }] },
      text: ["2 to 25"],
    },
    {
      rule: "non-digits",
      extra: { remittanceInformationStructuredArray: [{ reference: "INV-42" }] },
      text: ["digits only"],
    },
    {
      rule: "invalid in the deprecated single member",
      extra: { remittanceInformationStructured: { reference: "12" } },
      text: ['remittanceInformationStructured.reference "12" is not a valid payment reference (KID)'],
    },
    {
      rule: "reference missing",
      extra: { remittanceInformationStructuredArray: [{ referenceType: "KID" }] },
      text: ["remittanceInformationStructuredArray[0].reference must be a string"],
    },
    {
      rule: "reference a number",
      extra: { remittanceInformationStructuredArray: [{ reference: 79927398713 }] },
      text: ["remittanceInformationStructuredArray[0].reference must be a string"],
    },
    {
      rule: "entry not an object",
      extra: { remittanceInformationStructuredArray: ["79927398713"] },
      text: ["remittanceInformationStructuredArray[0] must be an object {reference"],
    },
    {
      rule: "array not an array",
      extra: { remittanceInformationStructuredArray: { reference: "79927398713" } },
      text: ["remittanceInformationStructuredArray must be an array"],
    },
    {
      rule: "array empty",
      extra: { remittanceInformationStructuredArray: [] },
      text: ["remittanceInformationStructuredArray holds 0 entries", "exactly one"],
    },
    {
      rule: "array of two",
      extra: { remittanceInformationStructuredArray: [{ reference: "1008" }, { reference: "1234560" }] },
      text: ["holds 2 entries"],
    },
    {
      rule: "referenceType not a KID",
      extra: { remittanceInformationStructuredArray: [{ reference: "1008", referenceType: "INVOICE" }] },
      text: ['remittanceInformationStructuredArray[0].referenceType must be "KID"'],
    },
    {
      rule: "deprecated and array differ",
      extra: {
        remittanceInformationStructured: { reference: "1008" },
        remittanceInformationStructuredArray: [{ reference: "1234560" }],
      },
      text: [
        "remittanceInformationStructured.reference and remittanceInformationStructuredArray[0].reference differ",
        "send the array only",
      ],
    },
    {
      rule: "a KID and a message",
      extra: {
        remittanceInformationStructuredArray: [{ reference: "1008" }],
        remittanceInformationUnstructured: "Rent",
      },
      text: ["either a payment reference (KID)", "not both"],
    },
  ])("refused with 400 FORMAT_ERROR: $rule", ({ extra, text }) => {
    const result = parse(extra);
    expect(result).toMatchObject({ ok: false, status: 400, code: "FORMAT_ERROR" });
    if (!result.ok) for (const part of text) expect(result.text).toContain(part);
  });

  it("the older entry point reads the KID too", () => {
    const result = parseDomesticPayment(
      encode({ ...base, remittanceInformationStructuredArray: [{ reference: "1008" }] }),
    );
    expect(result.ok && result.payment.kid).toBe("1008");
  });
});
