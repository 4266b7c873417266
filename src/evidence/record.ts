/**
 * An evidence record: what a bank needs to show, in a dispute, what a TPP signed for one request the
 * gateway accepted. Records are lines of canonical JSON (keys sorted, no spaces, one line each), and
 * each line of a chain carries `prev`, the SHA-256 of the line before it in the same chain: change,
 * remove or reorder a line and the next one no longer points at it. One chain per process (an
 * instance id names it); chains need no order between them.
 *
 * Pure: no I/O. The file store (file-store.ts) writes the lines; verify.ts reads them back.
 */

import { hash } from "node:crypto";

/** What `evidence.bodies` keeps: the bodies of payment calls (POST/PUT/PATCH/DELETE on PSP_PI routes), all, or none. */
export type BodyPolicy = "payments" | "all" | "none";

/** The prev of a chain's first line. */
export const GENESIS = "0".repeat(64);

/** Signed bytes up to this size are kept whole (base64); larger ones only as their SHA-256. */
export const SIGNED_BYTES_INLINE = 64 * 1024;

/** What a request's capture and its record both say, as they say it. */
interface RequestFacts {
  readonly requestId?: string;
  readonly method: string;
  /** Path and query as received. */
  readonly target: string;
  /** The PSD2 role the route needs (PSP_PI: a payment route). */
  readonly role?: string;
  readonly organizationId: string;
  /** SHA-256 of the signing certificate's DER, lower-case hex; certificates/<it>.pem holds the certificate. */
  readonly certificate: string;
  readonly dialect: string;
  /** The dialect and algorithm it verified with (`rsa-sha256`, `rfc9421:rsa-pss-sha512`, `jades:PS256`, …). */
  readonly signedWith: string;
  /** The certificate validation report the verdict rests on (`/trust/reports/<id>` while recent). */
  readonly validationReport?: string;
}

/**
 * What the request path captures of one accepted request: the values as the steps already hold
 * them (the signed bytes, the signature and the body as Buffers, the time as a number). The writer
 * encodes them when it makes the line (requestLine): a request pays for references only, and a
 * queued record holds no base64 or ISO copies on the JS heap while it gathers (issue 40).
 */
export interface RequestCapture extends RequestFacts {
  /** Epoch milliseconds. */
  readonly at: number;
  /** The traceparent header as sent: the record keeps its trace id when it is a valid one. */
  readonly traceparent?: string;
  /** The exact bytes the signature covers. */
  readonly signedBytes: Uint8Array;
  /** The signature value, decoded (ECDSA in JWS and RFC 9421 form: r||s). */
  readonly signature: Uint8Array;
  /** The SHA-256 of the body as received; undefined without a body. */
  readonly bodySha256?: Uint8Array;
  /** The body, when `evidence.bodies` keeps it. */
  readonly body?: Uint8Array;
}

/** A request's record as its line holds it (RecordLine's content), encoded from its capture. */
export interface RequestEvidence extends RequestFacts {
  /** ISO 8601, milliseconds, UTC. */
  readonly time: string;
  /** The W3C trace id of the request's traceparent, when it sent a valid one. */
  readonly traceId?: string;
  /** The exact bytes the signature covers, base64, when at most SIGNED_BYTES_INLINE … */
  readonly signedBytes?: string;
  /** … otherwise their SHA-256, lower-case hex. */
  readonly signedBytesSha256?: string;
  /** The signature value as sent, decoded, then base64 (ECDSA in JWS and RFC 9421 form: r||s). */
  readonly signature: string;
  /** `sha-256=:<base64>:` of the body bytes as received (of nothing, without a body). */
  readonly bodyDigest: string;
  /** The body, base64, when `evidence.bodies` keeps it. */
  readonly body?: string;
  /** The validation report's indication: the certificate passed, or the request would not be here. */
  readonly indication: "TOTAL_PASSED";
  readonly verdict: "accepted";
}

/**
 * A response the gateway signed (ingress, `responseSigning`) or verified (egress), linked to its
 * request's record by X-Request-ID, in the same chain. What it holds is what a bank shows of its
 * own answer: the signature headers as sent, the body's digest, and the signed bytes when they can
 * be rebuilt from the response alone (draft-cavage's signing string).
 */
