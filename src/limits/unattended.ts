/**
 * SPEC 8: without the PSU present (no PSU-IP-Address, SPEC 5.16) a TPP may read balances at most
 * 4 times and transactions at most 4 times per 24 hours per account, and only transactions at most
 * 90 days old. A slot is reserved before the call is forwarded and handed back when the call does
 * not count (the backend did not answer 2xx), so the bank's own failures never burn a quota.
 *
 * The 90 days are refused, never silently capped, so a TPP sees why data is missing: a transaction
 * list must name a `dateFrom` inside them (checked before the slot is reserved, so a refusal costs
 * none and never reaches the bank); a transaction's details can only be dated from the bank's
 * answer, which is then read (bounded) and withheld when the transaction is older.
 */

import { createHash } from "node:crypto";
import { type Rejection, reject } from "../errors.js";
import {
  type AgreedLimit,
  type ClassLimits,
  consentKey,
  type LimitAgreement,
  LimitAgreements,
  type LimitClass,
  type LimitSource,
  readConsentFrequency,
} from "./agreements.js";
import { type LimitStore, type MaybePromise, type Reservation, STORE_RETRY_AFTER_SECONDS } from "./store.js";

export type { LimitClass } from "./agreements.js";

/**
 * How an unattended transaction read is held to the 90 days: `dateFrom`, the list's query must
 * name a dateFrom inside them; `bookingDate`, the bank's answer (a transaction's details) is dated
 * by its bookingDate, or valueDate without one; `none`, not at all.
 */
export type PeriodRule = "dateFrom" | "bookingDate" | "none";

export interface UnattendedRoute {
  /** A path with `{account}` for the account id and `{*}` for any one segment. */
  readonly pattern: string;
  readonly class: LimitClass;
  /**
   * Transactions only; by default `bookingDate` when the pattern ends in `{*}` (a transaction's
   * details), `dateFrom` otherwise (the list).
   */
  readonly period?: PeriodRule | undefined;
}

export const DEFAULT_UNATTENDED_ROUTES: readonly UnattendedRoute[] = [
  { pattern: "/v1/accounts/{account}/balances", class: "balances" },
  { pattern: "/v1/card-accounts/{account}/balances", class: "balances" },
  { pattern: "/v1/accounts/{account}/transactions", class: "transactions", period: "dateFrom" },
  { pattern: "/v1/accounts/{account}/transactions/{*}", class: "transactions", period: "bookingDate" },
  { pattern: "/v1/card-accounts/{account}/transactions", class: "transactions", period: "dateFrom" },
  { pattern: "/v1/card-accounts/{account}/transactions/{*}", class: "transactions", period: "bookingDate" },
];

export interface UnattendedOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly routes: readonly UnattendedRoute[];
  /** Count per consent as well (the Consent-ID header) instead of per account only. */
  readonly includeConsentId: boolean;
  /** Unattended transaction reads reach back at most this many days (SPEC 8: 90); 0 turns the rule off. */
  readonly maxTransactionAgeDays: number;
  /** When the store cannot be reached: refuse (false, the default) or let the call through. */
  readonly failOpen: boolean;
  /** Limits TPPs have agreed, per TPP or per consent (agreements.ts); `limit` for everyone else. */
  readonly agreements?: readonly LimitAgreement[];
  /**
   * The response header in which the bank's backend tells a consent's frequencyPerDay (read and
   * removed); none: no such header is read.
   */
  readonly consentFrequencyHeader?: string | undefined;
  /** How long a consent's frequencyPerDay is remembered after the backend last told it. */
  readonly consentFrequencyTtlMs?: number;
}

interface CompiledRoute {
  readonly segments: readonly string[];
  readonly accountAt: number;
  readonly class: LimitClass;
  readonly period: PeriodRule;
}

export interface LimitedCall {
  readonly class: LimitClass;
  readonly account: string;
  readonly period: PeriodRule;
}

/** The period rule a route gets when its config names none. */
export function defaultPeriodRule(route: UnattendedRoute): PeriodRule {
  if (route.class !== "transactions") return "none";
  return route.pattern.endsWith("/{*}") ? "bookingDate" : "dateFrom";
}

