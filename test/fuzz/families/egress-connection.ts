/**
 * The application's connection to the egress listener, ended in every way: a head written slowly
 * or after a pause, a FIN right after a whole request (a half-close: once the request went to the
 * bank its answer still comes; a FIN that came first means nothing is sent, and the application
 * reads why: issue 25), a FIN or a reset in the middle of the head or the body (nothing reaches
 * the bank), a reset while the bank is working on the request (the application gave up; what ran
 * may go unanswered), and several requests one after another on one kept-alive connection.
 */

import type { EgressFamily } from "../types.js";
import { randomPieces } from "./common.js";
import { appRequest, bytesOf, forwardOf, jsonBody } from "./egress-common.js";

export const egressConnection: EgressFamily = {
  name: "egress-connection",
  weight: 1,
  target: "egress",
  async run(ctx) {
    const { rng } = ctx;
    const variant = rng.pick([
      "slow-head",
      "idle-first",
      "fin-after-request",
      "fin-mid-head",
      "cut-mid-head",
      "fin-mid-body",
      "cut-mid-body",
      "cut-while-bank-works",
      "keep-alive-series",
    ] as const);
    const app = appRequest(ctx, rng.chance(0.5) ? { body: jsonBody(rng) } : {});
    const bytes = bytesOf(app);
    const label = `${variant}: ${app.describe}`;
    switch (variant) {
      case "slow-head":
        await ctx.exchange({
          requests: [forwardOf(app, label)],
          writes: randomPieces(rng, bytes, rng.range(2, 6), 120),
        });
        return;
      case "idle-first":
        await ctx.exchange({
          requests: [forwardOf(app, label)],
          writes: [{ data: bytes, delayMs: rng.range(50, 300) }],
        });
        return;
      case "fin-after-request": {
        // A half-close after a whole request: the bank's answer if the request went out before
        // the FIN came, otherwise nothing sent and a 400 that says so. Either way, an answer.
        const result = await ctx.exchange({
          requests: [{ ...forwardOf(app, label), expect: "any" }],
          writes: [{ data: bytes }],
          after: "fin",
          afterMs: rng.int(20),
          sentinel: false,
        });
        const first = result.outcome.responses[0];
        const text = first?.body.toString("utf8") ?? "";
        const bank = result.backendAnswer(app.tag) !== undefined;
        ctx.check(
          bank ||
            (first?.status === 400 &&
              first.headers["psd2-gateway-origin"] === "gateway" &&
              text.includes('"FORMAT_ERROR"') &&
              text.includes("nothing was sent") &&
              result.backendSaw(app.tag) === 0),
          "half-close",
          label,
          "the bank's answer, or (the FIN first) a 400 FORMAT_ERROR saying nothing was sent, and nothing sent",
          () =>
            `${first ? `${first.status} ${first.headers["psd2-gateway-origin"]}: ${text.slice(0, 200)}` : "no answer"}; the bank received it ${result.backendSaw(app.tag)}×`,
        );
        return;
      }
      case "fin-mid-head":
      case "cut-mid-head":
      case "fin-mid-body":
      case "cut-mid-body": {
        const headEnd = bytes.indexOf("\r\n\r\n") + 4;
        const inBody =
          variant.endsWith("body") && app.request.body !== undefined && app.request.body.length > 1;
        const at = inBody ? headEnd + rng.range(1, app.request.body!.length - 1) : rng.range(1, headEnd - 1);
        await ctx.exchange({
          requests: [{ ...forwardOf(app, label), expect: "refuse" }],
          writes: randomPieces(rng, bytes.subarray(0, at), rng.range(1, 3), 40),
          after: variant.startsWith("cut") ? "cut" : "fin",
          afterMs: rng.int(60),
          sentinel: false,
          deadlineMs: 3_000,
        });
        return;
      }
      case "cut-while-bank-works": {
        const slow = appRequest(ctx, { headers: [["X-Fuzz-Backend", `delay=${rng.range(20, 200)}`]] });
        await ctx.exchange({
          requests: [{ ...forwardOf(slow, label), expect: "any" }],
          writes: [{ data: bytesOf(slow) }],
          after: "cut",
          afterMs: rng.range(0, 100),
          sentinel: false,
          abandons: true,
        });
        return;
      }
      default: {
        // One after another on one connection, each written once the one before had time to be answered.
        const more = [app, ...Array.from({ length: rng.range(1, 4) }, () => appRequest(ctx))];
        await ctx.exchange({
          requests: more.map((a) => forwardOf(a, "keep-alive series")),
          writes: more.map((a, i) => ({ data: bytesOf(a), delayMs: i === 0 ? 0 : rng.range(30, 120) })),
        });
      }
    }
  },
};
