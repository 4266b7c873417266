/**
 * The request body on its way upstream, with the real inspectors: each chunk passes one chunk
 * late, the last only once every inspector approved the whole body, and a refusal throws
 * BodyRejected carrying the refusing inspector's step (what the access line and the rejections
 * metric show).
 */

import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { PERMISSIVE_POLICY } from "../../../src/checks/index.js";
import { reject } from "../../../src/errors.js";
import { type BodyInspector, BodyRejected, ClientAborted, StreamedBody } from "../../../src/forward/body.js";
import { computeDigestHeader, type DigestValue, parseDigestHeader } from "../../../src/signature/index.js";
import { characterInspector, digestInspector, sizeInspector } from "../../helpers/body-steps.js";
import { named } from "../../helpers/named-rows.js";

const CHUNKS = ['{"creditorName":', '"Kari Nordmann",', '"amount":"1.00"}'];
const BODY = CHUNKS.join("");

const digestOf = (body: string): DigestValue[] => {
  const values = parseDigestHeader(computeDigestHeader(body));
  if (!Array.isArray(values)) throw new Error(values.text);
  return values;
};

async function* chunksOf(chunks: readonly (string | Buffer)[], log?: string[]): AsyncGenerator<Buffer> {
  for (const chunk of chunks) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    log?.push(`read ${buffer.toString("latin1")}`);
    yield buffer;
  }
}

/** Passes everything on to `inner`, writing each call into `log`. */
function logged(inner: BodyInspector, log: string[]): BodyInspector {
  return {
    step: inner.step,
    update(chunk) {
      log.push(`${inner.step} sees ${chunk.toString("latin1")}`);
      return inner.update(chunk);
    },
    finish() {
      log.push(`${inner.step} finish`);
      return inner.finish();
    },
  };
}

/** What went upstream, and what ended the body. */
async function drain(
  body: AsyncIterable<Buffer>,
  log?: string[],
): Promise<{ sent: string[]; error?: unknown }> {
  const sent: string[] = [];
  try {
    for await (const chunk of body) {
      log?.push(`sent ${chunk.toString("latin1")}`);
      sent.push(chunk.toString("latin1"));
    }
    return { sent };
  } catch (error) {
    return { sent, error };
  }
}

/** The body as the ingress handler streams it, from a request stream that yields `chunks` one read at a time. */
const streamed = (chunks: AsyncIterable<Buffer>, inspectors: readonly BodyInspector[]) =>
  new StreamedBody(Readable.from(chunks), inspectors);

describe("StreamedBody", () => {
  it("passes each chunk on once the next has been seen, the last once every inspector finished", async () => {
    const log: string[] = [];
    const inspectors = [logged(digestInspector(digestOf(BODY)), log), logged(sizeInspector(1024), log)];
    const { sent, error } = await drain(streamed(chunksOf(CHUNKS, log), inspectors), log);
    expect(error).toBeUndefined();
    expect(sent).toEqual(CHUNKS);
    const [a, b, c] = CHUNKS;
    // When the request stream reads from its source is its own buffering: what is seen and sent, in order.
    expect(log.filter((line) => !line.startsWith("read "))).toEqual([
      `digest sees ${a}`,
      `body-size sees ${a}`,
      `digest sees ${b}`,
      `body-size sees ${b}`,
      `sent ${a}`,
      `digest sees ${c}`,
      `body-size sees ${c}`,
      `sent ${b}`,
      "digest finish",
      "body-size finish",
      `sent ${c}`,
    ]);
  });

  it.each(
    named([
      {
        name: "a Digest that does not match: all but the last chunk, refused at the end",
        inspectors: () => [digestInspector(digestOf(`${BODY} `)), sizeInspector(1024)],
        chunks: CHUNKS,
        sent: CHUNKS.slice(0, -1),
        step: "digest",
        code: "SIGNATURE_INVALID",
      },
      {
        name: "a body growing past the size bound: refused at the chunk that crosses it",
        inspectors: () => [digestInspector(digestOf(BODY)), sizeInspector(20)],
        chunks: CHUNKS,
        sent: [],
        step: "body-size",
        code: "PAYLOAD_TOO_LARGE",
      },
      {
        name: "a refused character in the last chunk: the chunks before it, not the last",
        inspectors: () => [characterInspector({ maxCodePoint: 0xffff, blockedRanges: [] })],
        chunks: ["[1,", "2,", '"\u{1F600}"]'],
        sent: ["[1,"],
        step: "body-characters",
        code: "FORMAT_ERROR",
      },
      {
        name: "two inspectors refusing at the end: the first listed names the step",
        inspectors: () => [characterInspector(PERMISSIVE_POLICY), digestInspector(digestOf(BODY))],
        chunks: ["[1,", Buffer.from([0xe2, 0x98])],
        sent: ["[1,"],
        step: "body-characters",
        code: "FORMAT_ERROR",
      },
      {
        name: "the same two the other way round",
        inspectors: () => [digestInspector(digestOf(BODY)), characterInspector(PERMISSIVE_POLICY)],
        chunks: ["[1,", Buffer.from([0xe2, 0x98])],
        sent: ["[1,"],
        step: "digest",
        code: "SIGNATURE_INVALID",
      },
      {
        name: "an empty body against a non-empty body's Digest",
        inspectors: () => [digestInspector(digestOf(BODY))],
        chunks: [],
        sent: [],
        step: "digest",
        code: "SIGNATURE_INVALID",
      },
    ]),
  )("%s", async (_name, row) => {
    const { sent, error } = await drain(streamed(chunksOf(row.chunks), row.inspectors()));
    expect(sent).toEqual(row.sent);
    expect(error).toBeInstanceOf(BodyRejected);
    const rejected = error as BodyRejected;
    expect(rejected.step).toBe(row.step);
    expect(rejected.rejection.code).toBe(row.code);
    expect(rejected.message).toBe(rejected.rejection.text);
  });

  it("sends an empty body when there is nothing to inspect against", async () => {
    const { sent, error } = await drain(streamed(chunksOf([]), [digestInspector(digestOf(""))]));
    expect(error).toBeUndefined();
    expect(sent).toEqual([]);
  });

  it("turns the client going away into ClientAborted, and keeps a BodyRejected from the source as it is", async () => {
    async function* breaking(error: Error): AsyncGenerator<Buffer> {
      yield Buffer.from("[1,");
      throw error;
    }
    const gone = await drain(streamed(breaking(new Error("aborted")), [sizeInspector(1024)]));
    expect(gone.error).toBeInstanceOf(ClientAborted);
    expect((gone.error as Error).message).toBe("aborted");
    expect(gone.sent).toEqual([]);

    // The ingress handler fails the body this way when it stops arriving (bodyStalled).
    const late = new BodyRejected(reject("FORMAT_ERROR", "the body stopped arriving"), "request-timeout");
    const timedOut = await drain(streamed(breaking(late), [sizeInspector(1024)]));
    expect(timedOut.error).toBe(late);
  });
});

