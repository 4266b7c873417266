/**
 * Requests as the bytes a family sends: a method, a target, an ordered list of header lines and
 * a body, signed by a fuzz TPP and then changed as the family likes before serialisation.
 */

import type { FuzzTpp } from "./tpps.js";

export type HeaderLine = [name: string, value: string];

export interface RawRequest {
  method: string;
  target: string;
  headers: HeaderLine[];
  body?: Buffer;
  /** The HTTP version in the request line (default HTTP/1.1). */
  version?: string;
}

export interface SerializeOptions {
  /** The Host header written first; `null` for none (default `localhost`). */
  readonly host?: string | null;
  /** Add Content-Length for a body unless the headers frame it already (default true). */
  readonly contentLength?: boolean;
  /** Line ending (default CRLF). */
  readonly eol?: string;
}

/** Header values are one char per byte (Latin-1), as Node hands them over. */
export function serialize(request: RawRequest, options: SerializeOptions = {}): Buffer {
  const eol = options.eol ?? "\r\n";
  const host = options.host === undefined ? "localhost" : options.host;
  let head = `${request.method} ${request.target} ${request.version ?? "HTTP/1.1"}${eol}`;
  if (host !== null) head += `Host: ${host}${eol}`;
  for (const [name, value] of request.headers) head += `${name}: ${value}${eol}`;
  const framed = request.headers.some(([n]) => /^(content-length|transfer-encoding)$/i.test(n));
  if (request.body !== undefined && (options.contentLength ?? true) && !framed)
    head += `Content-Length: ${request.body.length}${eol}`;
  head += eol;
  const bytes = Buffer.from(head, "latin1");
  return request.body !== undefined ? Buffer.concat([bytes, request.body]) : bytes;
}

export function getHeader(request: RawRequest, name: string): string | undefined {
  const lower = name.toLowerCase();
  return request.headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

export function setHeader(request: RawRequest, name: string, value: string): void {
  const lower = name.toLowerCase();
  const at = request.headers.findIndex(([n]) => n.toLowerCase() === lower);
  if (at >= 0) request.headers[at] = [request.headers[at]![0], value];
  else request.headers.push([name, value]);
}

export function removeHeader(request: RawRequest, name: string): void {
  const lower = name.toLowerCase();
  request.headers = request.headers.filter(([n]) => n.toLowerCase() !== lower);
}

/** Appends the fuzz tag to a path (before a fragment, so the backend sees it in the query). */
export function withTag(path: string, tag: string): string {
  const hash = path.indexOf("#");
  const base = hash >= 0 ? path.slice(0, hash) : path;
  const fragment = hash >= 0 ? path.slice(hash) : "";
  return `${base}${base.includes("?") ? "&" : "?"}fz=${tag}${fragment}`;
}

export interface SignSpec {
  readonly tpp: FuzzTpp;
  readonly method?: string;
  /** Path (and query) without the tag; the tag is added to the query. */
  readonly path: string;
  readonly tag: string;
  /** Extra headers (signed when eligible). */
  readonly headers?: Record<string, string>;
  readonly body?: Buffer | string;
  /** Leave these default headers out before signing (e.g. PSU-IP-Address). */
  readonly omit?: readonly string[];
  /** The target signed when it should differ from the one sent (the tag is added to both). */
  readonly signedPath?: string;
}

export const PAYMENT_PATH = "/v1/payments/sepa-credit-transfers";
export const ACCOUNTS_PATH = "/v1/accounts";

export function paymentBody(amount: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      instructedAmount: { currency: "EUR", amount },
      debtorAccount: { iban: "NO9386011117947" },
      creditorName: "Fuzz Creditor",
      creditorAccount: { iban: "NO9386011117948" },
      remittanceInformationUnstructured: "fuzz",
    }),
  );
}

/** Signs like a TPP does (PSU-ID, PSU-IP-Address, TPP-Redirect-URI, JSON content type). */
export async function signRequest(spec: SignSpec): Promise<{ request: RawRequest; requestId: string }> {
  const method = spec.method ?? "GET";
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const base: Record<string, string> = {
    "TPP-Redirect-URI": "https://tpp.example/cb",
    "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
    "PSU-IP-Address": "192.0.2.10",
    ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
    ...(spec.headers ?? {}),
  };
  for (const name of spec.omit ?? []) delete base[name];
  const target = withTag(spec.path, spec.tag);
  const signedTarget = spec.signedPath === undefined ? target : withTag(spec.signedPath, spec.tag);
  const signed = await spec.tpp.signer.sign({
    method,
    target: signedTarget,
    headers: base,
    ...(body !== undefined ? { body } : {}),
  });
  const merged: Record<string, string> = { ...base, ...signed };
  return {
    request: { method, target, headers: Object.entries(merged), ...(body !== undefined ? { body } : {}) },
    requestId: signed["X-Request-ID"]!,
  };
}
