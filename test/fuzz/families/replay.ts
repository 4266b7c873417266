/**
 * Replays: one signed request sent twice (after the first was answered, on a new or the same
 * connection, pipelined behind itself, or on two connections at once), and for the EC TPP its
 * signature re-encoded (DER ↔ IEEE P1363, s ↔ n−s) or its keyId/algorithm respelled: the same
 * signed content may run once only.
 */

import type { RawRequest } from "../request.js";
import { serialize } from "../request.js";
import type { ExpectedRequest, Family } from "../types.js";
import { forwardOf, validSigned } from "./common.js";

const P256_N = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

function readDerInt(bytes: Buffer, at: number): { value: bigint; next: number } {
  if (bytes[at] !== 0x02) throw new Error("not an INTEGER");
  const len = bytes[at + 1]!;
  const content = bytes.subarray(at + 2, at + 2 + len);
  return { value: BigInt(`0x${content.toString("hex") || "0"}`), next: at + 2 + len };
}

function intBytes(value: bigint, width?: number): Buffer {
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let bytes = Buffer.from(hex, "hex");
  if (width !== undefined) return Buffer.concat([Buffer.alloc(width - bytes.length), bytes]);
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return bytes;
}

function derSignature(r: bigint, s: bigint): Buffer {
  const ri = intBytes(r);
  const si = intBytes(s);
  const body = Buffer.concat([Buffer.from([0x02, ri.length]), ri, Buffer.from([0x02, si.length]), si]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

/** Re-encodings of an ECDSA P-256 DER signature that verify just the same. */
export function reencodings(der: Buffer): { label: string; signature: Buffer }[] {
  const first = readDerInt(der, 2);
  const r = first.value;
  const s = readDerInt(der, first.next).value;
  const flipped = P256_N - s;
  const p1363 = (sv: bigint) => Buffer.concat([intBytes(r, 32), intBytes(sv, 32)]);
  return [
    { label: "ECDSA signature as IEEE P1363", signature: p1363(s) },
    { label: "ECDSA signature with s → n−s (DER)", signature: derSignature(r, flipped) },
    { label: "ECDSA signature with s → n−s (P1363)", signature: p1363(flipped) },
  ];
}

function withSignatureHeader(request: RawRequest, change: (value: string) => string): RawRequest {
  return {
    ...request,
    headers: request.headers.map(
      ([n, v]) => (n === "Signature" ? [n, change(v)] : [n, v]) as [string, string],
    ),
  };
}

export const replay: Family = {
  name: "replay",
  weight: 2,
  async run(ctx) {
    const { rng, tpps } = ctx;
    const ec = rng.chance(0.5);
    const valid = await validSigned(ctx, { tpp: ec ? tpps.EC : rng.pick([tpps.A, tpps.B]) });
    const original = serialize(valid.request);
    const copies: { label: string; bytes: Buffer }[] = [];
    if (ec) {
      const sig = /signature="([^"]+)"/.exec(valid.request.headers.find(([n]) => n === "Signature")![1])![1]!;
      for (const re of reencodings(Buffer.from(sig, "base64")))
        copies.push({
          label: re.label,
          bytes: serialize(
            withSignatureHeader(valid.request, (v) => v.replace(sig, re.signature.toString("base64"))),
          ),
        });
    } else {
      copies.push({
        label: "algorithm respelled SHA256withRSA",
        bytes: serialize(
          withSignatureHeader(valid.request, (v) =>
            v.replace('algorithm="rsa-sha256"', 'algorithm="SHA256withRSA"'),
          ),
        ),
      });
    }
    copies.push({
      label: "keyId serial in lower case",
      bytes: serialize(
        withSignatureHeader(valid.request, (v) =>
          v.replace(/keyId="SN=([0-9A-F]+)/, (_m, sn: string) => `keyId="SN=${sn.toLowerCase()}`),
        ),
      ),
    });
    copies.push({ label: "identical bytes", bytes: original });
    const chosen = rng.shuffle(copies).slice(0, rng.range(1, copies.length));
    const replayOf = (label: string): ExpectedRequest => ({
      tag: valid.tag,
      requestId: valid.requestId,
      label: `replay (${label}) of ${valid.describe}`,
      expect: "any",
      tpp: valid.tpp,
    });
    const mode = rng.pick(["sequential", "pipelined", "concurrent"] as const);
    if (mode === "sequential") {
      await ctx.exchange({ requests: [forwardOf(valid, "replay original")], writes: [{ data: original }] });
      for (const copy of chosen)
        await ctx.exchange({ requests: [replayOf(copy.label)], writes: [{ data: copy.bytes }] });
    } else if (mode === "pipelined") {
      await ctx.exchange({
        requests: [
          forwardOf(valid, "replay original"),
          ...chosen.map((c) => replayOf(`${c.label}, pipelined`)),
        ],
        writes: [{ data: Buffer.concat([original, ...chosen.map((c) => c.bytes)]) }],
      });
    } else {
      // All at once on separate connections: exactly one may run.
      await Promise.all([
        ctx.exchange({ requests: [replayOf("original, concurrent")], writes: [{ data: original }] }),
        ...chosen.map((c) =>
          ctx.exchange({ requests: [replayOf(`${c.label}, concurrent`)], writes: [{ data: c.bytes }] }),
        ),
      ]);
    }
  },
};
