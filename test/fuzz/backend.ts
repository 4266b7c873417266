/**
 * The fuzz run's recording backend: plain node:http on loopback. Every request it receives is
 * recorded (method, target, X-Request-ID, the fuzz tag from the query, a per-request sequence
 * number, whether the body arrived whole) and answered, once the body has ended (or, when it is
 * eager for that request, as soon as the head arrives), with a marker:
 * header `x-backend-seq: <n>` and, when the answer has a body, `{"seq":n,"xRequestId":…,"tag":…}`
 * (padded for the large shapes). What it answered (status, body length and SHA-256, the
 * Content-Length it declared) is kept in the record: the harness matches what the client read
 * against it.
 *
 * The answer's shape is the request's `x-fuzz-answer` header when it names one, otherwise picked
 * from the fuzz tag: mostly a small JSON 200, sometimes chunked, empty, another status (201, 202,
 * 204, 302, 304, 404, 409) or a large body under the response-signing bound. Shapes that make the
 * gateway close the connection (a body over the bound) are only given when asked for. With
 * `signAnswers` it signs its answers as a bank does (Digest, Date, X-Request-ID, Signature, its
 * certificate), for a gateway that verifies them.
 */

import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { hash32 } from "./prng.js";

export const ANSWER_SHAPES = [
  "json",
  "chunked",
  "empty",
  "empty-chunked",
  "created",
  "accepted-empty",
  "no-content",
  "redirect",
  "not-modified",
  "not-found",
  "conflict",
  "large",
  "too-large",
  "too-large-chunked",
] as const;
export type AnswerShape = (typeof ANSWER_SHAPES)[number];

/** Shapes that the fuzz tag picks (per mille); the rest of the thousand is `json`. */
const PICKED: readonly (readonly [AnswerShape, number])[] = [
  ["chunked", 30],
  ["empty", 15],
  ["empty-chunked", 10],
  ["created", 10],
  ["accepted-empty", 8],
  ["no-content", 10],
  ["redirect", 5],
  ["not-modified", 7],
  ["not-found", 10],
  ["conflict", 5],
  ["large", 8],
];

/** Bytes that only a large answer body carries: a refusal must never hold them. */
export const PAD_MARKER = "BACKEND-PAD-";

export interface BackendAnswer {
  readonly shape: AnswerShape;
  readonly status: number;
  /** Body bytes the backend wrote (0 for HEAD, 204 and 304). */
  readonly bodyBytes: number;
  /** base64 SHA-256 of those bytes. */
  readonly sha256: string;
  /** The Content-Length it declared, when it declared one (a HEAD answer's is the GET body's). */
  readonly contentLength: number | undefined;
  /** Larger than the response-signing bound: the ingress gateway must answer 502 instead. */
  readonly overBound: boolean;
}

export interface BackendRecord {
  readonly seq: number;
  readonly method: string;
  readonly target: string;
  readonly requestId: string | undefined;
  /** `fz=<tag>` from the query: which fuzz request this was; undefined when none. */
  readonly tag: string | undefined;
  /** Kept until the harness has checked the record (then dropped, to keep memory flat). */
  headers: IncomingHttpHeaders | undefined;
  /** Raw header lines as received, for spoofed-value checks (dropped with `headers`). */
  rawHeaders: string[] | undefined;
  /** The body, kept only by a backend started with `keepBodies` (dropped with `headers`). */
  body: Buffer | undefined;
  bodyBytes: number;
  /** The body ended: the backend executed the request and answered it. */
  complete: boolean;
  /** What it answered (set when the answer was written). */
  answer: BackendAnswer | undefined;
  /** A client response carried this record's seq (set by the harness). */
  answered: boolean;
  /** Asked (x-fuzz-backend) to stall or cut the connection: the gateway answers 502/504 itself. */
  readonly provoked: boolean;
  /**
   * It acted on the head: answered as soon as the head arrived, before any body (as a legacy core's
   * GET or DELETE handler does). Only an authenticated head may reach such a backend.
   */
  readonly eager: boolean;
  readonly receivedAt: number;
}

export interface FuzzBackend {
  readonly url: string;
  readonly records: BackendRecord[];
  bySeq(seq: number): BackendRecord | undefined;
  byTag(tag: string): readonly BackendRecord[];
  byRequestId(requestId: string): readonly BackendRecord[];
  close(): Promise<void>;
}

