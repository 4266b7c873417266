/**
 * Request smuggling: framing the gateway and a backend could read differently. A validly signed
 * payment whose body framing is made ambiguous (Content-Length and Transfer-Encoding, two
 * Content-Lengths, odd Transfer-Encoding spellings, obs-fold, bare LF, bad chunk sizes, chunk
 * extensions, a second Host line), with a second request hidden where one reading sees body and
 * another a request.
 * The hidden request is one that must never run (unsigned, or the AIS-only TPP paying).
 */

import { serialize } from "../request.js";
import type { ExpectedRequest, Family } from "../types.js";
import { aisPaying, chunked, unsignedRequest, validSigned } from "./common.js";

export const smuggling: Family = {
  name: "smuggling",
  weight: 2,
  async run(ctx) {
    const { rng } = ctx;
    const outer = await validSigned(ctx, { pay: true });
    const body = outer.request.body!;
    const hidden = rng.chance(0.5) ? unsignedRequest(ctx) : await aisPaying(ctx);
    const headers = outer.request.headers.filter(([n]) => !/^content-length$/i.test(n));
    const variant = rng.pick([
      "cl+te",
      "te+cl",
      "two-cl",
      "te-spelling",
      "obs-fold",
      "bare-lf",
      "bad-chunk",
      "chunk-ext",
      "cl-short",
      "te-chunked-hidden",
      "two-host",
    ] as const);
    let data: Buffer;
    let label = variant;
    const head = (extra: [string, string][], eol = "\r\n") =>
      serialize(
        { ...outer.request, headers: [...headers, ...extra], body: undefined as never },
        { eol },
      ).subarray(0);
    switch (variant) {
      case "cl+te":
      case "te+cl": {
        // Chunked body that ends with the hidden request; Content-Length covers only the chunked part.
        const coded = chunked(body, rng.range(1, 3));
        const cl = variant === "cl+te" ? coded.length : coded.length + hidden.bytes.length;
        const lines: [string, string][] =
          variant === "cl+te"
            ? [
                ["Content-Length", String(cl)],
                ["Transfer-Encoding", "chunked"],
              ]
            : [
                ["Transfer-Encoding", "chunked"],
                ["Content-Length", String(cl)],
              ];
        data = Buffer.concat([head(lines), coded, hidden.bytes]);
        break;
      }
      case "two-cl": {
        const same = rng.chance(0.3);
        const second = same ? body.length : body.length + hidden.bytes.length;
        data = Buffer.concat([
          head([
            ["Content-Length", String(body.length)],
            ["Content-Length", String(second)],
          ]),
          body,
          hidden.bytes,
        ]);
        label = `two-cl (${same ? "same" : "different"})` as typeof label;
        break;
      }
      case "te-spelling": {
        const spelled = rng.pick([
          ["Transfer-Encoding", "chunked, identity"],
          ["Transfer-Encoding", "identity, chunked"],
          ["Transfer-Encoding", " chunked"],
          ["Transfer-Encoding", "Chunked"],
          ["Transfer-Encoding", "xchunked"],
          ["Transfer-Encoding", "chunked\x0b"],
          ["Transfer-Encoding ", "chunked"],
          ["Transfer_Encoding", "chunked"],
          ["Transfer-Encoding", "gzip, chunked"],
        ] as [string, string][]);
        const coded = chunked(body, 2);
        const both = rng.chance(0.5);
        data = Buffer.concat([
          head([spelled, ...(both ? ([["Content-Length", String(body.length)]] as [string, string][]) : [])]),
          coded,
          hidden.bytes,
        ]);
        label = `te-spelling ${JSON.stringify(spelled)}${both ? " + CL" : ""}` as typeof label;
        break;
      }
      case "obs-fold": {
        // A folded continuation line: in a signed header, in Transfer-Encoding, in Content-Length.
        const where = rng.pick(["PSU-ID", "Transfer-Encoding", "Content-Length", "X-Fuzz-Note"]);
        const extra: [string, string][] =
          where === "Transfer-Encoding"
            ? [
                ["Content-Length", String(body.length)],
                ["Transfer-Encoding", "identity\r\n chunked"],
              ]
            : where === "Content-Length"
              ? [["Content-Length", `${body.length}\r\n ${body.length + hidden.bytes.length}`]]
              : [
                  ["Content-Length", String(body.length)],
                  [where, "a\r\n b"],
                ];
        data = Buffer.concat([head(extra), body, hidden.bytes]);
        label = `obs-fold in ${where}` as typeof label;
        break;
      }
      case "bare-lf": {
        const allLf = rng.chance(0.5);
        let text = head([["Content-Length", String(body.length)]]).toString("latin1");
        if (allLf) text = text.replaceAll("\r\n", "\n");
        else {
          const lines = text.split("\r\n");
          const at = 1 + rng.int(Math.max(1, lines.length - 3));
          lines[at] = `${lines[at]}\n${rng.chance(0.5) ? "Transfer-Encoding: chunked" : "X-Smuggled: 1"}`;
          text = lines.join("\r\n");
        }
        data = Buffer.concat([Buffer.from(text, "latin1"), body, hidden.bytes]);
        label = `bare-lf (${allLf ? "every line" : "one line"})` as typeof label;
        break;
      }
      case "bad-chunk": {
        const size = rng.pick([
          "zz",
          "-1",
          "0x10",
          "ffffffffffffffffff",
          "1 0",
          "+5",
          " 5",
          "5 ",
          "",
          "0000000000000000005",
        ]);
        const bad = Buffer.concat([
          Buffer.from(`${size}\r\n`, "latin1"),
          body.subarray(0, 5),
          Buffer.from("\r\n0\r\n\r\n"),
        ]);
        data = Buffer.concat([head([["Transfer-Encoding", "chunked"]]), bad, hidden.bytes]);
        label = `bad-chunk size ${JSON.stringify(size)}` as typeof label;
        break;
      }
      case "chunk-ext": {
        const ext = rng.pick([
          ";a=b",
          ";a",
          ';a="b;c"',
          ";" + "x".repeat(5000),
          "; a = b",
          ";\x01",
          ";a=\r\n0",
        ]);
        data = Buffer.concat([
          head([["Transfer-Encoding", "chunked"]]),
          chunked(body, rng.range(1, 3), ext),
          hidden.bytes,
        ]);
        label = `chunk-ext ${JSON.stringify(ext.slice(0, 20))}` as typeof label;
        break;
      }
      case "two-host": {
        // RFC 9112 3.2: refused whatever the second says (Node keeps the first, another hop may not).
        const second = rng.pick(["localhost", "evil.example", "127.0.0.1:1", ""]);
        const host: [string, string] = [rng.pick(["Host", "host", "HOST"]), second];
        const length: [string, string] = ["Content-Length", String(body.length)];
        data = Buffer.concat([head(rng.chance(0.5) ? [host, length] : [length, host]), body, hidden.bytes]);
        label = `two-host (${JSON.stringify(second)})` as typeof label;
        break;
      }
      case "cl-short": {
        // Content-Length short of the body: the rest is read as the next request.
        const cut = rng.range(0, body.length - 1);
        data = Buffer.concat([head([["Content-Length", String(cut)]]), body, hidden.bytes]);
        label = `cl-short ${cut} of ${body.length}` as typeof label;
        break;
      }
      default: {
        // The hidden request inside a chunk of a correctly chunked body (Digest then fails).
        const coded = chunked(Buffer.concat([body, hidden.bytes]), 2);
        data = Buffer.concat([head([["Transfer-Encoding", "chunked"]]), coded]);
        break;
      }
    }
    const requests: ExpectedRequest[] = [
      {
        tag: outer.tag,
        requestId: outer.requestId,
        label: `smuggling ${label} around ${outer.describe}`,
        // Framing that does not match what was signed must not execute with a wrong body; two Host
        // lines never reach the backend at all.
        expect: variant === "two-host" ? "refuse" : "any",
        tpp: outer.tpp,
      },
      { ...hidden.expected, label: `hidden request (${hidden.expected.label}) in smuggling ${label}` },
    ];
    await ctx.exchange({
      requests,
      writes: [{ data }],
      after: "fin",
      afterMs: 400,
      sentinel: true,
      deadlineMs: 6_000,
    });
  },
};
