/**
 * The RFC 9421 / RFC 9530 vectors of test/fixtures/interop/rfc9421 (its README section says where
 * each came from), and HTTP/1.1 message text turned into the module's message shapes.
 */

import { createPrivateKey, createPublicKey, createSecretKey, type KeyObject } from "node:crypto";
import type { RequestMessage, ResponseMessage } from "../../../../src/signature/rfc9421/index.js";
import { readInteropText } from "../../../helpers/interop-corpus.js";

export interface VectorCase {
  readonly id: string;
  readonly source: string;
  readonly message: string;
  readonly request?: string;
  readonly label: string;
  readonly key: string;
  readonly base: string | null;
  readonly expect: "verifies" | "invalid" | "refused";
  readonly signatureInput?: string;
  readonly signature?: string;
  readonly headerOverrides?: Record<string, string>;
  readonly deterministic?: boolean;
}

interface VectorFile {
  readonly keys: Record<string, { public?: string; private?: string; secretBase64?: string }>;
  readonly messages: Record<string, { http: string }>;
  readonly cases: VectorCase[];
}

export const RFC9421 = JSON.parse(readInteropText("rfc9421/rfc9421-vectors.json")) as VectorFile;

export interface DigestCase {
  readonly id: string;
  readonly header: string;
  readonly body: string;
  readonly expect: "verifies" | "mismatch" | "malformed";
}
export const RFC9530 = JSON.parse(readInteropText("rfc9421/rfc9530-content-digest.json")) as {
  cases: DigestCase[];
};

export function publicKey(name: string): KeyObject {
  const k = RFC9421.keys[name]!;
  if (k.secretBase64) return createSecretKey(Buffer.from(k.secretBase64, "base64"));
  return createPublicKey(k.public!);
}

export function privateKey(name: string): KeyObject {
  return createPrivateKey(RFC9421.keys[name]!.private!);
}

type Headers = Record<string, string | string[]>;

export interface ParsedHttp {
  readonly request?: RequestMessage;
  readonly response?: ResponseMessage;
  readonly headers: Headers;
  readonly body: string;
}

/** HTTP/1.1 text → message; repeated fields become arrays, as Node gives them for unknown fields. */
export function parseHttp(text: string, scheme = "https"): ParsedHttp {
  const blank = text.indexOf("\n\n");
  const head = blank < 0 ? text : text.slice(0, blank);
  const body = blank < 0 ? "" : text.slice(blank + 2).replace(/^\n+/, "");
  const [startLine, ...lines] = head.split("\n");
  const headers: Headers = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const prior = headers[name];
    headers[name] = prior === undefined ? value : Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  const parts = startLine!.split(" ");
  if (parts[0]!.startsWith("HTTP/"))
    return { response: { status: Number(parts[1]), headers }, headers, body };
  const host = headers.host as string;
  return {
    request: { method: parts[0]!, targetUri: `${scheme}://${host}${parts[1]}`, headers },
    headers,
    body,
  };
}

/** The message a case is about, with its Signature-Input/Signature and overrides applied. */
export function caseMessage(c: VectorCase): RequestMessage | ResponseMessage {
  const parsed = parseHttp(RFC9421.messages[c.message]!.http);
  const headers: Headers = { ...parsed.headers, ...(c.headerOverrides ?? {}) };
  if (c.signatureInput) headers["signature-input"] = c.signatureInput;
  if (c.signature) headers.signature = c.signature;
  return parsed.request ? { ...parsed.request, headers } : { ...parsed.response!, headers };
}

export function caseRequest(c: VectorCase): RequestMessage | undefined {
  return c.request ? parseHttp(RFC9421.messages[c.request]!.http).request : undefined;
}
