/**
 * CRLs fetched over HTTP: from the distribution points of the certificates the gateway meets and
 * from configured URLs. Each list is verified against the trust store, kept in memory and (when a
 * cache folder is configured) on disk so a restart does not fetch everything again, and fetched
 * again in the background before its nextUpdate, with conditional requests, jitter and back-off.
 * As a trust source it starts from the disk cache and the configured URLs; live-revocation.ts
 * reads its lists.
 */

import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ParsedCertificate, type RevocationList, verifiedCrl } from "../eidas/index.js";
import { formatRfc2253, readNameFromDer } from "../x500/name.js";
import { type OnRefused, readFileBoundedSync, refusalOf } from "./bounds.js";
import { type DocumentFetcher, fetchDocument, type Validators } from "./http-fetch.js";
import type { TrustSource } from "./source.js";
import type { CrlDetails, TrustSourceStatus } from "./source-status.js";

export interface CrlCacheOptions {
  /** Configured URLs (revocation.crl.urls): fetched at start and kept whatever the certificates name. */
  readonly urls?: readonly string[];
  /** The CAs a CRL may be signed by (the trust store's, read when a list arrives). */
  readonly cas: () => readonly ParsedCertificate[];
  /** Fetched again at least this often, and before nextUpdate. */
  readonly refreshMs: number;
  /** Past nextUpdate by more than this, a list proves nothing. */
  readonly graceMs: number;
  readonly timeoutMs: number;
  /** A larger list is refused as it arrives (and a larger file in the disk cache is not read). */
  readonly maxBytes: number;
  /** A list refused by its bound (maxBytes, a content coding): counted by app/. */
  readonly onRefused?: OnRefused;
  /** Distribution points tracked at most (configured URLs are never dropped). */
  readonly maxLists: number;
  readonly cacheDir?: string;
  readonly now?: () => number;
  /** A list with new content replaced the old one: verdicts resting on the old must go. */
  readonly onChange?: (url: string) => void;
  readonly log?: (message: string, error?: boolean) => void;
  /** Where lists are fetched from (default fetchDocument; a cluster worker asks the primary). */
  readonly fetch?: DocumentFetcher;
}

interface Entry {
  readonly url: string;
  /** A configured URL: never evicted, its list looked up by issuer for any certificate. */
  pinned: boolean;
  list?: RevocationList;
  /** SHA-256 of the list's DER, to tell a new list from the same one served again. */
  digest?: string;
  validators: Validators;
  lastSuccess?: number;
  failures: number;
  lastError?: string;
  failingSince?: number;
  lastUsed: number;
  inFlight?: Promise<void>;
  timer?: NodeJS.Timeout;
}

/** The files the disk cache writes: a URL's hash, its list or metadata, perhaps still being written. */
const CACHE_FILE = /^[0-9a-f]{32}\.(crl|json)(\.tmp)?$/;

interface CacheMeta {
  readonly url: string;
  readonly etag?: string;
  readonly lastModified?: string;
  readonly fetchedAt: number;
}

/** A metadata file of the disk cache: a URL (≤ 2,048 chars), two validators (≤ 512 each) and a time. */
const MAX_META_BYTES = 16 * 1024;

/** A copy fetched for another worker within this fraction of the refresh interval stands in for a fetch. */
const SHARE_FRACTION = 0.9;

/** Shortest wait before trying a failed URL again; doubles up to the refresh interval. */
const FIRST_BACKOFF_MS = 5_000;

export class CrlCache implements TrustSource {
  readonly name = "fetched CRLs";
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private stopped = false;

  constructor(private readonly options: CrlCacheOptions) {
    this.now = options.now ?? Date.now;
    if (options.cacheDir) mkdirSync(options.cacheDir, { recursive: true });
  }

  /** The lists the disk cache holds, then the configured URLs fetched (conditionally, when held). */
  async start(): Promise<void> {
    this.loadFromDisk();
    await this.pin(this.options.urls ?? []);
  }

