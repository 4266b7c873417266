/**
 * The Date header: RFC 7231 section 7.1.1.1 HTTP-date (IMF-fixdate and the two obsolete forms),
 * checked against a clock with a tolerance (SPEC 5.8 and 8: at most 60 seconds).
 */

import { type Rejection, reject } from "../errors.js";

export type Clock = () => number;

const MONTHS: Record<string, number> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
};

// Sun, 06 Nov 1994 08:49:37 GMT
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
// Sunday, 06-Nov-94 08:49:37 GMT
const RFC850 =
  /^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
// Sun Nov  6 08:49:37 1994
const ASCTIME =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

function build(
  year: number,
  month: number,
  day: number,
  h: number,
  m: number,
  s: number,
): number | undefined {
  if (h > 23 || m > 59 || s > 60) return undefined;
  const check = new Date(Date.UTC(2000, month, day, h, m, Math.min(s, 59)));
  // Date.UTC maps years 0–99 to 1900–1999; setUTCFullYear takes them as written.
  check.setUTCFullYear(year, month, day);
  const ms = check.getTime();
  // Refuse 31 Feb and the like instead of letting Date roll them over.
  if (check.getUTCDate() !== day || check.getUTCMonth() !== month) return undefined;
  return ms;
}

/** The last IMF-fixdate parsed and its time (an IMF-fixdate does not depend on the clock). */
let lastFixdate: { readonly value: string | undefined; readonly ms: number | undefined } = {
  value: undefined,
  ms: undefined,
};

/**
 * Parses an HTTP-date to milliseconds since the epoch, or `undefined`. The weekday must be a
 * valid name but is not checked against the date: it is redundant, and published examples
 * (draft-cavage-08) carry a wrong one.
 */
export function parseHttpDate(value: string, now: number = Date.now()): number | undefined {
  // Every request of the same second carries the same Date: the last IMF-fixdate read is kept.
  if (value === lastFixdate.value) return lastFixdate.ms;
  let m = IMF_FIXDATE.exec(value);
  if (m) {
    const ms = build(Number(m[4]), MONTHS[m[3]!]!, Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7]));
    lastFixdate = { value, ms };
    return ms;
  }
  m = RFC850.exec(value);
  if (m) {
    // RFC 7231: a two-digit year more than 50 years in the future means the most recent past year with those digits.
    const currentYear = new Date(now).getUTCFullYear();
    let year = Math.floor(currentYear / 100) * 100 + Number(m[4]);
    if (year > currentYear + 50) year -= 100;
    return build(year, MONTHS[m[3]!]!, Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7]));
  }
  m = ASCTIME.exec(value);
  if (m)
    return build(
      Number(m[7]),
      MONTHS[m[2]!]!,
      Number(m[3]!.trim()),
      Number(m[4]),
      Number(m[5]),
      Number(m[6]),
    );
  return undefined;
}

/** The last second formatted: a signer under load writes the same Date many times a second. */
let formattedSecond = Number.NaN;
let formatted = "";

/** IMF-fixdate, the form every sender must use. */
export function formatHttpDate(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== formattedSecond) {
    formatted = new Date(ms).toUTCString();
    formattedSecond = second;
  }
  return formatted;
}

export interface DateCheckOptions {
  /** Allowed deviation either way, in milliseconds. Default 60 000 (SPEC 5.8). */
  readonly toleranceMs?: number;
}

export const DEFAULT_DATE_TOLERANCE_MS = 60_000;

/** Checks a Date header against the clock; returns the parsed time or a rejection that says how far off it was. */
export function checkDate(
  value: string | undefined,
  now: number,
  options: DateCheckOptions = {},
): number | Rejection {
  if (value === undefined || value.length === 0) {
    return reject(
      "FORMAT_ERROR",
      "Date header is missing; send the current time as an RFC 7231 IMF-fixdate, e.g. 'Sun, 06 Nov 1994 08:49:37 GMT'",
    );
  }
  const at = parseHttpDate(value, now);
  if (at === undefined) {
    return reject(
      "FORMAT_ERROR",
      `Date header '${value.slice(0, 64)}' is not an RFC 7231 HTTP-date; expected an IMF-fixdate such as '${formatHttpDate(now)}'`,
    );
  }
  const tolerance = options.toleranceMs ?? DEFAULT_DATE_TOLERANCE_MS;
  const offset = at - now;
  if (Math.abs(offset) > tolerance) {
    const seconds = Math.round(Math.abs(offset) / 1000);
    const direction = offset < 0 ? "behind" : "ahead of";
    return reject(
      "TIMESTAMP_INVALID",
      `Date header '${value}' is ${seconds} s ${direction} the gateway clock (${formatHttpDate(now)}); at most ${Math.round(tolerance / 1000)} s either way is accepted`,
    );
  }
  return at;
}
