/**
 * The certificate validation reports the gateway made lately, by id: the admin listener's
 * /trust/reports/<id> answers from here, so a support desk goes from an access line's
 * `trustReport` to why the TPP was refused. Older ones are in the log (`validation report` lines).
 */

import { LRUCache } from "lru-cache";
import type { ValidationReport } from "../eidas/index.js";

/** Reports kept; each is a few kilobytes at most (every text in it is clipped). */
export const RECENT_REPORTS = 1_000;

export class RecentReports {
  private readonly kept = new LRUCache<string, ValidationReport>({ max: RECENT_REPORTS });

  readonly add = (report: ValidationReport): void => {
    this.kept.set(report.id, report);
  };

  get(id: string): ValidationReport | undefined {
    return this.kept.get(id);
  }
}
