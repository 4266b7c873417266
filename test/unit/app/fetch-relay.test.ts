/**
 * The primary's fetch relay against a real document server on loopback that counts what it is
 * asked: the sharing window, one fetch for concurrent asks, 304s judged by each worker's own
 * validators, errors passed on word for word, the bounds, SIGHUP's clear and the IPC asks it reads.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FETCH_MESSAGE, FetchRelay, ownBuffer, type RelayOutcome } from "../../../src/app/fetch-relay.js";
import { fetchDocument } from "../../../src/trust/http-fetch.js";
import { testPki } from "../../helpers/gateway-fixture.js";
import { startKeyDirectory } from "../../helpers/key-directory.js";

/** Per path: what is served (ETag = the body's text), how often it was asked and how it answered. */
interface Served {
  body: string;
  status?: number;
  /** Answers wait for this while set: asks made meanwhile are concurrent for sure. */
  gate?: Promise<void>;
}

let server: Server;
let base = "";
const documents = new Map<string, Served>();
const asked: { path: string; status: number }[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? "/";
    req.resume();
    req.on("end", async () => {
      const served = documents.get(path);
      await served?.gate;
      const etag = served ? `"${served.body}"` : undefined;
      const status = !served ? 404 : (served.status ?? (req.headers["if-none-match"] === etag ? 304 : 200));
      asked.push({ path, status });
      res.writeHead(status, etag ? { etag } : {});
      res.end(status === 200 ? served?.body : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  documents.clear();
  asked.length = 0;
});

const GET = { timeoutMs: 5_000, maxBytes: 1_024 };

/** A relay on a clock the test moves, its outcomes counted. */
function relayAt(start = 1_000_000, options: { maxEntries?: number; maxBytes?: number } = {}) {
  const clock = { now: start };
  const outcomes: RelayOutcome[] = [];
  const relay = new FetchRelay({ now: () => clock.now, onOutcome: (o) => outcomes.push(o), ...options });
  return { relay, clock, outcomes };
}

const text = (result: Awaited<ReturnType<FetchRelay["ask"]>>) =>
  result.status === "fresh" ? result.body.toString() : result.status;

describe("FetchRelay", () => {
  it("hands the kept copy to an ask within its sharing window, and fetches again (conditionally) past it", async () => {
    documents.set("/register.json", { body: "v1" });
    const { relay, clock, outcomes } = relayAt();
    const ask = () => relay.ask(`${base}/register.json`, { ...GET, shareForMs: 1_000 });
    expect(text(await ask())).toBe("v1");
    clock.now += 999;
    expect(text(await ask())).toBe("v1");
    expect(asked).toEqual([{ path: "/register.json", status: 200 }]);
    clock.now += 1;
    // Past the window: the primary asks with its own validators; the server has not changed it.
    expect(text(await ask())).toBe("v1");
    clock.now += 500;
    expect(text(await ask())).toBe("v1");
    expect(asked.map((a) => a.status)).toEqual([200, 304]);
    expect(outcomes).toEqual(["fetched", "shared", "not_modified", "shared"]);
    expect(relay.status()).toEqual([
      {
        url: `${base}/register.json`,
        method: "GET",
        fetchedAt: clock.now - 500,
        bytes: 2,
        asks: 4,
        upstreamFetches: 2,
      },
    ]);
  });

  it("fetches once for asks made while a fetch for the same request is under way", async () => {
    let open!: () => void;
    documents.set("/slow.crl", { body: "crl", gate: new Promise((resolve) => (open = resolve)) });
    const { relay, outcomes } = relayAt();
    const asks = [1, 2, 3].map(() => relay.ask(`${base}/slow.crl`, GET));
    open();
    expect((await Promise.all(asks)).map(text)).toEqual(["crl", "crl", "crl"]);
    expect(asked).toHaveLength(1);
    expect(outcomes.sort()).toEqual(["fetched", "shared", "shared"]);
  });

  it("tells asks apart by method, POST body and accept: an OCSP question is not another's answer", async () => {
    documents.set("/ocsp", { body: "answer" });
    const { relay } = relayAt();
    const ocsp = (body: string) => ({
      ...GET,
      shareForMs: 60_000,
      post: { body: Buffer.from(body), contentType: "application/ocsp-request" },
    });
    await relay.ask(`${base}/ocsp`, ocsp("certificate A"));
    await relay.ask(`${base}/ocsp`, ocsp("certificate A"));
    await relay.ask(`${base}/ocsp`, ocsp("certificate B"));
    await relay.ask(`${base}/ocsp`, { ...GET, shareForMs: 60_000 });
    await relay.ask(`${base}/ocsp`, { ...GET, shareForMs: 60_000, accept: "application/pkix-crl" });
    expect(asked).toHaveLength(4);
    expect(relay.status().map((s) => s.method)).toEqual(["POST", "POST", "GET", "GET"]);
  });

  it("answers not-modified by the asking worker's validators, whatever the primary asked upstream", async () => {
    documents.set("/list.xml", { body: "v2" });
    const { relay } = relayAt();
    const url = `${base}/list.xml`;
    // A worker that holds v2 from before (the primary has no copy: it fetches whole, then compares).
    const holder = await relay.ask(url, { ...GET, shareForMs: 60_000, validators: { etag: '"v2"' } });
    expect(holder).toEqual({ status: "not-modified" });
    // A worker holding v1 gets the bytes, from the kept copy.
    const behind = await relay.ask(url, { ...GET, shareForMs: 60_000, validators: { etag: '"v1"' } });
    expect(behind).toEqual({ status: "fresh", body: Buffer.from("v2"), etag: '"v2"' });
    expect(asked).toEqual([{ path: "/list.xml", status: 200 }]);
  });

  it("passes an upstream failure on with fetchDocument's own words, and keeps no copy of it", async () => {
    documents.set("/down", { body: "", status: 503 });
    const { relay, outcomes } = relayAt();
    const direct = await fetchDocument(`${base}/down`, GET).catch((e: Error) => e.message);
    expect(direct).toBe("HTTP 503");
    await expect(relay.ask(`${base}/down`, { ...GET, shareForMs: 60_000 })).rejects.toThrow(/^HTTP 503$/);
    await expect(relay.ask(`${base}/down`, { ...GET, shareForMs: 60_000 })).rejects.toThrow(/^HTTP 503$/);
    expect(asked).toHaveLength(3);
    expect(outcomes).toEqual(["failed", "failed"]);
    expect(relay.status()[0]).toMatchObject({ bytes: 0, lastError: "HTTP 503", upstreamFetches: 2 });
  });

  it("refuses a kept copy larger than the ask allows, as a fetch would", async () => {
    documents.set("/big", { body: "x".repeat(100) });
    const { relay } = relayAt();
    await relay.ask(`${base}/big`, { ...GET, shareForMs: 60_000 });
    await expect(relay.ask(`${base}/big`, { ...GET, maxBytes: 50, shareForMs: 60_000 })).rejects.toThrow(
      "more than the 50 bytes allowed",
    );
  });

  it.each([
    { bound: "entries", options: { maxEntries: 2 }, kept: ["/b", "/c"] },
    { bound: "bytes", options: { maxBytes: 250 }, kept: ["/b", "/c"] },
  ])("keeps at most its $bound: the least recently asked go first", async ({ options, kept }) => {
    for (const path of ["/a", "/b", "/c"]) documents.set(path, { body: path.repeat(50) });
    const { relay } = relayAt(0, options);
    for (const path of ["/a", "/b", "/c"]) await relay.ask(`${base}${path}`, { ...GET, shareForMs: 60_000 });
    expect(relay.status().map((s) => new URL(s.url).pathname)).toEqual(kept);
    // /a was dropped: asked again, it is fetched again.
    await relay.ask(`${base}/a`, { ...GET, shareForMs: 60_000 });
    expect(asked.filter((a) => a.path === "/a")).toHaveLength(2);
  });

  it("forgets every copy on clear (SIGHUP): the next ask fetches whole", async () => {
    documents.set("/register.json", { body: "v1" });
    const { relay } = relayAt();
    await relay.ask(`${base}/register.json`, { ...GET, shareForMs: 60_000 });
    relay.clear();
    expect(relay.status()).toEqual([]);
    await relay.ask(`${base}/register.json`, { ...GET, shareForMs: 60_000 });
    expect(asked.map((a) => a.status)).toEqual([200, 200]);
  });

  it("shows URLs without their credentials", async () => {
    documents.set("/secret", { body: "s" });
    const { relay } = relayAt();
    await relay.ask(`http://user:pass@${base.slice("http://".length)}/secret`, GET);
    expect(relay.status()[0]?.url).toBe(`${base}/secret`);
  });
});

describe("FetchRelay.answer: a worker's ask over IPC", () => {
  it("answers a well-formed ask under its id, a failure as its message", async () => {
    documents.set("/register.json", { body: "v1" });
    const { relay } = relayAt();
    const ok = await relay.answer({ type: FETCH_MESSAGE, id: 7, url: `${base}/register.json`, options: GET });
    expect(ok).toMatchObject({ type: FETCH_MESSAGE, id: 7, result: { status: "fresh" } });
    const failed = await relay.answer({ type: FETCH_MESSAGE, id: 8, url: `${base}/nothing`, options: GET });
    expect(failed).toEqual({ type: FETCH_MESSAGE, id: 8, error: "HTTP 404" });
  });

  it("tells a refusal by a bound from other failures: the worker's source counts it as such", async () => {
    documents.set("/big.crl", { body: "x".repeat(2_000) });
    const { relay } = relayAt();
    const answer = await relay.answer({
      type: FETCH_MESSAGE,
      id: 10,
      url: `${base}/big.crl`,
      options: { ...GET, maxBytes: 1_000 },
    });
    expect(answer).toEqual({
      type: FETCH_MESSAGE,
      id: 10,
      error: "more than the 1000 bytes allowed",
      refused: "size",
    });
  });

  it("reads an OCSP ask: a POST body of bytes, as structured clone delivers it", async () => {
    documents.set("/ocsp", { body: "answer" });
    const { relay } = relayAt();
    const post = {
      body: new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01]),
      contentType: "application/ocsp-request",
    };
    const answer = await relay.answer({
      type: FETCH_MESSAGE,
      id: 9,
      url: `${base}/ocsp`,
      options: { ...GET, post },
    });
    expect(answer).toMatchObject({ id: 9, result: { status: "fresh", body: Buffer.from("answer") } });
    expect(relay.status()).toMatchObject([{ method: "POST", asks: 1, upstreamFetches: 1 }]);
  });

  it("fetches an ask's https URL trusting the CA it names (a key directory's, keys.ca), and not without it", async () => {
    const directory = await startKeyDirectory(await testPki());
    try {
      directory.publish("/org/software.jwks", []);
      const url = `${directory.origin}/org/software.jwks`;
      const { relay } = relayAt();
      const trusted = await relay.answer({
        type: FETCH_MESSAGE,
        id: 11,
        url,
        options: { ...GET, ca: directory.ca },
      });
      expect(trusted).toMatchObject({
        id: 11,
        result: { status: "fresh", body: Buffer.from('{"keys":[]}') },
      });
      const untrusted = await relay.answer({ type: FETCH_MESSAGE, id: 12, url, options: GET });
      expect(untrusted).toMatchObject({ id: 12, error: expect.stringMatching(/certificate/i) });
    } finally {
      await directory.close();
    }
  });

  it.each([
    ["another kind of message", { type: "psd2-gateway:readyz", id: 1 }],
    [
      "a CA that is no text",
      { type: FETCH_MESSAGE, id: 1, url: "http://127.0.0.1/x", options: { ...GET, ca: 42 } },
    ],
    ["no id", { type: FETCH_MESSAGE, url: "http://127.0.0.1/x", options: GET }],
    ["a file URL", { type: FETCH_MESSAGE, id: 1, url: "file:///etc/passwd", options: GET }],
    ["no options", { type: FETCH_MESSAGE, id: 1, url: "http://127.0.0.1/x" }],
    ["no size bound", { type: FETCH_MESSAGE, id: 1, url: "http://127.0.0.1/x", options: { timeoutMs: 1 } }],
    [
      "a POST body that is no bytes",
      {
        type: FETCH_MESSAGE,
        id: 1,
        url: "http://127.0.0.1/x",
        options: { ...GET, post: { body: "text", contentType: "a/b" } },
      },
    ],
    ["not an object", "psd2-gateway:fetch"],
  ])("ignores %s", async (_name, message) => {
    const { relay } = relayAt();
    expect(await relay.answer(message)).toBeUndefined();
    expect(asked).toEqual([]);
  });
});

describe("ownBuffer", () => {
  it("gives bytes an ArrayBuffer of their own (the register loader transfers it)", () => {
    const pooled = Buffer.from("small"); // from Node's shared pool
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length);
    const own = ownBuffer(pooled);
    expect(own.toString()).toBe("small");
    expect(own.buffer.byteLength).toBe(5);
    const whole = new Uint8Array([1, 2, 3]);
    expect(ownBuffer(whole).buffer).toBe(whole.buffer);
  });
});
