/**
 * SPEC 1.3: requests are UTF-8, and a character the bank's systems cannot process (an emoji) is
 * answered with 400. The character policy (`verification.characterPolicy`) is applied to header
 * values before any other work and to the body while it streams, naming the character and its
 * byte offset; a refused body never reaches the backend whole.
 */

import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  type CallResult,
  expectRejected,
  prepareSignedCall,
  send,
  signedCall,
  type TestGateway,
} from "../helpers/gateway-fixture.js";
import type { RecordingBackend } from "../helpers/recording-backend.js";

const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
const GRIN = "\u{1F600}";
const SNOWMAN = "\u2603";

/** A header value carrying these characters as UTF-8 bytes (Node and undici move header bytes as latin1). */
const utf8Header = (text: string) => Buffer.from(text, "utf8").toString("latin1");

async function post(gw: TestGateway, body: string | Buffer): Promise<{ r: CallResult; requestId: string }> {
  const prepared = await prepareSignedCall({
    signer: gw.pki.tppA.qseal,
    method: "POST",
    target: PAYMENTS,
    body,
  });
  const r = await send(gw, "POST", PAYMENTS, prepared.headers, prepared.body);
  return { r, requestId: prepared.headers["X-Request-ID"]! };
}

async function noneComplete(backend: RecordingBackend, fullLength: number): Promise<void> {
  for (const q of backend.requests) {
    await Promise.race([q.settled, sleep(3000)]);
    expect(q.complete).toBe(false);
    expect(q.body.length).toBeLessThan(fullLength);
  }
}

describe("characterPolicy maxCodePoint 0xFFFF (no emoji)", () => {
  const env = useGatewayAndBackend({
    config: { verification: { characterPolicy: { maxCodePoint: 0xffff } } },
  });

  it("an emoji in the JSON body → 400 FORMAT_ERROR naming U+1F600 and its byte offset; the backend never gets it whole", async () => {
    const { gw, backend } = env;
    const prefix = '{"creditorName":"Kari Nordmann ';
    const body = `${prefix}${GRIN}","instructedAmount":{"amount":"1.00","currency":"NOK"}}`;
    const { r, requestId } = await post(gw, body);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: [
        "the JSON body holds the character U+1F600",
        `at byte ${Buffer.byteLength(prefix)}`,
        "remove or replace it",
      ],
      requestId,
    });
    await noneComplete(backend, Buffer.byteLength(body));
  });

  it("an emoji split across chunk boundaries deep in a streamed body → offset exact; the backend never gets it whole", async () => {
    const { gw, backend } = env;
    // 4 KiB chunks; the emoji's four bytes straddle the boundary at 20 * 4096.
    const prefix = `{"note":"${"x".repeat(20 * 4096 - 2 - 9)}`;
    const body = Buffer.from(`${prefix}${GRIN}${"y".repeat(40 * 1024)}"}`);
    const offset = Buffer.byteLength(prefix);
    expect(Math.floor(offset / 4096)).not.toBe(Math.floor((offset + 3) / 4096));
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body,
    });
    const client = new Agent({ connect: { ca: gw.pki.root.pem } });
    try {
      const stream = Readable.from(
        (async function* () {
          for (let at = 0; at < body.length; at += 4096) {
            yield body.subarray(at, at + 4096);
            if (at % (16 * 4096) === 0) await sleep(1);
          }
        })(),
      );
      const response = await request(gw.url + PAYMENTS, {
        method: "POST",
        headers: prepared.headers,
        body: stream,
        dispatcher: client,
      });
      const text = await response.body.text();
      expectRejected(
        { status: response.statusCode, headers: response.headers, text, json: JSON.parse(text) },
        {
          status: 400,
          code: "FORMAT_ERROR",
          text: ["U+1F600", `at byte ${offset}`],
          requestId: prepared.headers["X-Request-ID"]!,
        },
      );
      await noneComplete(backend, body.length);
    } finally {
      await client.destroy();
    }
  });

  it("an emoji in a header value (sent as UTF-8 bytes) → 400 FORMAT_ERROR naming the header, character and offset", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "PSU-User-Agent": utf8Header(`Mozilla ${GRIN}`) },
    });
    const r = await send(gw, "GET", "/v1/accounts", prepared.headers);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["header psu-user-agent holds the character U+1F600", "at byte 8"],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("invalid UTF-8 in the body → 400 FORMAT_ERROR with the byte offset", async () => {
    const { gw, backend } = env;
    const prefix = Buffer.from('{"creditorName":"K');
    const body = Buffer.concat([prefix, Buffer.from([0xc3, 0x28]), Buffer.from('ari"}')]);
    const { r, requestId } = await post(gw, body);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: [`the JSON body is not valid UTF-8 at byte ${prefix.length}`, "(0x28)", "must be UTF-8"],
      requestId,
    });
    await noneComplete(backend, body.length);
  });

  it("a body that ends inside a UTF-8 sequence → 400 FORMAT_ERROR naming where the sequence starts", async () => {
    const { gw, backend } = env;
    const prefix = Buffer.from('{"amount":"1.00","currency":"');
    const body = Buffer.concat([prefix, Buffer.from([0xe2, 0x82])]);
    const { r, requestId } = await post(gw, body);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: [`ends inside a UTF-8 sequence that starts at byte ${prefix.length}`],
      requestId,
    });
    await noneComplete(backend, body.length);
  });

  it("invalid UTF-8 in a header value → 400 FORMAT_ERROR", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "PSU-User-Agent": Buffer.from([0x41, 0xff, 0x42]).toString("latin1") },
    });
    const r = await send(gw, "GET", "/v1/accounts", prepared.headers);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["header psu-user-agent is not valid UTF-8 at byte 1 (0xff)"],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("characters inside the BMP (Å, Ø, €, ☃) pass, byte-exact", async () => {
    const { gw, backend } = env;
    const body = `{"creditorName":"Åse Ødegård","note":"€ 12 ${SNOWMAN}"}`;
    const { r } = await post(gw, body);
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.complete).toBe(true);
    expect(backend.requests[0]!.body.equals(Buffer.from(body))).toBe(true);
  });

  /**
   * GAP: the policy only sees raw bytes. JSON lets a TPP write any character as an escape: the
   * ASCII text `\ud83d\ude00` is U+1F600 once the backend parses the JSON, so the emoji reaches
   * the systems the policy protects (SPEC 1.3). Utf8Scanner (src/ingress/characters.ts) never
   * decodes `\u` escapes; the body-characters step (src/checks/steps.ts) applies it to the
   * raw body only.
   */
  it("an emoji written as a JSON escape (\\ud83d\\ude00) is refused too", async () => {
    const { gw, backend } = env;
    const body = '{"creditorName":"Kari \\ud83d\\ude00"}';
    expect(JSON.parse(body).creditorName).toBe(`Kari ${GRIN}`);
    const { r, requestId } = await post(gw, body);
    expectRejected(r, { status: 400, code: "FORMAT_ERROR", text: ["U+1F600"], requestId });
    expect(backend.requests.filter((q) => q.complete)).toHaveLength(0);
  });
});

