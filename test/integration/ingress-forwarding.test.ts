/**
 * What reaches the backend and what comes back: byte-exact requests, the verified TPP identity
 * attached (and forged copies stripped), hop-by-hop headers dropped, responses streamed back,
 * bodies refused while streaming (digest, size) without the backend ever getting them whole,
 * upstream failures (502/504), client aborts and replays.
 */

import { createHash, randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";
import { describe, expect, it } from "vitest";
import { computeDigestHeader, formatHttpDate } from "../../src/signature/index.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  expectRejected,
  prepareSignedCall,
  rawConnect,
  rawExchange,
  rawHead,
  send,
  signedCall,
  signManually,
  startTestGateway,
} from "../helpers/gateway-fixture.js";
import {
  type RecordedRequest,
  type RecordingBackend,
  startRecordingBackend,
} from "../helpers/recording-backend.js";

const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
const MAX_BODY = 256 * 1024;

/** A JSON document of about `bytes` bytes (ASCII). */
function bigJson(bytes: number, marker = "a"): string {
  const filler = marker.repeat(Math.max(0, bytes - 40));
  return JSON.stringify({ instructedAmount: { amount: "1.00" }, note: filler });
}

/** The body as a stream of `size`-byte chunks with a pause now and then (chunked transfer). */
function chunked(body: string | Buffer, size = 8 * 1024): Readable {
  const bytes = Buffer.from(body);
  return Readable.from(
    (async function* () {
      for (let at = 0; at < bytes.length; at += size) {
        if ((at / size) % 8 === 7) await sleep(1);
        yield bytes.subarray(at, at + size);
      }
    })(),
  );
}

async function settledWithin(recorded: RecordedRequest, ms = 3000): Promise<void> {
  await Promise.race([
    recorded.settled,
    sleep(ms).then(() => {
      throw new Error(`backend request ${recorded.method} ${recorded.target} did not end within ${ms} ms`);
    }),
  ]);
}

