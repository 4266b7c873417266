/**
 * Raw exchanges with a gateway, over TLS (ingress) or plain TCP (egress): bytes written as a
 * family wants them (in parts, with pauses, half-closed or cut), every response read back and
 * split (Content-Length, chunked, or up to the close; none for answers to HEAD, 204 and 304),
 * until a sentinel request's answer, the close, or a deadline. Each exchange tells when it
 * connected, wrote, read and ended (for the connection limits' timing), and may come from another
 * loopback address or skip the TLS handshake altogether.
 */

import { type Socket, connect as tcpConnect } from "node:net";
import {
  type ConnectionOptions,
  createSecureContext,
  type SecureContext,
  type TLSSocket,
  connect as tlsConnect,
} from "node:tls";

export interface ParsedResponse {
  readonly status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** The status line and header block as received (for reports). */
  readonly head: string;
}

/**
 * Splits `data` into complete responses; interim 1xx answers are skipped. With `eof`, a response
 * without framing takes the rest. `malformed` is set when the bytes are not HTTP at all.
 * `bodiless` holds the positions (final responses counted from 0) that answer a HEAD request:
 * whatever their Content-Length says, no body follows them.
 */
export function splitResponses(
  data: Buffer,
  eof: boolean,
  bodiless?: ReadonlySet<number>,
): { responses: ParsedResponse[]; consumed: number; malformed?: string } {
  const responses: ParsedResponse[] = [];
  let at = 0;
  for (;;) {
    if (at >= data.length) break;
    const end = data.indexOf("\r\n\r\n", at, "latin1");
    if (end < 0) {
      if (eof)
        return { responses, consumed: at, malformed: `incomplete head: ${preview(data.subarray(at))}` };
      break;
    }
    const head = data.subarray(at, end).toString("latin1");
    const [statusLine, ...lines] = head.split("\r\n");
    const match = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine ?? "");
    if (!match)
      return { responses, consumed: at, malformed: `not a status line: ${preview(data.subarray(at))}` };
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let next = end + 4;
    if (status >= 100 && status < 200) {
      at = next;
      continue;
    }
    let body: Buffer;
    if (bodiless?.has(responses.length) || status === 204 || status === 304) {
      body = Buffer.alloc(0);
    } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const parts: Buffer[] = [];
      let pos = next;
      let done = false;
      for (;;) {
        const lineEnd = data.indexOf("\r\n", pos, "latin1");
        if (lineEnd < 0) break;
        const size = Number.parseInt(data.subarray(pos, lineEnd).toString("latin1"), 16);
        if (Number.isNaN(size))
          return {
            responses,
            consumed: at,
            malformed: `bad chunk size in response: ${preview(data.subarray(pos))}`,
          };
        if (size === 0) {
          const trailerEnd = data.indexOf("\r\n\r\n", lineEnd - 2 < pos ? pos : lineEnd - 2, "latin1");
          const simple = data.subarray(lineEnd + 2, lineEnd + 4).toString("latin1") === "\r\n";
          if (simple) {
            pos = lineEnd + 4;
            done = true;
          } else if (trailerEnd >= 0) {
            pos = trailerEnd + 4;
            done = true;
          }
          break;
        }
        if (data.length < lineEnd + 2 + size + 2) break;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
      }
      if (!done) break;
      body = Buffer.concat(parts);
      next = pos;
    } else if (headers["content-length"] !== undefined) {
      const length = Number(headers["content-length"]);
      if (data.length < next + length) break;
      body = data.subarray(next, next + length);
      next += length;
    } else {
      if (!eof) break;
      body = data.subarray(next);
      next = data.length;
    }
    responses.push({ status, headers, body: Buffer.from(body), head });
    at = next;
  }
  return { responses, consumed: at };
}

function preview(bytes: Buffer): string {
  return JSON.stringify(bytes.subarray(0, 120).toString("latin1"));
}

/** One write of an exchange: bytes, after an optional pause. */
export interface Write {
  readonly data: Buffer;
  readonly delayMs?: number;
}

