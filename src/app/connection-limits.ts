/** A listen block of the configuration as the listener's connection limits (src/listener/guard.ts). */

import type { ConnectionLimits } from "../listener/guard.js";

export interface ListenLimitsConfig {
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
  readonly tlsHandshakeTimeoutSeconds: number;
  readonly idleTimeoutSeconds: number;
  readonly headersTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
  readonly keepAliveTimeoutSeconds: number;
  readonly sendTimeoutSeconds: number;
}

/**
 * The caps are the whole gateway's: node:cluster hands connections to `workers` processes in
 * turn, so each enforces its share (rounded up).
 */
export function connectionLimitsOf(listen: ListenLimitsConfig, workers = 1): ConnectionLimits {
  const share = (n: number) => Math.max(1, Math.ceil(n / workers));
  return {
    maxConnections: share(listen.maxConnections),
    maxConnectionsPerAddress: share(listen.maxConnectionsPerAddress),
    tlsHandshakeTimeoutMs: listen.tlsHandshakeTimeoutSeconds * 1000,
    idleTimeoutMs: listen.idleTimeoutSeconds * 1000,
    headersTimeoutMs: listen.headersTimeoutSeconds * 1000,
    requestTimeoutMs: listen.requestTimeoutSeconds * 1000,
    keepAliveTimeoutMs: listen.keepAliveTimeoutSeconds * 1000,
    sendTimeoutMs: listen.sendTimeoutSeconds * 1000,
  };
}
