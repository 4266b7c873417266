/**
 * What a listener allows a connection before it serves anything (as nginx and Envoy do): a cap on
 * open connections in all and per client address, a TLS handshake timeout, an idle timeout before
 * the first request, a headers timeout and a request timeout (Node's, from the first byte of a
 * request), the keep-alive timeout between requests, and a send timeout for a client that stops
 * taking its answers (nginx's send_timeout). Nothing here cuts a connection while a request on it
 * is being served: the idle timer stops at the first request, Node arms its keep-alive timer only
 * once every answer on the connection is out, and the send timeout bites only on a client that
 * takes no byte of its answer for that long.
 */

import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";

export interface ConnectionLimits {
  /** Open connections in all; one more is closed at accept (Node's maxConnections). */
  readonly maxConnections: number;
  /** Open connections from one client address (TCP peer); the next is closed at accept. */
  readonly maxConnectionsPerAddress: number;
  /** From accept to a finished TLS handshake (TLS listeners only). */
  readonly tlsHandshakeTimeoutMs: number;
  /** A connection that sends nothing this long before its first request is closed. */
  readonly idleTimeoutMs: number;
  /** To the end of a request's head: from the connection's opening (first request) or the request's first byte. */
  readonly headersTimeoutMs: number;
  /** From the first byte of a request to the end of its body. */
  readonly requestTimeoutMs: number;
  /** Idle between requests on a keep-alive connection. */
  readonly keepAliveTimeoutMs: number;
  /**
   * An answer waits this long, unread, for the client to take any of it: the connection is closed
   * (and the upstream response it held back aborted, which gives its backend connection back).
   */
  readonly sendTimeoutMs: number;
}

/** Which limit closed or refused a connection: the `limit` label of the metric, `limit` in the log. */
export type ConnectionLimitName =
  | "max-connections"
  | "max-connections-per-address"
  | "tls-handshake-timeout"
  | "idle-timeout"
  | "keep-alive-timeout"
  | "headers-timeout"
  | "request-timeout"
  | "send-timeout";

export const CONNECTION_LIMIT_NAMES: readonly ConnectionLimitName[] = [
  "max-connections",
  "max-connections-per-address",
  "tls-handshake-timeout",
  "idle-timeout",
  "keep-alive-timeout",
  "headers-timeout",
  "request-timeout",
  "send-timeout",
];

/** Told each time a limit bites, with the client's address (for a rate-limited warn line). */
export type ConnectionLimitObserver = (limit: ConnectionLimitName, address: string) => void;

export interface ConnectionGuard {
  /** Connections open now. */
  open(): number;
  /** Where limits that bite are reported from now on (the metrics exist after the listener). */
  observe(observer: ConnectionLimitObserver): void;
  /** Sets the timers Node keeps on the server and on connections accepted from now on. */
  apply(limits: ConnectionLimits): void;
}

/** How often Node looks for requests past their headers or request timeout (its default is 30 s). */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

const AWAITING_FIRST_REQUEST = Symbol("psd2-gateway awaiting first request");
const LATEST_REQUEST = Symbol("psd2-gateway latest request");
const UNREAD = Symbol("psd2-gateway unread answer");
type Guarded = Socket & {
  [AWAITING_FIRST_REQUEST]?: boolean;
  [LATEST_REQUEST]?: { readonly complete: boolean };
  /** While an answer waits: the bytes the client had taken, and since when it took none. */
  [UNREAD]?: { readonly taken: number; readonly since: number };
};

/** The address a per-address cap counts; a Unix socket's peers share one. */
function addressOf(socket: Socket): string {
  return socket.remoteAddress ?? "local";
}

/**
 * Puts `limits` on `server` (an http or https server made with `connectionsCheckingInterval` =
 * TIMEOUT_CHECK_INTERVAL_MS and, for TLS, `handshakeTimeout`). Call once its listeners are on and
 * before it listens.
 */
