/**
 * Requests and responses as a developer has them at hand: raw HTTP (start line, headers, blank
 * line, body) or a `curl -v` dump, where the request is the "> " lines and the response the "< "
 * lines. Header values are kept as the bytes sent (Latin-1 strings, as Node and undici hand them
 * to the gateway), names lower-cased, repeated headers joined as Node joins them.
 */

import type { IncomingHttpHeaders } from "node:http";

/** A request read from a file: the request line, headers as Node would hand them over, the body. */
export interface DumpedRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
  body: Buffer | undefined;
}

/** A response read from a file: the status, headers as undici hands them over, the body. */
export interface DumpedResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  body: Buffer | undefined;
}

/** What one file held: a request, a response, or (a `curl -v` dump) both. */
export interface Dump {
  readonly request?: DumpedRequest;
  readonly response?: DumpedResponse;
}

const REQUEST_LINE = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/;
const STATUS_LINE = /^HTTP\/(?:1\.[01]|2|3)(?:\.0)? (\d{3})(?: .*)?$/;

/**
 * Reads raw HTTP (a request or a response) or a `curl -v` dump (either or both); a string says why
 * not, in terms of what the caller `expects` (the error names the start line it looked for).
 */
export function parseDump(bytes: Buffer, expects: "request" | "response" = "request"): Dump | string {
  const text = bytes.toString("latin1");
  if (text.trim() === "")
    return `empty: expected an HTTP ${expects} (${expects === "request" ? "GET /v1/accounts HTTP/1.1" : "HTTP/1.1 200 OK"} first) or a curl -v dump`;
  const lines = text.split(/\r?\n/);
  if (lines.some((l) => l.startsWith("> ") || l.startsWith("< "))) {
    const sent = lines.filter((l) => l.startsWith("> ")).map((l) => l.slice(2));
    const received = lines.filter((l) => l.startsWith("< ")).map((l) => l.slice(2));
    const dump: { request?: DumpedRequest; response?: DumpedResponse } = {};
    if (sent.length > 0) {
      const request = requestFrom(sent, undefined);
      if (typeof request === "string") return request;
      dump.request = request;
    }
    if (received.length > 0) {
      // curl -v shows the informational answers (100 Continue) before the final one.
      const starts = received.flatMap((l, i) => (STATUS_LINE.test(l.trim()) ? [i] : []));
      const response = responseFrom(received.slice(starts.at(-1) ?? 0), undefined);
      if (typeof response === "string") return response;
      dump.response = response;
    }
    return dump;
  }
  let head = lines;
  let body: Buffer | undefined;
  const end = text.search(/\r?\n\r?\n/);
  if (end >= 0) {
    const separator = text.slice(end).match(/^\r?\n\r?\n/)![0].length;
    const rest = bytes.subarray(end + separator);
    if (rest.length > 0) body = rest;
    head = text.slice(0, end).split(/\r?\n/);
  }
  const first = head[0]?.trim() ?? "";
  if (STATUS_LINE.test(first) || (expects === "response" && !REQUEST_LINE.test(first))) {
    const response = responseFrom(head, body);
    return typeof response === "string" ? response : { response };
  }
  const request = requestFrom(head, body);
  return typeof request === "string" ? request : { request };
}

/** A request, from raw HTTP or the "> " lines of a `curl -v` dump. */
export function parseRequestDump(bytes: Buffer): DumpedRequest | string {
  const dump = parseDump(bytes);
  if (typeof dump === "string") return dump;
  return dump.request ?? "the file holds a response, not a request (GET /v1/accounts HTTP/1.1 first)";
}

function requestFrom(lines: readonly string[], body: Buffer | undefined): DumpedRequest | string {
  const requestLine = REQUEST_LINE.exec(lines[0]?.trim() ?? "");
  if (!requestLine) {
    return `not an HTTP request: its first line '${(lines[0] ?? "").slice(0, 80)}' is not a request line (GET /v1/accounts HTTP/1.1)`;
  }
  const headers = headerLines(lines.slice(1));
  if (typeof headers === "string") return headers;
  return { method: requestLine[1]!, target: requestLine[2]!, headers, body };
}

function responseFrom(lines: readonly string[], body: Buffer | undefined): DumpedResponse | string {
  const statusLine = STATUS_LINE.exec(lines[0]?.trim() ?? "");
  if (!statusLine) {
    return `not an HTTP response: its first line '${(lines[0] ?? "").slice(0, 80)}' is not a status line (HTTP/1.1 200 OK)`;
  }
  const headers = headerLines(lines.slice(1));
  if (typeof headers === "string") return headers;
  return { status: Number(statusLine[1]), headers, body };
}

function headerLines(lines: readonly string[]): Record<string, string> | string {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    if (line.trim() === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return `'${line.slice(0, 80)}' is not a header line (Name: value)`;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}

/** A hand-written dump may leave Content-Length out; the checks judge "has a body" by framing, as HTTP does. */
export function withFraming(request: DumpedRequest): DumpedRequest {
  const h = request.headers;
  if (
    request.body !== undefined &&
    h["content-length"] === undefined &&
    h["transfer-encoding"] === undefined
  ) {
    h["content-length"] = String(request.body.length);
  }
  return request;
}
