/**
 * Bank and account identifiers of foreign parties: the BIC of a creditor agent (ISO 9362) and the
 * IBAN of a creditor account (ISO 13616). Shape and check digits only: the sandbox has no
 * directory of the world's banks, so a well-formed BIC of a bank that does not exist passes.
 */

import { COUNTRY_CODES } from "../address.js";

/** 4 letters (institution), 2 letters (country), 2 letters or digits (location), optional 3 (branch). */
const BIC = /^[A-Z]{4}([A-Z]{2})[A-Z0-9]{2}(?:[A-Z0-9]{3})?$/;

/** Why `text` is not a BIC, or undefined when it is one. */
export function bicProblem(text: string): string | undefined {
  const match = BIC.exec(text);
  if (match === null) {
    return "a BIC has 8 or 11 upper-case characters: 4 letters for the bank, 2 for the country, 2 letters or digits for the location and optionally 3 for the branch, such as DNBANOKKXXX";
  }
  if (!COUNTRY_CODES.has(match[1]!)) return `its characters 5–6, "${match[1]}", are not a country code`;
  return undefined;
}

const IBAN = /^([A-Z]{2})\d{2}[A-Z0-9]{11,30}$/;

/** Why `text` is not an IBAN (electronic format, no spaces), or undefined when it is one. */
export function ibanProblem(text: string): string | undefined {
  const match = IBAN.exec(text);
  if (match === null) {
    return "an IBAN is a country code, 2 check digits and up to 30 upper-case letters or digits, written without spaces, such as SE4550000000058398257466";
  }
  if (!COUNTRY_CODES.has(match[1]!)) return `it starts with "${match[1]}", which is not a country code`;
  // ISO 13616: move the first four characters to the end, letters → 10..35, the number mod 97 is 1.
  const rearranged = text.slice(4) + text.slice(0, 4);
  let remainder = 0;
  for (const character of rearranged) {
    const code = character.charCodeAt(0);
    const value = code <= 57 ? code - 48 : code - 55;
    remainder = (value > 9 ? remainder * 100 + value : remainder * 10 + value) % 97;
  }
  return remainder === 1 ? undefined : "its check digits do not match the rest of it (ISO 13616 mod 97)";
}

/** A foreign bank's own account number: 1 to 30 letters or digits. */
const FOREIGN_BBAN = /^[A-Za-z0-9]{1,30}$/;

export function isForeignBban(text: string): boolean {
  return FOREIGN_BBAN.test(text);
}