export interface ExchangePlan {
  readonly writes: readonly Write[];
  /** After the writes: keep reading (default), half-close (FIN), or cut the connection, `afterMs` later. */
  readonly after?: "read" | "fin" | "cut";
  readonly afterMs?: number;
  /**
   * The X-Request-ID of a sentinel request written last: its answer (the response echoing it,
   * or with `sentinelInBody` the one whose body holds it) ends the exchange.
   */
  readonly sentinelId?: string;
  readonly sentinelInBody?: boolean;
  /** Positions of the responses that answer HEAD requests (see splitResponses). */
  readonly bodiless?: ReadonlySet<number>;
  /** Reading stops after this long, whatever came (default 10 s). */
  readonly deadlineMs?: number;
  /**
   * A client that writes its whole pipeline before it reads (the socket paused until the last
   * write): answers wait in its receive buffer meanwhile, as they do for a busy client.
   */
  readonly readAfterWrites?: boolean;
  /**
   * `tcp`: a plain TCP connection even to a TLS listener (no handshake: the writes are the raw
   * bytes, what comes back is counted, not parsed). Default: the client's own (TLS or TCP).
   */
  readonly transport?: "tcp";
  /** Connect from this local address (another 127.x.y.z: a client of its own for per-address caps). */
  readonly localAddress?: string;
  /** Told once connected (TCP, or the TLS handshake done), before the first write. */
  readonly onConnected?: () => void;
}

export interface ExchangeOutcome {
  readonly responses: ParsedResponse[];
  readonly endedBy: "sentinel" | "close" | "deadline" | "cut" | "connect-error";
  /** Bytes that could not be read as HTTP responses. */
  readonly malformed?: string;
  readonly error?: string;
  /** When it ended (the gateway's close, the client's deadline or cut), in ms from the start. */
  readonly ms: number;
  /** Ms from the start (before connecting) to each event, when it happened. */
  readonly timing: {
    /** TCP connected, or over TLS the handshake done. */
    readonly connected?: number;
    readonly firstWrite?: number;
    readonly lastWrite?: number;
    readonly firstRead?: number;
    readonly lastRead?: number;
  };
  /** Bytes read in all (with `transport: "tcp"` to a TLS listener, the only account of them). */
  readonly bytesRead: number;
}

export interface RawClientOptions {
  readonly host: string;
  readonly port: number;
  /** TLS with this CA and server name; plain TCP without (the egress listener). */
  readonly tls?: { readonly ca: string; readonly servername: string };
  /**
   * The TLS client certificate (a QWAC) a plan's connection presents, when it needs one (UK OB:
   * its signature covers the body only, so its requests come over mutual TLS); none by default.
   */
  readonly clientCertificateFor?: (plan: ExchangePlan) => ClientCertificate | undefined;
}

export interface ClientCertificate {
  /** Names the context and the sessions resumed with it (a session carries its certificate). */
  readonly name: string;
  readonly cert: string;
  readonly key: string;
}

/** Opens connections to a gateway; over TLS, resuming sessions so handshakes stay cheap. */
export class RawClient {
  /** The last session per client certificate ("" for none): one is never resumed with another's. */
  private readonly sessions = new Map<string, Buffer>();
  /** One context per client certificate: building one per connection (parsing the CA) was the costliest step. */
  private readonly contexts = new Map<string, SecureContext>();

  constructor(private readonly options: RawClientOptions) {}

  private contextFor(certificate: ClientCertificate | undefined): SecureContext {
    const name = certificate?.name ?? "";
    let context = this.contexts.get(name);
    if (!context) {
      context = createSecureContext({
        ca: this.options.tls!.ca,
        ...(certificate ? { cert: certificate.cert, key: certificate.key } : {}),
      });
      this.contexts.set(name, context);
    }
    return context;
  }

  private connect(plan: ExchangePlan): Promise<Socket> {
    const local = plan.localAddress !== undefined ? { localAddress: plan.localAddress } : {};
    if (!this.options.tls || plan.transport === "tcp") {
      return new Promise((resolve, reject) => {
        const socket = tcpConnect({ host: this.options.host, port: this.options.port, ...local }, () => {
          socket.off("error", reject);
          resolve(socket);
        });
        socket.once("error", reject);
        socket.setTimeout(15_000, () => socket.destroy(new Error("connect timed out")));
      });
    }
    const tls = this.options.tls;
    const certificate = this.options.clientCertificateFor?.(plan);
    const name = certificate?.name ?? "";
    const session = this.sessions.get(name);
    return new Promise((resolve, reject) => {
      const opts: ConnectionOptions = {
        host: this.options.host,
        port: this.options.port,
        secureContext: this.contextFor(certificate),
        servername: tls.servername,
        ...(session ? { session } : {}),
        ...local,
      };
      const socket: TLSSocket = tlsConnect(opts, () => {
        socket.off("error", reject);
        resolve(socket);
      });
      socket.on("session", (next: Buffer) => {
        this.sessions.set(name, next);
      });
      socket.once("error", reject);
      socket.setTimeout(15_000, () => socket.destroy(new Error("TLS connect timed out")));
    });
  }