/** Every request the backend saw was cut off before its body was complete. */
async function noneComplete(backend: RecordingBackend, fullLength: number): Promise<void> {
  for (const q of backend.requests) {
    await settledWithin(q);
    expect(q.complete).toBe(false);
    expect(q.body.length).toBeLessThan(fullLength);
  }
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("forwarding to a live backend", () => {
  const env = useGatewayAndBackend({ config: { verification: { maxBodyBytes: MAX_BODY } } });

  it("a GET reaches the backend with method and path+query byte-exact and no body", async () => {
    const { gw, backend } = env;
    const target =
      "/v1/accounts/acc-1/transactions?bookingStatus=booked&dateFrom=2024-01-01&q=%C3%B8%20x&empty=";
    const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests).toHaveLength(1);
    const seen = backend.requests[0]!;
    expect(seen.method).toBe("GET");
    expect(seen.target).toBe(target);
    expect(seen.complete).toBe(true);
    expect(seen.body.length).toBe(0);
  });

  it("a POST reaches the backend with its body byte-exact and the signature headers intact", async () => {
    const { gw, backend } = env;
    const body = `{\n  "creditorName": "Åse Ødegård",\n  "remittance": "faktura \\u00e9 42",\n  "amount": "1.50"\n}\n`;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: `${PAYMENTS}?allowLogicalDuplicate=true`,
      body,
    });
    const r = await send(gw, "POST", prepared.target, prepared.headers, prepared.body);
    expect(r.status, r.text).toBe(200);
    expect(backend.requests).toHaveLength(1);
    const seen = backend.requests[0]!;
    expect(seen.method).toBe("POST");
    expect(seen.target).toBe(`${PAYMENTS}?allowLogicalDuplicate=true`);
    expect(seen.complete).toBe(true);
    expect(seen.body.equals(Buffer.from(body, "utf8"))).toBe(true);
    expect(seen.headers.digest).toBe(prepared.headers.Digest);
    expect(seen.headers.signature).toBe(prepared.headers.Signature);
    expect(seen.headers["x-request-id"]).toBe(prepared.headers["X-Request-ID"]);
    expect(seen.headers["tpp-signature-certificate"]).toBe(prepared.headers["TPP-Signature-Certificate"]);
    expect(seen.headers["content-type"]).toBe("application/json");
  });

  it("a large body streamed in chunks (chunked transfer) arrives byte-exact", async () => {
    const { gw, backend } = env;
    const body = bigJson(200 * 1024);
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body,
    });
    const r = await send(gw, "POST", PAYMENTS, prepared.headers, chunked(body));
    expect(r.status, r.text).toBe(200);
    const seen = backend.requests[0]!;
    expect(seen.complete).toBe(true);
    expect(seen.body.equals(Buffer.from(body))).toBe(true);
  });

  it("sets the identity headers from the verified certificate and register (TPP A, PSU present)", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: "{}",
    });
    expect(r.status, r.text).toBe(200);
    const h = backend.requests[0]!.headers;
    expect(h["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
    expect(decodeURIComponent(String(h["x-tpp-name"]))).toBe("Demo Payments AS");
    expect(String(h["x-tpp-roles"]).split(",").sort()).toEqual(["PSP_AI", "PSP_PI"]);
    expect(h["x-tpp-certificate-fingerprint"]).toBe(
      createHash("sha256").update(gw.pki.tppA.qseal.der).digest("hex"),
    );
    expect(h["x-psu-present"]).toBe("true");
  });

  it("x-psu-present is false without PSU-IP-Address; TPP B's roles are PSP_AI only", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, {
      signer: gw.pki.tppB.qseal,
      target: "/v1/accounts",
      tamper: ({ headers }) => {
        const { "PSU-IP-Address": _gone, ...rest } = headers;
        return { headers: rest };
      },
    });
    expect(r.status, r.text).toBe(200);
    const h = backend.requests[0]!.headers;
    expect(h["psu-ip-address"]).toBeUndefined();
    expect(h["x-psu-present"]).toBe("false");
    expect(h["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0002");
    expect(decodeURIComponent(String(h["x-tpp-name"]))).toBe("Demo Insight AS");
    expect(h["x-tpp-roles"]).toBe("PSP_AI");
    expect(h["x-tpp-certificate-fingerprint"]).toBe(
      createHash("sha256").update(gw.pki.tppB.qseal.der).digest("hex"),
    );
  });

  const forged = {
    "X-TPP-Organization-ID": "PSDNO-FSA-DEMO0001",
    "X-TPP-Name": "Forged Bank",
    "X-TPP-Roles": "PSP_AI,PSP_PI,PSP_IC,PSP_AS",
    "X-TPP-Certificate-Fingerprint": "00".repeat(32),
    "X-PSU-Present": "true",
    "X-SSL-Client-Cert": "forged",
  };
  const expectGenuineB = (h: RecordedRequest["headers"]) => {
    expect(h["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0002");
    expect(decodeURIComponent(String(h["x-tpp-name"]))).toBe("Demo Insight AS");
    expect(h["x-tpp-roles"]).toBe("PSP_AI");
    expect(h["x-tpp-certificate-fingerprint"]).toBe(
      createHash("sha256").update(env.gw.pki.tppB.qseal.der).digest("hex"),
    );
    expect(h["x-psu-present"]).toBe("false");
    expect(h["x-ssl-client-cert"]).toBeUndefined();
  };

  it("forged identity headers sent unsigned never reach the backend with the client's values", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, {
      signer: gw.pki.tppB.qseal,
      target: "/v1/accounts",
      headers: forged,
      tamper: ({ headers }) => {
        const { "PSU-IP-Address": _gone, ...rest } = headers;
        return { headers: rest };
      },
    });
    expect(r.status, r.text).toBe(200);
    expectGenuineB(backend.requests[0]!.headers);
  });

  it("forged identity headers covered by a valid signature are still replaced", async () => {
    const { gw, backend } = env;
    const headers = signManually(gw.pki.tppB.qseal, {
      method: "GET",
      target: "/v1/accounts",
      headers: {
        Date: formatHttpDate(Date.now()),
        "X-Request-ID": randomUUID(),
        "TPP-Redirect-URI": "https://tpp.example/cb",
        ...forged,
      },
      signed: [
        "(request-target)",
        "date",
        "x-request-id",
        "tpp-redirect-uri",
        "x-tpp-organization-id",
        "x-tpp-roles",
        "x-psu-present",
      ],
    });
    const r = await send(gw, "GET", "/v1/accounts", headers);
    expect(r.status, r.text).toBe(200);
    expectGenuineB(backend.requests[0]!.headers);
  });

  /**
   * GAP (hardening): look-alikes of the identity headers spelled with underscores pass through.
   * handler.ts strips exactly the configured names; Node accepts `_` in header names and forwards
   * `x_tpp_organization_id` untouched. CGI/WSGI/PHP-style backends map `-` and `_` to the same
   * variable (HTTP_X_TPP_ORGANIZATION_ID), so for them this is a forged identity; nginx drops such
   * headers by default (underscores_in_headers off) for this reason.
   */
  it("underscore look-alikes of the identity headers (x_tpp_organization_id) are not forwarded", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, {
      signer: gw.pki.tppB.qseal,
      target: "/v1/accounts",
      headers: { x_tpp_organization_id: "PSDNO-FSA-DEMO0001", x_tpp_roles: "PSP_AI,PSP_PI" },
    });
    expect(r.status, r.text).toBe(200);
    const h = backend.requests[0]!.headers;
    expect(h["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0002");
    expect(h.x_tpp_organization_id).toBeUndefined();
    expect(h.x_tpp_roles).toBeUndefined();
  });

  it("hop-by-hop headers (Connection, Keep-Alive, TE, Upgrade, Proxy-*, names listed in Connection) are not forwarded", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    const head = rawHead({
      ...prepared,
      headers: {
        ...prepared.headers,
        Connection: "keep-alive, X-Hop-Secret, X-Other-Hop",
        "Keep-Alive": "timeout=5, max=100",
        TE: "trailers",
        Upgrade: "websocket",
        "Proxy-Authorization": "Basic c2VjcmV0OnNlY3JldA==",
        "Proxy-Connection": "keep-alive",
        "X-Hop-Secret": "only-for-the-next-hop",
        "X-Other-Hop": "1",
        "X-End-To-End": "kept",
      },
    });
    const r = await rawExchange(gw, head);
    expect(r.status, r.body).toBe(200);
    const h = backend.requests[0]!.headers;
    for (const name of [
      "keep-alive",
      "te",
      "upgrade",
      "proxy-authorization",
      "proxy-connection",
      "x-hop-secret",
      "x-other-hop",
    ]) {
      expect(h[name], name).toBeUndefined();
    }
    // undici speaks its own Connection to the backend; the client's list must not leak into it.
    expect(String(h.connection ?? "")).not.toMatch(/hop/i);
    expect(h["x-end-to-end"]).toBe("kept");
  });

  it("the response streams back unchanged (status, headers, body chunks) with X-Request-ID echoed", async () => {
    const { gw, backend } = env;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    backend.behave((_req, res) => {
      res.writeHead(201, {
        "content-type": "application/json",
        "x-bank-trace": "trace-77",
        location: "/v1/payments/norwegian-domestic-credit-transfers/p-1",
        "set-cookie": ["a=1; Path=/", "b=2; Path=/"],
      });
      res.write('{"paymentId":"p-1",');
      void released.then(() => res.end('"transactionStatus":"RCVD"}'));
    });
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: "{}",
    });
    const response = await request(gw.url + PAYMENTS, {
      method: "POST",
      headers: prepared.headers,
      body: prepared.body,
      dispatcher: gw.client,
    });
    expect(response.statusCode).toBe(201);
    expect(response.headers["x-bank-trace"]).toBe("trace-77");
    expect(response.headers.location).toBe("/v1/payments/norwegian-domestic-credit-transfers/p-1");
    expect(response.headers["set-cookie"]).toEqual(["a=1; Path=/", "b=2; Path=/"]);
    expect(response.headers["x-request-id"]).toBe(prepared.headers["X-Request-ID"]);
    // The first part arrives while the backend is still holding the rest back: streamed, not buffered.
    const iterator = response.body[Symbol.asyncIterator]();
    const first = await Promise.race([
      iterator.next(),
      sleep(3000).then(() => {
        throw new Error("the first response chunk did not arrive while the backend held the rest back");
      }),
    ]);
    expect(Buffer.from(first.value as Buffer).toString()).toBe('{"paymentId":"p-1",');
    release();
    let rest = "";
    for (let next = await iterator.next(); !next.done; next = await iterator.next())
      rest += Buffer.from(next.value).toString();
    expect(rest).toBe('"transactionStatus":"RCVD"}');
  });

  it("a digest mismatch on a 200 KiB chunked body → 400 naming both digests; the backend never gets it whole", async () => {
    const { gw, backend } = env;
    const signedBody = bigJson(200 * 1024, "a");
    const sentBody = `${signedBody.slice(0, 150 * 1024)}b${signedBody.slice(150 * 1024 + 1)}`;
    expect(sentBody.length).toBe(signedBody.length);
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: signedBody,
    });
    const r = await send(gw, "POST", PAYMENTS, prepared.headers, chunked(sentBody));
    expectRejected(r, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: [
        `Digest header is ${computeDigestHeader(signedBody)}`,
        `the ${sentBody.length}-byte body hashes to ${computeDigestHeader(sentBody)}`,
      ],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    await noneComplete(backend, sentBody.length);
  });

  it("Content-Length above verification.maxBodyBytes → 413 before any body byte is read", async () => {
    const { gw, backend } = env;
    const body = bigJson(MAX_BODY + 1024);
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body,
    });
    const length = Buffer.byteLength(body);
    const head = rawHead({ ...prepared, headers: { ...prepared.headers, "Content-Length": String(length) } });
    const r = await rawExchange(gw, head);
    expectRejected(r, {
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
      text: [`the request body is ${length} bytes`, `at most ${MAX_BODY}`],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    expect(r.headers.connection).toBe("close");
    expect(backend.requests).toHaveLength(0);
  });

  it("a chunked body that grows past verification.maxBodyBytes → 413; the backend never gets it whole", async () => {
    const { gw, backend } = env;
    const body = bigJson(MAX_BODY + 64 * 1024);
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body,
    });
    // Its own client: the gateway closes the connection of a refused upload (see the test below).
    const client = new Agent({ connect: { ca: gw.pki.root.pem } });
    try {
      const response = await request(gw.url + PAYMENTS, {
        method: "POST",
        headers: prepared.headers,
        body: chunked(body),
        dispatcher: client,
      });
      const text = await response.body.text();
      expectRejected(
        { status: response.statusCode, headers: response.headers, text, json: JSON.parse(text) },
        {
          status: 413,
          code: "PAYLOAD_TOO_LARGE",
          text: [`exceeds ${MAX_BODY} bytes`],
          requestId: prepared.headers["X-Request-ID"]!,
        },
      );
      await noneComplete(backend, Buffer.byteLength(body));
    } finally {
      await client.destroy();
    }
  });

  /**
   * WAS A BUG, kept as a regression test: after refusing a body part-way (size limit here; the
   * character policy takes the same path), the gateway kept the client connection open although it
   * never read the rest of the body, and answered without `Connection: close`. The client stayed
   * blocked writing its body, and the connection leaked until requestTimeout, holding up close().
   */
  it("after a mid-body 413 the gateway closes the client connection", async () => {
    const { gw } = env;
    const body = Buffer.from(bigJson(MAX_BODY + 128 * 1024));
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body,
    });
    const socket = await rawConnect(gw);
    socket.on("error", () => {});
    let raw = "";
    let closed = false;
    socket.on("data", (c: Buffer) => {
      raw += c.toString("latin1");
    });
    socket.on("end", () => {
      closed = true;
    });
    socket.on("close", () => {
      closed = true;
    });
    try {
      socket.write(
        rawHead({ ...prepared, headers: { ...prepared.headers, "Transfer-Encoding": "chunked" } }),
      );
      for (let at = 0; at < body.length && !raw.includes("\r\n\r\n"); at += 16 * 1024) {
        const part = body.subarray(at, at + 16 * 1024);
        socket.write(`${part.length.toString(16)}\r\n`);
        socket.write(part);
        socket.write("\r\n");
        await sleep(2);
      }
      for (let waited = 0; waited < 1000 && !closed; waited += 50) await sleep(50);
      expect(raw).toMatch(/^HTTP\/1\.1 413 /);
      expect(raw.toLowerCase()).toContain("connection: close");
      expect(closed, "the gateway should close the connection whose body it stopped reading").toBe(true);
    } finally {
      socket.destroy();
    }
  });

  it("the backend resetting the connection → 502 BAD_GATEWAY", async () => {
    const { gw, backend } = env;
    backend.behave((req) => req.socket.destroy());
    const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    const r = await send(gw, "GET", "/v1/accounts", prepared.headers);
    expectRejected(r, {
      status: 502,
      code: "BAD_GATEWAY",
      text: ["the bank's backend could not be reached", "try again later"],
      requestId: prepared.headers["X-Request-ID"]!,
    });
  });

  it("a client that aborts mid-body aborts the upstream request, and the gateway keeps serving", async () => {
    const { gw, backend } = env;
    const body = bigJson(120 * 1024);
    const bytes = Buffer.from(body);
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body,
    });
    const socket = await rawConnect(gw);
    socket.on("error", () => {});
    socket.write(
      rawHead({ ...prepared, headers: { ...prepared.headers, "Content-Length": String(bytes.length) } }),
    );
    for (let at = 0; at < 48 * 1024; at += 8 * 1024) {
      socket.write(bytes.subarray(at, at + 8 * 1024));
      await sleep(5);
    }
    const [upstream] = await backend.waitForRequests(1);
    socket.destroy();
    await settledWithin(upstream!);
    expect(upstream!.complete).toBe(false);
    expect(upstream!.body.length).toBeLessThan(48 * 1024);

    const next = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: "{}",
    });
    expect(next.status, next.text).toBe(200);
    expect(backend.requests).toHaveLength(2);
    expect(backend.requests[1]!.complete).toBe(true);
  });

  it("the very same signed request sent twice: the second is refused as a replay; the backend saw one", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: "{}",
    });
    const first = await send(gw, "POST", PAYMENTS, prepared.headers, prepared.body);
    expect(first.status, first.text).toBe(200);
    const second = await send(gw, "POST", PAYMENTS, prepared.headers, prepared.body);
    expectRejected(second, {
      status: 400,
      code: "SIGNATURE_INVALID",
      text: ["already used", "sign every request anew"],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    expect(backend.requests).toHaveLength(1);
  });
});

