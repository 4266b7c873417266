/** The TPP-facing listener: HTTP or HTTPS (TLS 1.2 minimum, SPEC 5.1), optionally asking for the QWAC. */

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
import { writeRejection } from "../forward/respond.js";
import { keepAnsweringAfterConnect } from "../forward/tunnel.js";
import {
  type ConnectionGuard,
  type ConnectionLimits,
  guardConnections,
  TIMEOUT_CHECK_INTERVAL_MS,
} from "../listener/guard.js";
import type { IngressHandler } from "./handler.js";

export interface ListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly tls?: { readonly cert: string; readonly key: string; readonly minVersion: "TLSv1.2" | "TLSv1.3" };
  /** Ask for the TPP's QWAC in the handshake (checked by the gateway, not by the handshake). */
  readonly requestClientCertificate: boolean;
  readonly limits: ConnectionLimits;
}

export interface Listener {
  readonly server: Server;
  readonly url: string;
  /** Connection caps and timeouts: open connections, and where the limits that bite are reported. */
  readonly guard: ConnectionGuard;
  /** Hands requests to `handler` from now on (until then every request is answered 503). */
  serve(handler: IngressHandler): void;
  /** Loads the TLS certificate and key again; new handshakes use them, open connections carry on. */
  reloadTls(): void;
}

function tlsMaterial(tls: NonNullable<ListenerOptions["tls"]>) {
  return { cert: readFileSync(tls.cert), key: readFileSync(tls.key), minVersion: tls.minVersion };
}

/** A CONNECT request: this is an API, not a proxy. */
const TUNNEL_REFUSED = new Error("the CONNECT method is not served; this is an API, not a proxy");

/** Bound before the rest of the gateway has started: a clear "try again" instead of a hang. */
const STARTING: IngressHandler = {
  onRequest(_req, res) {
    res.shouldKeepAlive = false;
    writeRejection(
      res,
      reject("SERVICE_UNAVAILABLE", "the gateway is starting; try again in a moment"),
      "spec",
    );
  },
  onClientError(_error, socket) {
    socket.destroy();
  },
};

export async function startListener(options: ListenerOptions): Promise<Listener> {
  const { tls } = options;
  let handler = STARTING;
  const onRequest = (req: IncomingMessage, res: ServerResponse) => handler.onRequest(req, res);
  const http = {
    // Node's timers, set again by the guard; given here too because Node checks them together.
    headersTimeout: options.limits.headersTimeoutMs,
    requestTimeout: options.limits.requestTimeoutMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    // Node's own Host check answers a bare 400 and parses on, so requests pipelined behind it were
    // dispatched though the connection closed: the handler refuses it in its turn instead.
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
          requestCert: options.requestClientCertificate,
          rejectUnauthorized: false,
          handshakeTimeout: options.limits.tlsHandshakeTimeoutMs,
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
    // TLS 1.2 renegotiation could swap the client certificate mid-connection; the handler reads it
    // once per connection, so the peer may not renegotiate (it gets an error and the connection ends).
    server.on("secureConnection", (socket: TLSSocket) => {
      socket.disableRenegotiation();
      socket.on("data", () => {});
    });
  }
  // Malformed HTTP never reaches the request listener: answered in the Berlin Group shape.
  server.on("clientError", (error: Error, socket: Socket) => handler.onClientError(error, socket));
  // Node answers an unknown Expect with a bare 417: the checks refuse it instead, in its turn.
  server.on("checkExpectation", onRequest);
  // Without a listener Node destroys the socket at once, cutting the answers still in flight.
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    keepAnsweringAfterConnect(socket);
    handler.onClientError(TUNNEL_REFUSED, socket);
  });
  const guard = guardConnections(server, options.limits, Boolean(tls));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  // The development certificate names localhost, not 127.0.0.1's reverse.
  const shown = tls && (host === "127.0.0.1" || host === "0.0.0.0") ? "localhost" : host;
  return {
    server,
    guard,
    url: `${tls ? "https" : "http"}://${shown}:${address.port}`,
    serve(next) {
      handler = next;
    },
    reloadTls() {
      if (tls) (server as HttpsServer).setSecureContext(tlsMaterial(tls));
    },
  };
}
