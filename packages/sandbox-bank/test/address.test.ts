import { describe, expect, it } from "vitest";
import {
  missingStructuredAddressParts,
  type PostalAddress,
  readPostalAddress,
  STRUCTURED_ADDRESS_ENFORCED_FROM,
  type StructuredAddressSubject,
  structuredAddressEnforced,
} from "../src/address.js";
import { bicProblem, ibanProblem } from "../src/payment-body/identifiers.js";

const BEFORE = "2026-08-12";
const FROM = STRUCTURED_ADDRESS_ENFORCED_FROM;
const AFTER = "2026-11-23";

const address = (parts: Partial<PostalAddress>): PostalAddress => ({
  street: undefined,
  buildingNumber: undefined,
  postalCode: undefined,
  townName: undefined,
  country: undefined,
  ...parts,
});

const complete: StructuredAddressSubject = {
  creditorName: "Anna Svensson",
  creditorAddress: address({ townName: "Stockholm", country: "SE" }),
  creditorAgent: "ESSESESS",
};

describe("the structured-address rule (SPEC 9.4)", () => {
  it("is enforced from 2026-08-13 on", () => {
    expect(STRUCTURED_ADDRESS_ENFORCED_FROM).toBe("2026-08-13");
    expect(structuredAddressEnforced(BEFORE)).toBe(false);
    expect(structuredAddressEnforced(FROM)).toBe(true);
    expect(structuredAddressEnforced(AFTER)).toBe(true);
  });

  const nothing: StructuredAddressSubject = {
    creditorName: undefined,
    creditorAddress: undefined,
    creditorAgent: undefined,
  };
  const all = ["creditorName", "creditorAddress.townName", "creditorAddress.country", "creditorAgent"];

  it.each([
    { rule: "before the date nothing is required", subject: nothing, today: BEFORE, missing: [] },
    { rule: "on the date everything is required", subject: nothing, today: FROM, missing: all },
    { rule: "after the date everything is required", subject: nothing, today: AFTER, missing: all },
    { rule: "complete data passes on the date", subject: complete, today: FROM, missing: [] },
    { rule: "complete data passes before the date", subject: complete, today: BEFORE, missing: [] },
    {
      rule: "creditor name missing",
      subject: { ...complete, creditorName: undefined },
      today: FROM,
      missing: ["creditorName"],
    },
    {
      rule: "creditor name missing, before the date",
      subject: { ...complete, creditorName: undefined },
      today: BEFORE,
      missing: [],
    },
    {
      rule: "town name missing",
      subject: { ...complete, creditorAddress: address({ country: "SE", street: "Kungsgatan" }) },
      today: FROM,
      missing: ["creditorAddress.townName"],
    },
    {
      rule: "country code missing",
      subject: { ...complete, creditorAddress: address({ townName: "Stockholm" }) },
      today: FROM,
      missing: ["creditorAddress.country"],
    },
    {
      rule: "no address at all: town name and country code missing",
      subject: { ...complete, creditorAddress: undefined },
      today: FROM,
      missing: ["creditorAddress.townName", "creditorAddress.country"],
    },
    {
      rule: "creditor agent BIC missing",
      subject: { ...complete, creditorAgent: undefined },
      today: FROM,
      missing: ["creditorAgent"],
    },
  ])("$rule ($today)", ({ subject, today, missing }) => {
    expect(missingStructuredAddressParts(subject, today)).toEqual(missing);
  });
});

