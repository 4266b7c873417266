/**
 * The demo QTSP's HTTP face, as a real QTSP publishes it: an OCSP responder (`POST /ocsp`, and
 * `GET /ocsp/<base64 request>` as RFC 5019 5 allows, cacheable), and documents — CRLs, trusted
 * lists, the EBA register — served with a strong ETag and Last-Modified so that fetchers can
 * revalidate with If-None-Match / If-Modified-Since and get a 304. Plain HTTP on loopback, as
 * OCSP and CRL distribution are (their content is signed).
 *
 * A separate system from the gateway: node:* and @peculiar/* only, nothing from the gateway's src/.
 */

import { createHash, createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { buildOcspResponse, ocspErrorResponse, type StatusLookup } from "./ocsp-responder.js";

export interface QtspDocument {
  /** The bytes, or a function giving the current bytes (called per request: a CRL re-issued in a test). */
  readonly body: Uint8Array | (() => Uint8Array);
  readonly contentType: string;
}

export interface QtspServerOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  readonly ca: { readonly certificatePem: string; readonly privateKeyPem: string };
  /** A delegated OCSP responder; without one the CA key signs the responses. */
  readonly responder?: { readonly certificatePem: string; readonly privateKeyPem: string };
  readonly status: StatusLookup;
  /** Path (`/crl/issuing-ca.crl`) → document. */
  readonly documents?: ReadonlyMap<string, QtspDocument>;
  /** nextUpdate − thisUpdate of OCSP answers; one hour unless set. */
  readonly ocspValidityMs?: number;
  /**
   * Serve an answer made for the same request again for this long (RFC 5019 responders
   * pre-produce answers instead of signing each one); 0, the default, signs every answer.
   */
  readonly answerReuseMs?: number;
}

export interface QtspServerStats {
  ocspRequests: number;
  documentRequests: number;
}

export interface QtspServer {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  readonly stats: Readonly<QtspServerStats>;
  /** Adds or replaces a document; its Last-Modified becomes now. */
  setDocument(path: string, document: QtspDocument): void;
  close(): Promise<void>;
}

/** RFC 5019 keeps requests small; larger bodies are refused with 413 before they are read whole. */
export const MAX_OCSP_REQUEST_BYTES = 16 * 1024;
const DEFAULT_OCSP_VALIDITY_MS = 3600 * 1000;
/** Answers kept for reuse at most; the lot is dropped when full (a demo, not a cache to tune). */
const MAX_REUSED_ANSWERS = 100_000;

interface Served {
  readonly document: QtspDocument;
  etag: string;
  /** Whole seconds: Last-Modified and If-Modified-Since have no finer resolution. */
  lastModified: number;
}

