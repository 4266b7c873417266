/** Control: valid requests (GET accounts, POST payments) from every good TPP; all must be forwarded and answered. */

import type { Family } from "../types.js";
import { bytesOf, forwardOf, validSigned } from "./common.js";

export const control: Family = {
  name: "control",
  weight: 2,
  async run(ctx) {
    // One to four valid requests on one connection, pipelined or each on its own connection.
    const n = ctx.rng.range(1, 4);
    const items = [];
    for (let i = 0; i < n; i++) items.push(await validSigned(ctx));
    if (ctx.rng.chance(0.5)) {
      await ctx.exchange({
        requests: items.map((x) => forwardOf(x)),
        writes: [{ data: Buffer.concat(items.map((x) => bytesOf(x.request))) }],
      });
    } else {
      for (const item of items)
        await ctx.exchange({ requests: [forwardOf(item)], writes: [{ data: bytesOf(item.request) }] });
    }
  },
};
