/**
 * Request bodies from the application side of the egress gateway: sized up to maxBodyBytes and
 * exactly at it, chunked (extensions, trailers, an empty body), written slowly, after an
 * `Expect: 100-continue`, on a GET; over maxBodyBytes by Content-Length (only the head written, or
 * the whole body) or chunked (413, nothing sent); framing that is not HTTP (Content-Length with
 * Transfer-Encoding, bad chunk sizes, Content-Length twice); a body cut short by a FIN or a reset.
 *
 * A body that reaches the bank is the application's, byte for byte, with a Digest over it (the
 * harness verifies both); a refused or unfinished one never reaches it.
 */

import type { Rng } from "../prng.js";
import type { Write } from "../raw-client.js";
import { serialize } from "../request.js";
import type { EgressFamily, ExpectedRequest } from "../types.js";
import { chunked } from "./common.js";
import { type AppRequest, appRequest, forwardOf } from "./egress-common.js";

function bodyOf(rng: Rng, size: number): Buffer {
  if (rng.chance(0.3)) return rng.bytes(size);
  const text = '{"fuzz":"body","pad":"'.padEnd(size - 2, "x");
  return Buffer.from(`${text}"}`.slice(0, size));
}

/** The head alone (with the framing headers given), as bytes. */
function headOf(app: AppRequest, framing: [string, string][]): Buffer {
  return serialize(
    { ...app.request, headers: [...app.request.headers, ...framing], body: undefined as never },
    { host: app.host },
  );
}

function pieces(rng: Rng, data: Buffer, count: number, maxDelay: number): Write[] {
  const size = Math.max(1, Math.ceil(data.length / count));
  const out: Write[] = [];
  for (let at = 0; at < data.length; at += size)
    out.push({ data: data.subarray(at, at + size), delayMs: rng.int(maxDelay) });
  return out;
}