export async function startQtspServer(options: QtspServerOptions): Promise<QtspServer> {
  const ca = {
    certificate: new Uint8Array(new X509Certificate(options.ca.certificatePem).raw),
    privateKey: createPrivateKey(options.ca.privateKeyPem),
  };
  const responder = options.responder && {
    certificate: new Uint8Array(new X509Certificate(options.responder.certificatePem).raw),
    privateKey: createPrivateKey(options.responder.privateKeyPem) as KeyObject,
  };
  const validityMs = options.ocspValidityMs ?? DEFAULT_OCSP_VALIDITY_MS;
  const stats: QtspServerStats = { ocspRequests: 0, documentRequests: 0 };
  const documents = new Map<string, Served>();
  const setDocument = (path: string, document: QtspDocument) => {
    documents.set(path, { document, etag: "", lastModified: wholeSecondsNow() });
  };
  for (const [path, document] of options.documents ?? []) setDocument(path, document);

  const reuseMs = options.answerReuseMs ?? 0;
  const made = new Map<string, { answer: Uint8Array; until: number }>();
  const answerOcsp = (request: Uint8Array): Uint8Array => {
    const now = Date.now();
    const key = reuseMs > 0 ? Buffer.from(request).toString("base64") : "";
    const ready = reuseMs > 0 ? made.get(key) : undefined;
    if (ready && ready.until > now) return ready.answer;
    const answer = signAnswer(request, now);
    if (reuseMs > 0) {
      if (made.size >= MAX_REUSED_ANSWERS) made.clear();
      made.set(key, { answer, until: now + reuseMs });
    }
    return answer;
  };
  const signAnswer = (request: Uint8Array, now: number): Uint8Array => {
    try {
      return buildOcspResponse({
        request,
        ca,
        responder,
        status: options.status,
        thisUpdate: new Date(now),
        nextUpdate: new Date(now + validityMs),
      });
    } catch {
      // The status lookup (or the keys) failed: the responder's fault, said the OCSP way.
      return ocspErrorResponse("internalError");
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path === "/ocsp" && req.method === "POST") {
      stats.ocspRequests++;
      readCapped(req, MAX_OCSP_REQUEST_BYTES).then(
        (body) => {
          if (body === undefined) return plain(res, 413, "OCSP request larger than 16 KiB\n", true);
          sendOcsp(res, answerOcsp(body), undefined);
        },
        () => res.destroy(),
      );
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD, POST");
      return plain(res, 405, "method not allowed\n");
    }
    if (path === "/ocsp" || path.startsWith("/ocsp/")) {
      stats.ocspRequests++;
      const request = decodeGetRequest(path.slice("/ocsp/".length));
      const answer = request ? answerOcsp(request) : ocspErrorResponse("malformedRequest");
      // RFC 5019 6.2: a GET answer may be cached until shortly before nextUpdate.
      return sendOcsp(
        res,
        answer,
        request ? Math.floor(validityMs / 1000) : undefined,
        req.method === "HEAD",
      );
    }
    const served = documents.get(path);
    if (!served) return plain(res, 404, "not found\n");
    stats.documentRequests++;
    serveDocument(req, res, served);
  };

  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch {
      if (!res.headersSent) plain(res, 500, "internal error\n");
      else res.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    stats,
    setDocument,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function serveDocument(req: IncomingMessage, res: ServerResponse, served: Served): void {
  const { body, contentType } = served.document;
  const bytes = typeof body === "function" ? body() : body;
  const etag = `"${createHash("sha256").update(bytes).digest("base64url")}"`;
  // The bytes behind a function changed since the last request: that is when it was modified.
  if (served.etag !== etag) {
    if (served.etag !== "") served.lastModified = wholeSecondsNow();
    served.etag = etag;
  }
  res.setHeader("ETag", etag);
  res.setHeader("Last-Modified", new Date(served.lastModified).toUTCString());
  res.setHeader("Cache-Control", "no-cache");
  if (notModified(req, etag, served.lastModified)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.statusCode = 200;
  res.setHeader("Content-Type", contentType);
  res.setHeader("Content-Length", bytes.length);
  res.end(req.method === "HEAD" ? undefined : bytes);
}

/** RFC 9110 13.1.2–13.1.3: If-None-Match (weak comparison) decides when present; If-Modified-Since only without it. */
function notModified(req: IncomingMessage, etag: string, lastModified: number): boolean {
  const ifNoneMatch = req.headers["if-none-match"];
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch
      .split(",")
      .map((tag) => tag.trim().replace(/^W\//, ""))
      .some((tag) => tag === "*" || tag === etag);
  }
  const ifModifiedSince = req.headers["if-modified-since"];
  if (ifModifiedSince === undefined) return false;
  const since = Date.parse(ifModifiedSince);
  return !Number.isNaN(since) && lastModified <= since;
}

/** The request in `GET /ocsp/{url-encoding of base64 encoding of the DER}` (RFC 6960 A.1); base64url taken too. */
function decodeGetRequest(encoded: string): Uint8Array | undefined {
  let base64: string;
  try {
    base64 = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  if (base64.length === 0 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(base64)) return undefined;
  const bytes = Buffer.from(base64.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  return bytes.length > 0 && bytes.length <= MAX_OCSP_REQUEST_BYTES ? new Uint8Array(bytes) : undefined;
}

function sendOcsp(
  res: ServerResponse,
  der: Uint8Array,
  maxAgeSeconds: number | undefined,
  head = false,
): void {
  res.statusCode = 200;
  res.setHeader("Content-Type", "application/ocsp-response");
  res.setHeader("Content-Length", der.length);
  res.setHeader(
    "Cache-Control",
    maxAgeSeconds === undefined
      ? "no-store"
      : `max-age=${maxAgeSeconds}, public, no-transform, must-revalidate`,
  );
  res.end(head ? undefined : der);
}

function plain(res: ServerResponse, status: number, text: string, close = false): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  if (close) res.setHeader("Connection", "close");
  res.end(text);
}

/** The body, or undefined as soon as it is known to exceed `limit` (the rest is not read). */
function readCapped(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))));
    req.on("error", reject);
  });
}

function wholeSecondsNow(): number {
  return Math.floor(Date.now() / 1000) * 1000;
}
