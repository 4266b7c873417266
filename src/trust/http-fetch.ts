/**
 * The network edge of the trust sources (CRLs, OCSP, register sources, trusted lists): one bounded
 * HTTP exchange, with conditional requests (ETag / Last-Modified) so an unchanged copy costs a 304.
 * Every failure is an Error whose message says what went wrong in a few words (it ends up in
 * refusal texts, logs and /readyz); a body past `maxBytes` is a DocumentRefused (bounds.ts), refused
 * as it arrives (by its Content-Length before any of it). No content coding is asked for or
 * decoded: an answer in one (gzip, deflate, br…) is refused, so what is counted against `maxBytes`
 * is all the bytes there are.
 */

import { Agent, type Dispatcher, request } from "undici";
import { DocumentRefused } from "./bounds.js";

export interface Validators {
  readonly etag?: string;
  readonly lastModified?: string;
}

export type FetchResult =
  /** `body` has an ArrayBuffer of its own (never Node's shared pool): it may be transferred to a worker. */
  ({ readonly status: "fresh"; readonly body: Buffer } & Validators) | { readonly status: "not-modified" };

export interface FetchOptions {
  /** For the headers, and between body chunks; also the whole exchange unless `totalTimeoutMs`. */
  readonly timeoutMs: number;
  /** The whole exchange (a large register on a slow link); defaults to `timeoutMs`. */
  readonly totalTimeoutMs?: number;
  /** Redirects followed (http and https only); none by default. */
  readonly maxRedirects?: number;
  readonly maxBytes: number;
  readonly accept?: string;
  readonly validators?: Validators;
  /** POST this body (OCSP); GET otherwise. */
  readonly post?: { readonly body: Uint8Array; readonly contentType: string };
  /**
   * How long a copy fetched for someone else asking the same may stand in for a fetch of this one
   * (workers > 1: the primary's relay fetches for all workers). fetchDocument itself ignores it.
   */
  readonly shareForMs?: number;
  /** PEM CAs trusted for this https URL besides the system's (a private key directory's CA). */
  readonly ca?: string;
}

/**
 * What trust sources fetch with: fetchDocument in a single process, the primary's relay in a
 * cluster worker (app/ injects it). Same contract: errors are Errors whose message says what failed.
 */
export type DocumentFetcher = (url: string, options: FetchOptions) => Promise<FetchResult>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Fetches `url` once: no retries here, the schedulers above decide when to try again. */
export async function fetchDocument(url: string, options: FetchOptions): Promise<FetchResult> {
  const headers: Record<string, string> = {};
  if (options.accept) headers.accept = options.accept;
  if (options.validators?.etag) headers["if-none-match"] = options.validators.etag;
  if (options.validators?.lastModified) headers["if-modified-since"] = options.validators.lastModified;
  if (options.post) headers["content-type"] = options.post.contentType;
  const total = options.totalTimeoutMs ?? options.timeoutMs;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), total);
  try {
    let location = url;
    for (let hop = 0; ; hop++) {
      const response = await request(location, {
        method: options.post ? "POST" : "GET",
        headers,
        ...(options.post ? { body: Buffer.from(options.post.body) } : {}),
        signal: controller.signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        ...(options.ca ? { dispatcher: agentFor(options.ca) } : {}),
      });
      const next = response.headers.location;
      if (REDIRECTS.has(response.statusCode) && typeof next === "string" && !options.post) {
        await response.body.dump();
        if (hop >= (options.maxRedirects ?? 0))
          throw new Error(`HTTP ${response.statusCode} (redirected too often)`);
        const target = new URL(next, location);
        if (target.protocol !== "https:" && target.protocol !== "http:")
          throw new Error(`redirects to ${target.protocol}`);
        location = target.href;
        continue;
      }
      if (response.statusCode === 304 && options.validators) {
        await response.body.dump();
        return { status: "not-modified" };
      }
      if (response.statusCode !== 200) {
        await response.body.dump().catch(() => {});
        throw new Error(`HTTP ${response.statusCode}`);
      }
      const coding = contentCoding(response.headers["content-encoding"]);
      if (coding !== undefined) {
        discard(response.body);
        throw new DocumentRefused(
          "content-encoding",
          `answered in Content-Encoding ${coding}, not asked for`,
        );
      }
      const declared = Number(response.headers["content-length"]);
      if (declared > options.maxBytes) {
        discard(response.body);
        throw new DocumentRefused("size", `${declared} bytes, more than the ${options.maxBytes} allowed`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > options.maxBytes) {
          response.body.destroy();
          throw new DocumentRefused("size", `more than the ${options.maxBytes} bytes allowed`);
        }
        chunks.push(chunk as Buffer);
      }
      // Buffer.alloc, not concat: a small concat comes from the shared pool, which must not be transferred.
      const body = Buffer.alloc(size);
      let offset = 0;
      for (const chunk of chunks) offset += chunk.copy(body, offset);
      const etag = header(response.headers.etag);
      const lastModified = header(response.headers["last-modified"]);
      return {
        status: "fresh",
        body,
        ...(etag ? { etag } : {}),
        ...(lastModified ? { lastModified } : {}),
      };
    }
  } catch (error) {
    if (error instanceof DocumentRefused) throw error;
    if (controller.signal.aborted) throw new Error(`no answer within ${total / 1000} s`);
    throw new Error(describeNetworkError(error));
  } finally {
    clearTimeout(timer);
  }
}

/** One agent per CA bundle (a config names one or two): its connections are kept alive between fetches. */
const AGENTS = new Map<string, Dispatcher>();
function agentFor(ca: string): Dispatcher {
  let agent = AGENTS.get(ca);
  if (!agent) {
    agent = new Agent({ connect: { ca, rejectUnauthorized: true } });
    AGENTS.set(ca, agent);
  }
  return agent;
}

/** A URL fit for logs, stats and /trust: user and password removed. */
export function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}

/** A body not read: its connection closed (undici reports that as an error no one needs to hear). */
function discard(body: { on(event: "error", listener: () => void): unknown; destroy(): unknown }): void {
  body.on("error", () => {});
  body.destroy();
}

/** The content coding of an answer, short enough for a message; undefined for none or `identity`. */
function contentCoding(value: string | string[] | undefined): string | undefined {
  const text = (Array.isArray(value) ? value.join(", ") : (value ?? "")).trim();
  if (text === "" || text.toLowerCase() === "identity") return undefined;
  return JSON.stringify(text.slice(0, 40));
}

function header(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" && value.length <= 512 ? value : undefined;
}

/** undici's errors carry the useful part in `code` or `cause` (ECONNREFUSED, ENOTFOUND…). */
function describeNetworkError(error: unknown): string {
  const e = error as { message?: string; code?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? e.code;
  const message = e.message ?? String(error);
  if (code && !message.includes(code)) return `${message} (${code})`.slice(0, 300);
  return message.slice(0, 300);
}
