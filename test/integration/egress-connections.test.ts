/**
 * The application's connections to the egress listener, found wanting by the fuzz `egress-*`
 * families: Node's own refusals were bare (400, 431, 417 without a tppMessages body), and a
 * request the bank executed could lose its answer — pipelined behind bytes that are not HTTP,
 * behind `Connection: close`, behind a body over maxBodyBytes (then it should not have been sent
 * at all), or when the application half-closed after its request. Now every refusal is a Berlin
 * Group answer marked `psd2-gateway-origin: gateway`, pipelined requests reach the bank one at a
 * time, in order, and nothing behind an answer that closes the connection does.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type EgressGateway, startGateway } from "../../src/app.js";
import { validateEgressConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";
import { type ExchangeOutcome, RawClient } from "../fuzz/raw-client.js";
import { tppFiles } from "../helpers/egress-profiles.js";
import { testPki } from "../helpers/gateway-fixture.js";
import { answerOk, type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const MAX_BODY = 1024;

let backend: RecordingBackend;
let egress: EgressGateway;
let client: RawClient;

beforeAll(async () => {
  const pki = await testPki();
  backend = await startRecordingBackend();
  egress = await startGateway(
    validateEgressConfig({
      mode: "egress",
      listen: { port: 0 },
      admin: { enabled: false },
      maxBodyBytes: MAX_BODY,
      log: { level: "silent" },
      banks: [{ name: "bank", prefix: "/bank", url: backend.url, qseal: tppFiles(pki).qseal }],
    }),
    { logger: createLogger("silent") },
  );
  client = new RawClient({ host: "127.0.0.1", port: Number(new URL(egress.url).port) });
}, 60_000);

afterAll(async () => {
  await egress?.close(0);
  await backend?.close();
});

/** The bank answers after `ms`, so that what is pipelined behind a request arrives meanwhile. */
function bankAnswersAfter(ms: number): void {
  backend.behave((req, res, recorded) => setTimeout(() => answerOk(req, res, recorded), ms));
}

beforeEach(() => {
  backend.reset();
  bankAnswersAfter(30);
});

const get = (path: string, extra = "") =>
  `GET /bank${path} HTTP/1.1\r\nHost: localhost\r\nPSU-ID: PSU-1\r\n${extra}\r\n`;

let sentinels = 0;

/** Writes `raw` (and a request no profile serves, whose 404 ends the reading, unless `after`). */
async function send(raw: string, after?: "fin" | "read"): Promise<ExchangeOutcome> {
  const id = `/sentinel-${++sentinels}/`;
  return client.exchange({
    writes: [
      { data: Buffer.from(after ? raw : `${raw}GET ${id} HTTP/1.1\r\nHost: localhost\r\n\r\n`, "latin1") },
    ],
    ...(after ? { after } : { sentinelId: id, sentinelInBody: true }),
    deadlineMs: 5_000,
  });
}

function summary(outcome: ExchangeOutcome): string[] {
  return outcome.responses.map((r) => {
    const origin = r.headers["psd2-gateway-origin"] ?? "none";
    let code = "";
    try {
      code = JSON.parse(r.body.toString()).tppMessages?.[0]?.code ?? "";
    } catch {
      code = r.body.length === 0 ? "(no body)" : "(not JSON)";
    }
    return `${r.status} ${origin}${code ? ` ${code}` : ""}`;
  });
}

