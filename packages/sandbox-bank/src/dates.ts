/** ISO 8601 calendar dates (SPEC 1.4), in UTC so that data does not move with the host's zone. */

const DAY_MS = 86_400_000;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

export function isoDate(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

/** The date `days` days after `epochMs` (negative for the past). */
export function isoDateOffset(epochMs: number, days: number): string {
  return isoDate(epochMs + days * DAY_MS);
}

/** True for a real calendar date written YYYY-MM-DD (rejects 2026-02-30). */
export function isIsoDate(text: string): boolean {
  if (!ISO_DATE.test(text)) return false;
  const parsed = Date.parse(`${text}T00:00:00Z`);
  return Number.isFinite(parsed) && isoDate(parsed) === text;
}
