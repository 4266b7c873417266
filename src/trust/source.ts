/**
 * A trust source: where CAs, CRLs, register entries or revocation answers come from (the CA and CRL
 * folders, the TPP register's files and URLs, the EU trusted lists, fetched CRLs, OCSP responders).
 * The composition root starts, refreshes, reports on and stops every source alike, in one loop. What
 * a source contributes goes where it was pointed when it was made: CAs, anchors and CRL files to the
 * TrustPool (pool.ts), register entries to their register layer, fetched CRLs to LiveRevocation.
 */

import type { TrustSourceStatus } from "./source-status.js";

export interface TrustSource {
  /** Names it in logs: a folder, the register, the LOTL. */
  readonly name: string;
  /**
   * Loads it before the gateway serves, then keeps it fresh on its own schedule (polling, timers).
   * Rejects only when the gateway must not start without it (a CA folder with no CA).
   */
  start(): Promise<void>;
  /**
   * SIGHUP: reads it again now. Resolves whether or not that worked: a failure keeps the last good
   * copy and shows in status(). Absent where SIGHUP has nothing to read: fetched CRLs and OCSP
   * answers are refreshed on their own clock, files are read again by prepareReload.
   */
  refresh?(): Promise<void>;
  /**
   * Files the operator replaces: reads them again and returns what puts them in place; throws,
   * keeping the old, when they do not load. The gateway puts them in place together with its TLS
   * certificate, or none of it (SIGHUP, and files changed under reload.pollSeconds).
   */
  prepareReload?(): () => void;
  /** Its state for metrics, /readyz and `trust status`: one entry per file, URL or responder. */
  status(): TrustSourceStatus[];
  stop(): void;
}

/** Where a source logs: the gateway's logger fits it (trust/ does not import observability/). */
export interface TrustLogger {
  info(fields: object | string, message?: string): void;
  warn(fields: object | string, message?: string): void;
}