  /** Configured URLs: fetched now and kept fresh for as long as the gateway runs. */
  async pin(urls: readonly string[]): Promise<void> {
    await Promise.all(urls.map((url) => this.fetch(this.entryFor(url, true))));
  }

  /**
   * Lists the disk cache holds, verified again (the trust store may have changed), scheduled for
   * refresh. The folder is bounded as memory is: the configured URLs and the `maxLists` most recently
   * fetched distribution points stay, the files of the others (and of lists that no longer verify,
   * half-written ones, orphans) are deleted. Only files of the cache's own naming are touched.
   */
  loadFromDisk(): void {
    const dir = this.options.cacheDir;
    if (!dir) return;
    const names = readdirSync(dir).filter((n) => CACHE_FILE.test(n));
    const metas: { name: string; url: string; etag?: string; lastModified?: string; fetchedAt: number }[] =
      [];
    for (const name of names.filter((n) => n.endsWith(".json"))) {
      try {
        const text = readFileBoundedSync(join(dir, name), MAX_META_BYTES).toString("utf8");
        metas.push({ name, ...(JSON.parse(text) as CacheMeta) });
      } catch (error) {
        this.options.log?.(`CRL cache: cannot read ${name}: ${(error as Error).message}`, true);
      }
    }
    const configured = new Set(this.options.urls ?? []);
    const [pinned, others] = [
      metas.filter((m) => configured.has(m.url)),
      metas.filter((m) => !configured.has(m.url)),
    ];
    others.sort((a, b) => b.fetchedAt - a.fetchedAt);
    const kept = new Set<string>();
    for (const meta of [...pinned, ...others.slice(0, this.options.maxLists)]) {
      try {
        const der = readFileBoundedSync(
          join(dir, meta.name.replace(/\.json$/, ".crl")),
          this.options.maxBytes,
        );
        const list = verifiedCrl(der, meta.url, this.options.cas());
        if (typeof list === "string") {
          this.options.log?.(`CRL cache: ${list}; fetching it again`, true);
          continue;
        }
        const entry = this.entryFor(meta.url, configured.has(meta.url));
        entry.list = list;
        entry.digest = createHash("sha256").update(der).digest("base64");
        entry.validators = {
          ...(meta.etag ? { etag: meta.etag } : {}),
          ...(meta.lastModified ? { lastModified: meta.lastModified } : {}),
        };
        entry.lastSuccess = meta.fetchedAt;
        this.schedule(entry, this.refreshAt(entry));
        kept.add(meta.name.slice(0, -".json".length));
      } catch (error) {
        this.options.log?.(`CRL cache: cannot read ${meta.name}: ${(error as Error).message}`, true);
      }
    }
    for (const name of names) {
      if (!kept.has(name.slice(0, 32))) rmSync(join(dir, name), { force: true });
    }
  }

  /** The list held for `url`, fresh or not (the caller judges it with statusFromCrl). */
  listAt(url: string): RevocationList | undefined {
    const entry = this.entries.get(url);
    if (entry) entry.lastUsed = this.now();
    return entry?.list;
  }

  /** Why `url` has no fresh list, for refusal texts. */
  problemOf(url: string): string | undefined {
    const entry = this.entries.get(url);
    if (!entry) return undefined;
    const since = entry.failingSince ? ` (failing since ${new Date(entry.failingSince).toISOString()})` : "";
    if (entry.lastError) return `${entry.lastError}${since}`;
    return undefined;
  }

  /** Lists from configured URLs (any issuer): looked up by the issuer's name. */
  pinnedLists(): RevocationList[] {
    return [...this.entries.values()].filter((e) => e.pinned && e.list).map((e) => e.list!);
  }

  /**
   * Fetches `url` unless a fetch is under way (then waits for that one) and keeps it fresh from
   * then on. Resolves whether or not the fetch worked (see problemOf).
   */
  ensure(url: string): Promise<void> {
    const entry = this.entryFor(url, false);
    entry.lastUsed = this.now();
    return this.fetch(entry);
  }

