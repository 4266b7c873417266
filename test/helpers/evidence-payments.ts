/**
 * Payments through a running test gateway while its evidence store fails and recovers (issue 40):
 * the set-up the evidence fault tests share (a folder's disk full, a folder read-only, PostgreSQL
 * stopped). It keeps which payments were answered 200 and which were refused, for the tests to check
 * against the backend and the evidence.
 */

import { randomUUID } from "node:crypto";
import { signedCall, type TestGateway } from "./gateway-fixture.js";

const paymentBody = JSON.stringify({
  instructedAmount: { currency: "EUR", amount: "10.00" },
  creditorName: "Merchant",
  creditorAccount: { iban: "DE02100100109307118603" },
});

export type SignedAnswer = Awaited<ReturnType<typeof signedCall>>;

export interface PaymentRun {
  readonly acknowledged: string[];
  readonly refused: string[];
  /** The first payment refused by payUntilRefused, if any was. */
  refusal: SignedAnswer | undefined;
  metricsText(): Promise<string>;
  /** Polls /metrics (every 50 ms, `tries` times at most) until it holds `line` as a whole line; returns the last text. */
  until(line: string): Promise<string>;
  pay(id: string): Promise<SignedAnswer>;
  /** Pays until one payment is refused (or `attempts` run out), sorting each into acknowledged or refused. */
  payUntilRefused(attempts: number): Promise<void>;
}

/** `gateway` is read at each call: the tests start their gateway in beforeAll. */
export function paymentRun(gateway: () => TestGateway, tries = 100): PaymentRun {
  const metricsText = async () => (await fetch(`${gateway().gateway.adminUrl}/metrics`)).text();
  const pay = (id: string) => {
    const gw = gateway();
    return signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: "/v1/payments/sepa-credit-transfers",
      headers: { "X-Request-ID": id },
      body: paymentBody,
    });
  };
  const run: PaymentRun = {
    acknowledged: [],
    refused: [],
    refusal: undefined,
    metricsText,
    async until(line) {
      // A whole sample line: a substring would also match the metric's HELP line or a larger value.
      const has = (text: string) => text.split("\n").includes(line);
      let text = "";
      for (let i = 0; i < tries && !has(text); i++) {
        await new Promise((r) => setTimeout(r, 50));
        text = await metricsText();
      }
      return text;
    },
    pay,
    async payUntilRefused(attempts) {
      for (let i = 0; i < attempts && run.refusal === undefined; i++) {
        const id = randomUUID();
        const answer = await pay(id);
        if (answer.status === 200) run.acknowledged.push(id);
        else {
          run.refusal = answer;
          run.refused.push(id);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  return run;
}
