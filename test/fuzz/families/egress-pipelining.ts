/**
 * Pipelining on the egress listener: good and bad application requests on one connection, written
 * at once or paced — unknown prefixes (404, the connection goes on), a body over maxBodyBytes by
 * Content-Length (only the head: what follows is its body) or chunked (413), `Connection: close`,
 * a header line that is not HTTP, a bank that cuts its connection (502) — and what comes behind
 * them. Whatever the bank executed must be answered, in order; what comes after the connection
 * was condemned may run only if it is answered too.
 */

import type { EgressFamily, Expectation, ExpectedRequest } from "../types.js";
import { chunked, pipelined } from "./common.js";
import { appRequest, bytesOf, forwardOf, jsonBody } from "./egress-common.js";

type Kind = "valid" | "unknown" | "over-head" | "over-chunked" | "close" | "malformed" | "backend-drop";

/** After these, nothing more is read as a request (a body, a parse error) or the connection closes. */
const CONDEMNS: ReadonlySet<Kind> = new Set(["over-head", "over-chunked", "close", "malformed"]);

export const egressPipelining: EgressFamily = {
  name: "egress-pipelining",
  weight: 2,
  target: "egress",
  async run(ctx) {
    const { rng, maxBodyBytes } = ctx;
    const n = rng.range(2, 6);
    const requests: ExpectedRequest[] = [];
    const parts: Buffer[] = [];
    const pauses: number[] = [];
    let condemned = false;
    for (let i = 0; i < n; i++) {
      const kind = rng.weighted<Kind>([
        [8, "valid"],
        [2, "unknown"],
        [1, "over-head"],
        [1, "over-chunked"],
        [1, "close"],
        [1, "malformed"],
        [1, "backend-drop"],
      ]);
      const withBody = rng.chance(0.4) || kind === "over-head" || kind === "over-chunked";
      const app = appRequest(ctx, {
        ...(withBody ? { body: jsonBody(rng) } : {}),
        ...(kind === "close" ? { headers: [["Connection", "close"]] } : {}),
        ...(kind === "backend-drop" ? { headers: [["X-Fuzz-Backend", "drop"]] } : {}),
      });
      const mayRun: Expectation = condemned ? "any" : "forward";
      let expect: Expectation = mayRun;
      let bytes = bytesOf(app);
      let allow5xx: number[] | undefined;
      switch (kind) {
        case "unknown":
          bytes = bytesOf({
            ...app,
            host: "localhost",
            request: { ...app.request, target: `/nobank${app.request.target.replace(/^\/bank/, "")}` },
          });
          expect = "refuse";
          break;
        case "over-head":
          bytes = bytesOf({
            ...app,
            request: {
              ...app.request,
              headers: [
                ...app.request.headers,
                ["Content-Length", String(maxBodyBytes + 1 + rng.int(100_000))],
              ],
              body: undefined as never,
            },
          });
          expect = "refuse";
          break;
        case "over-chunked": {
          const big = Buffer.alloc(maxBodyBytes + 1 + rng.int(maxBodyBytes), 0x78);
          bytes = Buffer.concat([
            bytesOf({
              ...app,
              request: {
                ...app.request,
                headers: [...app.request.headers, ["Transfer-Encoding", "chunked"]],
                body: undefined as never,
              },
            }),
            chunked(big, rng.range(1, 6)),
          ]);
          expect = "refuse";
          break;
        }
        case "malformed":
          bytes = Buffer.from(
            rng.pick([
              "GET /bank/v1/accounts HTTP/1.1\r\nHost: localhost\r\nBad Header: x\r\n\r\n",
              "GARBAGE\r\n\r\n",
              "POST /bank/v1/payments HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1x\r\n\r\n",
              "GET /bank/v1/acc\x00ounts HTTP/1.1\r\nHost: localhost\r\n\r\n",
              "CONNECT alt.bank.example:443 HTTP/1.1\r\nHost: alt.bank.example:443\r\n\r\n",
            ]),
            "latin1",
          );
          expect = "refuse";
          break;
        case "backend-drop":
          expect = "any";
          allow5xx = [502];
          break;
        default:
          break;
      }
      requests.push({
        ...forwardOf(app, kind),
        expect,
        ...(allow5xx ? { allow5xx } : {}),
      });
      parts.push(bytes);
      if (CONDEMNS.has(kind)) condemned = true;
      pauses.push(CONDEMNS.has(kind) ? 40 : rng.pick([0, 1, 5, 20]));
    }
    await ctx.exchange({ requests, ...pipelined(rng, parts, pauses), deadlineMs: 8_000 });
  },
};
