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

type PoolStats = Backend["pool"]["stats"];

/** Each gauge, and the pool figure behind each of its states. */
const GAUGES: readonly {
  readonly name: string;
  readonly help: string;
  readonly states: readonly (readonly [state: string, read: (stats: PoolStats) => number])[];
}[] = [
  {
    name: "backend_connections",
    help: "Connections to the backend: open (state=open), of them idle and ready for a request (state=idle)",
    states: [
      ["open", (s) => s.connected],
      ["idle", (s) => s.free],
    ],
  },
  {
    name: "backend_requests",
    help: "Requests to the backend: sent and not yet answered (state=in-flight), waiting for a connection (state=queued)",
    states: [
      ["in-flight", (s) => s.running],
      ["queued", (s) => s.pending],
    ],
  },
];

/** `<prefix>backend_connections{backend,state}` and `<prefix>backend_requests{backend,state}`. */
export class BackendPoolMetrics {
  private backends: BackendsOf = () => [];

  constructor(registry: Registry, prefix: string) {
    const self = this;
    for (const { name, help, states } of GAUGES) {
      new Gauge({
        name: `${prefix}${name}`,
        help,
        labelNames: ["backend", "state"] as const,
        registers: [registry],
        collect() {
          this.reset();
          for (const [backendName, backend] of self.backends()) {
            const stats = backend.pool.stats;
            for (const [state, read] of states) this.set({ backend: backendName, state }, read(stats));
          }
        },
      });
    }
  }

  /** Where the backends are (made, and on a reload replaced, after the metrics). */
  watch(backends: BackendsOf): void {
    this.backends = backends;
  }
}
