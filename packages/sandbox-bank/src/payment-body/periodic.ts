/**
 * The body of a periodic payment (POST /v1/periodic-payments/norwegian-domestic-credit-transfers):
 * a domestic payment (./domestic.ts) plus the Berlin Group standing-order members.
 *
 * | member | required | rule |
 * |---|---|---|
 * | startDate | yes | ISO date, not before the bank's today |
 * | endDate | no | ISO date, after startDate |
 * | frequency | yes | a Berlin Group frequency code (FREQUENCIES) |
 * | executionRule | no | "following" or "preceding": where an execution on a non-business day moves |
 * | dayOfExecution | no | "1" … "31" (a leading zero, "01", is accepted too) |
 * | monthsOfExecution | with MonthlyVariable only | months "1" … "12", each at most once (SPEC 7, 9.5); required with MonthlyVariable, refused with any other frequency |
 *
 * Months and the day are kept without leading zeros, so "01" and "1" are one month.
 */

import { isIsoDate } from "../dates.js";
import { type DomesticPaymentRequest, readDomesticPayment } from "./domestic.js";
import { describe, formatRefusal, type JsonObject, member, type Parsed, parsed } from "./fields.js";

export const FREQUENCIES = [
  "Daily",
  "Weekly",
  "EveryTwoWeeks",
  "Monthly",
  "EveryTwoMonths",
  "Quarterly",
  "SemiAnnual",
  "Annual",
  "MonthlyVariable",
] as const;

export type Frequency = (typeof FREQUENCIES)[number];

export const EXECUTION_RULES = ["following", "preceding"] as const;

export type ExecutionRule = (typeof EXECUTION_RULES)[number];

export const PERIODIC_MEMBERS =
  "instructedAmount, debtorAccount, creditorAccount, creditorName, startDate and frequency";

export interface PeriodicPaymentRequest extends DomesticPaymentRequest {
  readonly startDate: string;
  readonly endDate: string | undefined;
  readonly frequency: Frequency;
  readonly executionRule: ExecutionRule | undefined;
  /** "1" … "31". */
  readonly dayOfExecution: string | undefined;
  /** "1" … "12", in the order sent; present exactly when frequency is MonthlyVariable. */
  readonly monthsOfExecution: readonly string[] | undefined;
}

const DAY = /^(?:0?[1-9]|[12]\d|3[01])$/;
const MONTH = /^(?:0?[1-9]|1[0-2])$/;

/** The members of a periodic domestic payment in `body`, its dates judged against `today` (YYYY-MM-DD). */
export function readPeriodicPayment(body: JsonObject, today: string): Parsed<PeriodicPaymentRequest> {
  const payment = readDomesticPayment(body);
  if (!payment.ok) return payment;

  const startDate = member(body, "startDate");
  if (startDate === undefined) {
    return formatRefusal(
      `startDate is required for a periodic payment: send the first execution date as YYYY-MM-DD, ${today} or later`,
    );
  }
  if (typeof startDate !== "string" || !isIsoDate(startDate)) {
    return formatRefusal(`startDate must be a calendar date written YYYY-MM-DD; got ${describe(startDate)}`);
  }
  if (startDate < today) {
    return formatRefusal(
      `startDate ${startDate} is in the past (the bank's date is ${today}); send ${today} or a later date`,
    );
  }
  const endDate = member(body, "endDate");
  if (endDate !== undefined) {
    if (typeof endDate !== "string" || !isIsoDate(endDate)) {
      return formatRefusal(
        `endDate must be a calendar date written YYYY-MM-DD when present; got ${describe(endDate)}`,
      );
    }
    if (endDate <= startDate) {
      return formatRefusal(
        `endDate ${endDate} must be after startDate ${startDate}; leave endDate out for a payment without end`,
      );
    }
  }

  const frequency = member(body, "frequency");
  if (typeof frequency !== "string" || !(FREQUENCIES as readonly string[]).includes(frequency)) {
    return formatRefusal(`frequency must be one of ${FREQUENCIES.join(", ")}; got ${describe(frequency)}`);
  }
  const executionRule = member(body, "executionRule");
  if (
    executionRule !== undefined &&
    (typeof executionRule !== "string" || !(EXECUTION_RULES as readonly string[]).includes(executionRule))
  ) {
    return formatRefusal(
      `executionRule must be "following" or "preceding" when present; got ${describe(executionRule)}`,
    );
  }
  const dayOfExecution = member(body, "dayOfExecution");
  if (dayOfExecution !== undefined && (typeof dayOfExecution !== "string" || !DAY.test(dayOfExecution))) {
    return formatRefusal(
      `dayOfExecution must be a day of the month as a string, "1" to "31", when present; got ${describe(dayOfExecution)}`,
    );
  }
  const months = readMonths(body, frequency as Frequency);
  if (!months.ok) return months;

  return parsed({
    ...payment.value,
    startDate,
    endDate,
    frequency: frequency as Frequency,
    executionRule: executionRule as ExecutionRule | undefined,
    dayOfExecution: dayOfExecution === undefined ? undefined : String(Number(dayOfExecution)),
    monthsOfExecution: months.value,
  });
}

function readMonths(body: JsonObject, frequency: Frequency): Parsed<readonly string[] | undefined> {
  const months = member(body, "monthsOfExecution");
  if (frequency !== "MonthlyVariable") {
    if (months === undefined) return parsed(undefined);
    return formatRefusal(
      `monthsOfExecution is only allowed with frequency MonthlyVariable; frequency is ${frequency}: leave monthsOfExecution out or send frequency MonthlyVariable`,
    );
  }
  if (months === undefined) {
    return formatRefusal(
      `monthsOfExecution is required with frequency MonthlyVariable: send the months to pay in, such as ["1", "4", "7", "10"]`,
    );
  }
  if (!Array.isArray(months) || months.length === 0) {
    return formatRefusal(
      `monthsOfExecution must be a non-empty array of months "1" to "12", such as ["1", "4", "7", "10"]; got ${describe(months)}`,
    );
  }
  const seen = new Map<string, string>();
  const normalised: string[] = [];
  for (const [index, month] of months.entries()) {
    if (typeof month !== "string" || !MONTH.test(month)) {
      return formatRefusal(
        `monthsOfExecution[${index}] must be a month as a string, "1" to "12"; got ${describe(month)}`,
      );
    }
    const value = String(Number(month));
    const earlier = seen.get(value);
    if (earlier !== undefined) {
      const same = earlier === month ? `"${month}"` : `"${earlier}" and "${month}"`;
      return formatRefusal(
        `monthsOfExecution names month ${value} twice (${same}); each month may appear once`,
      );
    }
    seen.set(value, month);
    normalised.push(value);
  }
  return parsed(normalised);
}

/** What makes two periodic payments the same: the domestic parts plus start date and frequency. */
export function periodicKeyParts(payment: PeriodicPaymentRequest): readonly unknown[] {
  return [payment.startDate, payment.frequency];
}