describe("reading a postal address", () => {
  it.each([
    {
      rule: "townName is kept",
      value: { townName: "Oslo", country: "NO" },
      expected: address({ townName: "Oslo", country: "NO" }),
    },
    {
      rule: "the deprecated city is read as townName",
      value: { city: "Oslo", country: "NO" },
      expected: address({ townName: "Oslo", country: "NO" }),
    },
    {
      rule: "townName and city with the same value are accepted",
      value: { city: "Oslo", townName: "Oslo" },
      expected: address({ townName: "Oslo" }),
    },
    {
      rule: "every part",
      value: {
        street: "Dronning Eufemias gate",
        buildingNumber: "30",
        postalCode: "0191",
        townName: "Oslo",
        country: "NO",
      },
      expected: {
        street: "Dronning Eufemias gate",
        buildingNumber: "30",
        postalCode: "0191",
        townName: "Oslo",
        country: "NO",
      },
    },
    { rule: "an empty object", value: {}, expected: address({}) },
  ])("accepts: $rule", ({ value, expected }) => {
    expect(readPostalAddress({ creditorAddress: value }, "creditorAddress")).toEqual({
      ok: true,
      value: expected,
    });
  });

  it("absent is undefined", () => {
    expect(readPostalAddress({}, "creditorAddress")).toEqual({ ok: true, value: undefined });
  });

  it.each([
    {
      rule: "townName and city differ",
      value: { townName: "Oslo", city: "Bergen" },
      text: ["creditorAddress.townName", "creditorAddress.city", "send townName only"],
    },
    { rule: "not an object", value: "Oslo", text: ["creditorAddress must be an object"] },
    {
      rule: "country of 3 letters",
      value: { country: "NOR" },
      text: ["creditorAddress.country", "2 upper-case letters"],
    },
    { rule: "country in lower case", value: { country: "no" }, text: ["creditorAddress.country"] },
    { rule: "country that does not exist", value: { country: "XX" }, text: ["creditorAddress.country"] },
    {
      rule: "townName not a string",
      value: { townName: 7 },
      text: ["creditorAddress.townName must be a non-empty string"],
    },
    {
      rule: "townName blank",
      value: { townName: " " },
      text: ["creditorAddress.townName must be a non-empty string"],
    },
    {
      rule: "townName too long",
      value: { townName: "x".repeat(36) },
      text: ["creditorAddress.townName is 36 characters long; at most 35"],
    },
    {
      rule: "street too long",
      value: { street: "x".repeat(71) },
      text: ["creditorAddress.street is 71 characters long; at most 70"],
    },
    {
      rule: "buildingNumber too long",
      value: { buildingNumber: "1".repeat(17) },
      text: ["creditorAddress.buildingNumber"],
    },
    {
      rule: "postalCode too long",
      value: { postalCode: "1".repeat(17) },
      text: ["creditorAddress.postalCode"],
    },
    {
      rule: "an emoji in the street",
      value: { street: "Storgata 🏠" },
      text: ["creditorAddress.street contains a character"],
    },
  ])("refuses: $rule", ({ value, text }) => {
    const result = readPostalAddress({ creditorAddress: value }, "creditorAddress");
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.code).toBe("FORMAT_ERROR");
      for (const part of text) expect(result.text).toContain(part);
    }
  });
});

describe("bank identifiers", () => {
  it.each([
    { value: "DNBANOKK", problem: undefined },
    { value: "DNBANOKKXXX", problem: undefined },
    { value: "ESSESESS", problem: undefined },
    { value: "DEUTDEFF500", problem: undefined },
    { value: "DNBANOK", problem: "8 or 11" },
    { value: "DNBANOKKXX", problem: "8 or 11" },
    { value: "dnbanokk", problem: "8 or 11" },
    { value: "DNB1NOKK", problem: "8 or 11" },
    { value: "DNBAXXKK", problem: "not a country code" },
  ])("BIC $value", ({ value, problem }) => {
    const found = bicProblem(value);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });

  it.each([
    { value: "SE4550000000058398257466", problem: undefined },
    { value: "DE89370400440532013000", problem: undefined },
    { value: "GB82WEST12345698765432", problem: undefined },
    { value: "NO9386011117947", problem: undefined },
    { value: "DE89370400440532013001", problem: "check digits" },
    { value: "DE89 3704 0044 0532 0130 00", problem: "without spaces" },
    { value: "de89370400440532013000", problem: "without spaces" },
    { value: "XX89370400440532013000", problem: "not a country code" },
    { value: "DE8937", problem: "without spaces" },
  ])("IBAN $value", ({ value, problem }) => {
    const found = ibanProblem(value);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });
});
