/**
 * Pipelined requests over TLS while large answers are still being written. Node pauses its HTTP
 * parser while answers pile up; reading a TLS socket natively, it kept handing the paused parser
 * the next decrypted bytes, which failed as "Parse Error: Paused" (HPE_PAUSED): a valid request
 * was refused as malformed (400 FORMAT_ERROR) and the connection closed. Found by the fuzz
 * `responses` family (large signed answers, pipelined). Every request must reach the backend and
 * every answer come back, however the requests are spread over the connection.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { RawClient } from "../fuzz/raw-client.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { prepareSignedCall, rawHead } from "../helpers/gateway-fixture.js";

const LARGE = Buffer.alloc(120_000, 0x61);
/** Four requests: the second 30 ms after the first, the third right behind it, the fourth 1 ms later. */
const PAUSES_MS = [30, 0, 1];
const ROUNDS = 12;

const env = useGatewayAndBackend();

describe("pipelined requests behind large answers over TLS", () => {
  it(`are all forwarded and answered (${ROUNDS} connections)`, async () => {
    env.backend.behave((_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": LARGE.length });
      res.end(LARGE);
    });
    const { gw } = env;
    const url = new URL(gw.url);
    const client = new RawClient({
      host: "127.0.0.1",
      port: Number(url.port),
      tls: { ca: gw.pki.root.pem, servername: url.hostname },
    });
    const seen: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const calls = [];
      for (let i = 0; i < 4; i++)
        calls.push(
          await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: `/v1/accounts?r=${round}.${i}` }),
        );
      const last = calls.at(-1)!.headers["X-Request-ID"]!;
      const outcome = await client.exchange({
        writes: calls.map((call, i) => ({
          data: Buffer.from(rawHead(call), "latin1"),
          delayMs: i === 0 ? 0 : PAUSES_MS[i - 1]!,
        })),
        // The last answer echoes the last request's X-Request-ID: reading ends with it.
        sentinelId: last,
        deadlineMs: 5_000,
      });
      seen.push(
        outcome.responses
          .map((r) => (r.status === 200 ? "200" : `${r.status} ${r.body.toString().slice(0, 120)}`))
          .join(" | "),
      );
      await sleep(5);
    }
    expect(seen).toEqual(Array.from({ length: ROUNDS }, () => "200 | 200 | 200 | 200"));
    expect(env.backend.requests).toHaveLength(4 * ROUNDS);
  }, 60_000);
});