export const egressBodies: EgressFamily = {
  name: "egress-bodies",
  weight: 2,
  target: "egress",
  async run(ctx) {
    const { rng, maxBodyBytes: max } = ctx;
    const variant = rng.weighted<string>([
      [3, "sized"],
      [3, "chunked"],
      [1, "slow"],
      [1, "expect-continue"],
      [1, "over-head-only"],
      [1, "over-whole"],
      [1, "over-chunked"],
      [2, "bad-framing"],
      [1, "cut-short"],
    ]);
    const size = rng.weighted<number>([
      [4, rng.range(1, 2_000)],
      [2, rng.range(2_000, max)],
      [1, max],
      [1, 0],
    ]);
    const method = rng.pick(["POST", "PUT", "PATCH", "GET", "DELETE"]);
    const body = bodyOf(rng, size);
    const app = appRequest(ctx, { method, body });
    const label = `${variant} (${method}, ${size} bytes)`;
    const forward = (extra: Partial<ExpectedRequest> = {}): ExpectedRequest => ({
      ...forwardOf(app, label),
      ...extra,
    });
    const refused = (extra: Partial<ExpectedRequest> = {}): ExpectedRequest => ({
      ...forwardOf(app, label),
      expect: "refuse",
      ...extra,
    });
    const withLength = headOf(app, [["Content-Length", String(body.length)]]);
    switch (variant) {
      case "sized":
        await ctx.exchange({ requests: [forward()], writes: [{ data: Buffer.concat([withLength, body]) }] });
        return;
      case "chunked": {
        const extension = rng.pick(["", "", ";ext=1", ';name="v"']);
        let coded = chunked(body, rng.range(1, 6), extension);
        if (rng.chance(0.3))
          coded = Buffer.concat([coded.subarray(0, coded.length - 2), Buffer.from("X-Trailer: t\r\n\r\n")]);
        const head = headOf(app, [["Transfer-Encoding", "chunked"]]);
        await ctx.exchange({
          requests: [forward({ label: `${label} ${extension}` })],
          writes: [{ data: Buffer.concat([head, coded]) }],
        });
        return;
      }
      case "slow":
        await ctx.exchange({
          requests: [forward()],
          writes: [{ data: withLength }, ...pieces(rng, body, rng.range(2, 5), 120)],
        });
        return;
      case "expect-continue": {
        const head = headOf(app, [
          ["Content-Length", String(body.length)],
          ["Expect", "100-continue"],
        ]);
        await ctx.exchange({
          requests: [forward()],
          writes: [{ data: head }, { data: body, delayMs: rng.int(60) }],
        });
        return;
      }
      case "over-head-only": {
        // The head announces too much; the client waits for the answer before sending any of it.
        const declared = max + 1 + rng.int(rng.chance(0.5) ? 10 : 10_000_000);
        await ctx.exchange({
          requests: [refused({ refusedWith: { status: 413, code: "PAYLOAD_TOO_LARGE" } })],
          writes: [{ data: headOf(app, [["Content-Length", String(declared)]]) }],
          sentinel: false,
          after: "read",
          deadlineMs: 3_000,
        });
        return;
      }
      case "over-whole":
      case "over-chunked": {
        const big = bodyOf(rng, max + 1 + rng.int(2 * max));
        const data =
          variant === "over-whole"
            ? Buffer.concat([headOf(app, [["Content-Length", String(big.length)]]), big])
            : Buffer.concat([headOf(app, [["Transfer-Encoding", "chunked"]]), chunked(big, rng.range(1, 8))]);
        await ctx.exchange({
          requests: [refused({ refusedWith: { status: 413, code: "PAYLOAD_TOO_LARGE", orClose: true } })],
          writes: [{ data }],
          sentinel: false,
          deadlineMs: 5_000,
        });
        return;
      }
      case "bad-framing": {
        const bad = rng.pick([
          [
            ["Content-Length", String(body.length)],
            ["Transfer-Encoding", "chunked"],
          ],
          [
            ["Content-Length", String(body.length)],
            ["Content-Length", String(body.length + 1)],
          ],
          [["Transfer-Encoding", "chunked, gzip"]],
          [["Content-Length", `-${body.length}`]],
          [["Content-Length", `0x${body.length.toString(16)}`]],
        ] as [string, string][][]);
        const chunkedBad = rng.pick([
          "zz\r\nabc\r\n0\r\n\r\n",
          "3\r\nabcdef\r\n0\r\n\r\n",
          "fffffffffffffffff\r\n",
        ]);
        const chunkedBody = bad.some(([n, v]) => n === "Transfer-Encoding" && v === "chunked")
          ? chunked(body, 2)
          : body;
        const badChunks = rng.chance(0.4);
        const data = badChunks
          ? Buffer.concat([
              headOf(app, [["Transfer-Encoding", "chunked"]]),
              Buffer.from(chunkedBad, "latin1"),
            ])
          : Buffer.concat([headOf(app, bad), chunkedBody]);
        await ctx.exchange({
          requests: [
            refused({
              label: `${label}: ${badChunks ? JSON.stringify(chunkedBad) : bad.map(([n, v]) => `${n}: ${v}`).join(" + ")}`,
              refusedWith: { status: 400, code: "FORMAT_ERROR" },
            }),
          ],
          writes: [{ data }],
          deadlineMs: 5_000,
        });
        return;
      }
      default: {
        // Cut short: part of the body, then a FIN or a reset. Nothing of it may reach the bank.
        const part = body.subarray(0, rng.int(Math.max(1, body.length)));
        const declared = Math.max(body.length, part.length + 1);
        const cut = rng.chance(0.5);
        await ctx.exchange({
          requests: [refused()],
          writes: [
            { data: headOf(app, [["Content-Length", String(declared)]]) },
            { data: part, delayMs: rng.int(50) },
          ],
          after: cut ? "cut" : "fin",
          afterMs: rng.int(80),
          sentinel: false,
          deadlineMs: 3_000,
        });
      }
    }
  },
};
