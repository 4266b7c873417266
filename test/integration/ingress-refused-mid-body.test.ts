/**
 * A request refused while its body was still on its way to the backend must give back the
 * backend connection it took. Found by `npm run fuzz` (seed 20261127): chunked payments whose
 * framing broke mid-body (the smuggling family) and bodies cut by the request timeout (the slow
 * family) were answered 400, but their upstream requests went on waiting for body bytes that
 * would never come, each holding one of the pool's `backend.connections` for ever; after about
 * a minute of such traffic every valid request queued behind them. Here the pool has one
 * connection, so a single leaked request would stop every call after it.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  expectRejected,
  parseRawResponse,
  prepareSignedCall,
  rawConnect,
  rawHead,
  signedCall,
} from "../helpers/gateway-fixture.js";
import { named } from "../helpers/named-rows.js";

const setup = useGatewayAndBackend({
  config: {
    backend: { connections: 1 },
    listen: { headersTimeoutSeconds: 1, requestTimeoutSeconds: 1 },
  },
});

/** How each client stops its body part-way. */
const CUTS = named([
  {
    name: "a chunk size that is not hex after the first chunk (a parse error mid-body)",
    rest: "zz\r\nhello\r\n0\r\n\r\n",
    code: "FORMAT_ERROR",
  },
  {
    name: "nothing after the first chunk until the request timeout",
    rest: "",
    code: "FORMAT_ERROR",
  },
]);

describe("a request refused mid-body releases its backend connection", () => {
  it.each(CUTS)("%s", async (_name, { rest, code }) => {
    const { gw, backend } = setup;
    backend.reset();
    const body = JSON.stringify({ instructedAmount: { currency: "EUR", amount: "12.00" } });
    for (let round = 0; round < 3; round++) {
      const call = await prepareSignedCall({
        signer: gw.pki.tppA.qseal,
        method: "POST",
        target: "/v1/payments/sepa-credit-transfers",
        body,
      });
      const headers: Record<string, string> = { ...call.headers, "Transfer-Encoding": "chunked" };
      delete headers["Content-Length"];
      const first = body.slice(0, 10);
      const socket = await rawConnect(gw);
      let raw = "";
      const answered = new Promise<void>((resolve) => {
        socket.on("data", (chunk: Buffer) => {
          raw += chunk.toString("latin1");
          if (parseRawResponse(raw).done) resolve();
        });
        socket.on("close", () => resolve());
      });
      // Head and first chunk in one write: the gateway forwards before the rest is known.
      socket.write(`${rawHead({ ...call, headers })}${first.length.toString(16)}\r\n${first}\r\n${rest}`);
      await answered;
      socket.destroy();
      expectRejected(parseRawResponse(raw), { status: 400, code });
    }
    // Every upstream request the refusals started has ended at the backend (aborted, never whole)...
    await Promise.all(backend.requests.map((r) => r.settled));
    expect(backend.requests.every((r) => !r.complete)).toBe(true);
    // ...and the one backend connection serves the next payment.
    await sleep(10);
    const ok = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(ok.status, ok.text).toBe(200);
  });
});
