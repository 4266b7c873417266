/**
 * The admin listener: /metrics for Prometheus, /healthz (the process is alive), /readyz (it
 * can serve: register loaded and fresh, store reachable, listener up, not draining) and /trust
 * (every trust source, what it holds and how fresh: `psd2-gateway trust status`), and certificate
 * validation reports: /trust/reports/<id> (one made lately: the access line's `trustReport`) and
 * POST /trust/certificate (a fresh one: `psd2-gateway trust status --certificate`).
 */

import { createServer, type IncomingMessage, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { Counter, Registry } from "prom-client";
import type { ValidationReport } from "../eidas/index.js";
import { reject } from "../errors.js";
import { writeRejection } from "../listener/respond.js";
import { isLoopbackHost } from "../loopback.js";
import type { ClusterTrustReport, TrustReport } from "../trust/source-status.js";
import { ADMIN_REFUSAL_REASONS, type AdminRefusalReason, adminGuard } from "./admin-guard.js";
import type { Logger } from "./logger.js";

/** admin.tls read from its files: HTTPS, and only clients with a certificate from `ca`. */
export interface AdminTlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer;
  readonly minVersion: "TLSv1.2" | "TLSv1.3";
}

/** Who may call: the Host names, the bearer token, mutual TLS (observability/admin-guard.ts). */
export interface AdminAccess {
  /** admin.hostNames: names besides the loopback ones and a non-wildcard listen host. */
  readonly hostNames?: readonly string[];
  /** admin.tokenFile: required (at start) when the host is beyond loopback. */
  readonly tokenFile?: string;
  readonly tls?: AdminTlsMaterial;
  /** Refusals are logged here (at most one line per reason every 10 s, the next says how many were not). */
  readonly logger?: Logger;
  /** `psd2_gateway_` (ingress, default) or `psd2_gateway_egress_`: `<prefix>admin_refusals_total{reason}`. */
  readonly metricPrefix?: string;
}

const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** What the admin listener asks of certificate validation: a report made lately, or a fresh one. */
export interface ValidationReports {
  /** A promise: a cluster's primary asks its workers. */
  get(id: string): Promise<ValidationReport | undefined>;
  /** `certificate`: base64 DER or PEM, as TPP-Signature-Certificate carries it. */
  assess(certificate: string, purpose: "qseal" | "qwac"): Promise<ValidationReport>;
}

/** A certificate posted to /trust/certificate: larger is not a certificate. */
const MAX_CERTIFICATE_BYTES = 64 * 1024;

/** Where /metrics comes from: one registry, or the cluster primary's aggregate of its workers. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface ReadinessCheck {
  readonly ready: boolean;
  /** Each check: ok, in words, and (when not ok) a bounded reason code, the metric's label. */
  readonly checks: Record<string, { ok: boolean; detail?: string; reason?: string }>;
}

export interface AdminServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

const NO_VERIFIER = "this process judges no certificates (egress mode)";

/** The request body, or undefined once it passes `max` bytes (the rest is not read). */
function readBounded(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        // Answered at once; the rest is read and dropped, so the answer reaches the client.
        resolve(undefined);
        req.removeAllListeners("data");
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
    req.on("aborted", () => reject(new Error("aborted")));
  });
}

