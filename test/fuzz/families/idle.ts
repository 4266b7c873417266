/**
 * Idle and slow connections to the ingress listener (TLS), against the fuzz gateway's short
 * limits (gateway.ts FUZZ_LISTEN_SECONDS): a TCP connection that never starts TLS or stalls inside
 * its ClientHello (the handshake timeout), plain HTTP to the TLS port, a handshake and then
 * nothing or part of a head then nothing (here the headers timeout's 400 comes before the idle
 * timeout: see gateway.ts), a head trickled byte by byte or header line by header line (the
 * headers timeout's 400), a body that stalls (the request timeout's 400),
 * a request answered and then nothing (keep-alive), requests with pauses under keep-alive, a
 * backend slower than every timeout, an Upgrade request, and more connections from one address
 * than the per-address cap. The invariants are idle-common.ts's.
 *
 * Can fail (FUZZ_FAMILIES=idle FUZZ_COUNT=300 FUZZ_SEED=33, 130 cases, only the fuzz gateway's
 * listen config changed): 11 violations with the gateway as it is, all of them Upgrade requests
 * held unanswered (upgrade-held); with headersTimeoutSeconds 30 (request 60) 107; with
 * tlsHandshakeTimeoutSeconds 30 1,207; with maxConnectionsPerAddress 100,000 35 (connection-cap,
 * refused-reached-backend); with keepAliveTimeoutSeconds 30 34; with requestTimeoutSeconds 30 33;
 * with idleTimeoutSeconds 30 still 11: the headers timeout closes those connections first, as it
 * does with the defaults (egress-idle.ts sees the idle timeout itself).
 */

import { serialize } from "../request.js";
import type { Family } from "../types.js";
import { forwardOf, validSigned } from "./common.js";
import { runIdleCase, validBytes } from "./idle-common.js";

export const idle: Family = {
  name: "idle",
  // Its cases last seconds (they wait for the gateway's timeouts): a few of them go a long way.
  weight: 0.1,
  async run(ctx) {
    await runIdleCase(ctx, {
      name: "ingress",
      tls: true,
      block: 10,
      endlessHead: (tag) => `GET /v1/accounts?fz=${tag} HTTP/1.1\r\nHost: localhost\r\n`,
      async valid(label, options = {}) {
        const valid = await validSigned(ctx, options.pay !== undefined ? { pay: options.pay } : {});
        const headers = [...valid.request.headers, ...(options.extra ?? [])];
        return validBytes(serialize({ ...valid.request, headers }), forwardOf(valid, label), valid.describe);
      },
    });
  },
};
