/**
 * The fuzz run's vocabulary: a family gets a `CaseContext` (a seeded Rng, the TPPs, a signer and
 * `exchange`) and runs one case; an exchange is one connection's writes and the requests they
 * hold, in wire order, each with what the harness may expect of it.
 */

import type { DevPki } from "../../src/cli/dev-pki.js";
import type { Rng } from "./prng.js";
import type { ExchangeOutcome, ParsedResponse, Write } from "./raw-client.js";
import type { RawRequest, SignSpec } from "./request.js";
import type { FuzzTpp, TppSet } from "./tpps.js";

/**
 * forward: a valid request; it must be answered by the backend.
 * refuse: must never reach the backend (not even its headers).
 * no-execute: may reach the backend, but never with its whole body (a body that fails a check).
 * any: either, as long as every other invariant holds.
 */
export type Expectation = "forward" | "refuse" | "no-execute" | "any";

/** One request a case sent, and what must (not) happen to it. */
export interface ExpectedRequest {
  /** The fuzz tag in its query (`fz=`): how the backend's record names it. */
  readonly tag: string;
  /** The X-Request-ID as sent, when it carries one the gateway will echo. */
  readonly requestId?: string | undefined;
  /** A few words on what was done to it, for the report. */
  readonly label: string;
  readonly expect: Expectation;
  /** The signer: a forwarded request must carry this TPP's identity to the backend, nothing else. */
  readonly tpp?: FuzzTpp;
  /** Values a client sent in identity/spoofable headers: the backend must never see them. */
  readonly spoofed?: readonly string[];
  /** Headers (lower-case) the backend must see with exactly these values, when forwarded. */
  readonly backendHeaders?: Readonly<Record<string, string>>;
  /** Gateway 5xx answers this request provokes on purpose (502 from a cut backend, 504). */
  readonly allow5xx?: readonly number[];
  /** The target the backend must receive when it is forwarded (the form the role check saw). */
  readonly backendTarget?: string;
}

/** One connection: what is written, the requests it holds, how the client ends it. */
export interface CasePlan {
  /** The requests, in the order written. */
  readonly requests: readonly ExpectedRequest[];
  readonly writes: readonly Write[];
  /** After the writes: read until the sentinel's answer or the close (default), half-close, or cut. */
  readonly after?: "read" | "fin" | "cut";
  /** How long after the last write the FIN or the cut comes. */
  readonly afterMs?: number;
  /** Write a sentinel request last whose answer ends the exchange (default: unless fin/cut). */
  readonly sentinel?: boolean;
  readonly deadlineMs?: number;
  /** The client does not wait for every answer: an executed request may go unanswered. */
  readonly abandons?: boolean;
  /** The client writes everything before it reads anything (its socket paused meanwhile). */
  readonly readAfterWrites?: boolean;
}

export interface ExchangeResult {
  readonly outcome: ExchangeOutcome;
  /** The backend's answer to the request tagged `tag`, when the client got it. */
  backendAnswer(tag: string): ParsedResponse | undefined;
  /** The gateway's refusal echoing `requestId`, when the client got one. */
  refusal(requestId: string): ParsedResponse | undefined;
}

export interface CaseContext {
  readonly rng: Rng;
  readonly family: string;
  readonly caseIndex: number;
  readonly pki: DevPki;
  readonly tpps: TppSet;
  readonly maxBodyBytes: number;
  /** A fresh, run-unique fuzz tag. */
  tag(): string;
  /** Signs a request (a fresh tag unless given). */
  sign(spec: Omit<SignSpec, "tag"> & { readonly tag?: string }): Promise<{
    request: RawRequest;
    requestId: string;
    tag: string;
  }>;
  /** Runs one connection's exchange and checks every invariant on it. */
  exchange(plan: CasePlan): Promise<ExchangeResult>;
}

export interface Family {
  readonly name: string;
  /** Share of the run's requests, relative to the others. */
  readonly weight: number;
  run(ctx: CaseContext): Promise<void>;
}
