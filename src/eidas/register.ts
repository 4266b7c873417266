/**
 * The TPP register (SPEC 1.5: registration is checked against central registers): who is
 * authorised, for which roles, where, and optionally with which certificates.
 *
 * It is made of named layers, one per source (our JSON overrides, a national register, the EBA
 * register), in the order they are configured: a lookup takes the entry from the first layer
 * that has the organizationIdentifier, so a layer listed earlier overrides the ones after it
 * (it can admit a TPP the EBA does not list, or block one it does). Each layer keeps its last good
 * copy and its own freshness; once any layer is missing or older than its allowed age, every
 * lookup fails closed, because a lower layer might hold a withdrawal we have not seen.
 */

import { type Rejection, reject } from "../errors.js";
import { parsePsdOrganizationIdentifier } from "./organization-identifier.js";
import type { Psd2Role } from "./qcstatements.js";

export interface RegisterEntry {
  readonly organizationIdentifier: string;
  readonly name: string;
  readonly roles: readonly Psd2Role[];
  readonly status: string;
  readonly certificateFingerprints?: readonly string[];
  /** ISO date the NCA withdrew the authorisation (status `withdrawn`). */
  readonly withdrawnOn?: string;
  /** Countries where each role's service is authorised or passported, home country included. */
  readonly countries?: Partial<Record<Psd2Role, readonly string[]>>;
  /** The layer (source name) the entry came from. */
  readonly source?: string;
  /**
   * Unattended reads a day the bank agreed with the TPP (RTS Art. 36(5)(b)), for both classes or
   * per class; SPEC 8's 4 when absent (limits/agreements.ts).
   */
  readonly unattendedLimit?: UnattendedLimitColumn;
}

/** The register's column of agreed unattended limits: one number, or one per class. */
export type UnattendedLimitColumn =
  | number
  | { readonly balances?: number | undefined; readonly transactions?: number | undefined };

export interface RegisterLayerOptions {
  /** Short name used in refusals, logs and stats (`overrides`, `national`, `eba`); never a URL or path. */
  readonly name: string;
  /** Older than this, the layer is stale and requests fail closed. */
  readonly maxAgeMs: number;
}

export interface TppRegisterOptions {
  /** Highest priority first: the first layer holding an organizationIdentifier answers for it. */
  readonly sources: readonly RegisterLayerOptions[];
  readonly now?: () => number;
  /**
   * The bank's country (ISO 3166 alpha-2). When set, an entry that says where its roles apply
   * (`countries`) keeps only the roles whose service covers this country.
   */
  readonly bankCountry?: string;
}

/** What a copy came with, kept for the next conditional request and for the stats. */
export interface CopyInfo {
  readonly etag?: string;
  readonly lastModified?: string;
  /** Entities the mapping left out (not TPPs, malformed). */
  readonly skipped?: number;
}

export interface RegisterSourceStats {
  readonly name: string;
  /** The file or URL, once a source has said it; for operators, never sent to TPPs. */
  readonly description: string | undefined;
  readonly entries: number;
  /** Epoch ms of the last successful refresh (or confirmation); undefined before the first. */
  readonly lastSuccess: number | undefined;
  readonly failures: number;
  readonly lastError: string | undefined;
  readonly etag: string | undefined;
  readonly lastModified: string | undefined;
  readonly skipped: number | undefined;
  readonly maxAgeMs: number;
  readonly fresh: boolean;
}

export interface RegisterStats {
  /** Sum over the layers (an organizationIdentifier in two layers counts twice). */
  readonly entries: number;
  /** The oldest layer's last success: what freshness hangs on. Undefined while any layer is unloaded. */
  readonly lastSuccess: number | undefined;
  readonly failures: number;
  /** The most recent failure of any layer. */
  readonly lastError: string | undefined;
  /** The layers' descriptions, comma-separated. */
  readonly source: string | undefined;
  readonly sources: readonly RegisterSourceStats[];
}

/** What a source writes into: a layer, or (compat) a whole register, which writes into its first layer. */
export interface RegisterSink {
  /** A new copy arrived. An array is turned into a Map here; a Map (built in slices by the loader) is swapped in as is. */
  replace(
    entries: readonly RegisterEntry[] | ReadonlyMap<string, RegisterEntry>,
    description: string,
    info?: CopyInfo,
  ): void;
  /** The source confirmed the copy is current (HTTP 304, file unchanged). */
  confirm(): void;
  recordFailure(message: string): void;
  /** Names the file or URL before the first load, for the stats. */
  describe?(description: string): void;
  /** The validators of the copy held, for conditional requests. */
  readonly copyInfo?: CopyInfo;
  /** A layer's name, stamped on the entries a source loads into it. */
  readonly name?: string;
}

