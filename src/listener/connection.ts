/**
 * One client connection, for ingress and egress alike: everything the backend executes is
 * answered, in order, on the connection it came from; what cannot be answered is not dispatched.
 * Node parses pipelined requests ahead and emits them at once; they are started one at a time,
 * each once the answer before it is written, and none once an answer closed the connection or the
 * client ended its side (a FIN, which may be a half-close or a client gone). What Node's parser
 * refuses (bytes that are not HTTP, a head over 16 KiB, broken framing, a timeout, CONNECT) is a
 * Berlin Group refusal after the answers before it. A closing connection lingers, so that a RST
 * does not destroy answers the client has not read yet.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { closeLingering } from "./linger.js";

/** One request on its way through a mode (ingress's checks and forwarding, egress's signing). */
export interface Exchange {
  /** Runs it, once it is its turn on the connection. */
  run(): void;
  /**
   * Its body stopped arriving or could not be parsed, so it can never complete: `message` is its
   * answer (a FORMAT_ERROR), under `step` in the access line. Called on a running exchange, or on
   * a fresh one that never ran.
   */
  refuseIncomplete(message: string, step: string | undefined): void;
}

/** What a mode gives the listener: its exchanges and the shape of its own raw refusals. */
export interface ExchangeFactory {
  create(req: IncomingMessage, res: ServerResponse): Exchange;
  /**
   * A whole HTTP/1.1 response refusing what Node could not parse (no request object exists); the
   * mode also reports it (access line and metrics) under `step`.
   */
  rawRefusal(message: string, step: string | undefined): string;
  /** Why a CONNECT is refused, in the mode's words. */
  readonly connectRefused: string;
}

/** How long a closing connection reads and drops what the client still sends. */
export const LINGER_MS = 2_000;

/** Where a socket, and an answer once its exchange starts, keep their Connection (`connection` is Node's). */
const CONNECTION = Symbol("psd2-gateway connection");
type AnswerOf = ServerResponse & { [CONNECTION]?: Connection };

function answerClosed(this: ServerResponse): void {
  (this as AnswerOf)[CONNECTION]!.finished(this);
}

export class Connection {
  private active: { readonly exchange: Exchange; readonly req: IncomingMessage } | undefined = undefined;
  private readonly waiting: [IncomingMessage, ServerResponse][] = [];
  /** No further request from this socket may be started. */
  private condemned = false;
  /** A refusal of bytes Node could not parse: written once the answers before it are out. */
  private pendingRefusal: { readonly message: string; readonly step: string | undefined } | undefined =
    undefined;
  private refused = false;
  /** The client sent its FIN while an answer was in flight: end the connection after that answer. */
  private endAfterActive = false;
  /** Closing: the last answer is out, what the client still sends is read and dropped. */
  lingering = false;

  constructor(
    private readonly socket: Socket,
    private readonly factory: () => ExchangeFactory,
  ) {
    socket.once("end", () => this.clientEnded());
    // Node calls destroySoon after an answer that closes the connection; closing at once while
    // pipelined requests are still arriving makes the kernel send a RST, and a RST throws away
    // the answers the client has not read yet (answers to requests the backend executed).
    socket.destroySoon = () => this.closeLingering();
  }

  accept(req: IncomingMessage, res: ServerResponse): void {
    if (this.condemned || this.pendingRefusal !== undefined) return; // closes after the answer in flight
    if (this.active) this.waiting.push([req, res]);
    else this.start(req, res);
  }

  private start(req: IncomingMessage, res: ServerResponse): void {
    const exchange = this.factory().create(req, res);
    this.active = { exchange, req };
    // One listener function for every answer, its connection found on the answer: no closure and
    // no once-wrapper per request (issue 42). 'close' is emitted once.
    (res as AnswerOf)[CONNECTION] = this;
    res.on("close", answerClosed);
    exchange.run();
  }

