/**
 * The CRL files of trust.crlDir (caDir unless set) as trust sources: the list each file holds that
 * is in use (the newest of its issuer), and each list that is not because it failed to load, with
 * failures counted over the loads since start (startup, then every reload).
 */

import type { RevocationList } from "../eidas/index.js";
import { crlDetails } from "./crl-cache.js";
import type { CrlRejection } from "./folders.js";
import type { TrustSourceStatus } from "./source-status.js";

interface FileState {
  lastSuccess?: number;
  failures: number;
  lastError?: string;
  failingSince?: number;
}

export class CrlFileSources {
  private lists: readonly RevocationList[] = [];
  private rejected: readonly CrlRejection[] = [];
  /** Per source (file, or file#n): only those in the folder at the last load, so bounded by it. */
  private state = new Map<string, FileState>();

  constructor(
    private readonly options: {
      /** Past nextUpdate by more than this, a list proves nothing (revocation.crl.graceSeconds). */
      readonly graceMs: number;
      readonly now?: () => number;
    },
  ) {}

  /** After each load of the folder that was put in place. */
  loaded(inUse: readonly RevocationList[], rejected: readonly CrlRejection[]): void {
    const now = (this.options.now ?? Date.now)();
    const next = new Map<string, FileState>();
    for (const list of inUse) {
      const before = this.state.get(list.source);
      next.set(list.source, { lastSuccess: now, failures: before?.failures ?? 0 });
    }
    for (const { source, reason } of rejected) {
      const before = this.state.get(source);
      next.set(source, {
        ...(before?.lastSuccess !== undefined ? { lastSuccess: before.lastSuccess } : {}),
        failures: (before?.failures ?? 0) + 1,
        lastError: reason,
        failingSince: before?.failingSince ?? now,
      });
    }
    this.lists = inUse;
    this.rejected = rejected;
    this.state = next;
  }

  get statuses(): TrustSourceStatus[] {
    const now = (this.options.now ?? Date.now)();
    const inUse = this.lists.map((list): TrustSourceStatus => {
      const s = this.state.get(list.source);
      const nextUpdate = list.nextUpdate ? list.nextUpdate.getTime() + this.options.graceMs : undefined;
      return {
        kind: "crl",
        source: list.source,
        lastSuccess: s?.lastSuccess,
        failures: s?.failures ?? 0,
        size: list.revoked.size,
        ...(nextUpdate !== undefined ? { nextUpdate } : {}),
        stale: nextUpdate !== undefined && nextUpdate <= now,
        failsReadiness: false,
        crl: crlDetails("file", list),
      };
    });
    // A list that did not load holds nothing: stale, so the operator hears of the file.
    const failed = this.rejected.map(({ source }): TrustSourceStatus => {
      const s = this.state.get(source);
      return {
        kind: "crl",
        source,
        lastSuccess: s?.lastSuccess,
        failures: s?.failures ?? 0,
        ...(s?.lastError ? { lastError: s.lastError } : {}),
        ...(s?.failingSince ? { failingSince: s.failingSince } : {}),
        size: 0,
        stale: true,
        failsReadiness: false,
        crl: { origin: "file" },
      };
    });
    return [...inUse, ...failed];
  }
}
