/**
 * The bank's HTTP vocabulary: a handler returns a `Reply` (status, JSON body, extra headers) and
 * the server writes it. Errors are Berlin Group `tppMessages` bodies. These are the bank's own
 * codes, not the gateway's (src/errors.ts): the bank is a different system that the gateway fronts.
 */

import type { IncomingMessage } from "node:http";

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

export type BankErrorCode =
  | "FORMAT_ERROR"
  | "PERIOD_INVALID"
  | "CONSENT_INVALID"
  | "CONSENT_EXPIRED"
  | "CONSENT_UNKNOWN"
  | "REFERENCE_MIX_INVALID"
  | "STATUS_INVALID"
  | "RESOURCE_UNKNOWN"
  | "PRODUCT_UNKNOWN"
  | "SERVICE_INVALID"
  | "SERVICE_BLOCKED"
  | "SIGNATURE_MISSING"
  | "CERTIFICATE_MISSING"
  | "PAYMENT_FAILED"
  | "PAYLOAD_TOO_LARGE"
  | "INTERNAL_SERVER_ERROR";

export interface Reply {
  readonly status: number;
  /** Serialised JSON. */
  readonly body: Buffer | string;
  readonly headers?: Readonly<Record<string, string>>;
}

export function jsonReply(status: number, body: Buffer | string, headers?: Record<string, string>): Reply {
  return headers === undefined ? { status, body } : { status, body, headers };
}

export function errorReply(
  status: number,
  code: BankErrorCode,
  text: string,
  extra?: { links?: Record<string, { href: string }>; headers?: Record<string, string> },
): Reply {
  const body = JSON.stringify({
    tppMessages: [{ category: "ERROR", code, text }],
    _links: extra?.links,
  });
  return jsonReply(status, body, extra?.headers);
}

export function formatError(text: string): Reply {
  return errorReply(400, "FORMAT_ERROR", text);
}

/** Keeps echoed client input short and printable inside error texts. */
export function quote(value: string, max = 60): string {
  const printable = value.replace(/[^\x20-\x7e\u00a0-\uffff]/g, "?");
  return `'${printable.length > max ? `${printable.slice(0, max)}…` : printable}'`;
}

/** The first value of a request header, or undefined when absent or empty. */
export function headerValue(req: IncomingMessage, lowerCaseName: string): string | undefined {
  const raw = req.headers[lowerCaseName];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value.length === 0 ? undefined : value;
}

export interface RequestTarget {
  /** Percent-decoded path segments, without the leading empty one. */
  readonly segments: readonly string[];
  readonly query: URLSearchParams;
}

/**
 * Splits the request target by hand: `new URL()` would read `//host/path` as a host and is slower.
 * Accepts the origin form (`/v1/…?…`) and the absolute form (`http://host/v1/…`).
 */
export function parseTarget(rawUrl: string | undefined): RequestTarget | Reply {
  let url = rawUrl ?? "";
  if (!url.startsWith("/")) {
    try {
      const absolute = new URL(url);
      url = absolute.pathname + absolute.search;
    } catch {
      return formatError(`Request target ${quote(url)} is neither a path nor an absolute URL`);
    }
  }
  const questionMark = url.indexOf("?");
  const path = questionMark === -1 ? url : url.slice(0, questionMark);
  const query = new URLSearchParams(questionMark === -1 ? "" : url.slice(questionMark + 1));
  const segments = path.slice(1).split("/");
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (!segment.includes("%")) continue;
    try {
      segments[i] = decodeURIComponent(segment);
    } catch {
      return formatError(`Path segment ${quote(segment)} is not valid percent-encoding`);
    }
  }
  return { segments, query };
}

/** A query flag that must be `true` or `false` when present. */
export function booleanParam(query: URLSearchParams, name: string, fallback: boolean): boolean | Reply {
  const value = query.get(name);
  if (value === null) return fallback;
  if (value === "true") return true;
  if (value === "false") return false;
  return formatError(`Query parameter ${name} must be true or false; got ${quote(value)}`);
}

export function isReply(value: unknown): value is Reply {
  return typeof value === "object" && value !== null && "status" in value && "body" in value;
}

export type BodyResult =
  | { readonly kind: "body"; readonly bytes: Buffer }
  | { readonly kind: "reply"; readonly reply: Reply }
  | { readonly kind: "aborted" };

export function payloadTooLarge(limit: number, received: string): Reply {
  return errorReply(
    413,
    "PAYLOAD_TOO_LARGE",
    `Request body is ${received}; this bank accepts at most ${limit} bytes`,
  );
}

/**
 * Reads a whole request body of at most `limit` bytes. Past the limit it answers 413 at once and
 * keeps draining (discarding) what the client still sends, so that the client can read the answer
 * instead of meeting a reset connection; past `drainLimit` it gives up and destroys the socket.
 */
export function readBody(req: IncomingMessage, limit: number, drainLimit: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const settle = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      chunks.length = 0;
      resolve(result);
    };
    req.on("data", (chunk: Buffer) => {
      received += chunk.length;
      if (received > drainLimit) {
        req.destroy();
        return;
      }
      if (settled) return;
      if (received > limit) {
        settle({ kind: "reply", reply: payloadTooLarge(limit, `more than ${limit} bytes`) });
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => settle({ kind: "body", bytes: Buffer.concat(chunks, received) }));
    req.on("error", () => settle({ kind: "aborted" }));
    req.on("close", () => settle({ kind: "aborted" }));
  });
}
