/**
 * The fuzz run's recording backend: plain node:http on loopback. Every request it receives is
 * recorded (method, target, X-Request-ID, the fuzz tag from the query, a per-request sequence
 * number, whether the body arrived whole) and answered, once the body has ended, with a marker:
 * header `x-backend-seq: <n>` and `{"seq":n,"xRequestId":…,"tag":…}` as the body. The harness
 * matches what the client read against this record.
 */

import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

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
  bodyBytes: number;
  /** The body ended: the backend executed the request and answered it. */
  complete: boolean;
  /** A client response carried this record's seq (set by the harness). */
  answered: boolean;
  /** Asked (x-fuzz-backend) to stall or cut the connection: the gateway answers 502/504 itself. */
  readonly provoked: boolean;
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

const TAG = /[?&]fz=([A-Za-z0-9._-]+)/;

export function tagOf(target: string): string | undefined {
  return TAG.exec(target)?.[1];
}

/**
 * `x-fuzz-backend: delay=<ms>` or `drop` in the request makes the backend stall or cut the
 * connection, for families that provoke 502/504 deliberately.
 */
export async function startFuzzBackend(): Promise<FuzzBackend> {
  const records: BackendRecord[] = [];
  const tags = new Map<string, BackendRecord[]>();
  const ids = new Map<string, BackendRecord[]>();
  const add = <K>(map: Map<K, BackendRecord[]>, key: K, r: BackendRecord) => {
    const list = map.get(key);
    if (list) list.push(r);
    else map.set(key, [r]);
  };
  const server: Server = createServer((req, res) => {
    const target = req.url ?? "";
    const rid = req.headers["x-request-id"];
    const record: BackendRecord = {
      seq: records.length + 1,
      method: req.method ?? "",
      target,
      requestId: Array.isArray(rid) ? rid.join(",") : rid,
      tag: tagOf(target),
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      bodyBytes: 0,
      complete: false,
      answered: false,
      provoked: req.headers["x-fuzz-backend"] !== undefined,
      receivedAt: Date.now(),
    };
    records.push(record);
    if (record.tag !== undefined) add(tags, record.tag, record);
    if (record.requestId !== undefined) add(ids, record.requestId, record);
    req.on("data", (chunk: Buffer) => {
      record.bodyBytes += chunk.length;
    });
    req.on("error", () => {});
    req.on("end", () => {
      record.complete = true;
      const behaviour = String(req.headers["x-fuzz-backend"] ?? "");
      const answer = () => {
        const body = JSON.stringify({
          seq: record.seq,
          xRequestId: record.requestId ?? null,
          tag: record.tag,
        });
        res.writeHead(200, {
          "content-type": "application/json",
          "x-backend-seq": String(record.seq),
          "content-length": Buffer.byteLength(body),
        });
        res.end(body);
      };
      if (behaviour === "drop") {
        // Executed but answered with a cut connection: the gateway must answer 502 itself.
        req.socket.destroy();
        return;
      }
      const delay = /^delay=(\d+)$/.exec(behaviour);
      if (delay) setTimeout(answer, Number(delay[1])).unref();
      else answer();
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
