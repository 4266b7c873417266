/**
 * What the live-trust tests share: a payment TPP A may sign, and calling again until the gateway's
 * answer changes (a source is polled in the background, so its change shows within a poll).
 */

import type { CallResult } from "./gateway-fixture.js";

/** A SEPA payment a PISP's certificate may initiate. */
export const PAYMENT = {
  method: "POST",
  target: "/v1/payments/sepa-credit-transfers",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({
    instructedAmount: { currency: "EUR", amount: "12.50" },
    debtorAccount: { iban: "NO9386011117947" },
    creditorAccount: { iban: "NO9386011117947" },
    creditorName: "Merchant AS",
  }),
};

/** Calls until `done` holds or `ms` passes; the last answer. */
export async function callUntil(
  call: () => Promise<CallResult>,
  done: (r: CallResult) => boolean,
  ms: number,
): Promise<CallResult> {
  const deadline = Date.now() + ms;
  let r = await call();
  while (!done(r) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    r = await call();
  }
  return r;
}