export interface FuzzBackendOptions {
  /** The gateway's response-signing bound: `large` stays at or under it, `too-large` goes over. */
  readonly boundBytes: number;
  /** Keep every request body until the harness checks the record (egress: Digest verification). */
  readonly keepBodies?: boolean;
  /**
   * Sign the answers to these targets as a bank does (egress: the profile that verifies them):
   * the headers to add for an answer body and the X-Request-ID of its request.
   */
  readonly signAnswers?: {
    applies(target: string): boolean;
    sign(body: Buffer, requestId: string): Promise<Record<string, string>>;
  };
  /**
   * Per mille of fuzz tags (picked by the tag's hash, so a replay's sends agree) whose requests it
   * answers on the head instead of after the body; a request with `x-fuzz-eager: 1` always is.
   * Default 0: every answer waits for the body.
   */
  readonly eagerPerMille?: number;
  /**
   * A header meant for the gateway alone (a consent's frequencyPerDay, limits.unattended
   * .consentFrequencyHeader) on every answer, its value picked per answer from
   * CONSENT_FREQUENCY_VALUES: the client must never see it.
   */
  readonly gatewayOnlyHeader?: string;
}

/**
 * What the backend tells of a consent's frequencyPerDay: well-formed (never below SPEC 8's 4, so a
 * learnt limit never refuses a call a family expects through), naming a consent, and garbage.
 */
export const CONSENT_FREQUENCY_VALUES = [
  "10000",
  "5000; consent=fz-consent",
  '4000; consent="fz-quoted"',
  "garbage",
  "0",
  "-1",
  "1e9",
  "",
  "99999999999",
  "8, 9",
  `7; consent=${"x".repeat(300)}`,
] as const;

/** Whether the backend acts on this request's head (see `eagerPerMille`). */
export function actsOnHead(tag: string | undefined, header: unknown, eagerPerMille: number): boolean {
  if (header === "1") return true;
  if (eagerPerMille <= 0 || tag === undefined) return false;
  return hash32(`eager:${tag}`) % 1000 < eagerPerMille;
}

const TAG = /[?&]fz=([A-Za-z0-9._-]+)/;

export function tagOf(target: string): string | undefined {
  return TAG.exec(target)?.[1];
}

function pickedShape(key: string): AnswerShape {
  let at = hash32(`answer:${key}`) % 1000;
  for (const [shape, share] of PICKED) {
    if (at < share) return shape;
    at -= share;
  }
  return "json";
}

const STATUS: Record<AnswerShape, number> = {
  json: 200,
  chunked: 200,
  empty: 200,
  "empty-chunked": 200,
  created: 201,
  "accepted-empty": 202,
  "no-content": 204,
  redirect: 302,
  "not-modified": 304,
  "not-found": 404,
  conflict: 409,
  large: 200,
  "too-large": 200,
  "too-large-chunked": 200,
};

/** The JSON marker body, padded with PAD_MARKER bytes to `size` when that is larger. */
function markerBody(record: BackendRecord, size: number): Buffer {
  const head = `{"seq":${record.seq},"xRequestId":${JSON.stringify(record.requestId ?? null)},"tag":${JSON.stringify(record.tag)}`;
  const plain = `${head}}`;
  const padLength = size - Buffer.byteLength(head) - `,"pad":""}`.length;
  if (padLength <= 0) return Buffer.from(plain);
  const pad = PAD_MARKER.repeat(Math.ceil(padLength / PAD_MARKER.length)).slice(0, padLength);
  return Buffer.from(`${head},"pad":"${pad}"}`);
}

/** A size for `large` (at or under the bound, the bound itself now and then) or `too-large`. */
function sizeFor(shape: AnswerShape, bound: number, seed: number): number {
  if (shape === "large") {
    const pick = seed % 4;
    if (pick === 0) return bound;
    if (pick === 1) return bound - (seed % 64);
    return Math.floor(bound / 2) + (seed % Math.floor(bound / 2));
  }
  const pick = seed % 3;
  if (pick === 0) return bound + 1;
  return bound + 1 + (seed % (3 * bound));
}

/**
 * `x-fuzz-backend: delay=<ms>`, `drop` (cut before the answer) or `drop-mid` (cut after its head
 * and part of its body) makes the backend stall or cut the connection, for families that provoke
 * 502/504 deliberately.
 */