export async function startAdminServer(options: {
  host: string;
  port: number;
  metrics: MetricsSource;
  readiness: () => Promise<ReadinessCheck>;
  /**
   * The trust sources and OCSP cache; on a cluster's primary, what it fetched and every worker's
   * view; absent where nothing holds trust sources (egress).
   */
  trust?: () => TrustReport | Promise<ClusterTrustReport>;
  /** The demo bank's reset of every TPP's room, when it runs: POST /sandbox/reset (the operator's). */
  sandboxReset?: () => (() => void) | undefined;
  /** Validation reports: /trust/reports/<id> and POST /trust/certificate; absent where no verifier runs. */
  reports?: () => ValidationReports | undefined;
  /** Who may call; without it, the loopback names only and no token (refused beyond loopback). */
  access?: AdminAccess;
}): Promise<AdminServer> {
  const access = options.access ?? {};
  if (!isLoopbackHost(options.host) && access.tokenFile === undefined)
    throw new Error(
      `the admin listener on ${options.host} is reachable beyond loopback: set admin.tokenFile (a file holding a bearer token for its POST endpoints), or bind admin.host to 127.0.0.1`,
    );
  const guard = adminGuard({
    listenHost: options.host,
    scheme: access.tls ? "https" : "http",
    ...(access.hostNames ? { hostNames: access.hostNames } : {}),
    ...(access.tokenFile !== undefined ? { tokenFile: access.tokenFile } : {}),
  });
  const own = new Registry();
  const refusals = new Counter({
    name: `${access.metricPrefix ?? "psd2_gateway_"}admin_refusals_total`,
    help: "Requests (and TLS handshakes) the admin listener refused: a Host not allowed, another origin, a browser's cross-site request, a missing or wrong bearer token, no client certificate",
    labelNames: ["reason"] as const,
    registers: [own],
  });
  for (const reason of ADMIN_REFUSAL_REASONS) refusals.inc({ reason }, 0);
  const lastLogged = new Map<AdminRefusalReason, { at: number; unlogged: number }>();
  const refused = (reason: AdminRefusalReason, fields: Record<string, unknown>, text: string) => {
    refusals.inc({ reason });
    const last = lastLogged.get(reason);
    const now = Date.now();
    if (last && now - last.at < REFUSAL_LOG_INTERVAL_MS) {
      last.unlogged++;
      return;
    }
    lastLogged.set(reason, { at: now, unlogged: 0 });
    access.logger?.warn(
      { reason, ...fields, ...(last ? { unloggedSinceLastLine: last.unlogged } : {}) },
      `admin request refused: ${text}`,
    );
  };

  const handler: RequestListener = (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify(body));
    };
    let refusal: ReturnType<typeof guard>;
    try {
      refusal = guard(req);
    } catch (error) {
      access.logger?.error({ error: (error as Error).message }, "admin.tokenFile cannot be read");
      writeRejection(
        res,
        reject("INTERNAL_SERVER_ERROR", "admin.tokenFile cannot be read; the operator's log says why"),
        "spec",
      );
      return;
    }
    if (refusal) {
      refused(
        refusal.reason,
        {
          method: req.method,
          path: path.slice(0, 128),
          address: req.socket.remoteAddress,
          ...(refusal.detail ? { detail: refusal.detail } : {}),
        },
        refusal.rejection.text,
      );
      // The rest of a body is not read: the connection closes after the answer.
      res.shouldKeepAlive = false;
      writeRejection(
        res,
        refusal.rejection,
        "spec",
        undefined,
        refusal.rejection.code === "TOKEN_INVALID"
          ? { "www-authenticate": 'Bearer realm="psd2-gateway admin"' }
          : undefined,
      );
      return;
    }
    if (path === "/sandbox/reset" && req.method === "POST") {
      const reset = options.sandboxReset?.();
      if (!reset) return json(404, { error: "no demo bank runs here (backend.url is not sandbox)" });
      try {
        reset();
        return json(200, { reset: "every TPP's sandbox room" });
      } catch (error) {
        return json(500, { error: (error as Error).message });
      }
    }
    if (path === "/trust/certificate") {
      const reports = options.reports?.();
      if (!reports) return json(404, { error: NO_VERIFIER });
      if (req.method !== "POST")
        return json(405, { error: "POST the certificate (PEM, base64 DER or DER) to /trust/certificate" });
      const purpose = new URL(req.url ?? "/", "http://admin").searchParams.get("purpose") ?? "qseal";
      if (purpose !== "qseal" && purpose !== "qwac")
        return json(400, { error: "purpose is qseal (the signing certificate, default) or qwac" });
      readBounded(req, MAX_CERTIFICATE_BYTES).then(
        (bytes) => {
          if (bytes === undefined)
            return json(413, { error: `a certificate is at most ${MAX_CERTIFICATE_BYTES} bytes` });
          const certificate = bytes[0] === 0x30 ? bytes.toString("base64") : bytes.toString("latin1").trim();
          reports.assess(certificate, purpose).then(
            (report) => json(200, report),
            (error: unknown) => json(500, { error: (error as Error).message }),
          );
        },
        () => json(400, { error: "the upload did not complete" }),
      );
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") return json(405, { error: "GET only" });
    if (path.startsWith("/trust/reports/")) {
      const reports = options.reports?.();
      if (!reports) return json(404, { error: NO_VERIFIER });
      const id = path.slice("/trust/reports/".length);
      reports.get(id).then(
        (report) =>
          report
            ? json(200, report)
            : json(404, {
                error: `no report ${id.slice(0, 64)} among the last ones kept; search the log's "validation report" lines for it`,
              }),
        (error: unknown) => json(500, { error: (error as Error).message }),
      );
      return;
    }
    if (path === "/healthz") return json(200, { status: "alive" });
    if (path === "/readyz") {
      options.readiness().then(
        (r) => json(r.ready ? 200 : 503, { status: r.ready ? "ready" : "not ready", checks: r.checks }),
        (error: unknown) => json(503, { status: "not ready", error: (error as Error).message }),
      );
      return;
    }
    if (path === "/trust") {
      if (!options.trust) return json(404, { error: "this process holds no trust sources (egress mode)" });
      Promise.resolve(options.trust()).then(
        (report) => json(200, { now: new Date().toISOString(), ...report }),
        (error: unknown) => json(500, { error: (error as Error).message }),
      );
      return;
    }
    if (path === "/metrics") {
      Promise.all([options.metrics.metrics(), own.metrics()]).then(
        ([text, refusalsText]) => {
          res.writeHead(200, { "content-type": options.metrics.contentType });
          res.end(text === "" || text.endsWith("\n") ? `${text}${refusalsText}` : `${text}\n${refusalsText}`);
        },
        (error: unknown) => json(500, { error: (error as Error).message }),
      );
      return;
    }
    json(404, {
      error: "not found: /metrics, /healthz, /readyz, /trust, /trust/reports/<id>, POST /trust/certificate",
    });
  };
  const server: Server = access.tls
    ? createHttpsServer(
        {
          cert: access.tls.cert,
          key: access.tls.key,
          ca: access.tls.ca,
          minVersion: access.tls.minVersion,
          // Mutual TLS: a client without a certificate from admin.tls.clientCa fails the handshake.
          requestCert: true,
          rejectUnauthorized: true,
        },
        handler,
      )
    : createServer(handler);
  if (access.tls)
    server.on("tlsClientError", (error: Error, socket) =>
      refused(
        "tls-handshake",
        { address: socket.remoteAddress, error: error.message.slice(0, 200) },
        "TLS handshake failed (admin.tls needs a client certificate issued by admin.tls.clientCa)",
      ),
    );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address, port, family } = server.address() as AddressInfo;
  return {
    url: `${access.tls ? "https" : "http"}://${family === "IPv6" ? `[${address}]` : address}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