describe("what Node's parser refuses is a Berlin Group answer", () => {
  it.each([
    ["a space in a header name", get("/v1/accounts", "Bad Header: x\r\n")],
    ["a head over 16 KiB", get("/v1/accounts", `X-Big: ${"b".repeat(20_000)}\r\n`)],
    [
      "Content-Length with Transfer-Encoding",
      "POST /bank/v1/payments HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ],
    [
      "a chunk size that is not hex",
      "POST /bank/v1/payments HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    ],
    ["an Expect other than 100-continue", get("/v1/accounts", "Expect: 200-ok\r\n")],
  ])("%s: 400 FORMAT_ERROR from the gateway, nothing sent", async (_what, raw) => {
    const outcome = await send(raw);
    expect(summary(outcome)[0]).toBe("400 gateway FORMAT_ERROR");
    expect(backend.requests).toHaveLength(0);
  });
});

describe("pipelined requests", () => {
  it("reach the bank one at a time, in order, and are answered in order", async () => {
    let inFlight = 0;
    let most = 0;
    backend.behave((req, res, recorded) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        answerOk(req, res, recorded);
      }, 20);
    });
    const outcome = await send(get("/v1/accounts?n=1") + get("/v1/accounts?n=2") + get("/v1/accounts?n=3"));
    expect(summary(outcome)).toEqual(["200 bank", "200 bank", "200 bank", "404 gateway RESOURCE_UNKNOWN"]);
    expect(backend.requests.map((r) => r.target)).toEqual([
      "/v1/accounts?n=1",
      "/v1/accounts?n=2",
      "/v1/accounts?n=3",
    ]);
    expect(most).toBe(1);
  });

  it("before bytes that are not HTTP: answered first (the bank executed it), then the refusal", async () => {
    const outcome = await send(`${get("/v1/accounts")}GARBAGE\r\n\r\n`);
    expect(summary(outcome)).toEqual(["200 bank", "400 gateway FORMAT_ERROR"]);
    expect(backend.requests).toHaveLength(1);
  });

  it("before a CONNECT: an answer larger than the socket takes at once still arrives whole", async () => {
    // Node detaches its socket plumbing on CONNECT (its 'drain' relay among it): the queued
    // answer waited for a drain that never came, and the bank's executed request went unanswered.
    const large = "x".repeat(1024 * 1024);
    backend.behave((_req, res) =>
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(large);
      }, 30),
    );
    const outcome = await send(
      `${get("/v1/accounts?n=1")}${get("/v1/accounts?n=2")}CONNECT bank.example:443 HTTP/1.1\r\nHost: bank.example:443\r\n\r\n`,
      "read",
    );
    expect(summary(outcome)).toEqual([
      "200 bank (not JSON)",
      "200 bank (not JSON)",
      "400 gateway FORMAT_ERROR",
    ]);
    expect(outcome.responses.map((r) => r.body.length)).toEqual([
      large.length,
      large.length,
      expect.any(Number),
    ]);
    expect(backend.requests).toHaveLength(2);
  });

  it("behind Connection: close: the answer comes, nothing behind it reaches the bank", async () => {
    const outcome = await send(
      get("/v1/accounts?first", "Connection: close\r\n") + get("/v1/accounts?second"),
    );
    expect(summary(outcome)).toEqual(["200 bank"]);
    expect(backend.requests.map((r) => r.target)).toEqual(["/v1/accounts?first"]);
  });

  it("behind a body over maxBodyBytes: 413, nothing reaches the bank", async () => {
    const big = "x".repeat(2 * MAX_BODY);
    const chunkedBody = `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
    const outcome = await send(
      `POST /bank/v1/payments HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedBody}${get("/v1/accounts?behind")}`,
    );
    expect(summary(outcome)).toEqual(["413 gateway PAYLOAD_TOO_LARGE"]);
    await new Promise((r) => setTimeout(r, 100));
    expect(backend.requests).toHaveLength(0);
  });
});

describe("a FIN from the application (a half-close, or an application gone: TCP cannot tell)", () => {
  const payment = () => {
    const body = JSON.stringify({ instructedAmount: { currency: "NOK", amount: "12.50" } });
    return `POST /bank/v1/payments/sepa-credit-transfers HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  };

  it("before the request went out (while it was signed): nothing is sent, and a half-closed application reads why", async () => {
    const outcome = await send(payment(), "fin");
    expect(summary(outcome)).toEqual(["400 gateway FORMAT_ERROR"]);
    expect(outcome.responses[0]!.body.toString()).toContain("nothing was sent");
    await new Promise((r) => setTimeout(r, 100));
    expect(backend.requests).toHaveLength(0);
  });

  it("after the request went out: the answer of the request the bank executed still comes", async () => {
    bankAnswersAfter(400);
    const outcome = await client.exchange({
      writes: [{ data: Buffer.from(payment(), "latin1") }],
      after: "fin",
      afterMs: 200,
      deadlineMs: 5_000,
    });
    expect(summary(outcome)).toEqual(["200 bank"]);
    expect(backend.requests).toHaveLength(1);
  });
});