describe("default (permissive) character policy", () => {
  const env = useGatewayAndBackend();

  it("an emoji in the body passes, byte-exact", async () => {
    const { gw, backend } = env;
    const body = `{"creditorName":"Kari ${GRIN}"}`;
    const { r } = await post(gw, body);
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.complete).toBe(true);
    expect(backend.requests[0]!.body.equals(Buffer.from(body))).toBe(true);
  });

  it("an emoji in a header value passes, its bytes unchanged", async () => {
    const { gw, backend } = env;
    const value = utf8Header(`Mozilla ${GRIN}`);
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "PSU-User-Agent": value },
    });
    expect(r.status, r.text).toBe(200);
    expect(
      Buffer.from(String(backend.requests[0]!.headers["psu-user-agent"]), "latin1").toString("utf8"),
    ).toBe(`Mozilla ${GRIN}`);
  });

  it("invalid UTF-8 is still refused (requests must be UTF-8)", async () => {
    const { gw, backend } = env;
    const body = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]);
    const { r, requestId } = await post(gw, body);
    expectRejected(r, { status: 400, code: "FORMAT_ERROR", text: ["not valid UTF-8 at byte 6"], requestId });
    await noneComplete(backend, body.length);
  });
});

describe("characterPolicy blockedRanges [[0x2600, 0x26FF]] (Miscellaneous Symbols)", () => {
  const env = useGatewayAndBackend({
    config: { verification: { characterPolicy: { blockedRanges: [[0x2600, 0x26ff]] } } },
  });

  it("a character in the blocked range in the body → 400 naming U+2603 and its offset", async () => {
    const { gw, backend } = env;
    const prefix = '{"note":"';
    const { r, requestId } = await post(gw, `${prefix}${SNOWMAN}"}`);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: [`the JSON body holds the character U+2603 '${SNOWMAN}' at byte ${prefix.length}`],
      requestId,
    });
    expect(backend.requests.filter((q) => q.complete)).toHaveLength(0);
  });

  it("a character in the blocked range in a header → 400", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts",
      headers: { "PSU-User-Agent": utf8Header(`ok ${SNOWMAN}`) },
    });
    const r = await send(gw, "GET", "/v1/accounts", prepared.headers);
    expectRejected(r, {
      status: 400,
      code: "FORMAT_ERROR",
      text: ["header psu-user-agent holds the character U+2603", "at byte 3"],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("characters outside the range (an emoji, U+26FF+1) pass", async () => {
    const { gw, backend } = env;
    const body = `{"note":"${GRIN} \u2700"}`;
    const { r } = await post(gw, body);
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.body.equals(Buffer.from(body))).toBe(true);
  });
});