export async function startFuzzBackend(options: FuzzBackendOptions): Promise<FuzzBackend> {
  const records: BackendRecord[] = [];
  const tags = new Map<string, BackendRecord[]>();
  const ids = new Map<string, BackendRecord[]>();
  const add = <K>(map: Map<K, BackendRecord[]>, key: K, r: BackendRecord) => {
    const list = map.get(key);
    if (list) list.push(r);
    else map.set(key, [r]);
  };
  const bound = options.boundBytes;

  const answer = async (record: BackendRecord, res: ServerResponse, requested: string) => {
    const shape: AnswerShape = (ANSWER_SHAPES as readonly string[]).includes(requested)
      ? (requested as AnswerShape)
      : pickedShape(record.tag ?? `seq${record.seq}`);
    const status = STATUS[shape];
    const head = record.method === "HEAD";
    const seed = hash32(`size:${record.tag ?? record.seq}`);
    let body: Buffer;
    switch (shape) {
      case "empty":
      case "empty-chunked":
      case "accepted-empty":
      case "no-content":
      case "not-modified":
        body = Buffer.alloc(0);
        break;
      case "large":
      case "too-large":
      case "too-large-chunked":
        body = markerBody(record, sizeFor(shape, bound, seed));
        break;
      default:
        body = markerBody(record, 0);
    }
    const bodiless = head || status === 204 || status === 304;
    const sent = bodiless ? Buffer.alloc(0) : body;
    const chunked = shape === "chunked" || shape === "empty-chunked" || shape === "too-large-chunked";
    const contentLength = chunked || status === 204 || status === 304 ? undefined : body.length;
    record.answer = {
      shape,
      status,
      bodyBytes: sent.length,
      sha256: createHash("sha256").update(sent).digest("base64"),
      contentLength,
      overBound: !bodiless && body.length > bound,
    };
    const headers: Record<string, string | number> = { "x-backend-seq": String(record.seq) };
    if (options.gatewayOnlyHeader !== undefined)
      headers[options.gatewayOnlyHeader] = CONSENT_FREQUENCY_VALUES[seed % CONSENT_FREQUENCY_VALUES.length]!;
    if (options.signAnswers?.applies(record.target))
      Object.assign(headers, await options.signAnswers.sign(sent, record.requestId ?? ""));
    if (res.destroyed) return;
    if (body.length > 0) headers["content-type"] = "application/json";
    if (contentLength !== undefined) headers["content-length"] = contentLength;
    if (shape === "redirect") headers["location"] = "/v1/elsewhere";
    if (shape === "not-modified") headers["etag"] = `"${record.seq}"`;
    res.writeHead(status, headers);
    if (!chunked) {
      res.end(body);
      return;
    }
    if (body.length === 0) {
      res.flushHeaders();
      res.end();
      return;
    }
    // Several chunks, the last after a pause: the gateway sees the body arrive in parts.
    const piece = Math.max(1, Math.ceil(body.length / (2 + (seed % 4))));
    let at = 0;
    while (body.length - at > piece) {
      res.write(body.subarray(at, at + piece));
      at += piece;
    }
    setTimeout(() => res.end(body.subarray(at)), seed % 3).unref();
  };

  // Heads up to 64 KiB: an application's head close to the egress gateway's 16 KiB limit grows
  // by the headers the gateway adds, and must reach the backend rather than its Node's 431.
  const server: Server = createServer({ maxHeaderSize: 65_536 }, (req, res) => {
    const target = req.url ?? "";
    const rid = req.headers["x-request-id"];
    const tag = tagOf(target);
    const provoked = req.headers["x-fuzz-backend"] !== undefined;
    const record: BackendRecord = {
      seq: records.length + 1,
      method: req.method ?? "",
      target,
      requestId: Array.isArray(rid) ? rid.join(",") : rid,
      tag,
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: undefined,
      bodyBytes: 0,
      complete: false,
      answer: undefined,
      answered: false,
      provoked,
      eager: !provoked && actsOnHead(tag, req.headers["x-fuzz-eager"], options.eagerPerMille ?? 0),
      receivedAt: Date.now(),
    };
    records.push(record);
    if (record.tag !== undefined) add(tags, record.tag, record);
    if (record.requestId !== undefined) add(ids, record.requestId, record);
    const chunks: Buffer[] | undefined = options.keepBodies ? [] : undefined;
    req.on("data", (chunk: Buffer) => {
      record.bodyBytes += chunk.length;
      chunks?.push(chunk);
    });
    req.on("error", () => {});
    const requested = String(req.headers["x-fuzz-answer"] ?? "");
    if (record.eager) void answer(record, res, requested).catch(() => res.destroy());
    req.on("end", () => {
      record.complete = true;
      if (chunks) record.body = Buffer.concat(chunks);
      if (record.eager) return; // answered on its head
      const behaviour = String(req.headers["x-fuzz-backend"] ?? "");
      if (behaviour === "drop") {
        // Executed but answered with a cut connection: the gateway must answer 502 itself.
        req.socket.destroy();
        return;
      }
      if (behaviour === "drop-mid") {
        // A head and part of a body, then the cut: nothing of it may reach the client as whole.
        res.writeHead(200, {
          "x-backend-seq": String(record.seq),
          "content-type": "application/json",
          "content-length": 4096,
        });
        res.write(Buffer.from(PAD_MARKER.repeat(40)), () => req.socket.destroy());
        return;
      }
      const delay = /^delay=(\d+)$/.exec(behaviour);
      const go = () => void answer(record, res, requested).catch(() => res.destroy());
      if (delay) setTimeout(go, Number(delay[1])).unref();
      else go();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    records,
    bySeq: (seq) => records[seq - 1],
    byTag: (tag) => tags.get(tag) ?? [],
    byRequestId: (id) => ids.get(id) ?? [],
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
