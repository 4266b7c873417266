/**
 * Egress control: plain requests as an application sends them (GET, DELETE, POST and PUT with a
 * JSON body, HEAD alone), to either bank profile, some with the application's own X-Request-ID,
 * some asking the backend for an odd answer (chunked, empty, 204, 304, large…), one to four on a
 * connection, pipelined or one after another. Every one must reach the bank signed as its
 * profile says (the harness verifies each) and come back with the bank's answer.
 */

import { ANSWER_SHAPES } from "../backend.js";
import type { EgressFamily, ExpectedRequest } from "../types.js";
import { appRequest, appRequestId, bytesOf, forwardOf, jsonBody } from "./egress-common.js";

export const egressControl: EgressFamily = {
  name: "egress-control",
  weight: 2,
  target: "egress",
  async run(ctx) {
    const { rng } = ctx;
    if (rng.chance(0.15)) {
      const app = appRequest(ctx, { method: "HEAD", answer: rng.pick(ANSWER_SHAPES) });
      await ctx.exchange({
        requests: [forwardOf(app, "HEAD")],
        writes: [{ data: bytesOf(app) }],
        bodiless: [0],
      });
      return;
    }
    const n = rng.range(1, 4);
    const items = [];
    for (let i = 0; i < n; i++) {
      const id = rng.chance(0.3) ? appRequestId() : undefined;
      const app = appRequest(ctx, {
        ...(rng.chance(0.4) ? { body: jsonBody(rng) } : {}),
        ...(id ? { headers: [["X-Request-ID", id]] } : {}),
        ...(rng.chance(0.3) ? { answer: rng.pick(ANSWER_SHAPES) } : {}),
      });
      const expected: ExpectedRequest = {
        ...forwardOf(app),
        ...(id ? { backendHeaders: { "x-request-id": id } } : {}),
      };
      items.push({ app, expected });
    }
    if (rng.chance(0.5)) {
      await ctx.exchange({
        requests: items.map((x) => x.expected),
        writes: [{ data: Buffer.concat(items.map((x) => bytesOf(x.app))) }],
      });
    } else {
      for (const item of items)
        await ctx.exchange({ requests: [item.expected], writes: [{ data: bytesOf(item.app) }] });
    }
  },
};
