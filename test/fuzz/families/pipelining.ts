/**
 * Pipelining: good and bad requests mixed on one raw TLS connection, including ones that condemn
 * the connection (413 by Content-Length, a missing Host, a malformed request line, a backend that
 * cuts its connection before or inside its answer → 502, an answer too large to sign → 502,
 * `Connection: close`), a duplicate of an earlier request, and rarely a backend that stalls past
 * the gateway's timeout (504). Valid requests before the first
 * condemning one must be answered by the backend; nothing after it may run unanswered.
 */

import { serialize } from "../request.js";
import type { ExpectedRequest, Family } from "../types.js";
import { aisPaying, pipelined, unsignedRequest, validSigned } from "./common.js";

type Kind =
  | "valid"
  | "unsigned"
  | "ais-pays"
  | "bad-signature"
  | "duplicate"
  | "too-large"
  | "no-host"
  | "malformed"
  | "close"
  | "backend-drop"
  | "backend-drop-mid"
  | "backend-too-large"
  | "backend-stall"
  | "expect-continue";

const CONDEMNS: ReadonlySet<Kind> = new Set([
  "too-large",
  "no-host",
  "malformed",
  "close",
  "backend-drop",
  "backend-drop-mid",
  "backend-too-large",
  "backend-stall",
]);

const MALFORMED = [
  "GET /v1/accounts HTTP/1.1 extra\r\nHost: localhost\r\n\r\n",
  "GARBAGE\r\n\r\n",
  "GET /v1/accounts HTTP/9.9\r\nHost: localhost\r\n\r\n",
  "\x16\x03\x01\x00\x05hello\r\n\r\n",
  "GET\r\n\r\n",
  "GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nBad Header: x\r\n\r\n",
  "GET /v1/acc\x00ounts HTTP/1.1\r\nHost: localhost\r\n\r\n",
  "POST /v1/payments HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n",
  "POST /v1/payments HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1x\r\n\r\n",
  "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost\r\n\r\n",
];

export const pipelining: Family = {
  name: "pipelining",
  weight: 3,
  async run(ctx) {
    const { rng, maxBodyBytes } = ctx;
    const n = rng.range(2, 6);
    const requests: ExpectedRequest[] = [];
    const parts: Buffer[] = [];
    let condemned = false;
    let stalls = false;
    let lastValid: { bytes: Buffer; expected: ExpectedRequest } | undefined;
    const pauses: number[] = [];
    for (let i = 0; i < n; i++) {
      const kind = rng.weighted<Kind>([
        [8, "valid"],
        [2, "unsigned"],
        [2, "ais-pays"],
        [2, "bad-signature"],
        [lastValid ? 2 : 0, "duplicate"],
        [1, "too-large"],
        [1, "no-host"],
        [1, "malformed"],
        [1, "close"],
        [1, "backend-drop"],
        [0.5, "backend-drop-mid"],
        [0.5, "backend-too-large"],
        [stalls ? 0 : 0.05, "backend-stall"],
        [0.5, "expect-continue"],
      ]);
      const mayRun = !condemned;
      switch (kind) {
        case "unsigned": {
          const u = unsignedRequest(ctx);
          requests.push(u.expected);
          parts.push(u.bytes);
          break;
        }
        case "ais-pays": {
          const a = await aisPaying(ctx);
          requests.push(a.expected);
          parts.push(a.bytes);
          break;
        }
        case "malformed": {
          const tag = ctx.tag();
          requests.push({ tag, label: "malformed request", expect: "refuse" });
          parts.push(Buffer.from(rng.pick(MALFORMED), "latin1"));
          break;
        }
        case "duplicate": {
          requests.push({
            ...lastValid!.expected,
            label: `duplicate of ${lastValid!.expected.label}`,
            expect: "any",
          });
          parts.push(lastValid!.bytes);
          break;
        }
        default: {
          const valid = await validSigned(ctx, {
            ...(kind === "close" ? { headers: { Connection: "close" } } : {}),
            ...(kind === "backend-drop" ? { headers: { "X-Fuzz-Backend": "drop" } } : {}),
            ...(kind === "backend-drop-mid" ? { headers: { "X-Fuzz-Backend": "drop-mid" } } : {}),
            ...(kind === "backend-too-large"
              ? { headers: { "X-Fuzz-Answer": rng.pick(["too-large", "too-large-chunked"]) } }
              : {}),
            ...(kind === "backend-stall" ? { headers: { "X-Fuzz-Backend": "delay=3600" } } : {}),
            ...(kind === "expect-continue" ? { pay: true } : {}),
          });
          const req = valid.request;
          let bytes: Buffer;
          let expect: ExpectedRequest["expect"] = mayRun ? "forward" : "any";
          let allow5xx: number[] | undefined;
          if (kind === "bad-signature") {
            req.headers = req.headers.map(([name, value]) =>
              name === "Signature"
                ? [name, value.replace(/signature="(.)/, (_m, c) => `signature="${c === "A" ? "B" : "A"}`)]
                : [name, value],
            );
            expect = "refuse";
            bytes = serialize(req);
          } else if (kind === "too-large") {
            // Only the head: the Content-Length alone condemns the connection.
            req.headers = [
              ...req.headers.filter(([name]) => !/^content-length$/i.test(name)),
              ["Content-Length", String(maxBodyBytes + 1 + rng.int(1_000_000))],
            ];
            bytes = serialize({ ...req, body: undefined as never });
            expect = "refuse";
          } else if (kind === "no-host") {
            bytes = serialize(req, { host: null });
            expect = "refuse";
          } else if (kind === "expect-continue") {
            req.headers = [...req.headers, ["Expect", "100-continue"]];
            bytes = serialize(req);
          } else {
            bytes = serialize(req);
          }
          if (kind === "backend-drop" || kind === "backend-drop-mid") {
            expect = "any";
            allow5xx = [502];
          }
          // Executed, and answered with a 502 standing in for the answer (it counts as the answer).
          if (kind === "backend-too-large") allow5xx = [502];
          if (kind === "backend-stall") {
            expect = "any";
            allow5xx = [504];
            stalls = true;
          }
          const expected: ExpectedRequest = {
            tag: valid.tag,
            requestId: valid.requestId,
            label: `${kind}: ${valid.describe}`,
            expect,
            tpp: valid.tpp,
            ...(allow5xx ? { allow5xx } : {}),
          };
          requests.push(expected);
          parts.push(bytes);
          if (kind === "valid") lastValid = { bytes, expected: { ...expected, expect: "any" } };
        }
      }
      if (CONDEMNS.has(kind)) condemned = true;
      // Paced writes: after a request that closes the connection, long enough for its answer.
      pauses.push(CONDEMNS.has(kind) ? 60 : rng.pick([0, 1, 5, 20]));
    }
    await ctx.exchange({
      requests,
      ...pipelined(rng, parts, pauses),
      deadlineMs: stalls ? 12_000 : 8_000,
    });
  },
};
