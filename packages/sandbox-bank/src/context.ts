/** What every route handler receives: the request, its parsed target and the bank's current state. */

import type { IncomingMessage } from "node:http";
import type { Catalogue } from "./catalogue.js";
import type { Reply } from "./http.js";
import type { IdentityHeaderNames } from "./identity.js";
import type { BankData } from "./model.js";
import type { PaymentStore } from "./payment-store.js";
import type { ScaStore } from "./sca-store.js";

export interface BankSettings {
  /** Milliseconds since the epoch: the bank's clock (tests control it). */
  readonly now: () => number;
  readonly identityHeaders: IdentityHeaderNames;
  /**
   * Where PSUs' browsers reach this bank (its SCA page, SPEC 5.11): the listener's own URL unless
   * configured; set when the bank starts listening.
   */
  readonly publicUrl: { value: string };
  /** How long an SCA page link stays usable after the TPP got it; then the page says it expired. */
  readonly scaLinkTtlMs: number;
  /** Reproduce the SPEC 4.5 known issue: pending transactions ignore dateFrom, dateTo and limit. */
  readonly pendingIgnoresDateFilter: boolean;
  readonly maxBodyBytes: number;
  /**
   * How much of an oversized body the bank still drains after answering 413, so the client can read
   * the answer instead of meeting a reset connection; beyond it the connection is closed.
   */
  readonly drainBytes: number;
}

/**
 * Replaced as a whole on reset, so a request in flight keeps a consistent view. A sandbox
 * operation that changes the data replaces `catalogue` with one built from the new data (the
 * catalogue itself is never changed in place: requests only look up what it serialised).
 */
export interface BankState {
  catalogue: Catalogue;
  readonly payments: PaymentStore;
  readonly sca: ScaStore;
}

export interface RequestContext {
  readonly req: IncomingMessage;
  readonly query: URLSearchParams;
  /** Path parameters in route order. */
  readonly params: readonly string[];
  readonly state: BankState;
  readonly settings: BankSettings;
  readonly control: BankControl;
}

/** What a sandbox operation may do to the bank as a whole (server.ts implements it). */
export interface BankControl {
  /** Back to the initial state (SPEC 1.7), written to the state file if any; returns the new state. */
  reset(): BankState;
  /**
   * Replaces `from`'s data: builds its catalogue and writes the state file, then swaps the catalogue
   * in (a failed write throws and changes nothing). `from` is the state the request began with.
   */
  commit(from: BankState, data: BankData): void;
}

export type RouteHandler = (context: RequestContext) => Reply | Promise<Reply>;
