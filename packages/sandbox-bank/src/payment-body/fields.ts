/**
 * The field readers every payment body parser shares. Each returns either the value or a refusal
 * whose text names the field (its full path, such as `creditorAddress.townName`) and says what to
 * send instead. None of them throws, whatever the JSON holds.
 */

import { parsePositiveAmount } from "../money.js";

/** The Berlin Group codes a body parser can answer with (a subset of the bank's BankErrorCode). */
export type RefusalCode = "FORMAT_ERROR" | "PRODUCT_UNKNOWN";

export interface Refusal {
  readonly ok: false;
  readonly status: 400 | 404;
  readonly code: RefusalCode;
  readonly text: string;
}

export type Parsed<T> = { readonly ok: true; readonly value: T } | Refusal;

export type JsonObject = Readonly<Record<string, unknown>>;

export function formatRefusal(text: string): Refusal {
  return { ok: false, status: 400, code: "FORMAT_ERROR", text };
}

export function parsed<T>(value: T): Parsed<T> {
  return { ok: true, value };
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A member the JSON itself holds: never one inherited from Object.prototype ("constructor"). */
export function member(object: JsonObject, name: string): unknown {
  return Object.hasOwn(object, name) ? object[name] : undefined;
}

/** The received value, short and safe to echo in an error text. */
export function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "object") return "an object";
  return `the ${typeof value} ${String(value)}`;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Bytes → a JSON object; `members` lists what to send, for the text answering an empty body. */
export function readJsonObject(bytes: Uint8Array, members: string): Parsed<JsonObject> {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return formatRefusal("Body is not valid UTF-8");
  }
  if (text.trim().length === 0) return formatRefusal(`Body is empty; send a JSON object with ${members}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    return formatRefusal(
      `Body is not valid JSON: ${error instanceof Error ? error.message.slice(0, 100) : "parse error"}`,
    );
  }
  if (!isObject(body)) return formatRefusal(`Body must be a JSON object; got ${describe(body)}`);
  return parsed(body);
}

/** Surrogates: characters outside the Basic Multilingual Plane (emoji) or broken halves of them. */
const OUTSIDE_BMP = /[\ud800-\udfff]/;

/**
 * An optional free-text member: a string of at most `max` characters the core system can store
 * (SPEC 1.3: no emoji). `required` turns absence into a refusal; a blank string is refused
 * either way (absent means the member is left out, not sent empty).
 */
export function readText(
  object: JsonObject,
  name: string,
  path: string,
  options: { readonly max: number; readonly required?: boolean },
): Parsed<string | undefined> {
  const value = member(object, name);
  if (value === undefined) {
    return options.required === true
      ? formatRefusal(`${path} is required: send a non-empty string`)
      : parsed(undefined);
  }
  if (typeof value !== "string" || value.trim().length === 0) {
    return formatRefusal(
      `${path} must be a non-empty string${options.required === true ? "" : " when present"}; got ${describe(value)}`,
    );
  }
  if (value.length > options.max) {
    return formatRefusal(`${path} is ${value.length} characters long; at most ${options.max} are allowed`);
  }
  if (OUTSIDE_BMP.test(value)) {
    return formatRefusal(`${path} contains a character the core system cannot process (such as an emoji)`);
  }
  return parsed(value);
}

export function containsOutsideBmp(text: string): boolean {
  return OUTSIDE_BMP.test(text);
}

const CURRENCY = /^[A-Z]{3}$/;

export function isCurrencyCode(text: string): boolean {
  return CURRENCY.test(text);
}

export interface Amount {
  /** As the TPP sent it, e.g. "10.5". */
  readonly amount: string;
  readonly amountMinor: number;
  readonly currency: string;
}

/**
 * A required `{amount, currency}` member: the amount a decimal string (SPEC 4: amounts are
 * strings), positive, at most 2 decimals; the currency 3 upper-case letters, or exactly
 * `onlyCurrency` when the product allows one currency only.
 */
export function readAmount(
  object: JsonObject,
  name: string,
  onlyCurrency?: { readonly currency: string; readonly product: string },
): Parsed<Amount> {
  const value = member(object, name);
  if (!isObject(value)) {
    return formatRefusal(`${name} must be an object {amount, currency}; got ${describe(value)}`);
  }
  const amount = member(value, "amount");
  if (typeof amount !== "string") {
    return formatRefusal(
      `${name}.amount must be a decimal string such as "10.00" (amounts are strings); got ${describe(amount)}`,
    );
  }
  const amountMinor = parsePositiveAmount(amount);
  if (amountMinor === undefined) {
    return formatRefusal(
      `${name}.amount must be a positive decimal with at most 2 decimals, such as "10.00"; got ${describe(amount)}`,
    );
  }
  const currency = member(value, "currency");
  if (onlyCurrency !== undefined) {
    if (currency !== onlyCurrency.currency) {
      return formatRefusal(
        `${name}.currency must be "${onlyCurrency.currency}" for a ${onlyCurrency.product} payment; got ${describe(currency)}`,
      );
    }
  } else if (typeof currency !== "string" || !isCurrencyCode(currency)) {
    return formatRefusal(
      `${name}.currency must be an ISO 4217 code of 3 upper-case letters, such as "EUR"; got ${describe(currency)}`,
    );
  }
  return parsed({ amount, amountMinor, currency });
}

const BBAN = /^\d{11}$/;

export interface OwnAccount {
  /** The 11-digit Norwegian account number. */
  readonly bban: string;
  /** The account currency when the TPP gave one. */
  readonly currency: string | undefined;
}

/** A required `{bban[, currency]}` member naming a Norwegian account (11 digits). */
export function readNorwegianAccount(object: JsonObject, name: string): Parsed<OwnAccount> {
  const account = member(object, name);
  if (!isObject(account)) return formatRefusal(`${name} must be an object {bban}; got ${describe(account)}`);
  const bban = member(account, "bban");
  if (typeof bban !== "string" || !BBAN.test(bban)) {
    return formatRefusal(
      `${name}.bban must be an 11-digit Norwegian account number string; got ${describe(bban)}`,
    );
  }
  const currency = readOptionalCurrency(account, `${name}.currency`);
  if (!currency.ok) return currency;
  return parsed({ bban, currency: currency.value });
}

/** An optional `currency` member of an account reference. */
export function readOptionalCurrency(account: JsonObject, path: string): Parsed<string | undefined> {
  const currency = member(account, "currency");
  if (currency === undefined) return parsed(undefined);
  if (typeof currency !== "string" || !isCurrencyCode(currency)) {
    return formatRefusal(
      `${path} must be an ISO 4217 code of 3 upper-case letters, such as "NOK", when present; got ${describe(currency)}`,
    );
  }
  return parsed(currency);
}