export interface ResponseEvidence {
  readonly type: "response";
  /** ISO 8601, milliseconds, UTC. */
  readonly time: string;
  /** The request's X-Request-ID: its record has the same. */
  readonly requestId?: string;
  readonly traceId?: string;
  /** The request's method and target. */
  readonly method: string;
  readonly target: string;
  readonly status: number;
  /** `signed`: the gateway signed it (ingress); `verified` / `invalid`: the bank's signature, checked (egress). */
  readonly verdict: "signed" | "verified" | "invalid";
  readonly dialect: string;
  /** The signer's organizationIdentifier (the bank's QSealC), when it has one. */
  readonly organizationId?: string;
  /** SHA-256 of the signer's certificate DER; certificates/<it>.pem holds it. */
  readonly certificate?: string;
  /** The headers that carry and bind the signature, lower-case names, as sent (the certificate header left out: `certificate` names it). */
  readonly signatureHeaders: Readonly<Record<string, string>>;
  /**
   * The exact bytes the signature covers (draft-cavage's signing string, RFC 9421's signature base,
   * the JWS signing input), base64, rebuilt from the headers as sent or received; their SHA-256
   * instead above SIGNED_BYTES_INLINE. Without them when the signature cannot be read.
   */
  readonly signedBytes?: string;
  readonly signedBytesSha256?: string;
  /** The signature value, decoded, then base64 (ECDSA in JWS and RFC 9421 form: r||s). */
  readonly signature?: string;
  /** The dialect and algorithm, as a request record's (`rsa-sha256`, `rfc9421:rsa-pss-sha512`, `jades:PS256`). */
  readonly signedWith?: string;
  /** Egress: the validation report of the bank's certificate (its path to the profile's CA). */
  readonly validationReport?: string;
  /** `sha-256=:<base64>:` of the response body. */
  readonly bodyDigest: string;
  /** The body, base64, when `evidence.bodies` keeps the request's. */
  readonly body?: string;
}

export interface ResponseLine extends Chained, Omit<ResponseEvidence, "time"> {}

/** The lines of a chain. `seq` counts every line of the chain from 0. */
export type EvidenceLine = RecordLine | ResponseLine | CheckpointLine | FileLine | GapLine;

interface Chained {
  readonly chain: string;
  readonly seq: number;
  readonly prev: string;
  readonly time: string;
}

export interface RecordLine extends Chained, Omit<RequestEvidence, "time"> {
  readonly type: "request";
}

/** The first line of every file: which chain and file it is, and how many records came before. */
export interface FileLine extends Chained {
  readonly type: "file";
  /** 1 for the chain's first file. */
  readonly file: number;
  /** Records of the chain before this file. */
  readonly count: number;
  /** Files older than this many days may have been removed by retention (0: kept for ever). */
  readonly retainDays: number;
}

/** Records not kept (the queue was full or the store failed under `onFailure: continue`). */
export interface GapLine extends Chained {
  readonly type: "gap";
  readonly dropped: number;
  readonly reason: string;
}

/** A signed statement that the chain held `count` records and its last line hashed to `prev`. */
export interface CheckpointLine extends Chained {
  readonly type: "checkpoint";
  /** Records (requests and responses) of the chain up to this line. */
  readonly count: number;
  /** SHA-256 of the public key's SPKI DER, lower-case hex: keys/<it>.pem holds the public key. */
  readonly key: string;
  /** `rsa-sha256`, `ecdsa-sha256` (DER signature) or `ed25519`. */
  readonly alg: string;
  /** Over checkpointStatement(line), base64. */
  readonly signature: string;
}

/**
 * JSON with keys sorted at every level and no spaces: one spelling per value, so a record's hash is
 * its content's. Undefined values are left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sorted(value));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sorted(v);
  }
  return out;
}

export function sha256Hex(data: string | Uint8Array): string {
  // One-shot: no Hash object per line.
  return hash("sha256", data, "hex");
}

/**
 * The bytes a checkpoint's signature covers: plain text, so that `openssl dgst -verify` can check a
 * checkpoint written out as a file (the dispute bundle's checkpoint.txt).
 */
export function checkpointStatement(
  line: Pick<CheckpointLine, "chain" | "seq" | "time" | "count" | "prev" | "key">,
): string {
  return [
    "psd2-gateway evidence checkpoint",
    `chain: ${line.chain}`,
    `seq: ${line.seq}`,
    `time: ${line.time}`,
    `count: ${line.count}`,
    `last: ${line.prev}`,
    `key: ${line.key}`,
    "",
  ].join("\n");
}

/** A line's content before the chain gives it its place (distributed over the kinds of line). */
export type Unchained<L extends EvidenceLine = EvidenceLine> = L extends EvidenceLine
  ? Omit<L, "chain" | "seq" | "prev">
  : never;

