/**
 * Idle and slow connections to the egress listener (plain HTTP from the application), against the
 * fuzz gateway's short limits (gateway.ts FUZZ_LISTEN_SECONDS): a connection that sends nothing
 * or part of a head then nothing (here the idle timeout closes it, unanswered, before the headers
 * timeout), a head trickled byte by byte or header line by header line (the headers timeout's 400), a body that stalls (the request timeout's 400), a
 * request answered and then nothing (keep-alive), requests with pauses under keep-alive, a bank
 * slower than every timeout, an Upgrade request or CONNECT, and more connections from one address
 * than the per-address cap. The invariants are idle-common.ts's, besides the egress target's own
 * (every answer of the gateway's marked psd2-gateway-origin: gateway, …).
 *
 * Can fail (FUZZ_FAMILIES=egress-idle FUZZ_COUNT=300 FUZZ_SEED=34, 114 cases, only the fuzz
 * egress gateway's listen config changed): 6 violations with the gateway as it is, all of them
 * Upgrade requests held unanswered (upgrade-held); with idleTimeoutSeconds 30 1,113; with
 * headersTimeoutSeconds 30 (request 60) 59; with maxConnectionsPerAddress 100,000 28; with
 * keepAliveTimeoutSeconds 30 35; with requestTimeoutSeconds 30 34.
 */

import type { EgressFamily } from "../types.js";
import { appRequest, bytesOf, forwardOf, jsonBody } from "./egress-common.js";
import { runIdleCase, validBytes } from "./idle-common.js";

export const egressIdle: EgressFamily = {
  name: "egress-idle",
  weight: 0.1,
  target: "egress",
  async run(ctx) {
    await runIdleCase(ctx, {
      name: "egress",
      tls: false,
      block: 40,
      endlessHead: (tag) => `GET ${ctx.banks.prefix}/v1/accounts?fz=${tag} HTTP/1.1\r\nHost: localhost\r\n`,
      async valid(label, options = {}) {
        const app = appRequest(ctx, {
          ...(options.pay ? { body: jsonBody(ctx.rng) } : {}),
          ...(options.extra ? { headers: options.extra } : {}),
        });
        return validBytes(bytesOf(app), forwardOf(app, label), app.describe);
      },
    });
  },
};
