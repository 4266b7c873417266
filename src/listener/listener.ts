/**
 * The one listener of both modes: HTTP, HTTPS (TLS 1.2 minimum, SPEC 5.1, optionally asking for
 * the client's certificate) or a Unix socket, with the connection limits of guard.ts and one
 * Connection per socket (connection.ts). A mode hands it an ExchangeFactory; until then every
 * request is answered 503.
 */

import { readFileSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { reject } from "../errors.js";
import { connectionOf, type ExchangeFactory } from "./connection.js";
import {
  type ConnectionGuard,
  type ConnectionLimits,
  clientErrorText,
  guardConnections,
  requestTimeoutKind,
  TIMEOUT_CHECK_INTERVAL_MS,
} from "./guard.js";
import { rawRejection, writeRejection } from "./respond.js";
import { keepAnsweringAfterConnect } from "./tunnel.js";

export interface ListenerOptions {
  readonly host: string;
  readonly port: number;
  /** A Unix socket instead of host and port (egress). */
  readonly socket?: string | undefined;
  readonly tls?: { readonly cert: string; readonly key: string; readonly minVersion: "TLSv1.2" | "TLSv1.3" };
  /** Ask for the client's certificate in the handshake (checked by the gateway, not by the handshake). */
  readonly requestClientCertificate?: boolean;
  readonly limits: ConnectionLimits;
}

export interface Listener {
  readonly server: Server;
  /** `https://localhost:8443`, `http://127.0.0.1:8090` or `unix:/path`. */
  readonly url: string;
  /** Connection caps and timeouts: open connections, and where the limits that bite are reported. */
  readonly guard: ConnectionGuard;
  /** Hands requests to `factory`'s exchanges from now on (until then every request is answered 503). */
  serve(factory: ExchangeFactory): void;
  /** Loads the TLS certificate and key again; new handshakes use them, open connections carry on. */
  reloadTls(): void;
}

/** The PEM files of a TLS listener, read (the admin listener's too: app/admin-access.ts). */
export function tlsMaterial(tls: NonNullable<ListenerOptions["tls"]>) {
  return { cert: readFileSync(tls.cert), key: readFileSync(tls.key), minVersion: tls.minVersion };
}

/** The step of a refusal of what Node could not parse (bad framing, a bad header line, CONNECT). */
export const MALFORMED_REQUEST = "malformed-request";

/** Bound before the rest of the gateway has started: a clear "try again" instead of a hang. */
const STARTING: ExchangeFactory = {
  create: (_req, res) => ({
    run() {
      res.shouldKeepAlive = false;
      writeRejection(
        res,
        reject("SERVICE_UNAVAILABLE", "the gateway is starting; try again in a moment"),
        "spec",
      );
    },
    refuseIncomplete() {
      res.destroy();
    },
  }),
  rawRefusal: (message) => rawRejection(reject("FORMAT_ERROR", message), "spec"),
  connectRefused: "the CONNECT method is not served",
};

export async function startListener(options: ListenerOptions): Promise<Listener> {
  const { tls, limits } = options;
  let factory = STARTING;
  const current = () => factory;
  const onRequest = (req: IncomingMessage, res: ServerResponse) =>
    connectionOf(req.socket, current).accept(req, res);
  const http = {
    // Node's timers, set again by the guard; given here too because Node checks them together.
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    // Node's own Host check answers a bare 400 and parses on, so requests pipelined behind it were
    // dispatched though the connection closed: the exchange refuses it in its turn instead.
    requireHostHeader: false,
    // A client that half-closes after pipelining still reads its answers; otherwise its FIN (TLS
    // close_notify) ended the connection and requests already forwarded went unanswered.
    allowHalfOpen: true,
  };
  const server: Server = tls
    ? createHttpsServer(
        {
          ...http,
          ...tlsMaterial(tls),
          // The QWAC is checked by the gateway against its own trust store and register, with a
          // Berlin Group error instead of a failed handshake.
          requestCert: options.requestClientCertificate ?? false,
          rejectUnauthorized: false,
          handshakeTimeout: limits.tlsHandshakeTimeoutMs,
        },
        onRequest,
      )
    : createHttpServer(http, onRequest);
  // Node's switch for that on the HTTP side (untyped; it then ends the connection after the last answer).
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  if (tls) {
    // Node's HTTP parser reads a TLS socket natively, and when answers pile up it pauses the
    // parser while the TLS layer keeps handing it decrypted bytes: a pipelined request arriving
    // then failed as "Parse Error: Paused" (HPE_PAUSED) and was refused as malformed. A 'data'
    // listener makes Node feed the parser from the socket stream, which holds bytes while paused.
    // TLS 1.2 renegotiation could swap the client certificate mid-connection; it is read once per
    // connection, so the peer may not renegotiate (it gets an error and the connection ends).
    server.on("secureConnection", (socket: TLSSocket) => {
      socket.disableRenegotiation();
      socket.on("data", () => {});
    });
  }
  // Malformed HTTP (and requests past their timeouts) never reach 'request': answered in the
  // Berlin Group shape, after the answers before them.
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) =>
    connectionOf(socket, current).clientError(
      error,
      clientErrorText(error, socket),
      requestTimeoutKind(error, socket) ?? MALFORMED_REQUEST,
    ),
  );
  // Node answers an unknown Expect with a bare 417: the exchange refuses it instead, in its turn.
  server.on("checkExpectation", onRequest);
  // Without a listener Node destroys the socket at once, cutting the answers still in flight.
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    keepAnsweringAfterConnect(socket);
    const refused = new Error(current().connectRefused);
    connectionOf(socket, current).clientError(refused, clientErrorText(refused, socket), MALFORMED_REQUEST);
  });
  const guard = guardConnections(server, limits, Boolean(tls));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const listening = () => {
      server.off("error", reject);
      resolve();
    };
    if (options.socket) server.listen(options.socket, listening);
    else server.listen(options.port, options.host, listening);
  });
  return {
    server,
    guard,
    url: urlOf(server, options),
    serve(next) {
      factory = next;
    },
    reloadTls() {
      if (tls) (server as HttpsServer).setSecureContext(tlsMaterial(tls));
    },
  };
}

function urlOf(server: Server, options: ListenerOptions): string {
  if (options.socket) return `unix:${options.socket}`;
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  // The development certificate names localhost, not 127.0.0.1's reverse.
  const shown = options.tls && (host === "127.0.0.1" || host === "0.0.0.0") ? "localhost" : host;
  return `${options.tls ? "https" : "http"}://${shown}:${address.port}`;
}
