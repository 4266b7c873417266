/**
 * What a signing dialect is to the chain: one unit, registered in one table (index.ts). A unit says
 * how a TPP signs in it, what its signature authenticates, which of its steps verifies the
 * signature, and builds its request steps for their places in the chain's generic order
 * (steps.ts `requestChecks`): its time check before the digests, its body digest, its parsing
 * before the certificate, its keyId check after it, its coverage and signature last.
 */

import type { AlgorithmName } from "../../signature/index.js";
import type { CheckContext } from "../context.js";
import type { Step } from "../runner.js";
import type { Authenticates, Dialect } from "./names.js";

/** What every dialect's steps may read of the chain's options. */
export interface SharedDialectOptions {
  readonly now: () => number;
  /** The Date tolerance: how far a signed time may be from the clock either way. */
  readonly dateToleranceMs: number;
  /** draft-cavage's algorithms (`verification.algorithms`). */
  readonly algorithms: readonly AlgorithmName[];
  readonly keyIdPolicy: "strict" | "relaxed";
  readonly allowDecimalSerial: boolean;
}

/** A dialect's request steps, by their place in the chain. */
export interface DialectSteps {
  /** Before the digests: the time the request was signed, when a header carries it (Date). */
  readonly time?: readonly Step<CheckContext>[];
  /** The body's digest, hashed as it streams (one the generic `digest` step does not read). */
  readonly digest?: readonly Step<CheckContext>[];
  /** Before the certificate: the signature's header read, its times against the clock. */
  readonly parse: readonly Step<CheckContext>[];
  /** After the certificate: the keyId naming it. */
  readonly keyId?: readonly Step<CheckContext>[];
  /** The coverage, claims and the signature itself (and its body phases for a body dialect). */
  readonly verify: readonly Step<CheckContext>[];
  /**
   * How long after now a request could still pass this dialect's time checks at most: the replay
   * record's life when a time step set none.
   */
  readonly longestAcceptanceMs: number;
}

export interface DialectUnit<Own = unknown> {
  readonly name: Dialect;
  readonly authenticates: Authenticates;
  /** What a TPP should send to sign in it, for refusals that say what would be accepted. */
  readonly howToSign: string;
  /** The step that verifies its signature: a chain accepting the dialect must have it. */
  readonly signatureStep: string;
  /** Its own options' defaults (config `verification.dialects.<name>`). */
  readonly defaults: Own;
  steps(shared: SharedDialectOptions, own: Own): DialectSteps;
}
