/**
 * What the ingress and egress checks share: the violation record, per-family counts, the
 * checker they report to, and small readers of a response (its tppMessages body, a one-line
 * description, the bytes sent shown truncated).
 */

import { createHash } from "node:crypto";
import type { ParsedResponse } from "./raw-client.js";

export interface Violation {
  readonly kind: string;
  readonly family: string;
  readonly caseIndex: number;
  readonly label: string;
  readonly expected: string;
  readonly got: string;
  /** What was written on the connection, truncated. */
  readonly bytes: string;
  /** Every request of the exchange (in wire order) and every answer read, in a line. */
  readonly exchange?: string;
}

export interface FamilyStats {
  sent: number;
  refused: number;
  forwarded: number;
  /** Neither answer came back (connection closed before, or dropped behind a condemning request). */
  unanswered: number;
  violations: number;
  cases: number;
}

/** Where checks report: a passed check is counted, a failed one recorded as a violation. */
export interface Checker {
  check(ok: boolean, violation: () => Violation): boolean;
  /** Counts a check that passed without a violation to describe. */
  pass(): void;
  stats(family: string): FamilyStats;
  /** Counts requests a family sent (for the run's request budget and the report). */
  countSent(family: string, n: number): void;
}

const BYTES_SHOWN = 1200;

export function isTppMessages(r: ParsedResponse): { code: string; text: string } | undefined {
  if (r.body.length === 0 || r.body[0] !== 0x7b) return undefined;
  try {
    const json = JSON.parse(r.body.toString("utf8")) as {
      tppMessages?: { code?: string; text?: string }[];
    };
    const first = json.tppMessages?.[0];
    return first ? { code: String(first.code), text: String(first.text) } : undefined;
  } catch {
    return undefined;
  }
}

export function describe(r: ParsedResponse | undefined): string {
  if (!r) return "no answer";
  const tpp = isTppMessages(r);
  const seq = r.headers["x-backend-seq"];
  if (seq !== undefined) return `${r.status} from the backend (x-backend-seq ${seq})`;
  if (tpp) return `${r.status} ${tpp.code}: ${tpp.text.slice(0, 200)}`;
  return `${r.status} ${r.body.toString("latin1").slice(0, 200)}`;
}

export function shown(bytes: Buffer): string {
  const text = bytes.subarray(0, BYTES_SHOWN).toString("latin1");
  return JSON.stringify(text) + (bytes.length > BYTES_SHOWN ? ` … (${bytes.length} bytes)` : "");
}

export function sha256Base64(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("base64");
}