  /** The answer in flight has closed (answerClosed). */
  finished(res: ServerResponse): void {
    this.active = undefined;
    if (this.endAfterActive) {
      // Node would wait for the answers never started before ending the connection.
      if (this.pendingRefusal !== undefined) this.writeRefusal();
      else this.socket.end();
      return;
    }
    if (!res.writableFinished || !res.shouldKeepAlive || this.socket.destroyed) {
      // This answer closes the connection: what waits behind it is never started.
      this.condemn();
      return;
    }
    const next = this.waiting.shift();
    if (next) this.start(next[0], next[1]);
    else if (this.pendingRefusal !== undefined) this.writeRefusal();
  }

  private condemn(): void {
    this.condemned = true;
    this.waiting.length = 0;
  }

  /**
   * A FIN is a half-close or a client gone, which cannot be told apart: the answer in flight is
   * still written (the listener keeps half-open connections), but nothing more is started, since
   * its answer might never be read.
   */
  private clientEnded(): void {
    const active = this.active;
    if (!active) return; // Node ends the connection itself
    if (!active.req.complete) {
      // Cut off mid-body, the request can never complete. Node's parser saw the cut first
      // (clientError, before this listener): its refusal stops the body (and the upstream request
      // with it) and is still written to the half-open connection, which then closes.
      if (this.refused) {
        this.condemn();
        this.endAfterActive = true;
        return;
      }
      this.socket.destroy();
      return;
    }
    this.condemn();
    this.endAfterActive = true;
  }

  /** Node could not parse what the client sent (or not in time): `message` says what. */
  clientError(error: NodeJS.ErrnoException, message: string, step: string | undefined): void {
    // While closing, what the client still sends is dropped, parse errors included.
    if (this.lingering) return;
    if (error.code === "ECONNRESET" || !this.socket.writable) {
      this.socket.destroy();
      return;
    }
    if (this.pendingRefusal !== undefined || this.refused) return; // the first one counts
    const active = this.active;
    // A request whose body the bad bytes (or the clock) cut can never complete: the refusal is
    // its answer; nothing behind it is started.
    if (active && !active.req.complete) {
      this.condemn();
      this.refused = true;
      active.exchange.refuseIncomplete(message, step);
      return;
    }
    const cut = this.waiting.findIndex(([req]) => !req.complete);
    if (cut >= 0) {
      const [req, res] = this.waiting[cut]!;
      this.waiting.length = cut; // the ones before it are still answered, in order
      this.refused = true;
      this.condemned = true;
      // Node writes answers in request order: this one goes out after those before it.
      this.factory().create(req, res).refuseIncomplete(message, step);
      return;
    }
    // Requests parsed before the bad bytes are still answered, in order; the refusal comes last.
    this.pendingRefusal = { message, step };
    if (!active) this.writeRefusal();
  }

  private writeRefusal(): void {
    const pending = this.pendingRefusal;
    this.pendingRefusal = undefined;
    if (pending === undefined || this.refused) return;
    this.refused = true;
    if (!this.socket.writable) {
      this.socket.destroy();
      return;
    }
    this.socket.write(this.factory().rawRefusal(pending.message, pending.step));
    // No timeout of Node's guards this socket any more (a CONNECT's is not even Node's): the
    // lingering close bounds how long a client that never closes can hold it.
    this.closeLingering();
  }

  /**
   * RFC 9112 9.6: half-close once the answers are written, read and drop what the client still
   * sends, and close when it has closed its side (or after LINGER_MS).
   */
  private closeLingering(): void {
    const socket = this.socket;
    if (this.lingering || socket.destroyed) return;
    this.lingering = true;
    this.condemn();
    closeLingering(socket, LINGER_MS);
  }
}

type WithConnection = Socket & { [CONNECTION]?: Connection };

/** The socket's Connection, made at its first request or parse error. */
export function connectionOf(socket: Socket, factory: () => ExchangeFactory): Connection {
  const s = socket as WithConnection;
  let connection = s[CONNECTION];
  if (!connection) {
    connection = new Connection(socket, factory);
    s[CONNECTION] = connection;
  }
  return connection;
}
