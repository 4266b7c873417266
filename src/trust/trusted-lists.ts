/**
 * The edge that keeps ETSI trusted lists fresh: reads the LOTL (file or http(s)), verifies it with
 * the configured LOTL signer certificates, follows its XML pointers, verifies each national list
 * with the signers the LOTL names for that territory, and turns granted CA/QC services into
 * trust-store anchors. One bad list is reported and skipped; its last good copy is kept.
 * TrustedListSource is the trust source: the lists read before the gateway serves and then on
 * their own schedule, their anchors put in the TrustPool.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { certificatesFromFile, parseCertificate, type QualifiedAnchor } from "../eidas/index.js";
import { isRejection } from "../errors.js";
import { type OnRefused, readFileBounded, refusalOf } from "./bounds.js";
import {
  type CaService,
  grantedAt,
  isGrantedStatus,
  readTrustedList,
  statusAt,
  TRUSTED_LIST_LIMITS,
  type TrustedList,
  TrustedListError,
} from "./formats/trusted-list.js";
import { type DocumentFetcher, fetchDocument as fetchBounded } from "./http-fetch.js";
import type { TrustPool } from "./pool.js";
import type { TrustLogger, TrustSource } from "./source.js";
import type { TrustSourceStatus } from "./source-status.js";

export type FetchedDocument =
  | { readonly status: "ok"; readonly body: string; readonly etag?: string; readonly lastModified?: string }
  | { readonly status: "not-modified" };

export interface ConditionalRequest {
  readonly etag?: string;
  readonly lastModified?: string;
}

/** Fetches one list; throws with a readable message when it cannot. */
export type TrustedListFetch = (
  location: string,
  conditional: ConditionalRequest,
) => Promise<FetchedDocument>;

export interface TrustedListsOptions {
  /** File path, file: URL or http(s) URL of the list of the lists. */
  readonly lotl: string;
  /** DER of the certificates allowed to sign the LOTL (published in the Official Journal). */
  readonly lotlSigners: readonly Uint8Array[];
  readonly fetch?: TrustedListFetch;
  /** Only these territories' lists are followed (two-letter codes); all when absent. */
  readonly territories?: readonly string[];
  readonly now?: Date;
  /** Per-document timeout for the default fetch (default 30 s). */
  readonly timeoutMs?: number;
  /** Per-document size cap for the default fetch (default 20 MB). */
  readonly maxBytes?: number;
  /** What the default fetch uses for http(s) (default fetchDocument; a cluster worker asks the primary). */
  readonly httpFetch?: DocumentFetcher;
  /** The default fetch's FetchOptions.shareForMs. */
  readonly shareForMs?: number;
  /** A list (the LOTL or a national one) refused by its bound (maxBytes, a content coding): counted by app/. */
  readonly onRefused?: OnRefused;
}

export interface TrustedListStatus {
  readonly kind: "lotl" | "national";
  readonly territory: string;
  readonly location: string;
  /** Of the copy in use (the last good one when this refresh failed). */
  readonly sequenceNumber: number | undefined;
  readonly nextUpdate: Date | undefined;
  /** False when this refresh failed (a last good copy may still be in use, see `inUse`). */
  readonly ok: boolean;
  readonly error?: string;
  /** A copy of this list is in use. */
  readonly inUse: boolean;
  readonly stale: boolean;
}

export interface TrustedListStats {
  readonly location: string;
  readonly territory: string;
  readonly lastSuccess: Date | undefined;
  readonly failures: number;
  readonly lastError: string | undefined;
  readonly etag: string | undefined;
  readonly lastModified: string | undefined;
}

export interface TrustedListsResult {
  readonly anchors: QualifiedAnchor[];
  readonly lists: TrustedListStatus[];
  /** Certificates on a list that could not be read, and the like: reported, not fatal. */
  readonly problems: string[];
}

interface ListState {
  readonly location: string;
  territory: string;
  good?: { readonly text: string; readonly list: TrustedList };
  lastSuccess?: Date;
  failures: number;
  lastError?: string;
  etag?: string;
  lastModified?: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const CONCURRENCY = 4;

/**
 * Stateful: each `refresh()` re-reads the LOTL and the lists it points to, keeping per list the
 * last good copy, so a list that fails to download or verify does not drop its CAs at once.
 */
export class TrustedListSet {
  private readonly states = new Map<string, ListState>();
  private readonly fetchList: TrustedListFetch;
  private result: TrustedListsResult = { anchors: [], lists: [], problems: [] };

