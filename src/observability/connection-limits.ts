/**
 * The metrics and log lines of a listener's connection limits (src/listener/guard.ts), for ingress
 * and egress alike: a gauge of open connections, a counter per limit that bit, and a warn line per
 * limit at most every WARN_INTERVAL_MS (a flood of idle connections must not flood the log).
 */

import { Counter, Gauge, type Registry } from "prom-client";
import {
  CONNECTION_LIMIT_NAMES,
  type ConnectionLimitName,
  type ConnectionLimitObserver,
} from "../listener/guard.js";
import type { Logger } from "./logger.js";

/** What each limit did, as the warn line says it. */
const WHAT_HAPPENED: Record<ConnectionLimitName, string> = {
  "max-connections": "connection refused at accept: listen.maxConnections connections are open",
  "max-connections-per-address":
    "connection refused at accept: listen.maxConnectionsPerAddress connections are open from this address",
  "tls-handshake-timeout": "connection closed: no TLS handshake within listen.tlsHandshakeTimeoutSeconds",
  "idle-timeout": "connection closed: no request within listen.idleTimeoutSeconds of opening",
  "keep-alive-timeout": "connection closed: no next request within listen.keepAliveTimeoutSeconds",
  "headers-timeout": "request refused: its head did not arrive within listen.headersTimeoutSeconds",
  "request-timeout": "request refused: its body did not arrive within listen.requestTimeoutSeconds",
  "send-timeout": "connection closed: the client took no byte of its answer within listen.sendTimeoutSeconds",
};

/** Idle keep-alive connections closing is routine, not a warning: counted, logged at debug. */
const ROUTINE: ReadonlySet<ConnectionLimitName> = new Set(["keep-alive-timeout"]);

export const WARN_INTERVAL_MS = 10_000;

/** `<prefix>connections_open` and `<prefix>connection_limit_total{limit}`, in a mode's registry. */
export class ConnectionLimitMetrics {
  private open: () => number = () => 0;
  private readonly bites: Counter<"limit">;

  constructor(registry: Registry, prefix: string) {
    const self = this;
    new Gauge({
      name: `${prefix}connections_open`,
      help: "Client connections open on the listener",
      registers: [registry],
      collect() {
        this.set(self.open());
      },
    });
    this.bites = new Counter({
      name: `${prefix}connection_limit_total`,
      help: "Connections refused or closed, and requests refused, by a listener limit (listen.*)",
      labelNames: ["limit"] as const,
      registers: [registry],
    });
    for (const limit of CONNECTION_LIMIT_NAMES) this.bites.inc({ limit }, 0);
  }

  /** Where the open connections are counted (the listener, made after the metrics). */
  countOpen(open: () => number): void {
    this.open = open;
  }

  /** What the listener's guard reports to: counted, and a warn line per limit every WARN_INTERVAL_MS. */
  observer(logger: Logger, now: () => number = Date.now): ConnectionLimitObserver {
    const lastWarned = new Map<ConnectionLimitName, { at: number; since: number }>();
    return (limit, address) => {
      this.bites.inc({ limit });
      if (ROUTINE.has(limit)) {
        logger.debug({ limit, address }, WHAT_HAPPENED[limit]);
        return;
      }
      const t = now();
      const last = lastWarned.get(limit);
      if (last && t - last.at < WARN_INTERVAL_MS) {
        last.since += 1;
        return;
      }
      // How many more bit since the last line, which that line could not tell.
      const more = last && last.since > 0 ? { unloggedSinceLastLine: last.since } : {};
      logger.warn({ limit, address, ...more }, WHAT_HAPPENED[limit]);
      lastWarned.set(limit, { at: t, since: 0 });
    };
  }
}
