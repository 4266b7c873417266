/**
 * The TPP register (SPEC 1.5: registration is checked against central registers): who is
 * authorised, for which roles, and optionally with which certificates. The last good copy is
 * served; once it is older than the allowed age, every lookup fails closed.
 */

import { z } from "zod";
import { type Rejection, reject } from "../errors.js";
import { PSD2_ROLES, type Psd2Role } from "./qcstatements.js";

const entrySchema = z.object({
  organizationIdentifier: z.string().min(1),
  name: z.string().min(1),
  roles: z.array(z.enum(PSD2_ROLES)),
  /** `authorised` is the only status that lets requests through; anything else blocks. */
  status: z.string().min(1),
  /** SHA-256 fingerprints (hex, any case, colons allowed); when given, only these certificates are accepted. */
  certificateFingerprints: z.array(z.string()).optional(),
});

const documentSchema = z.object({
  updated: z.string().optional(),
  tpps: z.array(entrySchema),
});

export interface RegisterEntry {
  readonly organizationIdentifier: string;
  readonly name: string;
  readonly roles: readonly Psd2Role[];
  readonly status: string;
  readonly certificateFingerprints?: readonly string[];
}

/** Parses a register document; throws with the offending path on malformed input. */
export function parseRegisterDocument(text: string): RegisterEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`register is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = documentSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`register entry ${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data.tpps.map((e) => ({
    ...e,
    certificateFingerprints: e.certificateFingerprints?.map((f) => f.replace(/:/g, "").toLowerCase()),
  }));
}

export interface RegisterStats {
  readonly entries: number;
  /** Epoch ms of the last successful refresh; undefined before the first. */
  readonly lastSuccess: number | undefined;
  readonly failures: number;
  readonly lastError: string | undefined;
  readonly source: string | undefined;
}

export class TppRegister {
  private entries = new Map<string, RegisterEntry>();
  private lastSuccess: number | undefined;
  private failures = 0;
  private lastError: string | undefined;
  private source: string | undefined;

  constructor(
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new copy arrived. */
  replace(entries: readonly RegisterEntry[], source: string): void {
    this.entries = new Map(entries.map((e) => [e.organizationIdentifier, e]));
    this.source = source;
    this.lastSuccess = this.now();
  }

  /** The source confirmed the copy is current (HTTP 304, file unchanged). */
  confirm(): void {
    if (this.lastSuccess !== undefined) this.lastSuccess = this.now();
  }

  recordFailure(message: string): void {
    this.failures++;
    this.lastError = message;
  }

  get stats(): RegisterStats {
    return {
      entries: this.entries.size,
      lastSuccess: this.lastSuccess,
      failures: this.failures,
      lastError: this.lastError,
      source: this.source,
    };
  }

  /** Fresh enough to decide on: loaded, and younger than the allowed age. */
  isFresh(): boolean {
    return this.lastSuccess !== undefined && this.now() - this.lastSuccess <= this.maxAgeMs;
  }

  /** The refusal every request gets while the copy is missing or stale; undefined when it is fresh. */
  freshnessRefusal(): Rejection | undefined {
    if (this.lastSuccess === undefined) {
      return reject(
        "SERVICE_UNAVAILABLE",
        "the TPP register has not been loaded yet, so no TPP can be checked; try again shortly",
      );
    }
    const age = this.now() - this.lastSuccess;
    if (age > this.maxAgeMs) {
      return reject(
        "SERVICE_UNAVAILABLE",
        `the bank's copy of the TPP register is ${Math.round(age / 1000)} s old, more than the ${Math.round(this.maxAgeMs / 1000)} s allowed; requests are refused until it is refreshed`,
      );
    }
    return undefined;
  }

  /** The entry of an authorised TPP, or a refusal that says why not. */
  lookup(organizationIdentifier: string, fingerprint: string): RegisterEntry | Rejection {
    const stale = this.freshnessRefusal();
    if (stale) return stale;
    const entry = this.entries.get(organizationIdentifier);
    if (!entry) {
      return reject(
        "CERTIFICATE_BLOCKED",
        `${organizationIdentifier} is not in the TPP register; only TPPs registered with a national competent authority may call this API`,
      );
    }
    if (entry.status !== "authorised") {
      return reject(
        "CERTIFICATE_BLOCKED",
        `${organizationIdentifier} (${entry.name}) has register status '${entry.status}'; only authorised TPPs may call this API`,
      );
    }
    if (
      entry.certificateFingerprints &&
      entry.certificateFingerprints.length > 0 &&
      !entry.certificateFingerprints.includes(fingerprint)
    ) {
      return reject(
        "CERTIFICATE_BLOCKED",
        `certificate ${fingerprint} is not among the certificates registered for ${organizationIdentifier}; register it with the bank first`,
      );
    }
    return entry;
  }
}
