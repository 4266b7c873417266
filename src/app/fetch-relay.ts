/**
 * `workers > 1`: the trust sources of every worker fetch through the primary, which fetches each
 * document once and hands the bytes to whichever worker asks (one upstream fetch per source and
 * poll interval, not one per worker). The worker side is a DocumentFetcher over the cluster's IPC
 * channel (fetchThroughPrimary); the primary side keeps, per request, the last answer and the fetch
 * under way (FetchRelay). Bytes travel as bytes: the primary forks with `serialization: "advanced"`.
 */

import { createHash } from "node:crypto";
import { DocumentRefused, isRefusalReason, refusalOf } from "../trust/bounds.js";
import {
  type DocumentFetcher,
  type FetchOptions,
  type FetchResult,
  fetchDocument,
  type Validators,
  withoutCredentials,
} from "../trust/http-fetch.js";
import type { RelayedFetchStatus } from "../trust/source-status.js";

export const FETCH_MESSAGE = "psd2-gateway:fetch";

/** What the primary counts per ask (psd2_gateway_trust_fetches_total's `outcome`). */
export type RelayOutcome = "fetched" | "shared" | "not_modified" | "failed";

export interface FetchRelayOptions {
  /** Upstream: fetchDocument by default. */
  readonly fetch?: DocumentFetcher;
  readonly now?: () => number;
  /** Requests remembered (copies, errors); the least recently asked go first. */
  readonly maxEntries?: number;
  /** Bytes of the copies kept, together; a copy larger than this is handed on, not kept. */
  readonly maxBytes?: number;
  readonly onOutcome?: (outcome: RelayOutcome) => void;
}

interface Copy extends Validators {
  readonly body: Buffer;
  fetchedAt: number;
}

interface Entry {
  readonly url: string;
  readonly method: "GET" | "POST";
  copy?: Copy;
  inFlight?: Promise<Copy>;
  asks: number;
  upstreamFetches: number;
  lastError?: string;
}

export const DEFAULT_RELAY_ENTRIES = 256;
/** The register's default maxBytes (200 MB) and room for the lists and CRLs beside it. */
export const DEFAULT_RELAY_BYTES = 256 * 1024 * 1024;

export class FetchRelay {
  /** In order of last ask: the first is the next to go. */
  private readonly entries = new Map<string, Entry>();
  private readonly fetch: DocumentFetcher;
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly maxBytes: number;

  constructor(private readonly options: FetchRelayOptions = {}) {
    this.fetch = options.fetch ?? fetchDocument;
    this.now = options.now ?? Date.now;
    this.maxEntries = options.maxEntries ?? DEFAULT_RELAY_ENTRIES;
    this.maxBytes = options.maxBytes ?? DEFAULT_RELAY_BYTES;
  }

  /**
   * A worker's fetch: the copy kept when it is younger than the ask's `shareForMs`, the fetch under
   * way for the same request when there is one, an upstream fetch (with the primary's validators)
   * otherwise. `not-modified` when the worker's validators name the copy it would get. Throws the
   * upstream Error's message unchanged.
   */
  async ask(url: string, options: FetchOptions): Promise<FetchResult> {
    const key = requestKey(url, options);
    const entry = this.entries.get(key) ?? {
      url,
      method: options.post ? "POST" : "GET",
      asks: 0,
      upstreamFetches: 0,
    };
    this.entries.delete(key);
    this.entries.set(key, entry);
    entry.asks++;
    this.bound();
    let copy: Copy;
    let outcome: RelayOutcome = "shared";
    try {
      if (entry.inFlight) copy = await entry.inFlight;
      else if (entry.copy && this.now() - entry.copy.fetchedAt < (options.shareForMs ?? 0)) copy = entry.copy;
      else {
        const upstream = this.fetchUpstream(key, entry, options);
        copy = await upstream.copy;
        outcome = upstream.modified ? "fetched" : "not_modified";
      }
    } catch (error) {
      this.options.onOutcome?.("failed");
      throw error;
    }
    this.options.onOutcome?.(outcome);
    if (copy.body.length > options.maxBytes)
      throw new DocumentRefused("size", `more than the ${options.maxBytes} bytes allowed`);
    if (sameCopy(options.validators, copy)) return { status: "not-modified" };
    return {
      status: "fresh",
      body: copy.body,
      ...(copy.etag ? { etag: copy.etag } : {}),
      ...(copy.lastModified ? { lastModified: copy.lastModified } : {}),
    };
  }

  /** SIGHUP: nothing kept stands in for a fetch any more (fetches under way finish for their askers). */
  clear(): void {
    this.entries.clear();
  }