/**
 * One chain's state: where the next line goes and what it points at. `append` turns a line's
 * content into its canonical text and moves the chain on; nothing is written here.
 */
export class EvidenceChain {
  private seqNext: number;
  private prevHash: string;
  private records: number;

  constructor(
    readonly id: string,
    state: { seq: number; prev: string; count: number } = { seq: 0, prev: GENESIS, count: 0 },
  ) {
    this.seqNext = state.seq;
    this.prevHash = state.prev;
    this.records = state.count;
  }

  /** The next line's seq, the last line's hash and the records so far. */
  get state(): { seq: number; prev: string; count: number } {
    return { seq: this.seqNext, prev: this.prevHash, count: this.records };
  }

  /** The next line's seq. */
  get nextSeq(): number {
    return this.seqNext;
  }

  /** The text of the line (no newline) and the chain moved on past it. */
  append<L extends EvidenceLine>(content: Unchained<L>): string {
    const line = canonicalJson({ ...content, chain: this.id, seq: this.seqNext, prev: this.prevHash });
    this.seqNext += 1;
    this.prevHash = sha256Hex(line);
    if (content.type === "response") this.records += 1;
    return line;
  }

  /** A request's record as its line (the writer's most frequent line: encoded straight into it). */
  appendRequest(evidence: RequestCapture): string {
    const line = requestLine(evidence, this.id, this.seqNext, this.prevHash);
    this.seqNext += 1;
    this.prevHash = sha256Hex(line);
    this.records += 1;
    return line;
  }

  /** A checkpoint's fields before it is signed (its seq and prev are the chain's next). */
  checkpointFields(time: string, key: string): Omit<CheckpointLine, "signature" | "alg"> {
    return {
      type: "checkpoint",
      chain: this.id,
      seq: this.seqNext,
      prev: this.prevHash,
      time,
      count: this.records,
      key,
    };
  }
}

/**
 * A request line's canonical JSON, fast: the capture encoded in place (base64, ISO time, trace id)
 * and its keys written in sorted order (undefined ones left out by JSON.stringify), so one
 * stringify makes what canonicalJson would (a test holds them equal). A record is flat: strings
 * and one number.
 */
function requestLine(e: RequestCapture, chain: string, seq: number, prev: string): string {
  const inline = e.signedBytes.length <= SIGNED_BYTES_INLINE;
  return JSON.stringify({
    body: e.body === undefined ? undefined : base64(e.body),
    bodyDigest: e.bodySha256 === undefined ? EMPTY_BODY_DIGEST : `sha-256=:${base64(e.bodySha256)}:`,
    certificate: e.certificate,
    chain,
    dialect: e.dialect,
    indication: "TOTAL_PASSED",
    method: e.method,
    organizationId: e.organizationId,
    prev,
    requestId: e.requestId,
    role: e.role,
    seq,
    signature: base64(e.signature),
    signedBytes: inline ? base64(e.signedBytes) : undefined,
    signedBytesSha256: inline ? undefined : sha256Hex(e.signedBytes),
    signedWith: e.signedWith,
    target: e.target,
    time: isoTime(e.at),
    traceId: traceIdOf(e.traceparent),
    type: "request",
    validationReport: e.validationReport,
    verdict: "accepted",
  });
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** The digest a record states for a request without a body: that of no bytes. */
const EMPTY_BODY_DIGEST = `sha-256=:${hash("sha256", "", "base64")}:`;

/** W3C traceparent (version-traceid-parentid-flags): the caller's trace id, when it sent a valid one. */
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}(?:-.*)?$/;
const ZERO_TRACE = "0".repeat(32);

export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match || traceparent.startsWith("ff") || match[1] === ZERO_TRACE) return undefined;
  return match[1];
}

/** The last second isoTime spelled, and its text up to the milliseconds ("2026-11-29T03:03:38."). */
let isoSecond = Number.NaN;
let isoPrefix = "";
/** 9999-12-31T23:59:59.999Z: beyond it toISOString spells the year with a sign and six digits. */
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/**
 * `new Date(at).toISOString()`, with the text up to the second made once a second: the writer
 * spells a time per record, in order, and a Date per record was a measurable part of one.
 */
export function isoTime(at: number): string {
  if (!Number.isInteger(at) || at < 0 || at > LAST_FOUR_DIGIT_YEAR_MS) return new Date(at).toISOString();
  const ms = at % 1000;
  const second = at - ms;
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second).toISOString().slice(0, 20);
  }
  return `${isoPrefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;
}
