/** What several families share: a valid signed request to start from, and small byte and write helpers. */

import type { Rng } from "../prng.js";
import type { Write } from "../raw-client.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, paymentBody, type RawRequest, serialize } from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import type { CaseContext, CasePlan, ExpectedRequest } from "../types.js";

export interface Valid {
  readonly request: RawRequest;
  readonly requestId: string;
  readonly tag: string;
  readonly tpp: FuzzTpp;
  readonly describe: string;
}

/** A valid request by a good TPP: GET accounts (any good TPP) or POST a payment (A or EC). */
export async function validSigned(
  ctx: CaseContext,
  options: { tpp?: FuzzTpp; pay?: boolean; headers?: Record<string, string>; omit?: readonly string[] } = {},
): Promise<Valid> {
  const { rng, tpps } = ctx;
  const canPay = !options.tpp || options.tpp.roles.includes("PSP_PI");
  const pay = options.pay ?? (canPay && rng.chance(0.4));
  const tpp = options.tpp ?? (pay ? rng.pick([tpps.A, tpps.EC]) : rng.pick([tpps.A, tpps.B, tpps.EC]));
  const extra = {
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.omit ? { omit: options.omit } : {}),
  };
  const signed = pay
    ? await ctx.sign({
        tpp,
        method: "POST",
        path: PAYMENT_PATH,
        body: paymentBody(`${rng.range(1, 9999)}.${rng.range(10, 99)}`),
        ...extra,
      })
    : await ctx.sign({
        tpp,
        path: rng.pick([
          ACCOUNTS_PATH,
          `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`,
          `${ACCOUNTS_PATH}?withBalance=true`,
        ]),
        ...extra,
      });
  return {
    ...signed,
    tpp,
    describe: `${signed.request.method} ${signed.request.target.replace(/[?&]fz=.*/, "")} by TPP ${tpp.name}`,
  };
}

/** The expectation of a valid request sent as it is. */
export function forwardOf(valid: Valid, label = "valid"): ExpectedRequest {
  return {
    tag: valid.tag,
    requestId: valid.requestId,
    label: `${label}: ${valid.describe}`,
    expect: "forward",
    tpp: valid.tpp,
  };
}

export function bytesOf(request: RawRequest): Buffer {
  return serialize(request);
}

/** A request that must never reach the backend: unsigned, tagged, with an X-Request-ID the gateway echoes. */
export function unsignedRequest(
  ctx: CaseContext,
  path = PAYMENT_PATH,
): { bytes: Buffer; expected: ExpectedRequest } {
  const tag = ctx.tag();
  const id = `fuzz-unsigned-${tag}`;
  return {
    bytes: Buffer.from(
      `POST ${path}?fz=${tag} HTTP/1.1\r\nHost: localhost\r\nX-Request-ID: ${id}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
      "latin1",
    ),
    expected: { tag, requestId: id, label: `unsigned POST ${path}`, expect: "refuse" },
  };
}

/** TPP B (AIS only) paying: signed correctly, refused by role. */
export async function aisPaying(ctx: CaseContext): Promise<{ bytes: Buffer; expected: ExpectedRequest }> {
  const signed = await ctx.sign({
    tpp: ctx.tpps.B,
    method: "POST",
    path: PAYMENT_PATH,
    body: paymentBody("10.00"),
  });
  return {
    bytes: serialize(signed.request),
    expected: {
      tag: signed.tag,
      requestId: signed.requestId,
      label: "AIS-only TPP B pays",
      expect: "refuse",
    },
  };
}

/** Chunked transfer coding of `body` in `parts` pieces. */
export function chunked(body: Buffer, parts: number, extension = ""): Buffer {
  const out: Buffer[] = [];
  const size = Math.max(1, Math.ceil(body.length / Math.max(1, parts)));
  for (let at = 0; at < body.length; at += size) {
    const piece = body.subarray(at, at + size);
    out.push(
      Buffer.from(`${piece.length.toString(16)}${extension}\r\n`, "latin1"),
      piece,
      Buffer.from("\r\n"),
    );
  }
  out.push(Buffer.from("0\r\n\r\n", "latin1"));
  return Buffer.concat(out);
}

/** `data` in up to `count` writes cut at random places, each after up to `maxDelay` ms but the first. */
export function randomPieces(rng: Rng, data: Buffer, count: number, maxDelay: number): Write[] {
  const cuts = new Set<number>();
  while (cuts.size < Math.min(count - 1, data.length - 1)) cuts.add(1 + rng.int(data.length - 1));
  const at = [0, ...[...cuts].sort((a, b) => a - b), data.length];
  const out: Write[] = [];
  for (let i = 0; i + 1 < at.length; i++)
    out.push({ data: data.subarray(at[i]!, at[i + 1]!), delayMs: i === 0 ? 0 : rng.int(maxDelay) });
  return out;
}

/**
 * A pipeline's writes: all at once, or request by request with `pauses[i]` after request `i`
 * (long enough for answers to come back in between), read as they come or only once everything
 * is written (a busy client).
 */
export function pipelined(
  rng: Rng,
  parts: readonly Buffer[],
  pauses: readonly number[],
): Pick<CasePlan, "writes" | "readAfterWrites"> {
  const style = rng.weighted<"one-write" | "paced" | "paced-read-after">([
    [6, "one-write"],
    [2, "paced"],
    [2, "paced-read-after"],
  ]);
  return {
    writes:
      style === "one-write"
        ? [{ data: Buffer.concat(parts) }]
        : parts.map((data, i) => ({ data, delayMs: i === 0 ? 0 : pauses[i - 1]! })),
    readAfterWrites: style === "paced-read-after",
  };
}
