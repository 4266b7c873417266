/**
 * Issue 11, defect 1: HTTP/1.1 pipelining over raw TLS sockets. Node parses pipelined requests
 * ahead and emits them at once; the gateway must still keep the invariant
 *
 *     every request the backend received is answered to the client with the backend's answer,
 *     in order, on its connection; a request whose answer cannot be delivered is never forwarded.
 *
 * So: requests are dispatched one at a time; nothing behind an answer that closes the connection
 * (a 413 by Content-Length, a 502, `Connection: close`, a missing Host) reaches the backend; a
 * malformed request behind one in flight is refused (Berlin Group 400) only after the answers
 * before it; Node's own early refusals carry the Berlin Group body too.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from "node:tls";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  expectRejected,
  parseRawResponse,
  prepareSignedCall,
  rawConnect,
  rawHead,
  type TestGateway,
} from "../helpers/gateway-fixture.js";
import { named } from "../helpers/named-rows.js";
import type { RecordingBackend } from "../helpers/recording-backend.js";

const MAX_BODY = 1024;
const LARGE_ANSWER = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Pipelined requests on one raw connection, and the answers read back from it.

/** One answer read from the connection. */
interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * Splits what the gateway wrote into complete HTTP/1.1 responses (Content-Length or chunked);
 * `rest` is what is left after the last complete one.
 */
function splitResponses(raw: string): { answers: Answer[]; rest: string } {
  const answers: Answer[] = [];
  let at = 0;
  for (;;) {
    const end = raw.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const [statusLine, ...lines] = raw.slice(at, end).split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(statusLine ?? "")?.[1]);
    if (Number.isNaN(status)) break;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let next = end + 4;
    let body = "";
    if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      let complete = false;
      for (;;) {
        const lineEnd = raw.indexOf("\r\n", next);
        if (lineEnd < 0) break;
        const size = Number.parseInt(raw.slice(next, lineEnd), 16);
        if (Number.isNaN(size)) break;
        if (size === 0) {
          const trailerEnd = raw.indexOf("\r\n\r\n", lineEnd - 2);
          if (trailerEnd >= 0) {
            next = trailerEnd + 4;
            complete = true;
          }
          break;
        }
        if (raw.length < lineEnd + 2 + size + 2) break;
        body += raw.slice(lineEnd + 2, lineEnd + 2 + size);
        next = lineEnd + 2 + size + 2;
      }
      if (!complete) break;
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (raw.length < next + length) break;
      body = raw.slice(next, next + length);
      next += length;
    }
    // An interim answer (100 Continue) belongs to the final one after it.
    if (status >= 200) answers.push({ status, headers, body });
    at = next;
  }
  return { answers, rest: raw.slice(at) };
}

interface PipelineResult {
  readonly answers: Answer[];
  /** Bytes after the last complete answer (none expected). */
  readonly rest: string;
  /** The gateway closed the connection. */
  readonly closed: boolean;
  /** Milliseconds from the write to each answer's completion, in order. */
  readonly arrivals: number[];
}

/**
 * Writes every request in one go (Node parses them ahead of the first answer) and reads until the
 * gateway closes the connection, or — with `answers` — until that many answers are complete, or
 * `timeoutMs` passes.
 */
async function pipeline(
  gw: TestGateway,
  requests: readonly (string | Buffer)[],
  options: { answers?: number; timeoutMs?: number; halfClose?: boolean } = {},
): Promise<PipelineResult> {
  const socket = await rawConnect(gw);
  socket.on("error", () => {});
  const started = performance.now();
  return new Promise((resolve) => {
    let raw = "";
    let closed = false;
    let settled = false;
    const arrivals: number[] = [];
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...splitResponses(raw), closed, arrivals });
    };
    const timer = setTimeout(finish, options.timeoutMs ?? 5_000);
    socket.on("data", (chunk: Buffer) => {
      raw += chunk.toString("latin1");
      const { answers } = splitResponses(raw);
      while (arrivals.length < answers.length) arrivals.push(performance.now() - started);
      if (options.answers !== undefined && answers.length >= options.answers) finish();
    });
    socket.on("end", () => {
      closed = true;
      finish();
    });
    socket.on("close", () => {
      closed = true;
      finish();
    });
    const bytes = Buffer.concat(requests.map((r) => (typeof r === "string" ? Buffer.from(r, "latin1") : r)));
    // Half-closing: the client has nothing more to send but still reads its answers.
    if (options.halfClose) socket.end(bytes);
    else socket.write(bytes);
  });
}

