/**
 * Field readers for the sandbox operations' JSON bodies. A reader returns the value or refuses with
 * a text that names the field (its path, such as `cardAcceptorAddress.country`) and says what to
 * send. Refusing throws a private Refusal that only `parsing` catches, so the parsers read as a
 * straight list of fields while staying total: any JSON gives a value or a text, never an exception.
 */

import { isIsoDate } from "./dates.js";
import { CURRENCY_CODES } from "./iso-codes.js";

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly text: string };

export type JsonObject = Readonly<Record<string, unknown>>;

class Refusal extends Error {}

export function refuse(text: string): never {
  throw new Refusal(text);
}

/** Runs a reader; its refusal becomes a result. Anything else thrown is a bug and propagates. */
export function parsing<T>(read: () => T): Parsed<T> {
  try {
    return { ok: true, value: read() };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, text: error.message };
    throw error;
  }
}

/** Prefixes a refusal thrown inside `read`, e.g. with the array element it concerns. */
export function within<T>(prefix: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof Refusal) throw new Refusal(`${prefix}${error.message}`);
    throw error;
  }
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A member the JSON itself holds, never one inherited from Object.prototype ("constructor"). */
export function member(object: JsonObject, name: string): unknown {
  return Object.hasOwn(object, name) ? object[name] : undefined;
}

/** The received value, short and safe to echo in an error text. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "object") return "an object";
  return `the ${typeof value} ${String(value).slice(0, 40)}`;
}

/** Surrogates: characters outside the Basic Multilingual Plane (emoji) or broken halves of them. */
const OUTSIDE_BMP = /[\ud800-\udfff]/;

/** A field path below `parent` ("" at the top). */
export function pathOf(parent: string, name: string): string {
  return parent === "" ? name : `${parent}.${name}`;
}

export interface TextRule {
  /** What to send, e.g. `a merchant category code such as "5411"`. */
  readonly hint: string;
  readonly maxLength?: number;
}

function checkText(value: unknown, path: string, rule: TextRule): string {
  if (typeof value !== "string") refuse(`${path} must be ${rule.hint}; got ${describe(value)}`);
  if (value.trim().length === 0) refuse(`${path} must not be empty: send ${rule.hint}`);
  if (rule.maxLength !== undefined && value.length > rule.maxLength) {
    refuse(`${path} is ${value.length} characters long: send at most ${rule.maxLength}`);
  }
  // SPEC 1.3: the core system cannot store characters such as emoji, so the request is refused.
  if (OUTSIDE_BMP.test(value)) {
    refuse(`${path} contains a character the core system cannot process (such as an emoji): leave it out`);
  }
  return value;
}

export function requiredString(object: JsonObject, parent: string, name: string, rule: TextRule): string {
  const path = pathOf(parent, name);
  const value = member(object, name);
  if (value === undefined) refuse(`${path} is required: send ${rule.hint}`);
  return checkText(value, path, rule);
}

/** Absent and null both mean "not given". */
export function optionalString(
  object: JsonObject,
  parent: string,
  name: string,
  rule: TextRule,
): string | undefined {
  const value = member(object, name);
  return value === undefined || value === null ? undefined : checkText(value, pathOf(parent, name), rule);
}

export function requiredObject(object: JsonObject, parent: string, name: string, shape: string): JsonObject {
  const path = pathOf(parent, name);
  const value = member(object, name);
  if (value === undefined) refuse(`${path} is required: send ${shape}`);
  if (!isObject(value)) refuse(`${path} must be ${shape}; got ${describe(value)}`);
  return value;
}

export function optionalObject(
  object: JsonObject,
  parent: string,
  name: string,
  shape: string,
): JsonObject | undefined {
  const value = member(object, name);
  if (value === undefined || value === null) return undefined;
  if (!isObject(value))
    refuse(`${pathOf(parent, name)} must be ${shape}, or left out; got ${describe(value)}`);
  return value;
}

/** A currency code of the SPEC 2.2 table. */
export function currencyCode(object: JsonObject, parent: string, name: string): string {
  const path = pathOf(parent, name);
  const hint = 'an ISO 4217 currency code of the SPEC 2.2 table, in upper case, such as "NOK" or "EUR"';
  const code = requiredString(object, parent, name, { hint });
  if (!CURRENCY_CODES.has(code)) refuse(`${path} must be ${hint}; got ${describe(code)}`);
  return code;
}

function checkDate(value: string, path: string, hint: string): string {
  if (!isIsoDate(value)) refuse(`${path} must be ${hint}; got ${describe(value)}`);
  return value;
}

/** A calendar date written YYYY-MM-DD (SPEC 1.4); `example` shows one in the refusal. */
export function requiredDate(object: JsonObject, parent: string, name: string, example: string): string {
  const hint = `a date written YYYY-MM-DD, such as "${example}"`;
  return checkDate(requiredString(object, parent, name, { hint }), pathOf(parent, name), hint);
}

export function optionalDate(
  object: JsonObject,
  parent: string,
  name: string,
  example: string,
): string | undefined {
  const hint = `a date written YYYY-MM-DD, such as "${example}"`;
  const value = optionalString(object, parent, name, { hint });
  return value === undefined ? undefined : checkDate(value, pathOf(parent, name), hint);
}
