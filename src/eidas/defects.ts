/**
 * Exceptions the eIDAS layer caught where none was expected. Attacker bytes must end in a
 * Rejection by design, so each of these is a bug: the caller still refuses (fail closed, cached),
 * and the exception is published here so that operators see it without the hot path logging.
 */

import { channel } from "node:diagnostics_channel";

export const DEFECT_CHANNEL = "psd2-gateway:eidas:defect";

export interface DefectEvent {
  /** The step that caught it (`parseCertificate`, `TppVerifier`, …). */
  readonly where: string;
  readonly error: unknown;
}

const defects = channel(DEFECT_CHANNEL);

/** Publishes the defect and returns a short, printable description for a rejection text. */
export function reportDefect(where: string, error: unknown): string {
  if (defects.hasSubscribers) defects.publish({ where, error } satisfies DefectEvent);
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const short = detail.length > 160 ? `${detail.slice(0, 160)}…` : detail;
  return short.replace(/[^\x20-\x7e]/g, "?");
}
