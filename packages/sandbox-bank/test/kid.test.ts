import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkKid, mod10CheckDigit, mod11CheckDigit } from "../src/kid.js";

// Check digits worked by hand:
// MOD10 (Luhn) of 7992739871 is 3 (the textbook example 79927398713); of 100 it is 8.
// MOD11 of 1234567890: weights 2,3,4,5,6,7,2,3,4,5 from the right give 195 = 17·11 + 8 → 11 − 8 = 3.
// MOD11 of 7992739871: 269 = 24·11 + 5 → 6. Of 123456: 77 = 7·11 + 0 → "0". Of 104: 12 = 11 + 1 → "-".
const cases: readonly {
  readonly rule: string;
  readonly kid: string;
  readonly valid: readonly ("MOD10" | "MOD11")[] | undefined;
  readonly problem?: string;
}[] = [
  { rule: "valid MOD10 (Luhn) only", kid: "79927398713", valid: ["MOD10"] },
  { rule: "valid MOD10, shortest payload", kid: "1008", valid: ["MOD10"] },
  { rule: "valid MOD11 only", kid: "79927398716", valid: ["MOD11"] },
  { rule: "valid MOD11 whose remainder 0 gives check digit 0", kid: "1234560", valid: ["MOD11"] },
  { rule: "valid MOD11 whose remainder 1 gives check character '-'", kid: "104-", valid: ["MOD11"] },
  { rule: "valid under both algorithms", kid: "12345678903", valid: ["MOD10", "MOD11"] },
  { rule: "shortest KID: 2 characters", kid: "00", valid: ["MOD10", "MOD11"] },
  {
    rule: "longest KID: 25 characters",
    kid: "123456789012345678901234" + mod10CheckDigit("123456789012345678901234"),
    valid: ["MOD10"],
  },
  {
    rule: "too short: 1 character",
    kid: "0",
    valid: undefined,
    problem: "it has 1 character; a KID has 2 to 25",
  },
  { rule: "too short: empty", kid: "", valid: undefined, problem: "it has 0 characters" },
  {
    rule: "too long: 26 characters",
    kid: "12345678901234567890123456",
    valid: undefined,
    problem: "it has 26 characters; a KID has 2 to 25",
  },
  { rule: "non-digits: a letter", kid: "12A45", valid: undefined, problem: "digits only" },
  { rule: "non-digits: a space", kid: "1234 5678903", valid: undefined, problem: "digits only" },
  { rule: "non-digits: '-' anywhere but last", kid: "1-04", valid: undefined, problem: "digits only" },
  { rule: "non-digits: non-ASCII digits", kid: "١٢٣٤", valid: undefined, problem: "digits only" },
  {
    rule: "wrong check digit",
    kid: "79927398710",
    valid: undefined,
    problem: 'its check character "0" matches neither MOD10 (which gives "3") nor MOD11 (which gives "6")',
  },
  {
    rule: "'-' where MOD11 does not give '-'",
    kid: "1234567890-",
    valid: undefined,
    problem: 'its check character "-" matches neither MOD10',
  },
];

describe("the payment reference (KID)", () => {
  it.each(cases)("$rule: $kid", ({ kid, valid, problem }) => {
    const result = checkKid(kid);
    if (valid === undefined) {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problem).toContain(problem);
    } else {
      expect(result).toEqual({ ok: true, kid, algorithms: valid });
    }
  });

  it.each([
    ["7992739871", "3", "6"],
    ["1234567890", "3", "3"],
    ["123456", "6", "0"],
    ["104", "0", "-"],
    ["100", "8", "7"],
  ])("check digits of %s: MOD10 %s, MOD11 %s", (payload, mod10, mod11) => {
    expect(mod10CheckDigit(payload)).toBe(mod10);
    expect(mod11CheckDigit(payload)).toBe(mod11);
  });

  it("accepts any payload completed by either check digit, and nothing else", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{1,24}$/), fc.constantFrom(..."0123456789-"), (payload, check) => {
        const result = checkKid(payload + check);
        const expected = check === mod10CheckDigit(payload) || check === mod11CheckDigit(payload);
        expect(result.ok).toBe(expected);
      }),
    );
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        const result = checkKid(text);
        if (!result.ok) expect(result.problem.length).toBeGreaterThan(0);
      }),
    );
  });
});
