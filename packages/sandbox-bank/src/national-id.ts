/**
 * The customerNumber of a created customer, typed at the sandbox SCA page (SPEC 2.1). PRIVATE: a
 * synthetic Norwegian national identity number, 80 added to the month as in the synthetic numbers
 * of the national test data registry (so never a real person's), with both MOD11 check digits
 * right, so that a client validating national ids accepts it. CORPORATE: an organisation number,
 * nine digits whose last is a MOD11 check digit.
 */

const FIRST_CHECK_WEIGHTS = [3, 7, 6, 1, 8, 9, 4, 5, 2] as const;
const SECOND_CHECK_WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2] as const;
const ORGANISATION_WEIGHTS = [3, 2, 7, 6, 5, 4, 3, 2] as const;

/** Draws random digits; a SeededRandom is one. */
export interface DigitSource {
  digits(count: number): string;
}

/** The MOD11 check digit of `digits` under `weights`, or undefined when none exists (check 10). */
function mod11(digits: string, weights: readonly number[]): number | undefined {
  let sum = 0;
  for (let i = 0; i < weights.length; i++) sum += Number(digits[i]) * weights[i]!;
  const check = (11 - (sum % 11)) % 11;
  return check === 10 ? undefined : check;
}

export function isValidNationalId(id: string): boolean {
  if (!/^\d{11}$/.test(id)) return false;
  return (
    mod11(id, FIRST_CHECK_WEIGHTS) === Number(id[9]) && mod11(id, SECOND_CHECK_WEIGHTS) === Number(id[10])
  );
}

export function isValidOrganisationNumber(number: string): boolean {
  return /^\d{9}$/.test(number) && mod11(number, ORGANISATION_WEIGHTS) === Number(number[8]);
}

/** Born on day 01–28 of a month of 1950–1999: individual numbers 000–499 stand for the 1900s. */
export function syntheticNationalId(random: DigitSource): string {
  for (;;) {
    const day = String(1 + (Number(random.digits(2)) % 28)).padStart(2, "0");
    const month = String(81 + (Number(random.digits(2)) % 12));
    const year = String(50 + (Number(random.digits(2)) % 50));
    const individual = String(Number(random.digits(3)) % 500).padStart(3, "0");
    const nine = day + month + year + individual;
    const first = mod11(nine, FIRST_CHECK_WEIGHTS);
    if (first === undefined) continue;
    const second = mod11(nine + first, SECOND_CHECK_WEIGHTS);
    if (second !== undefined) return `${nine}${first}${second}`;
  }
}

export function organisationNumber(random: DigitSource): string {
  for (;;) {
    const eight = `9${random.digits(7)}`;
    const check = mod11(eight, ORGANISATION_WEIGHTS);
    if (check !== undefined) return `${eight}${check}`;
  }
}