  constructor(private readonly options: TrustedListsOptions) {
    const limits = {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxBytes: options.maxBytes ?? TRUSTED_LIST_LIMITS.maxBytes,
      ...(options.httpFetch ? { httpFetch: options.httpFetch } : {}),
      ...(options.shareForMs !== undefined ? { shareForMs: options.shareForMs } : {}),
    };
    this.fetchList =
      options.fetch ?? ((location, conditional) => fetchDocument(location, conditional, limits));
  }

  /** What the last refresh produced. */
  get current(): TrustedListsResult {
    return this.result;
  }

  get anchors(): QualifiedAnchor[] {
    return this.result.anchors;
  }

  async refresh(now: Date = this.options.now ?? new Date()): Promise<TrustedListsResult> {
    const lotlState = this.state(this.options.lotl, "EU");
    const lotlOk = await this.update(lotlState, this.options.lotlSigners, now, "lotl");
    const lists: TrustedListStatus[] = [status(lotlState, lotlOk, "lotl", now)];
    const anchors: QualifiedAnchor[] = [];
    const problems: string[] = [];
    const lotl = lotlState.good?.list;
    if (lotl) {
      const wanted = this.options.territories?.map((t) => t.toUpperCase());
      const pointers = lotl.pointers.filter((p) => !wanted || wanted.includes(p.territory));
      const outcomes = await inBatches(pointers, CONCURRENCY, async (pointer) => {
        const state = this.state(pointer.location, pointer.territory);
        const ok = await this.update(state, pointer.signers, now, "national", pointer.territory);
        return { state, ok };
      });
      for (const { state, ok } of outcomes) {
        lists.push(status(state, ok, "national", now));
        if (state.good) anchors.push(...anchorsOf(state.good.list, state.location, problems));
      }
    }
    this.result = { anchors, lists, problems };
    return this.result;
  }

  /** Lists in use whose NextUpdate has passed (or which have none: a closed list). */
  stale(now: Date = new Date()): TrustedListStatus[] {
    return this.result.lists
      .filter((l) => l.inUse && isStale(l.nextUpdate, now))
      .map((l) => ({ ...l, stale: true }));
  }

  stats(): TrustedListStats[] {
    return [...this.states.values()].map((s) => ({
      location: s.location,
      territory: s.territory,
      lastSuccess: s.lastSuccess,
      failures: s.failures,
      lastError: s.lastError,
      etag: s.etag,
      lastModified: s.lastModified,
    }));
  }

  private state(location: string, territory: string): ListState {
    let state = this.states.get(location);
    if (!state) {
      state = { location, territory, failures: 0 };
      this.states.set(location, state);
    }
    state.territory = territory;
    return state;
  }

  /** Fetches and verifies one list into `state.good`; true when this refresh succeeded. */
  private async update(
    state: ListState,
    signers: readonly Uint8Array[],
    now: Date,
    kind: "lotl" | "national",
    territory?: string,
  ): Promise<boolean> {
    try {
      const conditional = state.good ? { etag: state.etag, lastModified: state.lastModified } : {};
      const fetched = await this.fetchList(state.location, conditional);
      // 304: the copy we hold is still current; verified again, as the signers may have changed.
      const text = fetched.status === "ok" ? fetched.body : state.good?.text;
      if (text === undefined) throw new Error("answered 304 Not Modified, but no earlier copy is held");
      const list = readTrustedList(text, signers, { now });
      if (list.kind !== kind)
        throw new TrustedListError(`is a ${list.kind} list where a ${kind} list was expected`);
      if (territory && list.territory !== territory) {
        throw new TrustedListError(
          `is the list of ${list.territory}, but the LOTL points to it for ${territory}`,
        );
      }
      const previous = state.good?.list.sequenceNumber;
      if (previous !== undefined && list.sequenceNumber < previous) {
        // A validly signed older list is a replay (it may still name a CA since withdrawn).
        throw new TrustedListError(
          `has sequence number ${list.sequenceNumber}, older than the ${previous} already held`,
        );
      }
      state.good = { text, list };
      if (fetched.status === "ok") {
        state.etag = fetched.etag;
        state.lastModified = fetched.lastModified;
      }
      state.lastSuccess = now;
      state.lastError = undefined;
      return true;
    } catch (error) {
      state.failures += 1;
      state.lastError = `${state.location}: ${error instanceof Error ? error.message : String(error)}`;
      const refused = refusalOf(error);
      if (refused) this.options.onRefused?.(refused);
      this.recheckGood(state, signers, now);
      return false;
    }
  }