  status(): TrustSourceStatus[] {
    return this.statuses;
  }

  get statuses(): TrustSourceStatus[] {
    const now = this.now();
    return [...this.entries.values()].map((e) => {
      const nextUpdate = e.list?.nextUpdate ? e.list.nextUpdate.getTime() + this.options.graceMs : undefined;
      return {
        kind: "crl" as const,
        source: e.url,
        lastSuccess: e.lastSuccess,
        failures: e.failures,
        ...(e.lastError ? { lastError: e.lastError } : {}),
        ...(e.failingSince ? { failingSince: e.failingSince } : {}),
        size: e.list?.revoked.size ?? 0,
        ...(nextUpdate !== undefined ? { nextUpdate } : {}),
        stale: !e.list || (nextUpdate !== undefined && nextUpdate <= now),
        failsReadiness: false,
        crl: crlDetails(e.pinned ? "configured-url" : "distribution-point", e.list),
      };
    });
  }

  stop(): void {
    this.stopped = true;
    for (const entry of this.entries.values()) clearTimeout(entry.timer);
  }

  private entryFor(url: string, pinned: boolean): Entry {
    let entry = this.entries.get(url);
    if (!entry) {
      if (!pinned) this.evictIfFull();
      entry = { url, pinned, validators: {}, failures: 0, lastUsed: this.now() };
      this.entries.set(url, entry);
    }
    // A configured URL read back from the disk cache (or met first as a distribution point) is pinned all the same.
    if (pinned) entry.pinned = true;
    return entry;
  }

  /** The least recently used distribution point goes: certificates name their own, without bound. */
  private evictIfFull(): void {
    const unpinned = [...this.entries.values()].filter((e) => !e.pinned);
    if (unpinned.length < this.options.maxLists) return;
    const oldest = unpinned.reduce((a, b) => (a.lastUsed <= b.lastUsed ? a : b));
    clearTimeout(oldest.timer);
    this.entries.delete(oldest.url);
    // Its copy on disk goes with it: the folder holds what memory holds, no more.
    const base = this.fileBase(oldest.url);
    if (base) for (const suffix of [".crl", ".json"]) rmSync(`${base}${suffix}`, { force: true });
  }

  /** Where `url`'s list and metadata are kept (without the suffix), or undefined without a cache folder. */
  private fileBase(url: string): string | undefined {
    const dir = this.options.cacheDir;
    return dir ? join(dir, createHash("sha256").update(url).digest("hex").slice(0, 32)) : undefined;
  }

  private fetch(entry: Entry): Promise<void> {
    entry.inFlight ??= this.fetchOnce(entry).finally(() => {
      entry.inFlight = undefined;
    });
    return entry.inFlight;
  }

  private async fetchOnce(entry: Entry): Promise<void> {
    clearTimeout(entry.timer);
    try {
      const result = await (this.options.fetch ?? fetchDocument)(entry.url, {
        timeoutMs: this.options.timeoutMs,
        maxBytes: this.options.maxBytes,
        accept: "application/pkix-crl",
        shareForMs: this.shareWindow(entry),
        ...(entry.list ? { validators: entry.validators } : {}),
      });
      if (result.status === "fresh") {
        const list = verifiedCrl(result.body, entry.url, this.options.cas());
        if (typeof list === "string") throw new Error(list.replace(`${entry.url}: `, ""));
        const previous = entry.list;
        const digest = createHash("sha256").update(result.body).digest("base64");
        // Any other bytes count as a change: two lists may share a thisUpdate (whole seconds).
        const changed = previous !== undefined && digest !== entry.digest;
        entry.digest = digest;
        entry.list = list;
        entry.validators = {
          ...(result.etag ? { etag: result.etag } : {}),
          ...(result.lastModified ? { lastModified: result.lastModified } : {}),
        };
        this.persist(entry, result.body);
        if (changed) this.options.onChange?.(entry.url);
      }
      entry.lastSuccess = this.now();
      entry.lastError = undefined;
      entry.failingSince = undefined;
      this.schedule(entry, this.refreshAt(entry));
    } catch (error) {
      entry.failures++;
      entry.lastError = (error as Error).message;
      entry.failingSince ??= this.now();
      const refused = refusalOf(error);
      if (refused) this.options.onRefused?.(refused);
      this.options.log?.(`CRL ${entry.url}: ${entry.lastError}; keeping the last good copy`, true);
      const backoff = Math.min(
        FIRST_BACKOFF_MS * 2 ** Math.min(entry.failures - 1, 16),
        this.options.refreshMs,
      );
      this.schedule(entry, this.now() + backoff);
    }
  }