/** A raw TLS connection that stays open on the client's side after the gateway ends its side. */
function halfOpenConnect(gw: TestGateway): Promise<TLSSocket> {
  const { hostname, port } = new URL(gw.url);
  // net's allowHalfOpen, which the TLS client honours (its typings leave it out).
  const options: ConnectionOptions & { allowHalfOpen: boolean } = {
    host: "127.0.0.1",
    port: Number(port),
    ca: gw.pki.root.pem,
    servername: hostname,
    allowHalfOpen: true,
  };
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(options, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** A good request, signed by TPP A; the backend answers it with its own X-Request-ID. */
interface Good {
  readonly requestId: string;
  readonly target: string;
  readonly bytes: string;
}

async function good(gw: TestGateway, label: string, extra: Record<string, string> = {}): Promise<Good> {
  const target = `/v1/accounts/${label}`;
  const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target });
  const headers = { ...prepared.headers, ...extra };
  return { requestId: headers["X-Request-ID"]!, target, bytes: rawHead({ ...prepared, headers }) };
}

/**
 * The backend answers every request with a body naming it, after `delayMs`, and records how many
 * it was answering at once. Targets ending in `/reset` get their connection reset instead; those
 * ending in `/large` a body of LARGE_ANSWER bytes, more than a socket takes without a drain.
 */
function answerEach(backend: RecordingBackend, delayFor: (target: string) => number = () => 0) {
  const seen = { concurrent: 0, maxConcurrent: 0, answered: [] as string[] };
  backend.behave((req, res, recorded) => {
    if (recorded.target.endsWith("/reset")) {
      req.socket.destroy();
      return;
    }
    seen.concurrent++;
    seen.maxConcurrent = Math.max(seen.maxConcurrent, seen.concurrent);
    const requestId = String(req.headers["x-request-id"]);
    setTimeout(() => {
      seen.concurrent--;
      seen.answered.push(requestId);
      res.writeHead(200, { "content-type": "application/json", "x-backend": "recording" });
      const padding = recorded.target.endsWith("/large") ? { padding: "x".repeat(LARGE_ANSWER) } : {};
      res.end(JSON.stringify({ answeredBy: "backend", requestId, target: recorded.target, ...padding }));
    }, delayFor(recorded.target));
  });
  return seen;
}

/**
 * The invariant, whatever was sent: exactly `forwarded` reached the backend, in the order sent,
 * and every one the backend answered came back to the client with that very answer, in the same
 * order (refusals may sit between them).
 */
function expectInvariant(
  backend: RecordingBackend,
  result: PipelineResult,
  forwarded: readonly Good[],
): void {
  expect(
    backend.requests.map((r) => r.headers["x-request-id"]),
    "what reached the backend",
  ).toEqual(forwarded.map((g) => g.requestId));
  let after = -1;
  for (const sent of forwarded) {
    if (sent.target.endsWith("/reset")) continue; // the backend never answered it
    const at = result.answers.findIndex(
      (a) => a.headers["x-backend"] === "recording" && a.headers["x-request-id"] === sent.requestId,
    );
    expect(at, `the backend's answer to ${sent.target} reached the client`).toBeGreaterThanOrEqual(0);
    expect(at, `the backend's answer to ${sent.target} came in order`).toBeGreaterThan(after);
    after = at;
    const answer = result.answers[at]!;
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({
      answeredBy: "backend",
      requestId: sent.requestId,
      target: sent.target,
    });
  }
}