  /** The last good copy stays only while the signers named now still verify it. */
  private recheckGood(state: ListState, signers: readonly Uint8Array[], now: Date): void {
    if (!state.good) return;
    try {
      readTrustedList(state.good.text, signers, { now });
    } catch {
      state.good = undefined;
    }
  }
}

/** One-shot form of TrustedListSet.refresh(). */
export async function loadTrustedLists(options: TrustedListsOptions): Promise<TrustedListsResult> {
  return new TrustedListSet(options).refresh();
}

export interface TrustedListSourceOptions {
  /** File path, file: URL or http(s) URL of the list of the lists. */
  readonly lotl: string;
  /** Files (PEM or DER) of the certificates allowed to sign the LOTL (trust.trustedLists.lotlSigners). */
  readonly lotlSignerFiles: readonly string[];
  readonly territories?: readonly string[];
  /** Per-document timeout. */
  readonly timeoutMs: number;
  /** Read again this often; sooner after a failure. */
  readonly pollMs: number;
  readonly pool: TrustPool;
  readonly log: TrustLogger;
  readonly now: () => number;
  /** Where lists are fetched over http(s) (default fetchDocument; a cluster worker asks the primary). */
  readonly fetch?: DocumentFetcher;
  /** Per-document size bound (default TRUSTED_LIST_LIMITS.maxBytes, 20 MB), enforced while reading. */
  readonly maxBytes?: number;
  readonly onRefused?: OnRefused;
}

/** First retry after a failed refresh; doubles up to the poll interval. */
const RETRY_MS = 30_000;

/**
 * The EU trusted lists as a trust source: read once before the gateway serves and then on their own
 * schedule; a refresh that brings other anchors puts them in the pool (the trust store is rebuilt).
 */
export class TrustedListSource implements TrustSource {
  readonly name: string;
  /** Made at start, once the signer files are read. */
  private set: TrustedListSet | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private anchorsKey = "";

  constructor(private readonly options: TrustedListSourceOptions) {
    this.name = options.lotl;
  }

  async start(): Promise<void> {
    const { lotl, territories, timeoutMs, fetch, maxBytes, onRefused } = this.options;
    this.set = new TrustedListSet({
      lotl,
      lotlSigners: this.options.lotlSignerFiles.flatMap(certificatesIn),
      ...(territories ? { territories } : {}),
      timeoutMs,
      ...(maxBytes !== undefined ? { maxBytes } : {}),
      ...(onRefused ? { onRefused } : {}),
      ...(fetch ? { httpFetch: fetch } : {}),
      // Another worker's copy fetched within most of a poll interval is this poll's copy too.
      shareForMs: 0.9 * this.options.pollMs,
    });
    await this.refresh();
    this.schedule();
  }

  /** Reads every list again now. */
  async refresh(): Promise<void> {
    const { log } = this.options;
    if (!this.set) return;
    const result = await this.set.refresh(new Date(this.options.now()));
    const failed = result.lists.filter((l) => !l.ok);
    this.failures = failed.length > 0 ? this.failures + 1 : 0;
    for (const l of failed)
      log.warn(
        { list: l.location, territory: l.territory, err: l.error },
        "trusted list refresh failed; keeping the last good copy",
      );
    for (const problem of result.problems) log.warn(problem);
    // A new sequence number may change a CA's qualification or history without changing the CA.
    const key = [
      ...result.lists.map((l) => `${l.location}#${l.sequenceNumber}`),
      ...result.anchors.map((a) => `${a.source}:${a.certificate.sha256Fingerprint}`),
    ].join(",");
    if (key !== this.anchorsKey) {
      this.anchorsKey = key;
      log.info(
        { lists: result.lists.filter((l) => l.inUse).length, anchors: result.anchors.length },
        "trusted lists loaded",
      );
      this.options.pool.put(this.name, { anchors: result.anchors });
    }
  }

