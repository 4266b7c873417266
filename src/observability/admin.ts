/**
 * The admin listener: /metrics for Prometheus, /healthz (the process is alive), /readyz (it
 * can serve: register loaded and fresh, store reachable, listener up, not draining) and /trust
 * (every trust source, what it holds and how fresh: `psd2-gateway trust status`), and certificate
 * validation reports: /trust/reports/<id> (one made lately: the access line's `trustReport`) and
 * POST /trust/certificate (a fresh one: `psd2-gateway trust status --certificate`).
 */

import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ValidationReport } from "../eidas/index.js";
import type { ClusterTrustReport, TrustReport } from "../trust/source-status.js";

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
}): Promise<AdminServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify(body));
    };
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
      options.metrics.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": options.metrics.contentType });
          res.end(text);
        },
        (error: unknown) => json(500, { error: (error as Error).message }),
      );
      return;
    }
    json(404, {
      error: "not found: /metrics, /healthz, /readyz, /trust, /trust/reports/<id>, POST /trust/certificate",
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address, port, family } = server.address() as AddressInfo;
  return {
    url: `http://${family === "IPv6" ? `[${address}]` : address}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