  async exchange(plan: ExchangePlan): Promise<ExchangeOutcome> {
    const started = performance.now();
    const since = () => performance.now() - started;
    let socket: Socket;
    try {
      socket = await this.connect(plan);
    } catch (error) {
      return {
        responses: [],
        endedBy: "connect-error",
        error: (error as Error).message,
        ms: since(),
        timing: {},
        bytesRead: 0,
      };
    }
    const timing: {
      connected: number;
      firstWrite?: number;
      lastWrite?: number;
      firstRead?: number;
      lastRead?: number;
    } = { connected: since() };
    plan.onConnected?.();
    // Over TLS to a listener written to as plain TCP, the bytes read are TLS records, not HTTP.
    const parse = !(this.options.tls && plan.transport === "tcp");
    socket.setTimeout(0);
    return new Promise<ExchangeOutcome>((resolve) => {
      const chunks: Buffer[] = [];
      let received = 0;
      let sawSentinelId = false;
      let settled = false;
      const timers: NodeJS.Timeout[] = [];
      const finish = (endedBy: ExchangeOutcome["endedBy"], error?: string) => {
        if (settled) return;
        settled = true;
        for (const t of timers) clearTimeout(t);
        const ms = since();
        socket.destroy();
        const all = Buffer.concat(chunks, received);
        const { responses, malformed } = parse
          ? splitResponses(all, endedBy !== "sentinel", plan.bodiless)
          : { responses: [], malformed: undefined };
        resolve({
          responses,
          endedBy,
          ...(malformed !== undefined ? { malformed } : {}),
          ...(error !== undefined ? { error } : {}),
          ms,
          timing,
          bytesRead: received,
        });
      };
      socket.on("data", (chunk: Buffer) => {
        timing.firstRead ??= since();
        timing.lastRead = since();
        chunks.push(chunk);
        received += chunk.length;
        if (plan.sentinelId !== undefined) {
          // Cheap test first: the sentinel's id in the bytes, then a real parse (on every chunk
          // once the id was seen: the rest of its answer may come in later chunks).
          if (!sawSentinelId && chunk.indexOf(plan.sentinelId, 0, "latin1") < 0 && chunks.length > 1) {
            const tail = Buffer.concat(chunks.slice(-2));
            if (tail.indexOf(plan.sentinelId, 0, "latin1") < 0) return;
          }
          sawSentinelId = true;
          const { responses } = splitResponses(Buffer.concat(chunks, received), false, plan.bodiless);
          const id = plan.sentinelId;
          const isSentinel = plan.sentinelInBody
            ? (r: ParsedResponse) => r.body.includes(id, 0, "latin1")
            : (r: ParsedResponse) => r.headers["x-request-id"] === id;
          if (responses.some(isSentinel)) finish("sentinel");
        }
      });
      // An error (EPIPE on a write after the gateway closed, ECONNRESET) is followed by 'close';
      // whatever was read before it has been delivered by then.
      let socketError: string | undefined;
      socket.on("error", (error) => {
        socketError ??= (error as NodeJS.ErrnoException).code ?? error.message;
      });
      socket.on("close", () => finish("close", socketError));
      socket.on("end", () => finish("close", socketError));
      timers.push(setTimeout(() => finish("deadline"), plan.deadlineMs ?? 10_000));
      if (plan.readAfterWrites) socket.pause();
      void (async () => {
        for (const write of plan.writes) {
          if (settled) return;
          if (write.delayMs) await new Promise((r) => timers.push(setTimeout(r, write.delayMs)));
          if (settled || socket.destroyed) return;
          timing.firstWrite ??= since();
          timing.lastWrite = since();
          socket.write(write.data);
        }
        if (settled) return;
        if (plan.readAfterWrites) socket.resume();
        if (plan.after === "fin") {
          if (plan.afterMs) await new Promise((r) => timers.push(setTimeout(r, plan.afterMs)));
          if (!settled && !socket.destroyed) socket.end();
        } else if (plan.after === "cut") timers.push(setTimeout(() => finish("cut"), plan.afterMs ?? 0));
      })();
    });
  }
}
