/**
 * The signing dialects, one unit each, in one table: the chain builds each accepted dialect's steps
 * from its unit, the chooser names what a TPP should send from it, and what a signature
 * authenticates is read from it. A dialect is its folder's file and its line here.
 */

import { cavageDialect } from "./cavage.js";
import { jadesDialect } from "./jades.js";
import type { Dialect } from "./names.js";
import { rfc9421Dialect } from "./rfc9421.js";
import { ukObDialect } from "./uk-ob.js";
import type { DialectUnit } from "./unit.js";

export const DIALECT_UNITS: Readonly<Record<Dialect, DialectUnit<unknown>>> = {
  cavage: cavageDialect,
  rfc9421: rfc9421Dialect,
  jades: jadesDialect,
  "uk-ob": ukObDialect,
};

export type { CavageOptions } from "./cavage.js";
export type { JadesDialectOptions } from "./jades.js";
export { type Authenticates, DIALECTS, type Dialect } from "./names.js";
export { type Rfc9421DialectOptions, requestMessage } from "./rfc9421.js";
export type { UkObDialectOptions } from "./uk-ob.js";
export type { DialectSteps, DialectUnit, SharedDialectOptions } from "./unit.js";
