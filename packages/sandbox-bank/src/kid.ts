/**
 * The Norwegian payment reference, KID (kundeidentifikasjon): 2 to 25 characters, digits, whose
 * last character is a check digit over the digits before it, computed either with MOD10 (Luhn) or
 * with MOD11. Which of the two a creditor uses is agreed between the creditor and its bank, so the
 * paying bank accepts a KID that satisfies either (SPEC 7: an invalid KID is answered with 400).
 *
 * MOD10: from the rightmost digit before the check digit, weights 2, 1, 2, 1 …; the digits of
 * each product are summed; the check digit is (10 − sum mod 10) mod 10.
 * MOD11: from the rightmost digit before the check digit, weights 2, 3, 4, 5, 6, 7, 2, 3 …;
 * remainder r = sum mod 11; the check is 11 − r, except that r = 0 gives "0" and r = 1 (check
 * 10) gives the character "-", which is why a KID may end in "-".
 *
 * Pure: no I/O, no exceptions.
 */

export const KID_MIN_LENGTH = 2;
export const KID_MAX_LENGTH = 25;

export type KidAlgorithm = "MOD10" | "MOD11";

export type KidCheck =
  | { readonly ok: true; readonly kid: string; readonly algorithms: readonly KidAlgorithm[] }
  /** `problem` completes "… is not a valid KID: ", e.g. "it has 1 character; a KID has 2 to 25". */
  | { readonly ok: false; readonly problem: string };

const DIGITS = /^\d+$/;

/** The MOD10 (Luhn) check digit of `payload` (digits only). */
export function mod10CheckDigit(payload: string): string {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) {
    const digit = payload.charCodeAt(payload.length - 1 - i) - 48;
    const product = i % 2 === 0 ? digit * 2 : digit;
    sum += product > 9 ? product - 9 : product;
  }
  return String((10 - (sum % 10)) % 10);
}

/** The MOD11 check character of `payload` (digits only): "0" … "9", or "-" when the remainder is 1. */
export function mod11CheckDigit(payload: string): string {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) {
    const digit = payload.charCodeAt(payload.length - 1 - i) - 48;
    sum += digit * (2 + (i % 6));
  }
  const remainder = sum % 11;
  if (remainder === 0) return "0";
  if (remainder === 1) return "-";
  return String(11 - remainder);
}

export function checkKid(text: string): KidCheck {
  if (text.length < KID_MIN_LENGTH || text.length > KID_MAX_LENGTH) {
    return {
      ok: false,
      problem: `it has ${text.length} character${text.length === 1 ? "" : "s"}; a KID has ${KID_MIN_LENGTH} to ${KID_MAX_LENGTH}`,
    };
  }
  const payload = text.slice(0, -1);
  const check = text.slice(-1);
  if (!DIGITS.test(payload) || !(check === "-" || DIGITS.test(check))) {
    return {
      ok: false,
      problem: `a KID holds digits only, with "-" allowed as its last (MOD11 check) character`,
    };
  }
  const mod10 = mod10CheckDigit(payload);
  const mod11 = mod11CheckDigit(payload);
  const algorithms: KidAlgorithm[] = [];
  if (check === mod10) algorithms.push("MOD10");
  if (check === mod11) algorithms.push("MOD11");
  if (algorithms.length === 0) {
    return {
      ok: false,
      problem: `its check character "${check}" matches neither MOD10 (which gives "${mod10}") nor MOD11 (which gives "${mod11}") over the digits before it`,
    };
  }
  return { ok: true, kid: text, algorithms };
}