  /** What /trust shows of the primary. */
  status(): RelayedFetchStatus[] {
    return [...this.entries.values()].map((e) => ({
      url: withoutCredentials(e.url),
      method: e.method,
      ...(e.copy ? { fetchedAt: e.copy.fetchedAt } : {}),
      bytes: e.copy?.body.length ?? 0,
      asks: e.asks,
      upstreamFetches: e.upstreamFetches,
      ...(e.lastError ? { lastError: e.lastError } : {}),
    }));
  }

  private fetchUpstream(
    key: string,
    entry: Entry,
    options: FetchOptions,
  ): { copy: Promise<Copy>; modified: boolean } {
    const held = entry.copy;
    // The primary's validators, never the worker's: a 304 must mean "the copy the primary holds".
    const { validators: _workers, ...rest } = options;
    const ours: FetchOptions = held
      ? {
          ...rest,
          validators: {
            ...(held.etag ? { etag: held.etag } : {}),
            ...(held.lastModified ? { lastModified: held.lastModified } : {}),
          },
        }
      : rest;
    const result = { modified: true, copy: undefined as unknown as Promise<Copy> };
    entry.upstreamFetches++;
    result.copy = this.fetch(entry.url, ours).then(
      (answer) => {
        entry.lastError = undefined;
        let copy: Copy;
        if (answer.status === "not-modified" && held) {
          result.modified = false;
          held.fetchedAt = this.now();
          copy = held;
        } else if (answer.status === "fresh") {
          copy = {
            body: answer.body,
            fetchedAt: this.now(),
            ...(answer.etag ? { etag: answer.etag } : {}),
            ...(answer.lastModified ? { lastModified: answer.lastModified } : {}),
          };
        } else throw new Error("no body");
        // Kept only while this request is still remembered (a SIGHUP or eviction may have dropped it).
        if (this.entries.get(key) === entry) {
          entry.copy = copy;
          this.bound();
        }
        return copy;
      },
      (error: unknown) => {
        entry.lastError = (error as Error).message;
        throw error;
      },
    );
    entry.inFlight = result.copy;
    const settled = () => {
      if (entry.inFlight === result.copy) entry.inFlight = undefined;
    };
    result.copy.then(settled, settled);
    return result;
  }

  /** Drops the least recently asked requests (none with a fetch under way) past either bound. */
  private bound(): void {
    let bytes = 0;
    for (const e of this.entries.values()) bytes += e.copy?.body.length ?? 0;
    for (const [key, e] of this.entries) {
      if (this.entries.size <= this.maxEntries && bytes <= this.maxBytes) return;
      if (e.inFlight) continue;
      bytes -= e.copy?.body.length ?? 0;
      this.entries.delete(key);
    }
    // Only requests with a fetch under way are left: they stay, the copies they hold go.
    if (bytes > this.maxBytes)
      for (const e of this.entries.values()) {
        if (bytes <= this.maxBytes) break;
        bytes -= e.copy?.body.length ?? 0;
        delete e.copy;
      }
  }

  /** The primary's side of the IPC: an ask read and answered; a message that is not one is ignored. */
  async answer(message: unknown): Promise<FetchAnswer | undefined> {
    const ask = readAsk(message);
    if (!ask) return undefined;
    try {
      const result = await this.ask(ask.url, ask.options);
      return { type: FETCH_MESSAGE, id: ask.id, result };
    } catch (error) {
      const refused = refusalOf(error);
      return {
        type: FETCH_MESSAGE,
        id: ask.id,
        error: (error as Error).message,
        ...(refused ? { refused } : {}),
      };
    }
  }
}

export interface FetchAnswer {
  readonly type: typeof FETCH_MESSAGE;
  readonly id: number;
  readonly result?: FetchResult;
  readonly error?: string;
  /** The bound that refused the document (bounds.ts), so the worker's source counts it as such. */
  readonly refused?: string;
}

/** URL, method, POST body, accept: two asks with the same key get the same answer upstream. */
function requestKey(url: string, options: FetchOptions): string {
  const hash = createHash("sha256");
  hash.update(options.post ? `POST ${options.post.contentType}\n` : "GET\n");
  hash.update(`${url}\n${options.accept ?? ""}\n${options.ca ?? ""}\n`);
  if (options.post) hash.update(options.post.body);
  return hash.digest("base64");
}

/** The worker holds what it would get: its validators name the copy (ETag first, as HTTP does). */
function sameCopy(theirs: Validators | undefined, copy: Copy): boolean {
  if (!theirs) return false;
  if (theirs.etag && copy.etag) return theirs.etag === copy.etag;
  if (theirs.lastModified && copy.lastModified) return theirs.lastModified === copy.lastModified;
  return false;
}