/** A slot held for a call: give it back when the call did not count. */
export interface HeldSlot {
  release(): MaybePromise<void>;
}

/** Remembered a week after the backend last told it: every answer for the consent tells it again. */
export const DEFAULT_CONSENT_FREQUENCY_TTL_MS = 7 * 24 * 3600 * 1000;

export interface UnattendedRequest {
  readonly method: string;
  readonly target: string;
  /** The normalised path (routes.ts routingPath). */
  readonly routingPath: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly organizationId: string;
  /** The register's agreed limits for the TPP (its entry's `unattendedLimit` column). */
  readonly registerLimits?: ClassLimits | undefined;
  readonly now: number;
}

const DAY = 24 * 3600 * 1000;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** An ISODate, or the date part of an ISODateTime (a bank's answer may carry either). */
const ISO_DATE_OR_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** A transaction's details are a few kilobytes; an answer larger than this is withheld unread. */
export const MAX_TRANSACTION_DETAILS_BYTES = 64 * 1024;

function describeWindow(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 1000)} s`;
}

export class UnattendedAccessPolicy {
  private readonly routes: CompiledRoute[];
  private readonly agreements: LimitAgreements;

  constructor(
    private readonly options: UnattendedOptions,
    private readonly store: LimitStore,
    private readonly events: {
      readonly onStoreError?: (error: unknown) => void;
      /** A call refused with ACCESS_EXCEEDED, for metrics: its class and where its limit came from. */
      readonly onExceeded?: (limitClass: LimitClass, source: LimitSource) => void;
      /** A call let through under its limit, for metrics. */
      readonly onAdmitted?: (limitClass: LimitClass, source: LimitSource) => void;
    } = {},
  ) {
    this.agreements = new LimitAgreements(options.agreements ?? [], options.limit);
    this.routes = options.routes.map((r) => {
      const segments = r.pattern.toLowerCase().split("/").filter(Boolean);
      return {
        segments,
        accountAt: segments.indexOf("{account}"),
        class: r.class,
        period: r.class === "transactions" ? (r.period ?? defaultPeriodRule(r)) : "none",
      };
    });
  }

  /** Whether the backend's answers are read for a consent's frequencyPerDay (a response phase). */
  get learnsConsentFrequency(): boolean {
    return this.options.consentFrequencyHeader !== undefined;
  }

  /** Whether unattended transaction reads are held to a number of days at all. */
  get checksPeriod(): boolean {
    return this.options.maxTransactionAgeDays > 0;
  }

  /**
   * Which period rule applies to this call: `none` when the PSU is present, the route is not a
   * limited transaction read, or the rule is switched off.
   */
  periodRule(method: string, routingPath: string, headers: UnattendedRequest["headers"]): PeriodRule {
    if (!this.checksPeriod || headers["psu-ip-address"] !== undefined) return "none";
    return this.classify(method, routingPath)?.period ?? "none";
  }

  /** The `dateFrom` rule for a transaction list (see checkDateFrom). */
  checkDateFrom(target: string, now: number): Rejection | undefined {
    return checkDateFrom(target, now, this.options.maxTransactionAgeDays);
  }

  /** The `bookingDate` rule for the bank's answer to a transaction's details (see checkTransactionDetails). */
  checkTransactionDetails(
    body: Buffer,
    contentEncoding: string | undefined,
    now: number,
  ): Rejection | undefined {
    return checkTransactionDetails(body, contentEncoding, now, this.options.maxTransactionAgeDays);
  }

  /**
   * Which limited class and account a path falls under, if any. Every method counts: HEAD is the
   * read it is, and a legacy core that serves these read-only resources whatever the method must
   * not give a POST or PUT a free read.
   */
  classify(_method: string, routingPath: string): LimitedCall | undefined {
    const parts = routingPath.split("/").filter(Boolean);
    for (const route of this.routes) {
      if (route.segments.length !== parts.length) continue;
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const want = route.segments[i]!;
        ok = want.startsWith("{") || want === parts[i];
      }
      if (ok) {
        const account = route.accountAt >= 0 ? parts[route.accountAt]! : "";
        return { class: route.class, account, period: route.period };
      }
    }
    return undefined;
  }

  /**
   * Which limit an unattended call is held to, and where it came from (agreements.ts): undefined
   * when the PSU is present or the route is not limited. A consent's own frequencyPerDay is asked
   * of the store (a promise with Redis); a store that cannot answer leaves the TPP's limit.
   */
  agreedLimit(request: UnattendedRequest): MaybePromise<AgreedLimit | undefined> {
    if (request.headers["psu-ip-address"] !== undefined) return undefined;
    const call = this.classify(request.method, request.routingPath);
    if (!call) return undefined;
    const consent = request.headers["consent-id"];
    const consentId = typeof consent === "string" && consent !== "" ? consent : undefined;
    const question = {
      organizationId: request.organizationId,
      consentId,
      class: call.class,
      register: request.registerLimits,
      consent: undefined as number | undefined,
    };
    if (consentId === undefined || this.options.consentFrequencyHeader === undefined)
      return this.agreements.choose(question);
    let told: MaybePromise<number | undefined>;
    try {
      told = this.store.recallLimit(consentLimitKey(request.organizationId, consentId));
    } catch (error) {
      this.events.onStoreError?.(error);
      return this.agreements.choose(question);
    }
    const choose = (n: number | undefined) => this.agreements.choose({ ...question, consent: n });
    return told instanceof Promise
      ? told.then(choose, (error: unknown) => {
          this.events.onStoreError?.(error);
          return choose(undefined);
        })
      : choose(told);
  }

  /**
   * Nothing to do (`undefined`) when the PSU is present or the route is not limited; otherwise a
   * held slot, or a rejection: ACCESS_EXCEEDED (429 with Retry-After), or SERVICE_UNAVAILABLE when
   * the store cannot be reached and failing open is not configured. The period rules are checked
   * before this, by their own step. `agreed` is agreedLimit's answer for the same request.
   */
  admit(
    request: UnattendedRequest,
    agreed: AgreedLimit | undefined,
  ): MaybePromise<HeldSlot | Rejection | undefined> {
    if (agreed === undefined || request.headers["psu-ip-address"] !== undefined) return undefined;
    const call = this.classify(request.method, request.routingPath);
    if (!call) return undefined;

    const key = this.keyOf(request, call, agreed.perConsent);
    let reservation: MaybePromise<Reservation>;
    try {
      reservation = this.store.reserve(key, agreed.limit, this.options.windowMs, request.now);
    } catch (error) {
      return this.storeFailed(error);
    }
    const decide = (r: Reservation): HeldSlot | Rejection => {
      if (r.allowed) {
        this.events.onAdmitted?.(call.class, agreed.source);
        return { release: () => this.store.release(key, r.slotId) };
      }
      return this.exceeded(call, agreed, request.now, r.retryAfterMs);
    };
    return reservation instanceof Promise
      ? reservation.then(decide, (e: unknown) => this.storeFailed(e))
      : decide(reservation);
  }

  /**
   * The backend's answer may tell a consent's frequencyPerDay (`consentFrequencyHeader`): taken out
   * of `send` whatever it says, so the TPP never sees it, and remembered for the TPP's consent when
   * the answer is 2xx. A store that cannot keep it is counted; the answer goes out regardless.
   */
  learnConsentFrequency(
    status: number,
    received: Readonly<Record<string, string | string[] | undefined>>,
    send: Record<string, string | string[]>,
    requestConsentId: string | string[] | undefined,
    organizationId: string | undefined,
  ): void {
    const name = this.options.consentFrequencyHeader;
    if (name === undefined || received[name] === undefined) return;
    delete send[name];
    if (status < 200 || status >= 300 || organizationId === undefined) return;
    const told = readConsentFrequency(
      received[name],
      typeof requestConsentId === "string" ? requestConsentId : undefined,
    );
    if (!told) return;
    const key = consentLimitKey(organizationId, told.consentId);
    const ttl = this.options.consentFrequencyTtlMs ?? DEFAULT_CONSENT_FREQUENCY_TTL_MS;
    try {
      const kept = this.store.rememberLimit(key, told.frequencyPerDay, ttl);
      if (kept instanceof Promise) kept.catch((error: unknown) => this.events.onStoreError?.(error));
    } catch (error) {
      this.events.onStoreError?.(error);
    }
  }

  private keyOf(request: UnattendedRequest, call: LimitedCall, perConsent: boolean): string {
    const consent = perConsent || this.options.includeConsentId ? request.headers["consent-id"] : undefined;
    const consentPart = typeof consent === "string" ? `|${consent}` : "";
    // Hashed: account ids come from the path (attacker input); a digest bounds the key's size.
    const account = createHash("sha256").update(call.account).digest("base64url").slice(0, 22);
    return `ua|${request.organizationId}|${call.class}|${account}${consentPart}`;
  }

  private exceeded(call: LimitedCall, agreed: AgreedLimit, now: number, retryAfterMs: number): Rejection {
    this.events.onExceeded?.(call.class, agreed.source);
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    const next = new Date(now + retryAfterMs).toISOString();
    const what = call.class === "balances" ? "balance" : "transaction";
    return reject(
      "ACCESS_EXCEEDED",
      `without the PSU present (no PSU-IP-Address) at most ${agreed.limit} ${what} calls per ${describeWindow(this.options.windowMs)} are allowed for this account${agreed.perConsent ? " and consent" : ""} (${LIMIT_WORDS[agreed.source]}); the next one is allowed at ${next} (in ${seconds} s)`,
      seconds,
    );
  }

  private storeFailed(error: unknown): HeldSlot | Rejection | undefined {
    this.events.onStoreError?.(error);
    if (this.options.failOpen) return undefined;
    return reject(
      "SERVICE_UNAVAILABLE",
      `the limit store is unavailable, so calls without the PSU present cannot be counted and are refused; try again in ${STORE_RETRY_AFTER_SECONDS} s`,
      STORE_RETRY_AFTER_SECONDS,
    );
  }
}

/** Where a refusal says its limit came from. */
const LIMIT_WORDS: Readonly<Record<LimitSource, string>> = {
  default: "SPEC 8",
  register: "the limit the register records for this TPP",
  config: "the limit the bank agreed with this TPP",
  consent: "the consent's frequencyPerDay",
  "config-consent": "the limit the bank agreed for this consent",
};

/** The store's key for a consent's frequencyPerDay as the backend told it. */
const consentLimitKey = (organizationId: string, consentId: string) =>
  `cf|${consentKey(organizationId, consentId)}`;

/** A UTC day number (days since 1970-01-01) as YYYY-MM-DD. */
function isoDay(day: number): string {
  return new Date(day * DAY).toISOString().slice(0, 10);
}

/** The UTC day number of a real calendar date written YYYY-MM-DD (or an ISODateTime's date part). */
function dayOf(match: RegExpExecArray | null): number | undefined {
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const ms = Date.UTC(year, month - 1, day);
  const date = new Date(ms);
  // Date.UTC rolls 2026-02-31 over into March: only a date that reads back the same is real.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day)
    return undefined;
  return ms / DAY;
}

/** The first UTC day (a day number) unattended transaction reads may reach back to: today minus the days. */
function earliestDay(now: number, maxAgeDays: number): number {
  return Math.floor(now / DAY) - maxAgeDays;
}

/** The first UTC day unattended transaction reads may reach back to, as YYYY-MM-DD. */
export function earliestReadableDay(now: number, maxAgeDays: number): string {
  return isoDay(earliestDay(now, maxAgeDays));
}

/** `%XX` decoded byte by byte (never throws), as a lenient backend would read a query. */
function percentDecoded(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}

function occurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** Query parameters with which a bank may ignore dateFrom (Berlin Group delta access). */
const DELTA_PARAMETERS = ["entryreferencefrom", "deltalist"];

/**
 * SPEC 8 for an unattended transaction list: the query must name, exactly once and spelt plainly,
 * a `dateFrom` no earlier than today (UTC) minus `maxAgeDays`. Missing or earlier: PERIOD_INVALID.
 * Written any other way a backend might also read as dateFrom (twice, in other case, percent-
 * encoded, behind a `;`), or not a real date: FORMAT_ERROR, since the gateway and the bank could
 * read different values. Delta access (entryReferenceFrom, deltaList), with which a bank may ignore
 * dateFrom: PARAMETER_NOT_SUPPORTED.
 */
export function checkDateFrom(target: string, now: number, maxAgeDays: number): Rejection | undefined {
  const earliest = earliestDay(now, maxAgeDays);
  const rule = `without the PSU present (no PSU-IP-Address) transactions are readable for the last ${maxAgeDays} days only (SPEC 8): send dateFrom on or after ${isoDay(earliest)}`;
  const q = target.indexOf("?");
  const query = q < 0 ? "" : target.slice(q + 1);
  const loose = percentDecoded(query).toLowerCase();
  const named = occurrences(loose, "datefrom");
  if (named === 0) return reject("PERIOD_INVALID", `${rule}; this request has no dateFrom`);
  for (const name of DELTA_PARAMETERS) {
    if (loose.includes(name)) {
      return reject(
        "PARAMETER_NOT_SUPPORTED",
        `${rule}; leave out entryReferenceFrom and deltaList, with which the bank may ignore dateFrom`,
      );
    }
  }
  const plain = query.split("&").filter((p) => p.startsWith("dateFrom="));
  if (named > 1 || plain.length !== 1) {
    return reject(
      "FORMAT_ERROR",
      `the query names dateFrom ${named} times or in another spelling; ${rule}, exactly once, as dateFrom=YYYY-MM-DD`,
    );
  }
  const value = plain[0]!.slice("dateFrom=".length);
  const from = dayOf(ISO_DATE.exec(value));
  if (from === undefined) {
    return reject(
      "FORMAT_ERROR",
      `dateFrom '${value.slice(0, 40)}' is not an ISO date (YYYY-MM-DD); ${rule}`,
    );
  }
  if (from < earliest) return reject("PERIOD_INVALID", `${rule}; dateFrom ${value} is earlier`);
  return undefined;
}

/**
 * SPEC 8 for an unattended read of one transaction's details, judged on the bank's 2xx answer:
 * `transactionsDetails.bookingDate` (or `valueDate` without one) older than today (UTC) minus
 * `maxAgeDays` is withheld with PERIOD_INVALID. An answer the gateway cannot date (compressed, not
 * JSON, no such date) is withheld too, with BAD_GATEWAY: failing closed, never passing it unread.
 */
export function checkTransactionDetails(
  body: Buffer,
  contentEncoding: string | undefined,
  now: number,
  maxAgeDays: number,
): Rejection | undefined {
  const earliest = earliestDay(now, maxAgeDays);
  const rule = `without the PSU present (no PSU-IP-Address) transactions are readable for the last ${maxAgeDays} days only (SPEC 8)`;
  const undated = (why: string) =>
    reject(
      "BAD_GATEWAY",
      `${rule}, and the bank's answer ${why}, so it was withheld; read it with the PSU present`,
    );
  if (contentEncoding !== undefined && contentEncoding.trim().toLowerCase() !== "identity") {
    return reject(
      "BAD_GATEWAY",
      `${rule}, and the bank's answer came with Content-Encoding ${contentEncoding.slice(0, 40)}, which the gateway cannot date, so it was withheld; send the request without Accept-Encoding`,
    );
  }
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString("utf8"));
  } catch {
    return undated("is not JSON");
  }
  const details = (answer as { transactionsDetails?: unknown } | null)?.transactionsDetails;
  if (typeof details !== "object" || details === null) return undated("has no transactionsDetails object");
  const { bookingDate, valueDate } = details as { bookingDate?: unknown; valueDate?: unknown };
  const booked = bookingDate !== undefined && bookingDate !== null;
  const [field, date] = booked ? ["bookingDate", bookingDate] : ["valueDate", valueDate];
  if (date === undefined || date === null) return undated("names neither bookingDate nor valueDate");
  const day = typeof date === "string" ? dayOf(ISO_DATE_OR_TIME.exec(date)) : undefined;
  if (day === undefined) return undated(`has a ${field} that is not an ISO date`);
  if (day < earliest) {
    return reject(
      "PERIOD_INVALID",
      `${rule}: this transaction's ${field} is ${isoDay(day)}, before ${isoDay(earliest)}; read it with the PSU present`,
    );
  }
  return undefined;
}