describe("upstream failures", () => {
  it("a backend that is down → 502 BAD_GATEWAY naming the connection error", async () => {
    const port = await closedPort();
    const gw = await startTestGateway({ backendUrl: `http://127.0.0.1:${port}` });
    try {
      const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
      const r = await send(gw, "GET", "/v1/accounts", prepared.headers);
      expectRejected(r, {
        status: 502,
        code: "BAD_GATEWAY",
        text: ["could not be reached (ECONNREFUSED)"],
        requestId: prepared.headers["X-Request-ID"]!,
      });
    } finally {
      await gw.close();
    }
  });

  describe("with backend.timeoutSeconds: 1", () => {
    const env = useGatewayAndBackend({ config: { backend: { timeoutSeconds: 1 } } });

    it("a backend slower than the timeout → 504 GATEWAY_TIMEOUT, not before the timeout", async () => {
      const { gw, backend } = env;
      backend.behave((_req, res) => {
        // Answers long after the timeout: a 504 (not this 200) shows the gateway did not wait for it.
        setTimeout(() => {
          if (!res.destroyed) res.end("{}");
        }, 5000);
      });
      const prepared = await prepareSignedCall({ signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
      const started = performance.now();
      const r = await send(gw, "GET", "/v1/accounts", prepared.headers);
      const elapsed = performance.now() - started;
      expectRejected(r, {
        status: 504,
        code: "GATEWAY_TIMEOUT",
        text: ["did not answer within 1000 ms"],
        requestId: prepared.headers["X-Request-ID"]!,
      });
      // A timeout of 1 s cannot end the wait sooner (a lower bound holds on any machine).
      expect(elapsed).toBeGreaterThan(900);
    });

    it("a slow but steady client upload longer than the timeout is not blamed on the backend (no 504)", async () => {
      const { gw, backend } = env;
      const body = bigJson(16 * 1024);
      const bytes = Buffer.from(body);
      const prepared = await prepareSignedCall({
        signer: gw.pki.tppA.qseal,
        method: "POST",
        target: PAYMENTS,
        body,
      });
      const slow = Readable.from(
        (async function* () {
          for (let at = 0; at < bytes.length; at += 2048) {
            yield bytes.subarray(at, at + 2048);
            await sleep(250);
          }
        })(),
      );
      const r = await send(gw, "POST", PAYMENTS, prepared.headers, slow);
      expect(r.status, r.text).toBe(200);
      expect(backend.requests[0]!.complete).toBe(true);
    });
  });
});

describe("effective roles: the certificate's roles intersected with the register's", () => {
  const env = useGatewayAndBackend((pki) => {
    const register = join(pki.dir, "register-ai-only.json");
    writeFileSync(
      register,
      JSON.stringify({
        tpps: [
          {
            organizationIdentifier: pki.tppA.organizationId,
            name: pki.tppA.name,
            roles: ["PSP_AI"],
            status: "authorised",
          },
        ],
      }),
    );
    return { config: { register: { file: register } } };
  });

  it("TPP A's certificate says PSP_AI+PSP_PI but the register only PSP_AI: x-tpp-roles is PSP_AI", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
    expect(backend.requests[0]!.headers["x-tpp-roles"]).toBe("PSP_AI");
  });

  it("…and its payment initiation is refused with ROLE_INVALID", async () => {
    const { gw, backend } = env;
    const prepared = await prepareSignedCall({
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: PAYMENTS,
      body: "{}",
    });
    const r = await send(gw, "POST", PAYMENTS, prepared.headers, prepared.body);
    expectRejected(r, {
      status: 400,
      code: "ROLE_INVALID",
      text: ["needs the PSD2 role PSP_PI", "PSDNO-FSA-DEMO0001 only: PSP_AI"],
      requestId: prepared.headers["X-Request-ID"]!,
    });
    expect(backend.requests).toHaveLength(0);
  });
});

describe("shutdown", () => {
  /**
   * close() stops accepting, lets requests in flight finish, and cuts connections still open after
   * the grace period, so a client holding a half-sent request cannot keep the gateway from stopping.
   */
  it("gateway.close() finishes promptly although a client holds a half-sent request", async () => {
    const backend = await startRecordingBackend();
    const gw = await startTestGateway({ backendUrl: backend.url });
    const socket = await rawConnect(gw);
    socket.on("error", () => {});
    try {
      const prepared = await prepareSignedCall({
        signer: gw.pki.tppA.qseal,
        method: "POST",
        target: PAYMENTS,
        body: "{}",
      });
      // The headers promise 100 bytes of body; none follow.
      socket.write(rawHead({ ...prepared, headers: { ...prepared.headers, "Content-Length": "100" } }));
      await sleep(300);
      const closed = gw.gateway.close(500).then(() => "closed" as const);
      const outcome = await Promise.race([closed, sleep(2000).then(() => "still open after 2 s" as const)]);
      expect(outcome).toBe("closed");
    } finally {
      socket.destroy();
      gw.gateway.server.closeAllConnections();
      await gw.close().catch(() => {});
      await backend.close();
    }
  });
});
