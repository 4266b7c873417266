/**
 * A TPP key directory on loopback over real HTTPS (the dev PKI's localhost certificate): JWKS
 * documents per path, in UK OB's shape (each key with kid, x5c, x5t#S256), that a test can rotate,
 * remove, make slow, huge or down, and count the requests of.
 */

import { createHash, X509Certificate } from "node:crypto";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { DevPki } from "@psd2-gateway/dev-pki";

export interface DirectoryKey {
  readonly kid: string;
  readonly der: Uint8Array;
  /** Serve the key without x5c (only its x5u, when given). */
  readonly withoutX5c?: boolean;
  readonly x5u?: string;
}

export type DirectoryBehaviour = "normal" | "slow" | "huge" | "down";

export interface KeyDirectoryServer {
  /** https://127.0.0.1:<port> */
  readonly origin: string;
  /** The CA the directory's certificate chains to (PEM). */
  readonly ca: string;
  /** Paths asked, in order. */
  readonly requests: string[];
  /** Serves `keys` as the JWKS at `path` from now on (a rotation or removal is a new list). */
  publish(path: string, keys: readonly DirectoryKey[]): void;
  /** Serves raw bytes at `path` (a PEM for x5u). */
  serve(path: string, body: string, contentType?: string): void;
  /** How every path answers, or only `path` when given (a slow, huge or down document among good ones). */
  behave(behaviour: DirectoryBehaviour, path?: string): void;
  close(): Promise<void>;
}

export function jwkOf(key: DirectoryKey): Record<string, unknown> {
  const certificate = new X509Certificate(key.der);
  const jwk = certificate.publicKey.export({ format: "jwk" });
  return {
    ...jwk,
    kid: key.kid,
    use: "sig",
    ...(key.withoutX5c
      ? {}
      : {
          x5c: [Buffer.from(key.der).toString("base64")],
          "x5t#S256": createHash("sha256").update(key.der).digest("base64url"),
        }),
    ...(key.x5u ? { x5u: key.x5u } : {}),
  };
}

export async function startKeyDirectory(pki: DevPki): Promise<KeyDirectoryServer> {
  const documents = new Map<string, { body: string; type: string }>();
  const requests: string[] = [];
  let everywhere: DirectoryBehaviour = "normal";
  const perPath = new Map<string, DirectoryBehaviour>();
  const server: Server = createServer(
    { cert: pki.gatewayTls.pem + pki.issuingCa.pem, key: pki.gatewayTls.keyPem },
    (request, response) => {
      requests.push(request.url ?? "");
      const behaviour = perPath.get(request.url ?? "") ?? everywhere;
      if (behaviour === "down") {
        request.socket.destroy();
        return;
      }
      // Never answers: the fetch's own time bound ends it.
      if (behaviour === "slow") return;
      if (behaviour === "huge") {
        response.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        let sent = 0;
        const more = () => {
          while (sent < 64 && response.write(chunk)) sent++;
          if (sent < 64) response.once("drain", more);
          else response.end();
        };
        response.on("error", () => {});
        more();
        return;
      }
      const document = documents.get(request.url ?? "");
      if (!document) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": document.type }).end(document.body);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    ca: pki.root.pem,
    requests,
    publish(path, keys) {
      documents.set(path, {
        body: JSON.stringify({ keys: keys.map(jwkOf) }),
        type: "application/jwk-set+json",
      });
    },
    serve(path, body, type = "application/x-pem-file") {
      documents.set(path, { body, type });
    },
    behave(next, path) {
      if (path === undefined) {
        everywhere = next;
        perPath.clear();
      } else perPath.set(path, next);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