describe("StreamedBody stopped", () => {
  /** A client that sends one chunk and then nothing, never ending its body. */
  const stalled = () => {
    const source = new Readable({ read() {} });
    source.push(Buffer.from("first"));
    return source;
  };

  it("passes the chunks through and ends with its source", async () => {
    const read: string[] = [];
    const body = streamed(chunksOf(CHUNKS), []);
    for await (const chunk of body) read.push(chunk.toString());
    expect(read.join("")).toBe(BODY);
    expect(body.ended).toBe(true);
  });

  it("throws the stop's error into a read waiting for a chunk that never comes", async () => {
    const body = new StreamedBody(stalled(), []);
    // The one chunk is held back for the next, which never comes: the read waits.
    const waiting = body.next();
    body.stop(new ClientAborted("the exchange is over"));
    await expect(waiting).rejects.toThrow("the exchange is over");
    expect(body.ended).toBe(false);
  });

  it("throws at the first read when stopped before undici started reading", async () => {
    const body = new StreamedBody(stalled(), []);
    body.stop(new ClientAborted("the exchange is over"));
    await expect(body[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(ClientAborted);
  });
});

describe("StreamedBody through undici", () => {
  it("delivers every byte of a request body to the backend (undici's body.read(0) takes nothing)", async () => {
    const { createServer, request } = await import("node:http");
    const { Pool } = await import("undici");
    const listen = (server: import("node:http").Server) =>
      new Promise<number>((resolve) =>
        server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
      );
    const backend = createServer((req, res) => {
      let received = 0;
      req.on("data", (chunk: Buffer) => (received += chunk.length));
      req.on("end", () => res.end(String(received)));
    });
    const pool = new Pool(`http://127.0.0.1:${await listen(backend)}`);
    const front = createServer((req, res) => {
      // The checks take a while: several chunks are buffered in the request when undici starts reading.
      setTimeout(() => {
        pool
          .request({
            path: "/",
            method: "POST",
            headers: { "content-length": req.headers["content-length"]! },
            body: new StreamedBody(req, []) as unknown as import("node:stream").Readable,
          })
          .then(async (answer) => res.end(await answer.body.text()))
          .catch((error: Error) => res.end(`error ${error.message}`));
      }, 50);
    });
    const port = await listen(front);
    try {
      for (const size of [1, 16_384, 60_817, 200_000]) {
        const got = await new Promise<string>((resolve, reject) => {
          const r = request(
            { port, host: "127.0.0.1", method: "POST", headers: { "content-length": size } },
            (res) => {
              let text = "";
              res.on("data", (d: Buffer) => (text += d.toString()));
              res.on("end", () => resolve(text));
            },
          );
          r.on("error", reject);
          const bytes = Buffer.alloc(size, 0x7b);
          for (let at = 0; at < size; at += 7_000) r.write(bytes.subarray(at, Math.min(size, at + 7_000)));
          r.end();
        });
        expect(got).toBe(String(size));
      }
    } finally {
      await pool.close();
      await new Promise((resolve) => front.close(resolve));
      await new Promise((resolve) => backend.close(resolve));
    }
  });
});
