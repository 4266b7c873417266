/** The TPP-facing listener: HTTP or HTTPS (TLS 1.2 minimum, SPEC 5.1), optionally asking for the QWAC. */

import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { GatewayConfig } from "../config/schema.js";

export interface Listener {
  readonly server: Server;
  readonly url: string;
  /** Loads the TLS certificate and key again; new handshakes use them, open connections carry on. */
  reloadTls(): void;
}

function tlsMaterial(tls: NonNullable<GatewayConfig["listen"]["tls"]>) {
  return { cert: readFileSync(tls.cert), key: readFileSync(tls.key) };
}

export async function startListener(config: GatewayConfig, handler: RequestListener): Promise<Listener> {
  const tls = config.listen.tls;
  const server: Server = tls
    ? createHttpsServer(
        {
          ...tlsMaterial(tls),
          minVersion: tls.minVersion,
          // The QWAC is checked by the gateway against its own trust store and register, with a
          // Berlin Group error instead of a failed handshake.
          requestCert: config.listen.clientCertificate !== "none",
          rejectUnauthorized: false,
        },
        handler,
      )
    : createHttpServer(handler);
  server.requestTimeout = config.listen.requestTimeoutSeconds * 1000;
  server.keepAliveTimeout = config.listen.keepAliveTimeoutSeconds * 1000;
  // Malformed HTTP never reaches the handler: answer it in the Berlin Group shape and move on.
  server.on("clientError", (error, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({
      tppMessages: [
        {
          category: "ERROR",
          code: "FORMAT_ERROR",
          text: `malformed HTTP request: ${(error as Error).message}`,
        },
      ],
    });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.listen.port, config.listen.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  // The development certificate names localhost, not 127.0.0.1's reverse.
  const shown = tls && (host === "127.0.0.1" || host === "0.0.0.0") ? "localhost" : host;
  return {
    server,
    url: `${tls ? "https" : "http"}://${shown}:${address.port}`,
    reloadTls() {
      if (tls) (server as HttpsServer).setSecureContext({ ...tlsMaterial(tls), minVersion: tls.minVersion });
    },
  };
}