  status(): TrustSourceStatus[] {
    const { set } = this;
    if (!set) return [];
    const stats = new Map(set.stats().map((s) => [s.location, s]));
    const at = new Date(this.options.now());
    const staleLocations = new Set(set.stale(at).map((l) => l.location));
    const anchors = set.anchors;
    return set.current.lists.map((l) => {
      const s = stats.get(l.location);
      return {
        kind: "trusted-list" as const,
        source: `${l.territory} ${l.location}`,
        lastSuccess: s?.lastSuccess?.getTime(),
        failures: s?.failures ?? 0,
        ...(s?.lastError ? { lastError: s.lastError } : {}),
        size:
          l.kind === "lotl"
            ? set.current.lists.length - 1
            : anchors.filter((a) => a.source.includes(l.location)).length,
        ...(l.nextUpdate ? { nextUpdate: l.nextUpdate.getTime() } : {}),
        stale: !l.inUse || staleLocations.has(l.location),
        failsReadiness: true,
      };
    });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    const poll = this.options.pollMs;
    const delay = this.failures > 0 ? Math.min(RETRY_MS * 2 ** (this.failures - 1), poll) : poll;
    // ±10 % jitter so many gateways do not fetch the lists in the same second.
    this.timer = setTimeout(
      () => void this.refresh().finally(() => this.schedule()),
      delay * (0.9 + Math.random() * 0.2),
    );
    this.timer.unref();
  }
}

function certificatesIn(file: string): Uint8Array[] {
  const found = certificatesFromFile(file, readFileSync(file));
  if (found.certificates.length === 0)
    throw new Error(`trust.trustedLists.lotlSigners: no certificate in ${file}`);
  return found.certificates.map((c) => c.der);
}

function isStale(nextUpdate: Date | undefined, now: Date): boolean {
  return nextUpdate === undefined || nextUpdate.getTime() < now.getTime();
}

function status(state: ListState, ok: boolean, kind: "lotl" | "national", now: Date): TrustedListStatus {
  const list = state.good?.list;
  return {
    kind,
    territory: list?.territory ?? state.territory,
    location: state.location,
    sequenceNumber: list?.sequenceNumber,
    nextUpdate: list?.nextUpdate,
    ok,
    ...(ok ? {} : { error: state.lastError ?? "failed" }),
    inUse: list !== undefined,
    stale: list !== undefined && isStale(list.nextUpdate, now),
  };
}

/**
 * One anchor per certificate of each CA/QC service that was ever granted and is qualified for
 * QWACs or QSealCs: a CA listed only for e-signatures issues nothing a PSD2 gateway accepts.
 */
function anchorsOf(list: TrustedList, location: string, problems: string[]): QualifiedAnchor[] {
  const anchors: QualifiedAnchor[] = [];
  for (const service of list.services) {
    if (!service.qualifiedFor.qwac && !service.qualifiedFor.qseal) continue;
    if (!everGranted(service)) continue;
    const source = `${list.territory} trusted list ${location}: ${service.providerName} / ${service.serviceName}`;
    for (const der of service.certificates) {
      const certificate = parseCertificate(der, {
        label: `a CA certificate on the ${list.territory} trusted list`,
      });
      if (isRejection(certificate)) {
        problems.push(`${source}: ${certificate.text}`);
        continue;
      }
      anchors.push({
        certificate,
        qualifiedFor: service.qualifiedFor,
        grantedAt: (date) => grantedAt(service, date),
        statusAt: (date) => statusAt(service, date),
        source,
        territory: list.territory,
      });
    }
  }
  return anchors;
}

function everGranted(service: CaService): boolean {
  return (
    isGrantedStatus(service.status) ||
    service.history.some((h) => h.type === undefined && isGrantedStatus(h.status))
  );
}

async function inBatches<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return results;
}

// ---------------------------------------------------------------------------------------------
// The default fetch: http(s) with undici (conditional, bounded, timed), files with fs.

const MAX_REDIRECTS = 3;

export interface TrustedListFetchLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly httpFetch?: DocumentFetcher;
  readonly shareForMs?: number;
}

export async function fetchDocument(
  location: string,
  conditional: ConditionalRequest,
  limits: TrustedListFetchLimits,
): Promise<FetchedDocument> {
  if (/^https?:\/\//i.test(location)) return fetchHttp(location, conditional, limits);
  const path = /^file:/i.test(location) ? fileURLToPath(location) : location;
  return { status: "ok", body: decode(await readFileBounded(path, limits.maxBytes)) };
}

async function fetchHttp(
  location: string,
  conditional: ConditionalRequest,
  limits: TrustedListFetchLimits,
): Promise<FetchedDocument> {
  const result = await (limits.httpFetch ?? fetchBounded)(location, {
    timeoutMs: limits.timeoutMs,
    maxBytes: limits.maxBytes,
    ...(limits.shareForMs !== undefined ? { shareForMs: limits.shareForMs } : {}),
    maxRedirects: MAX_REDIRECTS,
    accept: "application/vnd.etsi.tsl+xml, application/xml, text/xml",
    validators: conditional,
  });
  if (result.status === "not-modified") return result;
  return {
    status: "ok",
    body: decode(result.body),
    ...(result.etag ? { etag: result.etag } : {}),
    ...(result.lastModified ? { lastModified: result.lastModified } : {}),
  };
}

/** UTF-8, a byte-order mark dropped (trusted lists are UTF-8 per TS 119 612). */
function decode(bytes: Buffer): string {
  const text = bytes.toString("utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
