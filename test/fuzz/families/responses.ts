/**
 * The backend's answers through response signing: a valid request asks the backend (header
 * `X-Fuzz-Answer`) for every answer shape — small, chunked, empty, 201/202/204/302/304/404/409,
 * large up to and at responseSigning.maxBodyBytes, over it (by Content-Length or chunked) — as GET,
 * POST or HEAD, alone or pipelined behind one another. Every answer must reach the client signed
 * (the harness verifies it) with the backend's status, body and framing; one over the bound is a
 * 502 that carries none of the backend's bytes and closes the connection, so nothing behind it runs.
 */

import { ANSWER_SHAPES, type AnswerShape } from "../backend.js";
import { ACCOUNTS_PATH, serialize } from "../request.js";
import type { ExpectedRequest, Family } from "../types.js";
import { validSigned } from "./common.js";

const OVER_BOUND: ReadonlySet<AnswerShape> = new Set(["too-large", "too-large-chunked"]);

export const responses: Family = {
  name: "responses",
  weight: 2,
  async run(ctx) {
    const { rng } = ctx;
    // HEAD alone on its connection (the client must know which answer has no body).
    if (rng.chance(0.25)) {
      const shape = rng.pick(ANSWER_SHAPES);
      const tpp = rng.pick([ctx.tpps.A, ctx.tpps.B, ctx.tpps.EC]);
      const signed = await ctx.sign({
        tpp,
        method: "HEAD",
        path: rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`]),
        headers: { "X-Fuzz-Answer": shape },
      });
      await ctx.exchange({
        requests: [
          {
            tag: signed.tag,
            requestId: signed.requestId,
            label: `HEAD answered ${shape} by TPP ${tpp.name}`,
            expect: "forward",
            tpp,
          },
        ],
        writes: [{ data: serialize(signed.request) }],
        bodiless: [0],
      });
      return;
    }
    const n = rng.range(1, 4);
    const requests: ExpectedRequest[] = [];
    const parts: Buffer[] = [];
    let closed = false;
    for (let i = 0; i < n; i++) {
      const shape = rng.weighted<AnswerShape>(
        ANSWER_SHAPES.map((s) => [OVER_BOUND.has(s) ? 0.5 : 1, s] as const),
      );
      const valid = await validSigned(ctx, { headers: { "X-Fuzz-Answer": shape } });
      requests.push({
        tag: valid.tag,
        requestId: valid.requestId,
        label: `${valid.describe} answered ${shape}`,
        // Behind a 502 for an answer too large to sign the connection is closed: it may not run.
        expect: closed ? "any" : "forward",
        tpp: valid.tpp,
        ...(OVER_BOUND.has(shape) ? { allow5xx: [502] } : {}),
      });
      parts.push(serialize(valid.request));
      if (OVER_BOUND.has(shape)) closed = true;
    }
    await ctx.exchange({
      requests,
      writes: rng.chance(0.5)
        ? [{ data: Buffer.concat(parts) }]
        : parts.map((data, i) => ({ data, delayMs: i === 0 ? 0 : rng.pick([0, 5, 30]) })),
      deadlineMs: 10_000,
    });
  },
};
