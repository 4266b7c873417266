/**
 * Structured postal addresses in payment requests (SPEC 9.3, 9.4), and the rule that makes parts
 * of them mandatory.
 *
 * Address members: street, buildingNumber, postalCode, townName, country (SPEC 2.5; lengths as
 * the ISO 20022 PostalAddress the bank forwards: street 70, building number and postal code 16,
 * town name 35). `city` is the deprecated name of `townName` (SPEC 9.3): either is accepted,
 * `townName` is what the bank keeps, and both with different values is refused, as the bank
 * cannot tell which one the TPP meant.
 *
 * The structured-address rule is enforced in the sandbox from STRUCTURED_ADDRESS_ENFORCED_FROM
 * (SPEC 9.4; production follows on 2026-11-15): from that day the TPP must give the creditor's
 * name, the creditor's town name and country code and the creditor agent's BIC for SEPA and
 * SWIFT-routed payments. The debtor's data is inferred by the bank from the debtor account, so
 * it is never asked for. SPEC 7 does not show the error code; the sandbox answers 400
 * FORMAT_ERROR, as for any other body that lacks a required member, with a text naming every
 * missing part at once so that one retry suffices.
 */

import { COUNTRY_CODES } from "./iso-codes.js";
import {
  describe,
  formatRefusal,
  isObject,
  type JsonObject,
  member,
  type Parsed,
  parsed,
  readText,
} from "./payment-body/fields.js";

/** The first day (UTC, inclusive) on which the sandbox enforces structured creditor data (SPEC 9.4). */
export const STRUCTURED_ADDRESS_ENFORCED_FROM = "2026-08-13";

/** ISO 3166-1 alpha-2, as listed in SPEC 2.2 (one table for payments and card transactions). */
export { COUNTRY_CODES } from "./iso-codes.js";

export interface PostalAddress {
  readonly street: string | undefined;
  readonly buildingNumber: string | undefined;
  readonly postalCode: string | undefined;
  /** From `townName`, or from the deprecated `city` when only that was sent. */
  readonly townName: string | undefined;
  readonly country: string | undefined;
}

const MAX_STREET = 70;
const MAX_BUILDING_NUMBER = 16;
const MAX_POSTAL_CODE = 16;
const MAX_TOWN_NAME = 35;

/** An optional address member `name` of `object`; every part optional here (the rule below says which are needed). */
export function readPostalAddress(object: JsonObject, name: string): Parsed<PostalAddress | undefined> {
  const value = member(object, name);
  if (value === undefined) return parsed(undefined);
  if (!isObject(value)) {
    return formatRefusal(
      `${name} must be an object {street, buildingNumber, postalCode, townName, country} when present; got ${describe(value)}`,
    );
  }
  const street = readText(value, "street", `${name}.street`, { max: MAX_STREET });
  if (!street.ok) return street;
  const buildingNumber = readText(value, "buildingNumber", `${name}.buildingNumber`, {
    max: MAX_BUILDING_NUMBER,
  });
  if (!buildingNumber.ok) return buildingNumber;
  const postalCode = readText(value, "postalCode", `${name}.postalCode`, { max: MAX_POSTAL_CODE });
  if (!postalCode.ok) return postalCode;
  const townName = readText(value, "townName", `${name}.townName`, { max: MAX_TOWN_NAME });
  if (!townName.ok) return townName;
  const city = readText(value, "city", `${name}.city`, { max: MAX_TOWN_NAME });
  if (!city.ok) return city;
  if (townName.value !== undefined && city.value !== undefined && townName.value !== city.value) {
    return formatRefusal(
      `${name}.townName ${JSON.stringify(townName.value)} and ${name}.city ${JSON.stringify(city.value)} differ; city is deprecated and replaced by townName (SPEC 9.3): send townName only`,
    );
  }
  const country = member(value, "country");
  if (country !== undefined && (typeof country !== "string" || !COUNTRY_CODES.has(country))) {
    return formatRefusal(
      `${name}.country must be an ISO 3166-1 alpha-2 country code of 2 upper-case letters, such as "SE", when present; got ${describe(country)}`,
    );
  }
  return parsed({
    street: street.value,
    buildingNumber: buildingNumber.value,
    postalCode: postalCode.value,
    townName: townName.value ?? city.value,
    country,
  });
}

/** What the structured-address rule looks at in a SEPA or SWIFT-routed payment request. */
export interface StructuredAddressSubject {
  readonly creditorName: string | undefined;
  readonly creditorAddress: PostalAddress | undefined;
  /** The creditor agent's BIC. */
  readonly creditorAgent: string | undefined;
}

/** True on and after the enforcement day; `today` is the bank's date, YYYY-MM-DD. */
export function structuredAddressEnforced(today: string): boolean {
  return today >= STRUCTURED_ADDRESS_ENFORCED_FROM;
}

/**
 * The request members the rule finds missing on `today`, by their JSON paths; empty before the
 * enforcement day and when everything needed is there.
 */
export function missingStructuredAddressParts(subject: StructuredAddressSubject, today: string): string[] {
  if (!structuredAddressEnforced(today)) return [];
  const missing: string[] = [];
  if (subject.creditorName === undefined) missing.push("creditorName");
  if (subject.creditorAddress?.townName === undefined) missing.push("creditorAddress.townName");
  if (subject.creditorAddress?.country === undefined) missing.push("creditorAddress.country");
  if (subject.creditorAgent === undefined) missing.push("creditorAgent");
  return missing;
}

/** The refusal for `missing` (non-empty), naming each part and the rule. */
export function structuredAddressRefusalText(missing: readonly string[]): string {
  return `Structured creditor data is required from ${STRUCTURED_ADDRESS_ENFORCED_FROM} for SEPA and SWIFT-routed payments (SPEC 9.4); missing: ${missing.join(", ")}. Send the creditor's name, the creditor's townName and country code in creditorAddress, and the creditor agent's BIC in creditorAgent (debtor data is taken from the debtor account)`;
}