/** One source's copy and freshness. */
export class RegisterLayer implements RegisterSink {
  private entries: ReadonlyMap<string, RegisterEntry> = new Map();
  private lastSuccess: number | undefined;
  private failures = 0;
  private lastError: string | undefined;
  private failedAt: number | undefined;
  private description: string | undefined;
  private info: CopyInfo = {};
  /** Counts the copies swapped in: a verdict judged against an older one must be judged again. */
  generation = 0;

  constructor(
    readonly name: string,
    readonly maxAgeMs: number,
    private readonly now: () => number,
  ) {}

  replace(
    entries: readonly RegisterEntry[] | ReadonlyMap<string, RegisterEntry>,
    description: string,
    info: CopyInfo = {},
  ): void {
    // Built whole before the swap: a lookup sees the old copy or the new one, never half of one.
    this.entries = isMap(entries) ? entries : new Map(entries.map((e) => [e.organizationIdentifier, e]));
    this.description = description;
    this.info = info;
    this.lastSuccess = this.now();
    this.generation++;
  }

  confirm(): void {
    if (this.lastSuccess !== undefined) this.lastSuccess = this.now();
  }

  recordFailure(message: string): void {
    this.failures++;
    this.lastError = message;
    this.failedAt = this.now();
  }

  describe(description: string): void {
    this.description ??= description;
  }

  get copyInfo(): CopyInfo {
    return this.info;
  }

  /** When the last failure happened, to tell the most recent one across layers. */
  get lastFailureAt(): number | undefined {
    return this.failedAt;
  }

  get(organizationIdentifier: string): RegisterEntry | undefined {
    return this.entries.get(organizationIdentifier);
  }

  /** Milliseconds since the last success; undefined before the first. */
  age(): number | undefined {
    return this.lastSuccess === undefined ? undefined : this.now() - this.lastSuccess;
  }

  isFresh(): boolean {
    const age = this.age();
    return age !== undefined && age <= this.maxAgeMs;
  }

  get stats(): RegisterSourceStats {
    return {
      name: this.name,
      description: this.description,
      entries: this.entries.size,
      lastSuccess: this.lastSuccess,
      failures: this.failures,
      lastError: this.lastError,
      etag: this.info.etag,
      lastModified: this.info.lastModified,
      skipped: this.info.skipped,
      maxAgeMs: this.maxAgeMs,
      fresh: this.isFresh(),
    };
  }
}

export class TppRegister implements RegisterSink {
  readonly layers: readonly RegisterLayer[];
  private readonly bankCountry: string | undefined;

  /** `new TppRegister(maxAgeMs, now)` is the one-layer register of before (layer `register`). */
  constructor(options: TppRegisterOptions);
  constructor(maxAgeMs: number, now?: () => number);
  constructor(options: TppRegisterOptions | number, now: () => number = Date.now) {
    const resolved: TppRegisterOptions =
      typeof options === "number" ? { sources: [{ name: "register", maxAgeMs: options }], now } : options;
    const clock = resolved.now ?? Date.now;
    if (resolved.sources.length === 0) throw new Error("a TPP register needs at least one source");
    const names = new Set<string>();
    for (const source of resolved.sources) {
      if (names.has(source.name)) throw new Error(`register source '${source.name}' is configured twice`);
      names.add(source.name);
    }
    this.layers = resolved.sources.map((s) => new RegisterLayer(s.name, s.maxAgeMs, clock));
    this.bankCountry = resolved.bankCountry?.toUpperCase();
  }

  /**
   * Grows whenever any layer takes a new copy (a confirmed or unchanged copy leaves it as it is):
   * the verifier keys its verdicts on it, so a TPP withdrawn or losing a role is judged again at once.
   */
  get generation(): number {
    // Read on every request: an index loop, no iterator.
    let sum = 0;
    for (let i = 0; i < this.layers.length; i++) sum += this.layers[i]!.generation;
    return sum;
  }

  /** The layer a source writes into; throws on a name that was not configured. */
  layer(name: string): RegisterLayer {
    const layer = this.layers.find((l) => l.name === name);
    if (!layer) throw new Error(`no register source named '${name}'`);
    return layer;
  }

  // The one-source API of before: writes into the first layer.
  replace(
    entries: readonly RegisterEntry[] | ReadonlyMap<string, RegisterEntry>,
    description: string,
    info?: CopyInfo,
  ): void {
    this.layers[0]!.replace(entries, description, info);
  }

  confirm(): void {
    this.layers[0]!.confirm();
  }

  recordFailure(message: string): void {
    this.layers[0]!.recordFailure(message);
  }

  describe(description: string): void {
    this.layers[0]!.describe(description);
  }

  get copyInfo(): CopyInfo {
    return this.layers[0]!.copyInfo;
  }