export function guardConnections(server: Server, initial: ConnectionLimits, tls: boolean): ConnectionGuard {
  let limits = initial;
  let observer: ConnectionLimitObserver = () => {};
  const perAddress = new Map<string, number>();
  const sockets = new Set<Guarded>();
  let open = 0;

  const bite = (limit: ConnectionLimitName, address: string) => observer(limit, address);

  // Over the total cap Node closes the handle before any JS socket exists: the cheapest refusal.
  server.on("drop", (data?: { remoteAddress?: string }) =>
    bite("max-connections", data?.remoteAddress ?? "unknown"),
  );

  // First of the 'connection' listeners, so a refused socket goes no further than a FIN.
  server.prependListener("connection", (socket: Guarded) => {
    const address = addressOf(socket);
    const count = perAddress.get(address) ?? 0;
    if (count >= limits.maxConnectionsPerAddress) {
      socket.destroy();
      bite("max-connections-per-address", address);
      return;
    }
    perAddress.set(address, count + 1);
    open += 1;
    socket.once("close", () => {
      open -= 1;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
    // A TLS connection starts its idle timer once the handshake (with its own timeout) is done.
    if (!tls) awaitFirstRequest(socket);
  });

  const awaitFirstRequest = (socket: Guarded) => {
    // The socket answers are written to (over TLS the TLSSocket: the TCP socket under it is fed
    // natively, its own stream never holds a byte), watched by the send timeout's sweep.
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket[AWAITING_FIRST_REQUEST] = true;
    socket.setTimeout(limits.idleTimeoutMs);
    // Node's own 'timeout' listener destroys the socket when nobody else claims it; this one only
    // tells which limit it was. Node arms the same timer between requests (keep-alive).
    socket.on("timeout", () =>
      bite(socket[AWAITING_FIRST_REQUEST] ? "idle-timeout" : "keep-alive-timeout", addressOf(socket)),
    );
  };

  if (tls) {
    server.on("secureConnection", (socket: TLSSocket) => awaitFirstRequest(socket));
    // Before the handshake nothing HTTP can be answered: closed at once, ahead of https's own
    // listener that hands the error on to 'clientError' (which would write a plain-text refusal).
    server.prependListener("tlsClientError", (error: NodeJS.ErrnoException, socket: Guarded) => {
      const address = addressOf(socket); // before destroy, which forgets it
      socket.destroy();
      if (error.code === "ERR_TLS_HANDSHAKE_TIMEOUT") bite("tls-handshake-timeout", address);
    });
  }

  // The first request stops the idle timer: a connection being served is never cut by it.
  const served = (req: { socket: Guarded; complete: boolean }) => {
    const socket = req.socket;
    socket[LATEST_REQUEST] = req;
    if (socket[AWAITING_FIRST_REQUEST]) {
      socket[AWAITING_FIRST_REQUEST] = false;
      socket.setTimeout(0);
    }
  };
  // Only events the server already listens to: a listener of its own changes what Node does (with
  // one for 'checkContinue' Node no longer sends 100 Continue; with one for 'upgrade' it no longer
  // serves an Upgrade request as a plain one).
  server.prependListener("request", served);
  for (const event of ["checkExpectation", "checkContinue", "connect", "upgrade"])
    if (server.listenerCount(event) > 0) server.prependListener(event, served);
  server.on("clientError", (error: Error, socket: Guarded) => {
    const kind = requestTimeoutKind(error, socket);
    if (kind) bite(kind, addressOf(socket));
  });

  // Once a second (as Node looks for headers and request timeouts): a connection whose answer has
  // waited sendTimeoutMs without the client taking a byte of it is closed. What the client took is
  // what the kernel accepted: bytes handed to the socket less those Node's stream still holds.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const socket of sockets) {
      const waiting = socket.writableLength;
      if (waiting === 0) {
        socket[UNREAD] = undefined;
        continue;
      }
      const taken = socket.bytesWritten - waiting;
      const unread = socket[UNREAD];
      if (!unread || taken > unread.taken) {
        socket[UNREAD] = { taken, since: now };
      } else if (now - unread.since >= limits.sendTimeoutMs) {
        const address = addressOf(socket);
        socket.destroy();
        bite("send-timeout", address);
      }
    }
  }, TIMEOUT_CHECK_INTERVAL_MS);
  sweep.unref();
  server.once("close", () => clearInterval(sweep));

  const apply = (next: ConnectionLimits) => {
    limits = next;
    server.maxConnections = next.maxConnections;
    server.headersTimeout = next.headersTimeoutMs;
    server.requestTimeout = next.requestTimeoutMs;
    server.keepAliveTimeout = next.keepAliveTimeoutMs;
  };
  apply(initial);

  return {
    open: () => open,
    observe(next) {
      observer = next;
    },
    apply,
  };
}

/**
 * Node answers a request past its headers or request timeout with a `clientError` of this code.
 * Node times the message being parsed: when the latest request handed out is still incomplete,
 * that is its body (request timeout); otherwise a new request's head has not arrived (headers).
 */
export function requestTimeoutKind(
  error: Error,
  socket: Socket,
): "headers-timeout" | "request-timeout" | undefined {
  if ((error as NodeJS.ErrnoException).code !== "ERR_HTTP_REQUEST_TIMEOUT") return undefined;
  const latest = (socket as Guarded)[LATEST_REQUEST];
  return latest !== undefined && !latest.complete ? "request-timeout" : "headers-timeout";
}

/** The refusal text for what Node's parser gave up on: a timeout says which, anything else is malformed. */
export function clientErrorText(error: Error, socket: Socket): string {
  switch (requestTimeoutKind(error, socket)) {
    case "headers-timeout":
      return "the request's head did not arrive in time (listen.headersTimeoutSeconds); send each request's head at once";
    case "request-timeout":
      return "the request's body did not arrive in time (listen.requestTimeoutSeconds); send the body without pausing";
    default:
      // The client ended its side of the connection mid-request (a FIN before the body's end).
      if ((error as NodeJS.ErrnoException).code === "HPE_INVALID_EOF_STATE")
        return "the connection was closed before the request's body ended; send the whole body (its Content-Length, or up to the last chunk) before closing";
      return `malformed HTTP request: ${error.message}`;
  }
}
