/**
 * Ingress mode assembled from the config: trust material, register, verdict cache, replay store,
 * backend (or the built-in demo bank), and the HTTP(S) listener.
 */

import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { GatewayConfig } from "../config/schema.js";
import { TppRegister } from "../eidas/register.js";
import { FileRegisterSource, HttpRegisterSource, type RegisterSource } from "../eidas/register-sources.js";
import { TppVerifier } from "../eidas/tpp-verifier.js";
import { loadTrustMaterial, type TrustMaterial } from "../eidas/trust-material.js";
import { Backend } from "../forward/backend.js";
import { MemoryReplayStore, type ReplayStore } from "../limits/replay.js";
import type { Logger } from "../observability/logger.js";
import { createSandboxBank } from "../sandbox/index.js";
import { createIngressHandler, type RequestEvent } from "./handler.js";
import { RoleTable } from "./routes.js";

export interface IngressGateway {
  readonly url: string;
  readonly server: Server;
  readonly verifier: TppVerifier;
  readonly register: TppRegister;
  readonly backendUrl: string;
  /** Reloads trust store and CRLs; on failure keeps the old ones and throws the reason. */
  reloadTrust(): void;
  /** Stops accepting; connections still open after `graceMs` are closed. */
  close(graceMs?: number): Promise<void>;
}

export interface IngressDependencies {
  readonly logger: Logger;
  readonly now?: () => number;
  readonly replayStore?: ReplayStore;
  readonly onRequest?: (event: RequestEvent) => void;
}

export async function startIngress(
  config: GatewayConfig,
  deps: IngressDependencies,
): Promise<IngressGateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;

  let trust: TrustMaterial = loadTrustMaterial(config.trust.caDir, config.trust.crlDir);
  logTrust(logger, trust);

  const register = new TppRegister(config.register.maxAgeSeconds * 1000, now);
  const registerLog = (message: string, error?: boolean) =>
    error ? logger.warn(message) : logger.info(message);
  const sources: RegisterSource[] = [];
  const pollMs = config.register.pollSeconds * 1000;
  if (config.register.file)
    sources.push(new FileRegisterSource(config.register.file, register, Math.min(pollMs, 5000), registerLog));
  if (config.register.url)
    sources.push(new HttpRegisterSource(config.register.url, register, pollMs, registerLog));
  for (const source of sources) {
    await source.refresh();
    source.start();
  }

  const verifier = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    register,
    now,
    cacheTtlMs: config.cache.ttlSeconds * 1000,
    failureTtlMs: config.cache.failureTtlSeconds * 1000,
    maxEntries: config.cache.maxEntries,
  });

  let sandboxClose: (() => Promise<void>) | undefined;
  let backendUrl = config.backend.url;
  if (backendUrl === "sandbox") {
    const bank = await createSandboxBank({ clock: now }).listen(0, "127.0.0.1");
    backendUrl = bank.url;
    sandboxClose = bank.close;
    logger.info({ url: bank.url }, "built-in demo bank started");
  }
  const backend = Backend.fromFiles({
    url: backendUrl,
    ca: config.backend.ca,
    cert: config.backend.cert,
    key: config.backend.key,
    timeoutMs: config.backend.timeoutSeconds * 1000,
    connections: config.backend.connections,
  });

  const toleranceMs = config.verification.dateToleranceSeconds * 1000;
  const handler = createIngressHandler({
    pipeline: {
      now,
      dateToleranceMs: toleranceMs,
      algorithms: config.verification.algorithms,
      allowDecimalSerial: config.verification.allowDecimalSerial,
      keyIdPolicy: config.verification.keyIdPolicy,
      redirectUriOptionalPrefixes: config.verification.redirectUriOptionalPrefixes.map((p) =>
        p.toLowerCase(),
      ),
      characterPolicy: config.verification.characterPolicy,
      roles: new RoleTable(config.verification.roles),
      replay: deps.replayStore ?? new MemoryReplayStore(config.replay.maxEntries, now),
      replayWindowMs: (config.replay.windowSeconds ?? 2 * config.verification.dateToleranceSeconds) * 1000,
      certificates: verifier,
      clientCertificate: {
        mode: config.listen.clientCertificate,
        requireSameOrganization: config.listen.requireSameOrganization,
      },
    },
    backend,
    identityHeaders: config.identityHeaders,
    statusProfile: config.verification.statusProfile,
    maxBodyBytes: config.verification.maxBodyBytes,
    trustedProxies: new Set(config.listen.trustedProxies),
    clientCertificateHeader: config.listen.clientCertificateHeader,
    onDone: deps.onRequest,
  });

  const tls = config.listen.tls;
  const server: Server = tls
    ? createHttpsServer(
        {
          cert: readFileSync(tls.cert),
          key: readFileSync(tls.key),
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
    if (!socket.writable) return socket.destroy();
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
  const url = `${tls ? "https" : "http"}://${host === "127.0.0.1" && tls ? "localhost" : host}:${address.port}`;
  logger.info(
    { url, backend: backendUrl, tls: Boolean(tls), mtls: config.listen.clientCertificate },
    "ingress gateway listening",
  );

  return {
    url,
    server,
    verifier,
    register,
    backendUrl,
    reloadTrust() {
      const next = loadTrustMaterial(config.trust.caDir, config.trust.crlDir);
      trust = next;
      verifier.invalidate();
      logTrust(logger, next);
    },
    async close(graceMs = 5_000) {
      for (const source of sources) source.stop();
      // Stop accepting, let requests in flight finish, then cut whatever still holds on.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(force);
      await backend.close();
      await sandboxClose?.();
    },
  };
}

function logTrust(logger: Logger, trust: TrustMaterial): void {
  logger.info(
    {
      cas: trust.store.all.map((c) => ({
        subject: c.subjectRfc2253,
        sha256: c.sha256Fingerprint,
        notAfter: c.notAfter.toISOString(),
      })),
      crls: trust.revocation.lists.map((l) => ({
        source: l.source,
        revoked: l.revoked.size,
        nextUpdate: l.nextUpdate?.toISOString(),
      })),
    },
    "trust store loaded",
  );
  for (const problem of trust.problems) logger.warn(problem);
}
