/**
 * The backend connection pools (undici), as gauges read at scrape time: connections open and idle,
 * requests in flight and queued, per backend. An SRE sees a slow or stuck backend here before the
 * timeouts say so; the fuzz harness reads them to prove that every upstream request ends once its
 * exchange is over (a request left behind holds one of `backend.connections` for ever).
 */

import { Gauge, type Registry } from "prom-client";
import type { Backend } from "../forward/backend.js";

/** The backends of a mode, named as the label shows them (ingress: its host and port; egress: the bank). */
export type BackendsOf = () => Iterable<readonly [name: string, backend: Backend]>;

/** `<prefix>backend_connections{backend,state}` and `<prefix>backend_requests{backend,state}`. */
export class BackendPoolMetrics {
  private backends: BackendsOf = () => [];

  constructor(registry: Registry, prefix: string) {
    const self = this;
    new Gauge({
      name: `${prefix}backend_connections`,
      help: "Connections to the backend: open (state=open), of them idle and ready for a request (state=idle)",
      labelNames: ["backend", "state"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [name, backend] of self.backends()) {
          const stats = backend.pool.stats;
          this.set({ backend: name, state: "open" }, stats.connected);
          this.set({ backend: name, state: "idle" }, stats.free);
        }
      },
    });
    new Gauge({
      name: `${prefix}backend_requests`,
      help: "Requests to the backend: sent and not yet answered (state=in-flight), waiting for a connection (state=queued)",
      labelNames: ["backend", "state"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [name, backend] of self.backends()) {
          const stats = backend.pool.stats;
          this.set({ backend: name, state: "in-flight" }, stats.running);
          this.set({ backend: name, state: "queued" }, stats.pending);
        }
      },
    });
  }

  /** Where the backends are (made, and on a reload replaced, after the metrics). */
  watch(backends: BackendsOf): void {
    this.backends = backends;
  }
}
