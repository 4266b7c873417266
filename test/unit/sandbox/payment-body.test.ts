import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { logicalKey, parseDomesticPayment } from "../../../src/sandbox/payment-body.js";

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
