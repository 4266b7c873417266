/**
 * Slow and aborted bodies (and heads): a valid request written in pieces with pauses must still be
 * answered by the backend; a body cut short (the client half-closes or cuts the connection) must
 * never run with a partial body; a body whose Digest fails or whose bytes break the character
 * policy must never run at all, however slowly it arrives.
 */

import type { Write } from "../raw-client.js";
import { serialize } from "../request.js";
import type { Family } from "../types.js";
import { chunked, forwardOf, randomPieces, validSigned } from "./common.js";

export const slow: Family = {
  name: "slow",
  weight: 1,
  async run(ctx) {
    const { rng } = ctx;
    const variant = rng.pick([
      "slow-body",
      "slow-head",
      "slow-chunked",
      "cut-mid-body",
      "fin-mid-body",
      "fin-mid-chunked",
      "fin-after-request",
      "cut-after-request",
      "bad-digest-slow",
      "bad-chars-slow",
    ] as const);
    const valid = await validSigned(ctx, { pay: variant !== "slow-head" || rng.chance(0.5) });
    const req = valid.request;
    const body = req.body ?? Buffer.alloc(0);
    const head = serialize({ ...req, body: undefined as never }, {}).toString("latin1");
    const headWithLength =
      body.length > 0 && !/content-length/i.test(head)
        ? head.replace(/\r\n\r\n$/, `\r\nContent-Length: ${body.length}\r\n\r\n`)
        : head;
    const label = `${variant}: ${valid.describe}`;
    switch (variant) {
      case "slow-body":
      case "slow-head": {
        const all = serialize(req);
        const at = variant === "slow-head" ? 0 : Buffer.byteLength(headWithLength, "latin1");
        const writes: Write[] = [
          ...(at > 0 ? [{ data: all.subarray(0, at) }] : []),
          ...randomPieces(rng, all.subarray(at), rng.range(2, 6), 150),
        ];
        await ctx.exchange({ requests: [forwardOf(valid, label)], writes });
        return;
      }
      case "slow-chunked": {
        const h = head.replace(/\r\n\r\n$/, "\r\nTransfer-Encoding: chunked\r\n\r\n");
        const coded = chunked(body, rng.range(2, 5));
        await ctx.exchange({
          requests: [forwardOf(valid, label)],
          writes: [{ data: Buffer.from(h, "latin1") }, ...randomPieces(rng, coded, rng.range(2, 5), 150)],
        });
        return;
      }
      case "cut-mid-body":
      case "fin-mid-body":
      case "fin-mid-chunked": {
        // Chunked, the head may already have gone upstream: the backend's request is cut before its end.
        const framed =
          variant === "fin-mid-chunked"
            ? {
                head: head.replace(/\r\n\r\n$/, "\r\nTransfer-Encoding: chunked\r\n\r\n"),
                body: chunked(body, rng.range(2, 5)),
              }
            : { head: headWithLength, body };
        // Short of the body's end (chunked: of its last chunk, "0\r\n\r\n").
        const cut = rng.int(Math.max(1, framed.body.length - (variant === "fin-mid-chunked" ? 5 : 0)));
        await ctx.exchange({
          requests: [
            { tag: valid.tag, requestId: valid.requestId, label, expect: "no-execute", tpp: valid.tpp },
          ],
          writes: [
            { data: Buffer.from(framed.head, "latin1") },
            { data: framed.body.subarray(0, cut), delayMs: rng.int(100) },
          ],
          after: variant === "cut-mid-body" ? "cut" : "fin",
          afterMs: rng.int(150),
          sentinel: false,
          deadlineMs: 5_000,
        });
        return;
      }
      case "fin-after-request": {
        // Half-closed after a whole request: the gateway still answers it.
        await ctx.exchange({
          requests: [forwardOf(valid, label)],
          writes: [{ data: serialize(req) }],
          after: "fin",
          afterMs: rng.int(20),
          sentinel: false,
        });
        return;
      }
      case "cut-after-request": {
        // Gone before the answer: whatever runs may go unanswered (the client's choice).
        await ctx.exchange({
          requests: [{ tag: valid.tag, requestId: valid.requestId, label, expect: "any", tpp: valid.tpp }],
          writes: [{ data: serialize(req) }],
          after: "cut",
          afterMs: rng.int(30),
          sentinel: false,
          abandons: true,
        });
        return;
      }
      case "bad-digest-slow":
      case "bad-chars-slow": {
        if (body.length === 0) return;
        const changed = Buffer.from(body);
        const at = rng.int(changed.length);
        if (variant === "bad-digest-slow") changed[at] = changed[at]! ^ 0x20;
        else
          changed.set(
            Buffer.from(rng.pick(["\xff\xfe", "\xc3", "\xed\xa0\x80", "\x00"]), "latin1").subarray(0, 1),
            at,
          );
        const all = Buffer.concat([Buffer.from(headWithLength, "latin1"), changed]);
        await ctx.exchange({
          requests: [
            { tag: valid.tag, requestId: valid.requestId, label, expect: "no-execute", tpp: valid.tpp },
          ],
          writes: [
            { data: all.subarray(0, Buffer.byteLength(headWithLength, "latin1")) },
            ...randomPieces(rng, changed, rng.range(1, 4), 100),
          ],
        });
        return;
      }
    }
  },
};