const MAX_URL_LENGTH = 8_192;
const MAX_POST_BYTES = 64 * 1024;
/** A key directory's CA bundle (keys.ca): a few PEM certificates. */
const MAX_CA_LENGTH = 256 * 1024;

/** A worker's ask, checked field by field: the primary acts only on the shape it sends. */
function readAsk(message: unknown): { id: number; url: string; options: FetchOptions } | undefined {
  const m = message as { type?: unknown; id?: unknown; url?: unknown; options?: Record<string, unknown> };
  if (m?.type !== FETCH_MESSAGE || !Number.isSafeInteger(m.id) || typeof m.url !== "string") return undefined;
  if (m.url.length > MAX_URL_LENGTH || !/^https?:\/\//i.test(m.url)) return undefined;
  const o = m.options;
  const positive = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v > 0;
  const optional = (v: unknown, ok: (v: unknown) => boolean) => v === undefined || ok(v);
  const text = (v: unknown) => typeof v === "string" && v.length <= 1_024;
  if (!o || !positive(o.timeoutMs) || !positive(o.maxBytes)) return undefined;
  if (!optional(o.totalTimeoutMs, positive) || !optional(o.accept, text)) return undefined;
  if (!optional(o.maxRedirects, (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 10))
    return undefined;
  if (!optional(o.shareForMs, (v) => typeof v === "number" && v >= 0)) return undefined;
  if (!optional(o.ca, (v) => typeof v === "string" && v.length <= MAX_CA_LENGTH)) return undefined;
  const v = o.validators as Record<string, unknown> | undefined;
  if (
    v !== undefined &&
    (typeof v !== "object" || !optional(v.etag, text) || !optional(v.lastModified, text))
  )
    return undefined;
  const p = o.post as { body?: unknown; contentType?: unknown } | undefined;
  if (
    p !== undefined &&
    !(p.body instanceof Uint8Array && p.body.length <= MAX_POST_BYTES && text(p.contentType))
  )
    return undefined;
  return { id: m.id as number, url: m.url, options: o as unknown as FetchOptions };
}

// ---------------------------------------------------------------------------------------------
// The worker's side.

/** Longer than any upstream fetch the primary makes for the ask: its own timeout answers first. */
const ANSWER_SLACK_MS = 5_000;

interface Pending {
  resolve(result: FetchResult): void;
  reject(error: Error): void;
  readonly timer: NodeJS.Timeout;
}

const pending = new Map<number, Pending>();
let nextId = 1;
let listening = false;

/** In a cluster worker: every trust source's fetch, asked of the primary. */
export const fetchThroughPrimary: DocumentFetcher = (url, options) =>
  new Promise<FetchResult>((resolve, reject) => {
    const send = process.send?.bind(process);
    if (!send || !process.connected) {
      reject(new Error("the cluster's primary process is not reachable"));
      return;
    }
    if (!listening) {
      listening = true;
      process.on("message", onAnswer);
    }
    const id = nextId++;
    const waitMs = (options.totalTimeoutMs ?? options.timeoutMs) + ANSWER_SLACK_MS;
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error(`no answer within ${waitMs / 1000} s`));
    }, waitMs);
    timer.unref();
    pending.set(id, { resolve, reject, timer });
    send({ type: FETCH_MESSAGE, id, url, options }, undefined, {}, (error: Error | null) => {
      if (!error) return;
      clearTimeout(timer);
      pending.delete(id);
      reject(new Error(`the cluster's primary process is not reachable (${error.message})`));
    });
  });

/** An answer for an ask of ours; anything else (an unknown id, another kind of message) is ignored. */
function onAnswer(message: unknown): void {
  const m = message as Partial<FetchAnswer>;
  if (m?.type !== FETCH_MESSAGE || typeof m.id !== "number") return;
  const waiting = pending.get(m.id);
  if (!waiting) return;
  pending.delete(m.id);
  clearTimeout(waiting.timer);
  const result = m.result;
  if (typeof m.error === "string")
    waiting.reject(isRefusalReason(m.refused) ? new DocumentRefused(m.refused, m.error) : new Error(m.error));
  else if (result?.status === "not-modified") waiting.resolve(result);
  else if (result?.status !== "fresh" || !(result.body instanceof Uint8Array))
    waiting.reject(new Error("the cluster's primary answered an ask with no body"));
  else waiting.resolve({ ...result, body: ownBuffer(result.body) });
}

/** A Buffer over an ArrayBuffer of its own (the register loader transfers it to a worker thread). */
export function ownBuffer(bytes: Uint8Array): Buffer {
  if (
    bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength &&
    bytes.buffer instanceof ArrayBuffer
  )
    return Buffer.from(bytes.buffer, 0, bytes.byteLength);
  const copy = Buffer.alloc(bytes.byteLength);
  copy.set(bytes);
  return copy;
}