  get stats(): RegisterStats {
    const sources = this.layers.map((l) => l.stats);
    const loaded = sources.every((s) => s.lastSuccess !== undefined);
    const latestFailure = [...this.layers]
      .filter((l) => l.lastFailureAt !== undefined)
      .sort((a, b) => b.lastFailureAt! - a.lastFailureAt!)[0];
    const descriptions = sources.flatMap((s) => (s.description ? [s.description] : []));
    return {
      entries: sources.reduce((n, s) => n + s.entries, 0),
      lastSuccess: loaded ? Math.min(...sources.map((s) => s.lastSuccess!)) : undefined,
      failures: sources.reduce((n, s) => n + s.failures, 0),
      lastError: latestFailure?.stats.lastError,
      source: descriptions.length > 0 ? descriptions.join(", ") : undefined,
      sources,
    };
  }

  /** Fresh enough to decide on: every layer loaded, and each younger than its allowed age. */
  isFresh(): boolean {
    return this.layers.every((l) => l.isFresh());
  }

  /**
   * The refusal every request gets while a layer is missing or stale; undefined when all are
   * fresh. It names the layer by its short name only: the text goes to TPPs, paths and URLs do not.
   */
  freshnessRefusal(): Rejection | undefined {
    for (const layer of this.layers) {
      const age = layer.age();
      if (age === undefined) {
        return reject(
          "SERVICE_UNAVAILABLE",
          `the TPP register source '${layer.name}' has not been loaded yet, so no TPP can be checked; try again shortly`,
        );
      }
      if (age > layer.maxAgeMs) {
        return reject(
          "SERVICE_UNAVAILABLE",
          `the bank's copy of the TPP register source '${layer.name}' is ${Math.round(age / 1000)} s old, more than the ${Math.round(layer.maxAgeMs / 1000)} s allowed; requests are refused until it is refreshed`,
        );
      }
    }
    return undefined;
  }

  /**
   * The entry of an authorised TPP (with the roles that apply in the bank's country), or a
   * refusal that says why not.
   */
  lookup(organizationIdentifier: string, fingerprint: string): RegisterEntry | Rejection {
    const stale = this.freshnessRefusal();
    if (stale) return stale;
    let entry: RegisterEntry | undefined;
    for (const layer of this.layers) {
      entry = layer.get(organizationIdentifier);
      if (entry) break;
    }
    if (!entry) {
      return reject(
        "CERTIFICATE_BLOCKED",
        `${organizationIdentifier} is not in the TPP register; only TPPs registered with a national competent authority may call this API`,
      );
    }
    if (entry.status === "withdrawn") {
      return reject(
        "CERTIFICATE_BLOCKED",
        `${organizationIdentifier} (${entry.name}) was withdrawn by ${authorityOf(organizationIdentifier)} ${entry.withdrawnOn ? `on ${entry.withdrawnOn}` : "(the register gives no date)"}; only authorised TPPs may call this API`,
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
    return this.inBankCountry(entry);
  }

  /**
   * The entry the first layer holding `organizationIdentifier` has, whatever its status, with that
   * layer's name as its source (the validation report's).
   */
  entryOf(organizationIdentifier: string): RegisterEntry | undefined {
    for (const layer of this.layers) {
      const entry = layer.get(organizationIdentifier);
      if (entry) return entry.source ? entry : { ...entry, source: layer.name };
    }
    return undefined;
  }

  /** The entry with only the roles whose service covers the bank's country. */
  private inBankCountry(entry: RegisterEntry): RegisterEntry | Rejection {
    const bank = this.bankCountry;
    const countries = entry.countries;
    if (!bank || !countries) return entry;
    const roles = entry.roles.filter((r) => countries[r]?.includes(bank));
    if (roles.length === entry.roles.length) return entry;
    if (roles.length === 0 && entry.roles.length > 0) {
      const where = entry.roles.map((r) => `${r} in ${(countries[r] ?? []).join(", ") || "no country"}`);
      return reject(
        "ROLE_INVALID",
        `${entry.organizationIdentifier} (${entry.name}) is authorised for ${where.join("; ")}, not in ${bank} where this bank is; it must passport its services to ${bank} first`,
      );
    }
    return { ...entry, roles };
  }
}

/** `FINFSA (FI)` from `PSDFI-FINFSA-…`; the NCA is what a TPP should ask about a withdrawal. */
function authorityOf(organizationIdentifier: string): string {
  const id = parsePsdOrganizationIdentifier(organizationIdentifier);
  return id ? `${id.ncaId} (${id.country})` : "its national competent authority";
}

function isMap(
  entries: readonly RegisterEntry[] | ReadonlyMap<string, RegisterEntry>,
): entries is ReadonlyMap<string, RegisterEntry> {
  return entries instanceof Map;
}
