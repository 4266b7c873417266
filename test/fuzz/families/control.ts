/** Control: valid requests (GET accounts, POST payments) from every good TPP; all must be forwarded and answered. */

import type { Write } from "../raw-client.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, paymentBody, serialize } from "../request.js";
import type { CaseContext, ExpectedRequest, Family } from "../types.js";

export async function validRequest(ctx: CaseContext, label = "valid") {
  const { rng, tpps } = ctx;
  const pay = rng.chance(0.4);
  const tpp = pay ? rng.pick([tpps.A, tpps.EC]) : rng.pick([tpps.A, tpps.B, tpps.EC]);
  const signed = pay
    ? await ctx.sign({
        tpp,
        method: "POST",
        path: PAYMENT_PATH,
        body: paymentBody(`${rng.range(1, 9999)}.${rng.range(10, 99)}`),
      })
    : await ctx.sign({
        tpp,
        path: rng.pick([
          ACCOUNTS_PATH,
          `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`,
          `${ACCOUNTS_PATH}?withBalance=true`,
        ]),
      });
  const expected: ExpectedRequest = {
    tag: signed.tag,
    requestId: signed.requestId,
    label: `${label} ${signed.request.method} ${signed.request.target} by TPP ${tpp.name}`,
    expect: "forward",
    tpp,
  };
  return { signed, expected, bytes: serialize(signed.request) };
}

export const control: Family = {
  name: "control",
  weight: 2,
  async run(ctx) {
    // One to four valid requests on one connection, pipelined or one after the other.
    const n = ctx.rng.range(1, 4);
    const items = [];
    for (let i = 0; i < n; i++) items.push(await validRequest(ctx));
    const pipelined = ctx.rng.chance(0.5);
    if (pipelined) {
      await ctx.exchange({
        requests: items.map((x) => x.expected),
        writes: [{ data: Buffer.concat(items.map((x) => x.bytes)) }],
      });
    } else {
      for (const item of items) {
        const writes: Write[] = [{ data: item.bytes }];
        await ctx.exchange({ requests: [item.expected], writes });
      }
    }
  },
};