/** A Berlin Group FORMAT_ERROR for malformed HTTP, as read from a raw connection. */
function expectMalformedRefusal(answer: Answer | undefined, status = 400): void {
  expect(answer, "a refusal for the malformed request").toBeDefined();
  expectRejected(
    { raw: "", status: answer!.status, headers: answer!.headers, body: answer!.body },
    { status, code: "FORMAT_ERROR", text: ["malformed HTTP request"] },
  );
}

// ---------------------------------------------------------------------------------------------
// What a malformed request looks like; each one reaches Node's parser (or Host check) only.

interface Malformed {
  readonly name: string;
  readonly bytes: string;
}

const MALFORMED: readonly Malformed[] = [
  { name: "missing Host", bytes: "GET /v1/accounts HTTP/1.1\r\nX-Request-ID: no-host\r\n\r\n" },
  { name: "bad request line (method)", bytes: "G@T /v1/accounts HTTP/1.1\r\nHost: localhost\r\n\r\n" },
  { name: "bad request line (version)", bytes: "GET /v1/accounts HTTP/1.1 x\r\nHost: localhost\r\n\r\n" },
  {
    name: "header value with a control character",
    bytes: "GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nX-Note: a\x01b\r\n\r\n",
  },
  {
    name: "CONNECT (a tunnel, not an API call)",
    bytes: "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n",
  },
  {
    name: "header line with a bare CR",
    bytes: "GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nX-Note: a\rb\r\n\r\n",
  },
];

/**
 * A busy client: writes `requests`, then keeps writing `more` for a while before it reads anything,
 * then reads until the gateway closes (or 5 s). A gateway that closes with input unread makes the
 * kernel reset the connection, which drops the answers the client has not read yet.
 */
async function busyClient(
  gw: TestGateway,
  requests: readonly string[],
  more: string,
): Promise<{ answers: Answer[]; raw: string }> {
  const socket = await rawConnect(gw);
  socket.on("error", () => {});
  socket.pause();
  for (const r of requests) socket.write(r);
  await sleep(150);
  for (let i = 0; i < 5 && !socket.destroyed; i++) {
    socket.write(more);
    await sleep(30);
  }
  let raw = "";
  socket.on("data", (chunk: Buffer) => {
    raw += chunk.toString("latin1");
  });
  await new Promise<void>((resolve) => {
    socket.once("close", () => resolve());
    setTimeout(resolve, 5_000).unref();
    socket.resume();
  });
  socket.destroy();
  return { answers: splitResponses(raw).answers, raw };
}

