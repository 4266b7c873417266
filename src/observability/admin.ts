/**
 * The admin listener: /metrics for Prometheus, /healthz (the process is alive), /readyz (it
 * can serve: register loaded and fresh, store reachable, listener up, not draining) and /trust
 * (every trust source, what it holds and how fresh: `psd2-gateway trust status`).
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClusterTrustReport, TrustReport } from "../trust/source-status.js";

/** Where /metrics comes from: one registry, or the cluster primary's aggregate of its workers. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface ReadinessCheck {
  readonly ready: boolean;
  readonly checks: Record<string, { ok: boolean; detail?: string }>;
}

export interface AdminServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
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
}): Promise<AdminServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
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
    if (req.method !== "GET" && req.method !== "HEAD") return json(405, { error: "GET only" });
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
    json(404, { error: "not found: /metrics, /healthz, /readyz, /trust" });
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
