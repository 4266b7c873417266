/**
 * The signing dialects, one unit each, in one table: the chain builds each accepted dialect's steps
 * from its unit, the chooser asks each whether a request carries it, config names only units of
 * the table, and signing, `verify` and the evidence record ask the unit of the request's dialect.
 * A dialect is its folder's file and its line here; `registerDialect` adds one from outside
 * (a test's, a build's own) before a chain or a config is made.
 */

import type { Dialect } from "../dialect-names.js";
import { cavageDialect } from "./cavage.js";
import { jadesDialect } from "./jades.js";
import { rfc9421Dialect } from "./rfc9421.js";
import { ukObDialect } from "./uk-ob.js";
import type { DialectUnit } from "./unit.js";

const UNITS = new Map<Dialect, DialectUnit>();

/** Adds a dialect to the table; a name is taken once. */
export function registerDialect<Own, Rules>(unit: DialectUnit<Own, Rules>): void {
  if (UNITS.has(unit.name)) throw new Error(`the signing dialect '${unit.name}' is already registered`);
  const key = unit.config?.key;
  const holder = [...UNITS.values()].find((u) => key !== undefined && u.config?.key === key);
  if (holder) throw new Error(`the config key '${key}' of '${unit.name}' is taken by '${holder.name}'`);
  UNITS.set(unit.name, unit as DialectUnit);
}

registerDialect(cavageDialect);
registerDialect(rfc9421Dialect);
registerDialect(jadesDialect);
registerDialect(ukObDialect);

/** The unit of a dialect, or undefined for a name the table does not hold. */
export const dialectUnit = (name: Dialect): DialectUnit | undefined => UNITS.get(name);

/** Every registered dialect's name, in the table's order. */
export const dialectNames = (): Dialect[] => [...UNITS.keys()];

/** Every registered unit, in the table's order. */
export const dialectUnits = (): IterableIterator<DialectUnit> => UNITS.values();

export type { Authenticates, Dialect } from "../dialect-names.js";
export type { CavageOptions } from "./cavage.js";
export { type CavageResponseOptions, cavageResponseChecks } from "./cavage-response.js";
export type { JadesDialectOptions, JadesSigningRules } from "./jades.js";
export { type JadesResponseVerifierOptions, jadesResponseChecks } from "./jades-response.js";
export {
  type RequestOfResponse,
  ResponseCheck,
  type ResponseSlots,
  type ResponseToVerify,
  type ResponseVerifying,
  requestIdStep,
  responseOutline,
  StepsResponseVerifier,
} from "./response-outline.js";
export { type Rfc9421DialectOptions, requestMessage } from "./rfc9421.js";
export {
  type Rfc9421ResponseVerifierOptions,
  rfc9421ResponseChecks,
} from "./rfc9421-response.js";
export type { UkObDialectOptions } from "./uk-ob.js";
export { type UkObResponseVerifierOptions, ukObResponseChecks } from "./uk-ob-response.js";
export type {
  DialectExplanation,
  DialectSteps,
  DialectUnit,
  ExplainedResponse,
  RequestSigning,
  ResponseCheckInput,
  ResponseExplaining,
  ResponseSignerInput,
  SharedDialectOptions,
  SignerInput,
  SignResponse,
} from "./unit.js";