  /**
   * How old a copy fetched for another worker may be and still count as this fetch: most of the
   * refresh interval, or nothing once the list held is due for replacement within that interval
   * (its successor is awaited: a copy from before it was published would only be fetched again).
   */
  private shareWindow(entry: Entry): number {
    const next = entry.list?.nextUpdate?.getTime();
    if (next !== undefined && entry.list) {
      const replaceBy = next - Math.max((next - entry.list.thisUpdate.getTime()) / 10, 0);
      if (replaceBy <= this.now() + this.options.refreshMs) return 0;
    }
    return SHARE_FRACTION * this.options.refreshMs;
  }

  /** The refresh interval, or earlier so the next list is in before this one's nextUpdate. */
  private refreshAt(entry: Entry): number {
    const fetched = entry.lastSuccess ?? this.now();
    let at = fetched + this.options.refreshMs;
    const next = entry.list?.nextUpdate?.getTime();
    if (next !== undefined) {
      const lifetime = next - (entry.list?.thisUpdate.getTime() ?? fetched);
      // A tenth of the list's lifetime ahead of nextUpdate, so a slow QTSP still has time.
      at = Math.min(at, next - Math.max(lifetime / 10, 0));
    }
    return Math.max(at, this.now() + 1000);
  }

  private schedule(entry: Entry, at: number): void {
    if (this.stopped) return;
    clearTimeout(entry.timer);
    // ±10 % jitter so many gateways do not hit a QTSP in the same second.
    const delay = Math.max(at - this.now(), 0) * (0.9 + Math.random() * 0.2);
    entry.timer = setTimeout(() => void this.fetch(entry), Math.min(delay, 2 ** 31 - 1));
    entry.timer.unref();
  }

  private persist(entry: Entry, der: Buffer): void {
    const base = this.fileBase(entry.url);
    if (!base) return;
    try {
      // Written aside and renamed, so a crash never leaves half a file behind.
      writeFileSync(`${base}.crl.tmp`, der);
      renameSync(`${base}.crl.tmp`, `${base}.crl`);
      const meta = { url: entry.url, ...entry.validators, fetchedAt: this.now() };
      writeFileSync(`${base}.json.tmp`, JSON.stringify(meta));
      renameSync(`${base}.json.tmp`, `${base}.json`);
    } catch (error) {
      this.options.log?.(`CRL cache: cannot write ${base}: ${(error as Error).message}`, true);
    }
  }
}

/** What a CRL source's status says of the list it holds (nothing but the origin before the first). */
export function crlDetails(origin: CrlDetails["origin"], list: RevocationList | undefined): CrlDetails {
  if (!list) return { origin };
  let issuer: string;
  try {
    issuer = formatRfc2253(readNameFromDer(list.issuerDer)).slice(0, 200);
  } catch {
    // Cannot happen for a list a trusted CA verified (its issuer is that CA's name); never fatal here.
    issuer = "(unreadable name)";
  }
  return {
    origin,
    issuer,
    thisUpdate: list.thisUpdate.getTime(),
    ...(list.nextUpdate ? { nextUpdate: list.nextUpdate.getTime() } : {}),
  };
}
