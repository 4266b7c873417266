/** Minor units ↔ the decimal strings the API carries (SPEC 4 General: amounts are strings). */

/** 123456 → "1234.56", -5 → "-0.05". */
export function formatMinor(minor: number): string {
  const sign = minor < 0 ? "-" : "";
  const abs = Math.abs(minor);
  const fraction = abs % 100;
  return `${sign}${(abs - fraction) / 100}.${fraction < 10 ? "0" : ""}${fraction}`;
}

// At most 13 integer digits keeps every amount exact as a double in minor units.
const POSITIVE_DECIMAL = /^(?:0|[1-9]\d{0,12})(?:\.(\d{1,2}))?$/;

/** "10", "10.5", "10.50" → 1050; anything else (signs, exponents, 3 decimals) → undefined. */
export function parsePositiveAmount(text: string): number | undefined {
  const match = POSITIVE_DECIMAL.exec(text);
  if (match === null) return undefined;
  const dot = text.indexOf(".");
  const whole = Number(dot === -1 ? text : text.slice(0, dot));
  const fraction = match[1] === undefined ? 0 : Number(match[1].padEnd(2, "0"));
  const minor = whole * 100 + fraction;
  return minor > 0 ? minor : undefined;
}
