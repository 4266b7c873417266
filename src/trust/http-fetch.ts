/**
 * The network edge of the trust sources: one bounded HTTP exchange, with conditional requests
 * (ETag / Last-Modified) so an unchanged CRL or list costs a 304. Every failure is an Error whose
 * message says what went wrong in a few words (it ends up in refusal texts and /readyz).
 */

import { request } from "undici";

export interface Validators {
  readonly etag?: string;
  readonly lastModified?: string;
}

export type FetchResult =
  | ({ readonly status: "fresh"; readonly body: Buffer } & Validators)
  | { readonly status: "not-modified" };

export interface FetchOptions {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly accept?: string;
  readonly validators?: Validators;
  /** POST this body (OCSP); GET otherwise. */
  readonly post?: { readonly body: Uint8Array; readonly contentType: string };
}

/** Fetches `url` once: no retries here, the schedulers above decide when to try again. */
export async function fetchDocument(url: string, options: FetchOptions): Promise<FetchResult> {
  const headers: Record<string, string> = {};
  if (options.accept) headers.accept = options.accept;
  if (options.validators?.etag) headers["if-none-match"] = options.validators.etag;
  if (options.validators?.lastModified) headers["if-modified-since"] = options.validators.lastModified;
  if (options.post) headers["content-type"] = options.post.contentType;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  try {
    const response = await request(url, {
      method: options.post ? "POST" : "GET",
      headers,
      ...(options.post ? { body: Buffer.from(options.post.body) } : {}),
      signal: controller.signal,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    if (response.statusCode === 304 && options.validators) {
      await response.body.dump();
      return { status: "not-modified" };
    }
    if (response.statusCode !== 200) {
      await response.body.dump().catch(() => {});
      throw new Error(`HTTP ${response.statusCode}`);
    }
    const declared = Number(response.headers["content-length"]);
    if (declared > options.maxBytes) {
      await response.body.dump().catch(() => {});
      throw new Error(`${declared} bytes, more than the ${options.maxBytes} allowed`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > options.maxBytes) {
        response.body.destroy();
        throw new Error(`more than the ${options.maxBytes} bytes allowed`);
      }
      chunks.push(chunk as Buffer);
    }
    const etag = header(response.headers.etag);
    const lastModified = header(response.headers["last-modified"]);
    return {
      status: "fresh",
      body: Buffer.concat(chunks, size),
      ...(etag ? { etag } : {}),
      ...(lastModified ? { lastModified } : {}),
    };
  } catch (error) {
    if (controller.signal.aborted) throw new Error(`no answer within ${options.timeoutMs / 1000} s`);
    throw new Error(describeNetworkError(error));
  } finally {
    clearTimeout(timer);
  }
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
