/**
 * `;req` response components, egress side (issue 41): the application's request goes through the
 * egress gateway's `fapi` profile (RFC 9421, responses enforced under FAPI 2.0 HTTP Signatures
 * draft -01 `full`) to a hostile bank over TLS (fapi-bank.ts) whose answer is signed by the bank's
 * real QSealC but bound to the wrong request (another method, target, content-digest or
 * signature), drops a `;req` component, uses `;req` on a component the request did not have,
 * repeats its label, names with `key=` a label the request does not carry, binds `"signature";req`
 * without `key=` (as an answer to an unsigned request would), or sends a huge or malformed
 * Signature-Input. Every such answer must come back to the application as the gateway's own 502
 * BAD_GATEWAY Berlin Group error, never as the bank's answer, never marked verified, never a 500;
 * a valid answer (the control) must come back verified, byte for byte. The harness watches the
 * process's health and memory meanwhile.
 */

import { request } from "node:http";
import { FAPI_PREFIX } from "../egress.js";
import { FAPI_ATTACKS, type FapiAttack } from "../fapi-bank.js";
import type { EgressCaseContext, EgressFamily } from "../types.js";
import { isTppMessages } from "../verdicts.js";

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

function call(port: number, method: string, path: string, body: Buffer | undefined): Promise<Answer | Error> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: {
          "psu-id": "PSU-1001",
          ...(body ? { "content-type": "application/json", "content-length": String(body.length) } : {}),
        },
        timeout: 15_000,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on("error", resolve);
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer within 15 s")));
    req.on("error", resolve);
    req.end(body);
  });
}

const describeAnswer = (a: Answer | Error) =>
  a instanceof Error
    ? `no answer: ${a.message}`
    : `${a.status} origin ${a.headers["psd2-gateway-origin"]} mark ${a.headers["psd2-gateway-response-signature"]}: ${a.body.subarray(0, 300).toString("utf8")}`;

export const egressResponseReq: EgressFamily = {
  name: "egress-response-req",
  weight: 1,
  target: "egress",
  async run(ctx: EgressCaseContext) {
    const { rng } = ctx;
    const attack = rng.weighted<FapiAttack>(
      FAPI_ATTACKS.map((a) => [a === "valid" ? 3 : 1, a] as [number, FapiAttack]),
    );
    const variant = rng.int(1_000_000);
    const post = rng.chance(0.5);
    const body = post ? Buffer.from(JSON.stringify({ amount: rng.int(10_000), tag: ctx.tag() })) : undefined;
    const tag = ctx.tag();
    const path = `${FAPI_PREFIX}/v1/${post ? "payments/sepa-credit-transfers" : "accounts"}?fz=${tag}&attack=${attack}&v=${variant}`;
    const label = `${post ? "POST" : "GET"} answered with a ${attack} response signature (variant ${variant})`;
    const answer = await call(ctx.gatewayPort, post ? "POST" : "GET", path, body);
    if (answer instanceof Error) {
      ctx.counted("unanswered");
      ctx.check(false, "egress-req-unanswered", label, "an answer from the egress gateway", () =>
        describeAnswer(answer),
      );
      return;
    }
    ctx.check(answer.status !== 500, "egress-500", label, "never a 500", () => describeAnswer(answer));
    if (attack === "valid") {
      ctx.counted("forwarded");
      const json = (() => {
        try {
          return JSON.parse(answer.body.toString("utf8")) as { ok?: boolean; attack?: string };
        } catch {
          return undefined;
        }
      })();
      ctx.check(
        answer.status === 200 &&
          answer.headers["psd2-gateway-origin"] === "bank" &&
          answer.headers["psd2-gateway-response-signature"] === "verified" &&
          json?.ok === true &&
          json.attack === "valid",
        "egress-req-valid",
        label,
        "the bank's 200, verified (psd2-gateway-response-signature: verified), its body intact",
        () => describeAnswer(answer),
      );
      return;
    }
    ctx.counted("refused");
    // Only its body is read.
    const tpp = isTppMessages(answer as never);
    // Refused for its signature: a head past the bank client's bound may instead end the exchange
    // as a bank that could not be read.
    const why =
      attack === "huge-input"
        ? /response signature failed|could not be reached|answered badly|header/i
        : /response signature failed/;
    ctx.check(
      answer.status === 502 &&
        answer.headers["psd2-gateway-origin"] === "gateway" &&
        answer.headers["psd2-gateway-response-signature"] !== "verified" &&
        tpp?.code === "BAD_GATEWAY" &&
        why.test(tpp.text) &&
        !answer.body.includes('"ok":true'),
      "egress-req-passed",
      label,
      `the gateway's 502 BAD_GATEWAY (tppMessages) saying ${why.source}, the bank's answer withheld, never marked verified`,
      () => describeAnswer(answer),
    );
  },
};