describe("pipelined requests on one connection", () => {
  const env = useGatewayAndBackend({ config: { verification: { maxBodyBytes: MAX_BODY } } });

  it.each([1, 2, 5])(
    "%i good requests → as many answers, in order, each the backend's own; the backend saw them one at a time",
    async (count) => {
      const { gw, backend } = env;
      // Earlier requests answer more slowly: answers out of order would show.
      const seen = answerEach(backend, (target) => 20 * (count - Number(target.split("-").pop())));
      const requests: Good[] = [];
      for (let i = 0; i < count; i++) requests.push(await good(gw, `acc-${i}`));
      const result = await pipeline(
        gw,
        requests.map((r) => r.bytes),
        { answers: count },
      );
      expect(result.answers.map((a) => a.headers["x-request-id"])).toEqual(requests.map((r) => r.requestId));
      expectInvariant(backend, result, requests);
      expect(seen.maxConcurrent, "requests the backend was answering at once").toBe(1);
      expect(result.closed).toBe(false);
      expect(result.rest).toBe("");
    },
  );

  it.each([
    ["Connection: close", { Connection: "close" }],
    ["a body over the limit by Content-Length", { "Content-Length": String(MAX_BODY + 1) }],
  ])(
    "a client that keeps writing after an answer that closes the connection (%s), and reads only then, still gets that answer",
    async (_what, closing) => {
      const { gw, backend } = env;
      answerEach(backend);
      const first = await good(gw, "acc-0", closing);
      const second = await good(gw, "acc-1");
      const { answers, raw } = await busyClient(gw, [first.bytes], second.bytes);
      expect(answers.length, raw.slice(0, 200)).toBe(1);
      expect(answers[0]!.headers["x-request-id"]).toBe(first.requestId);
      // Nothing behind the closing answer reached the backend.
      expect(backend.requests.map((r) => r.target).filter((t) => t.includes("acc-1"))).toEqual([]);
    },
  );

  /** How a POST's body is framed: by Content-Length (read whole, then sent) or chunked (streamed). */
  const FRAMINGS = [
    { framing: "Content-Length (read whole, then forwarded)", chunked: false },
    { framing: "chunked (streamed to the backend)", chunked: true },
  ] as const;

  /** A raw signed POST of `body`, framed by Content-Length or in two chunks. */
  async function rawPost(gw: TestGateway, target: string, body: string, chunked: boolean) {
    const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, method: "POST", target, body });
    const framing: Record<string, string> = chunked
      ? { "Transfer-Encoding": "chunked" }
      : { "Content-Length": String(Buffer.byteLength(body)) };
    const head = rawHead({ ...prepared, headers: { ...prepared.headers, ...framing } });
    const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    const half = Math.floor(body.length / 2);
    /** The body's bytes on the wire from `from` to `to` (chunked: each part its own chunk). */
    const part = (from: number, to: number) => (chunked ? chunk(body.slice(from, to)) : body.slice(from, to));
    return { head, part, half, end: chunked ? "0\r\n\r\n" : "" };
  }

  it.each(FRAMINGS)(
    "a busy client's answers before a request whose backend connection is reset (502) all arrive: $framing",
    async ({ chunked }) => {
      const { gw, backend } = env;
      answerEach(backend);
      const first = await good(gw, "acc-0");
      // A POST: its body stream must not take the client's socket down with the failed upstream call.
      const body = JSON.stringify({ instructedAmount: { amount: "1.00", currency: "NOK" } });
      const target = "/v1/payments/norwegian-domestic-credit-transfers/reset";
      const post = await rawPost(gw, target, body, chunked);
      const reset = post.head + post.part(0, post.half) + post.part(post.half, body.length) + post.end;
      const after = await good(gw, "acc-1");
      const { answers, raw } = await busyClient(gw, [first.bytes, reset], after.bytes);
      expect(
        answers.slice(0, 2).map((a) => a.status),
        raw.slice(0, 1200),
      ).toEqual([200, 502]);
      expect(answers[0]!.headers["x-request-id"]).toBe(first.requestId);
    },
  );

  it("[slow good, POST with Expect: 100-continue] → the interim 100 comes only after the first answer", async () => {
    const { gw, backend } = env;
    answerEach(backend, (target) => (target.endsWith("acc-0") ? 300 : 0));
    const first = await good(gw, "acc-0");
    const body = JSON.stringify({ instructedAmount: { amount: "1.00", currency: "NOK" } });
    const target = "/v1/payments/norwegian-domestic-credit-transfers";
    const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, method: "POST", target, body });
    const headers: Record<string, string> = {
      ...prepared.headers,
      "Content-Length": String(Buffer.byteLength(body)),
      Expect: "100-continue",
    };
    const payment: Good = {
      requestId: headers["X-Request-ID"]!,
      target,
      bytes: rawHead({ ...prepared, headers }),
    };
    const socket = await rawConnect(gw);
    socket.on("error", () => {});
    let raw = "";
    socket.on("data", (c: Buffer) => {
      raw += c.toString("latin1");
    });
    try {
      socket.write(first.bytes + payment.bytes);
      await sleep(100);
      expect(raw, "nothing is written while the first answer is in flight").toBe("");
      socket.write(body);
      for (let waited = 0; waited < 3_000 && splitResponses(raw).answers.length < 2; waited += 20)
        await sleep(20);
      const result: PipelineResult = { ...splitResponses(raw), closed: false, arrivals: [] };
      expectInvariant(backend, result, [first, payment]);
      const interim = raw.indexOf("HTTP/1.1 100 Continue");
      if (interim >= 0)
        expect(interim, "100 Continue after the first answer").toBeGreaterThan(raw.indexOf(first.requestId));
    } finally {
      socket.destroy();
    }
  });

  /** A request the checks refuse (the connection stays open): one defect on a signed request. */
  interface Refused {
    readonly name: string;
    readonly target?: string;
    readonly change: (headers: Record<string, string>) => Record<string, string>;
    readonly code: string;
  }

  const REFUSED: readonly Refused[] = [
    {
      name: "PSU-ID changed after signing",
      change: (h) => ({ ...h, "PSU-ID": "00000000-0000-4000-8000-000000000000" }),
      code: "SIGNATURE_INVALID",
    },
    { name: "Expect: the-moon", change: (h) => ({ ...h, Expect: "the-moon" }), code: "FORMAT_ERROR" },
    { name: "a psu_id header", change: (h) => ({ ...h, psu_id: "someone-else" }), code: "FORMAT_ERROR" },
    { name: "Connection: psu-id", change: (h) => ({ ...h, Connection: "psu-id" }), code: "FORMAT_ERROR" },
    {
      name: "an encoded slash in the path",
      target: "/v1/accounts/..%2Fpayments/x",
      change: (h) => h,
      code: "FORMAT_ERROR",
    },
  ];

  it.each(named(REFUSED))(
    "[good, refused by the checks (%s), good] → three answers in order; the refused one never reached the backend",
    async (_name, row) => {
      const { gw, backend } = env;
      answerEach(backend, (target) => (target.endsWith("acc-0") ? 100 : 0));
      const first = await good(gw, "acc-0");
      const refusedCall = await prepareSignedCall({
        signer: gw.pki.tppA.qseal,
        target: row.target ?? "/v1/accounts/acc-1",
      });
      const refusedId = refusedCall.headers["X-Request-ID"]!;
      const refused = rawHead({ ...refusedCall, headers: row.change(refusedCall.headers) });
      const third = await good(gw, "acc-2");
      const result = await pipeline(gw, [first.bytes, refused, third.bytes], { answers: 3 });
      expectInvariant(backend, result, [first, third]);
      expect(result.answers).toHaveLength(3);
      const answer = result.answers[1]!;
      expectRejected(
        { raw: "", status: answer.status, headers: answer.headers, body: answer.body },
        { status: 400, code: row.code, requestId: refusedId },
      );
      expect(result.answers[2]!.headers["x-request-id"]).toBe(third.requestId);
      expect(result.closed).toBe(false);
    },
  );

  /**
   * A FIN after pipelining is a half-close or a client gone, which the gateway cannot tell apart:
   * the answer in flight is still written (half-open), nothing behind it is dispatched.
   */
  it("[good] and the client half-closes → the answer still arrives", async () => {
    const { gw, backend } = env;
    answerEach(backend, () => 100);
    const only = await good(gw, "acc-0");
    const result = await pipeline(gw, [only.bytes], { halfClose: true });
    expectInvariant(backend, result, [only]);
    expect(result.answers).toHaveLength(1);
    expect(result.closed).toBe(true);
  });

  it("[good, good] and the client half-closes → the first is answered; the second is never forwarded", async () => {
    const { gw, backend } = env;
    answerEach(backend, () => 100);
    const first = await good(gw, "acc-0");
    const second = await good(gw, "acc-1");
    const result = await pipeline(gw, [first.bytes, second.bytes], { halfClose: true });
    await sleep(200);
    expectInvariant(backend, result, [first]);
    expect(result.answers).toHaveLength(1);
    expect(result.closed).toBe(true);
  });

  it.each(FRAMINGS)(
    "the client half-closes mid-body → the gateway answers and closes; the backend never gets the whole body: $framing",
    async ({ chunked }) => {
      const { gw, backend } = env;
      answerEach(backend);
      const body = JSON.stringify({ note: "x".repeat(MAX_BODY - 100) });
      const post = await rawPost(gw, "/v1/payments/norwegian-domestic-credit-transfers", body, chunked);
      const socket = await rawConnect(gw);
      socket.on("error", () => {});
      let raw = "";
      socket.on("data", (c: Buffer) => {
        raw += c.toString("latin1");
      });
      let closed = false;
      socket.on("close", () => {
        closed = true;
      });
      socket.write(post.head + post.part(0, 300));
      await sleep(100);
      socket.write(post.part(300, 600));
      await sleep(100);
      socket.end();
      for (let waited = 0; waited < 3_000 && !closed; waited += 50) await sleep(50);
      expect(closed, "the gateway closes a connection whose request can never complete").toBe(true);
      // The client is told why (400), either way. Read whole first, it never left for the backend;
      // streamed, its head did, and the backend's request is cut off before its last chunk.
      expect(parseRawResponse(raw).status).toBe(400);
      expect(raw).toContain("the connection was closed before the request's body ended");
      expect(backend.requests.length).toBe(chunked ? 1 : 0);
      for (const upstream of backend.requests) {
        await Promise.race([upstream.settled, sleep(3_000)]);
        expect(upstream.complete, "the backend never got the whole body").toBe(false);
      }
      socket.destroy();
    },
  );

  it("[slow good, good] and the client goes away during the first → the second is never forwarded", async () => {
    const { gw, backend } = env;
    answerEach(backend, () => 300);
    const first = await good(gw, "acc-0");
    const second = await good(gw, "acc-1");
    const socket = await rawConnect(gw);
    socket.on("error", () => {});
    socket.write(first.bytes + second.bytes);
    await backend.waitForRequests(1);
    socket.destroy();
    await sleep(600);
    expect(backend.requests.map((r) => r.headers["x-request-id"])).toEqual([first.requestId]);
  });

  /** Rows where an answer closes the connection: what is behind it is never forwarded. */
  interface Condemning {
    readonly name: string;
    /** The request in the middle, and whether it reaches the backend. */
    readonly middle: (gw: TestGateway) => Promise<{ bytes: string; forwarded?: Good }>;
    /** What the client reads for it. */
    readonly expectAnswer: (answer: Answer | undefined, middle: { forwarded?: Good }) => void;
  }

  const CONDEMNING: readonly Condemning[] = [
    {
      name: `413 by Content-Length over verification.maxBodyBytes (${MAX_BODY})`,
      middle: async (gw) => {
        const body = JSON.stringify({ note: "x".repeat(MAX_BODY) });
        const prepared = await prepareSignedCall({
          signer: gw.pki.tppA.qseal,
          method: "POST",
          target: "/v1/payments/norwegian-domestic-credit-transfers",
          body,
        });
        // The whole body is sent, so the request after it parses as a request of its own.
        return {
          bytes:
            rawHead({
              ...prepared,
              headers: { ...prepared.headers, "Content-Length": String(Buffer.byteLength(body)) },
            }) + body,
        };
      },
      expectAnswer: (answer) => {
        expect(answer, "the 413").toBeDefined();
        expectRejected(
          { raw: "", status: answer!.status, headers: answer!.headers, body: answer!.body },
          { status: 413, code: "PAYLOAD_TOO_LARGE", text: [`at most ${MAX_BODY}`] },
        );
        expect(answer!.headers.connection).toMatch(/close/i);
      },
    },
    {
      name: "502: the backend resets the connection",
      middle: async (gw) => {
        const reset = await good(gw, "acc-1/reset");
        return { bytes: reset.bytes, forwarded: reset };
      },
      expectAnswer: (answer, middle) => {
        expect(answer, "the 502").toBeDefined();
        expectRejected(
          { raw: "", status: answer!.status, headers: answer!.headers, body: answer!.body },
          { status: 502, code: "BAD_GATEWAY", requestId: middle.forwarded!.requestId },
        );
        expect(answer!.headers.connection).toMatch(/close/i);
      },
    },
    {
      name: "Connection: close",
      middle: async (gw) => {
        const last = await good(gw, "acc-1", { Connection: "close" });
        return { bytes: last.bytes, forwarded: last };
      },
      expectAnswer: (answer, middle) => {
        expect(answer?.status).toBe(200);
        expect(answer?.headers["x-request-id"]).toBe(middle.forwarded!.requestId);
        expect(answer?.headers.connection).toMatch(/close/i);
      },
    },
    {
      name: "missing Host",
      middle: async () => ({ bytes: "GET /v1/accounts/acc-1 HTTP/1.1\r\nX-Request-ID: no-host\r\n\r\n" }),
      expectAnswer: (answer) => {
        expectMalformedRefusal(answer);
        expect(answer!.headers.connection).toMatch(/close/i);
      },
    },
  ];

  it.each(named(CONDEMNING))(
    "[good, %s, good] → answer 1, then the closing answer; the third is never forwarded",
    async (_name, row) => {
      const { gw, backend } = env;
      answerEach(backend);
      const first = await good(gw, "acc-0");
      const middle = await row.middle(gw);
      const third = await good(gw, "acc-2");
      const result = await pipeline(gw, [first.bytes, middle.bytes, third.bytes]);
      // Anything dispatched late would show here.
      await sleep(200);
      expect(result.closed, "the gateway closes the connection after the closing answer").toBe(true);
      expectInvariant(backend, result, middle.forwarded ? [first, middle.forwarded] : [first]);
      row.expectAnswer(result.answers[1], middle);
      expect(result.answers, "nothing after the closing answer").toHaveLength(2);
      expect(result.rest).toBe("");
    },
  );

  it.each(named(MALFORMED))(
    "[good with a slow backend answer, %s] → the backend's answer first, then a Berlin Group 400",
    async (_name, row) => {
      const { gw, backend } = env;
      answerEach(backend, () => 300);
      const first = await good(gw, "acc-0");
      const result = await pipeline(gw, [first.bytes, row.bytes]);
      await sleep(100);
      expectInvariant(backend, result, [first]);
      expectMalformedRefusal(result.answers[1]);
      expect(result.answers).toHaveLength(2);
      expect(result.closed).toBe(true);
      // The refusal was not written while the first answer was in flight.
      expect(result.arrivals[0]!).toBeGreaterThanOrEqual(250);
    },
  );

  it.each(named(MALFORMED))(
    "[good, good, %s] with slow answers → both backend answers in order, then the 400",
    async (_name, row) => {
      const { gw, backend } = env;
      answerEach(backend, (target) => (target.endsWith("acc-0") ? 200 : 50));
      const first = await good(gw, "acc-0");
      const second = await good(gw, "acc-1");
      const result = await pipeline(gw, [first.bytes, second.bytes, row.bytes]);
      await sleep(100);
      expectInvariant(backend, result, [first, second]);
      expectMalformedRefusal(result.answers[2]);
      expect(result.answers).toHaveLength(3);
      expect(result.closed).toBe(true);
    },
  );

  it("[good, good with a 1 MB answer, CONNECT] → both answers whole, in order, then the 400", async () => {
    // Node detaches its socket plumbing on CONNECT (its 'drain' relay among it): an answer larger
    // than the socket takes at once waited for a drain that never came, and hung.
    const { gw, backend } = env;
    answerEach(backend, (target) => (target.endsWith("acc-0") ? 100 : 0));
    const first = await good(gw, "acc-0");
    const second = await good(gw, "acc-1/large");
    const tunnel = MALFORMED.find((row) => row.name.startsWith("CONNECT"))!;
    const result = await pipeline(gw, [first.bytes, second.bytes, tunnel.bytes]);
    expectInvariant(backend, result, [first, second]);
    expect(JSON.parse(result.answers[1]!.body).padding).toHaveLength(LARGE_ANSWER);
    expectMalformedRefusal(result.answers[2]);
    expect(result.answers).toHaveLength(3);
  });

  it("[good with a slow backend answer, 32 KB header] → the backend's answer, then a Berlin Group refusal", async () => {
    const { gw, backend } = env;
    answerEach(backend, () => 300);
    const first = await good(gw, "acc-0");
    const overflow = `GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(32 * 1024)}\r\n\r\n`;
    const result = await pipeline(gw, [first.bytes, overflow]);
    await sleep(100);
    expectInvariant(backend, result, [first]);
    expect(result.answers).toHaveLength(2);
    expectMalformedRefusal(result.answers[1], result.answers[1]?.status === 431 ? 431 : 400);
  });

  it.each(named(MALFORMED))(
    "a lone malformed request (%s) → the Berlin Group 400 body",
    async (_name, row) => {
      const { gw, backend } = env;
      answerEach(backend);
      const result = await pipeline(gw, [row.bytes]);
      expectMalformedRefusal(result.answers[0]);
      expect(result.answers).toHaveLength(1);
      expect(result.closed).toBe(true);
      expect(backend.requests).toHaveLength(0);
    },
  );

  it.each(named(MALFORMED))(
    "a client that never closes after the refusal (%s) does not hold the connection open",
    async (_name, row) => {
      const { gw } = env;
      // The gateway's side of this very connection (the only one being opened now).
      const serverSide = new Promise<TLSSocket>((resolve) =>
        gw.gateway.server.once("secureConnection", (s: TLSSocket) => resolve(s)),
      );
      const socket = await halfOpenConnect(gw);
      socket.on("error", () => {});
      let raw = "";
      socket.on("data", (c: Buffer) => {
        raw += c.toString("latin1");
      });
      const ended = new Promise<void>((resolve) => socket.once("end", () => resolve()));
      try {
        const gateway = await serverSide;
        const released = new Promise<boolean>((resolve) => {
          if (gateway.destroyed) resolve(true);
          gateway.once("close", () => resolve(true));
        });
        // Written, and never ended: the client keeps its side open after the gateway's FIN.
        socket.write(row.bytes);
        await ended;
        expectMalformedRefusal(splitResponses(raw).answers[0]);
        const outcome = await Promise.race([released, sleep(6_000).then(() => false)]);
        expect(outcome, "the gateway let go of the connection within 6 s").toBe(true);
      } finally {
        socket.destroy();
      }
    },
  );

  it("a 32 KB header → the Berlin Group body, and the backend saw nothing", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    const head = rawHead({ ...prepared, headers: { ...prepared.headers, "X-Big": "a".repeat(32 * 1024) } });
    const result = await pipeline(gw, [head]);
    const answer = result.answers[0];
    expect(answer, result.rest.slice(0, 200)).toBeDefined();
    // 400 or 431: either way in the Berlin Group shape.
    expect([400, 431]).toContain(answer!.status);
    expectMalformedRefusal(answer, answer!.status);
    expect(result.closed).toBe(true);
    expect(backend.requests).toHaveLength(0);
  });

  it("after all that, a fresh connection is served as usual", async () => {
    const { gw, backend } = env;
    answerEach(backend);
    const only = await good(gw, "acc-9");
    const result = await pipeline(gw, [only.bytes], { answers: 1 });
    expectInvariant(backend, result, [only]);
  });
});

describe("a CONNECT on a plain-HTTP listener (TLS ended in front of the gateway)", () => {
  const plain = useGatewayAndBackend({ tls: false });

  it("[good with a 1 MB answer, CONNECT] and a client that resets while it is written → the gateway stays up", async () => {
    // After a CONNECT Node no longer listens for the socket's errors: the reset was thrown, and
    // took the gateway (and every other client's request) down.
    const { gw, backend } = plain;
    answerEach(backend, () => 100);
    const first = await good(gw, "acc-0/large");
    const tunnel = MALFORMED.find((row) => row.name.startsWith("CONNECT"))!;
    const socket = await rawConnect(gw);
    socket.on("error", () => {});
    socket.pause();
    socket.write(first.bytes + tunnel.bytes);
    await sleep(300);
    // Unread input makes the kernel answer the close with a RST.
    socket.destroy();
    await sleep(200);
    backend.reset();
    answerEach(backend);
    const after = await good(gw, "acc-1");
    expectInvariant(backend, await pipeline(gw, [after.bytes], { answers: 1 }), [after]);
  });
});
