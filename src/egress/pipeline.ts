/**
 * The application's connections to the egress listener, as ingress keeps the TPPs' (DESIGN:
 * everything the bank executed is answered, in order, on the connection it came from; what cannot
 * be answered is not sent). Node parses pipelined requests ahead and emits them at once: they are
 * handed to the egress handler one at a time, each once the answer before it is written, and none
 * once an answer closed the connection or the application ended its side (its answer might never
 * be read). A FIN after a whole request is a half-close: the answer in flight is still written.
 * What Node's parser refuses (a header line that is not HTTP, a head over 16 KiB, broken body
 * framing, an Expect other than 100-continue, CONNECT) is a FORMAT_ERROR tppMessages answer marked
 * `psd2-gateway-origin: gateway`, after the answers before it, instead of Node's bare 400/431/417
 * or a cut connection. A closing connection lingers, so that a RST does not destroy answers the
 * application has not read yet.
 */

import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { reject } from "../errors.js";
import { closeLingering } from "../forward/linger.js";
import { rawRejection, writeRejection } from "../forward/respond.js";
import { keepAnsweringAfterConnect } from "../forward/tunnel.js";
import { clientErrorText } from "../listener/guard.js";
import { ORIGIN_HEADER } from "./handler.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const GATEWAY_ORIGIN = { [ORIGIN_HEADER]: "gateway" } as const;
/** How long a closing connection reads and drops what the application still sends. */
const LINGER_MS = 2_000;
const TUNNEL_REFUSED = new Error("the CONNECT method is not served; send the request itself");
const CONNECTION = Symbol("psd2-gateway egress connection");
type WithConnection = Socket & { [CONNECTION]?: Connection };

class Connection {
  private active: ServerResponse | undefined = undefined;
  private readonly waiting: [IncomingMessage, ServerResponse, Handler][] = [];
  /** Nothing more from this connection is handed over. */
  private closing = false;
  /** Bytes Node could not parse, answered once the answers before them are out. */
  private refusal: string | undefined = undefined;
  private refused = false;
  private lingering = false;

  constructor(private readonly socket: Socket) {
    socket.once("end", () => this.clientEnded());
    // Node calls destroySoon after an answer that closes the connection.
    socket.destroySoon = () => this.closeLingering();
  }

  accept(req: IncomingMessage, res: ServerResponse, handler: Handler): void {
    if (this.closing || this.refusal !== undefined) return; // its answer could never be written
    if (this.active) this.waiting.push([req, res, handler]);
    else this.start(req, res, handler);
  }

  private start(req: IncomingMessage, res: ServerResponse, handler: Handler): void {
    this.active = res;
    res.once("close", () => this.finished(res));
    handler(req, res);
  }

  private finished(res: ServerResponse): void {
    this.active = undefined;
    if (!res.writableFinished || !res.shouldKeepAlive || this.socket.destroyed) {
      this.closing = true;
      this.waiting.length = 0;
    }
    const next = this.closing ? undefined : this.waiting.shift();
    if (next) this.start(...next);
    else if (this.refusal !== undefined) this.writeRefusal();
    else if (this.closing) this.closeLingering();
  }

  /** A FIN: a half-close or an application gone, which cannot be told apart. */
  private clientEnded(): void {
    if (!this.active) return; // Node ends the connection itself
    this.closing = true;
    this.waiting.length = 0;
  }

  clientError(error: NodeJS.ErrnoException): void {
    if (this.lingering) return; // closing: what the application still sends is dropped
    if (error.code === "ECONNRESET" || !this.socket.writable) {
      this.socket.destroy();
      return;
    }
    if (this.refusal !== undefined) return; // what follows the first is dropped
    this.refusal = clientErrorText(error, this.socket);
    // A request whose body the bad bytes cut can never complete: the refusal is its answer.
    const cut = [...(this.active ? [this.active] : []), ...this.waiting.map(([, res]) => res)].find(
      (res) => !res.req.complete && !res.headersSent && !res.writableEnded,
    );
    if (cut) {
      const at = this.waiting.findIndex(([, res]) => res === cut);
      if (at >= 0) this.waiting.splice(at, 1);
      this.refused = true;
      cut.shouldKeepAlive = false;
      writeRejection(cut, reject("FORMAT_ERROR", this.refusal), "spec", undefined, GATEWAY_ORIGIN);
      return;
    }
    if (!this.active) this.writeRefusal();
  }

  private writeRefusal(): void {
    if (this.refused || this.refusal === undefined) return;
    this.refused = true;
    // Not writable: an answer before it closed the connection, which is lingering already.
    if (this.socket.writable)
      this.socket.write(rawRejection(reject("FORMAT_ERROR", this.refusal), "spec", GATEWAY_ORIGIN));
    this.closeLingering();
  }

  /** RFC 9112 9.6: half-close, read and drop what the application still sends, close when it closes (or after LINGER_MS). */
  private closeLingering(): void {
    const socket = this.socket;
    if (this.lingering || socket.destroyed) return;
    this.lingering = true;
    this.closing = true;
    this.waiting.length = 0;
    closeLingering(socket, LINGER_MS);
  }
}

function connectionOf(socket: WithConnection): Connection {
  let connection = socket[CONNECTION];
  if (!connection) {
    connection = new Connection(socket);
    socket[CONNECTION] = connection;
  }
  return connection;
}

/** Serves `handler` on `server` one request per connection at a time, with the refusals above. */
export function servePipelined(server: Server, handler: Handler): void {
  // A client that half-closes after its request still reads the answer (Node's switch, untyped).
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on("request", (req: IncomingMessage, res: ServerResponse) =>
    connectionOf(req.socket).accept(req, res, handler),
  );
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) =>
    connectionOf(socket).clientError(error),
  );
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    keepAnsweringAfterConnect(socket);
    connectionOf(socket).clientError(TUNNEL_REFUSED);
  });
  // Node would answer an Expect it does not know with a bare 417.
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) =>
    connectionOf(req.socket).accept(req, res, () => {
      res.shouldKeepAlive = false;
      writeRejection(
        res,
        reject(
          "FORMAT_ERROR",
          `Expect: ${String(req.headers.expect).slice(0, 100)} is not supported; send 100-continue or no Expect`,
        ),
        "spec",
        undefined,
        GATEWAY_ORIGIN,
      );
    }),
  );
}
