/**
 * Issue 25, point 2: connections that hold the gateway without being served. Tried from outside,
 * 3,000 clients that finished the TLS handshake and sent nothing stayed open for 330 s and more.
 * Now each listener, ingress over real TLS and egress, closes what is not served in time (TLS
 * handshake, idle before the first request, head trickled past the headers timeout, idle between
 * requests, a client that takes none of its answer) and caps open connections in all and per client
 * address, each counted in `…connection_limit_total{limit}`. A connection whose request is being
 * served is never cut.
 */

import { connect as netConnect, type Socket } from "node:net";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressGateway, startGateway } from "../../src/app.js";
import { validateEgressConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";
import { tppFiles } from "../helpers/egress-profiles.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { prepareSignedCall, signedCall, testPki } from "../helpers/gateway-fixture.js";
import { Scrape } from "../helpers/prometheus-text.js";
import { answerOk, type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

/** Short limits, so that each one bites within a test. */
const LIMITS = {
  maxConnections: 8,
  maxConnectionsPerAddress: 3,
  tlsHandshakeTimeoutSeconds: 0.5,
  idleTimeoutSeconds: 0.5,
  headersTimeoutSeconds: 0.6,
  requestTimeoutSeconds: 1.2,
  keepAliveTimeoutSeconds: 0.5,
  // Linux wakes a blocked writer when about a third of its send buffer (a few MB) is free: a
  // client reading a few MB a second shows progress well inside this.
  sendTimeoutSeconds: 3,
};

/** Resolves with how long the socket stayed open (ms), or rejects after `withinMs`. */
function closedWithin(socket: Socket, withinMs: number): Promise<number> {
  const opened = Date.now();
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve(0);
    const timer = setTimeout(() => reject(new Error(`still open after ${withinMs} ms`)), withinMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(Date.now() - opened);
    });
  });
}

/** Everything the peer wrote until it closed. */
function readAll(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => socket.once("close", () => resolve(Buffer.concat(chunks).toString())));
}

/** Starts a request's head, then one byte every 150 ms (never idle, never whole); what came back. */
async function trickledHead(socket: Socket, target: string): Promise<string> {
  const answer = readAll(socket);
  socket.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\n`);
  const trickle = setInterval(() => socket.writable && socket.write("X"), 150);
  try {
    await closedWithin(socket, 4_000);
  } finally {
    clearInterval(trickle);
  }
  return answer;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function limitCount(registry: { metrics(): Promise<string> }, name: string, limit: string) {
  return new Scrape(await registry.metrics()).value(name, { limit });
}

describe("ingress over TLS", () => {
  const env = useGatewayAndBackend({ config: { listen: LIMITS } });
  const port = () => Number(new URL(env.gw.url).port);
  const registry = () => env.gw.gateway.metrics.registry;
  const counted = (limit: string) => limitCount(registry(), "psd2_gateway_connection_limit_total", limit);
  const open: Socket[] = [];
  afterAll(() => {
    for (const s of open) s.destroy();
  });

  /** A TLS connection from `localAddress` that completes its handshake and sends nothing. */
  function tlsClient(localAddress = "127.0.0.1"): Promise<TLSSocket> {
    return new Promise((resolve, reject) => {
      const tcp = netConnect({ host: "127.0.0.1", port: port(), localAddress });
      tcp.on("error", reject);
      const socket = tlsConnect({ socket: tcp, ca: env.gw.pki.root.pem, servername: "localhost" }, () =>
        resolve(socket),
      );
      open.push(socket);
      socket.once("error", reject);
    });
  }

  it("closes a connection that finished its TLS handshake and sent nothing, after idleTimeoutSeconds", async () => {
    const before = await counted("idle-timeout");
    const socket = await tlsClient();
    const held = await closedWithin(socket, 3_000);
    expect(held).toBeGreaterThanOrEqual(400);
    expect(await counted("idle-timeout")).toBe(before + 1);
  });

  it("closes a TCP connection that never starts its TLS handshake, after tlsHandshakeTimeoutSeconds", async () => {
    const before = await counted("tls-handshake-timeout");
    const socket = netConnect({ host: "127.0.0.1", port: port() });
    open.push(socket);
    socket.on("error", () => {});
    await closedWithin(socket, 3_000);
    expect(await counted("tls-handshake-timeout")).toBe(before + 1);
  });

  it("refuses a head trickled past headersTimeoutSeconds with a FORMAT_ERROR naming the timeout, and forwards nothing", async () => {
    env.backend.reset();
    const before = await counted("headers-timeout");
    const text = await trickledHead(await tlsClient(), "/v1/accounts");
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain('"code":"FORMAT_ERROR"');
    expect(text).toContain("headersTimeoutSeconds");
    expect(env.backend.requests).toHaveLength(0);
    expect(await counted("headers-timeout")).toBe(before + 1);
  });

  it("refuses a signed request whose body trickles past requestTimeoutSeconds; the backend never gets it whole", async () => {
    env.backend.reset();
    const before = await counted("request-timeout");
    const body = JSON.stringify({
      instructedAmount: { currency: "NOK", amount: "1.00" },
      pad: "x".repeat(60),
    });
    const call = await prepareSignedCall({
      signer: env.gw.pki.tppA.qseal,
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      body,
    });
    const head = Object.entries({ ...call.headers, Host: "localhost", "Content-Length": String(body.length) })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    const socket = await tlsClient();
    const answer = readAll(socket);
    socket.write(`POST ${call.target} HTTP/1.1\r\n${head}\r\n${body.slice(0, 10)}`);
    let at = 10;
    const trickle = setInterval(
      () => socket.writable && at < body.length - 1 && socket.write(body[at++]!),
      150,
    );
    try {
      await closedWithin(socket, 6_000);
    } finally {
      clearInterval(trickle);
    }
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain("requestTimeoutSeconds");
    expect(env.backend.requests.filter((r) => r.complete)).toHaveLength(0);
    expect(await counted("request-timeout")).toBe(before + 1);
  });

  it("closes a keep-alive connection idle between requests after keepAliveTimeoutSeconds", async () => {
    const before = await counted("keep-alive-timeout");
    const socket = await tlsClient();
    const answer = readAll(socket);
    socket.write("GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\n\r\n");
    const held = await closedWithin(socket, 4_000);
    expect(await answer).toMatch(/^HTTP\/1\.1 400 /); // unsigned: refused, but answered
    expect(held).toBeGreaterThanOrEqual(400);
    expect(await counted("keep-alive-timeout")).toBe(before + 1);
  });

  it("caps connections per client address and in all, closing the extra ones at accept; the rest are served", async () => {
    const beforePerAddress = await counted("max-connections-per-address");
    const beforeTotal = await counted("max-connections");
    const held: TLSSocket[] = [];
    // Quickly, in batches: each would be closed by the idle timeout after 0.5 s.
    held.push(...(await Promise.all([1, 2, 3].map(() => tlsClient("127.0.0.1")))));
    await expect(tlsClient("127.0.0.1")).rejects.toThrow();
    expect(await counted("max-connections-per-address")).toBe(beforePerAddress + 1);
    // Another address still gets in, up to the total.
    held.push(...(await Promise.all([1, 2, 3].map(() => tlsClient("127.0.0.2")))));
    held.push(...(await Promise.all([1, 2].map(() => tlsClient("127.0.0.3")))));
    await expect(tlsClient("127.0.0.4")).rejects.toThrow();
    expect(await counted("max-connections")).toBe(beforeTotal + 1);
    for (const s of held) s.destroy();
    await sleep(50);
    // Once they have closed, the address is served again.
    const again = await tlsClient("127.0.0.1");
    again.destroy();
  });

  it("never cuts a request being served: a backend answering after 3 idle timeouts still answers", async () => {
    env.backend.behave((req, res, recorded) => setTimeout(() => answerOk(req, res, recorded), 1_600));
    try {
      const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
      expect(r.status).toBe(200);
    } finally {
      env.backend.behave(answerOk);
    }
  });

  it("still answers an Upgrade request as a plain one (the guard adds no listener that would change that)", async () => {
    const socket = await tlsClient();
    const answer = readAll(socket);
    socket.end(
      "GET /v1/accounts HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    );
    await closedWithin(socket, 3_000);
    // Unsigned: refused by the chain's `dialect` step, as a plain request would be.
    expect(await answer).toMatch(/^HTTP\/1\.1 400 [\s\S]*"code":"SIGNATURE_MISSING"/);
  });

  /** A backend answer far larger than the socket buffers between it and a client that stops reading. */
  const LARGE = Buffer.alloc(48 * 1024 * 1024, "x");

  /** Sends a signed GET on a fresh TLS connection whose answer the backend makes LARGE; the socket and what the backend saw. */
  async function largeAnswer(): Promise<{ socket: TLSSocket; backendCut: Promise<boolean> }> {
    let cut!: (value: boolean) => void;
    const backendCut = new Promise<boolean>((resolve) => (cut = resolve));
    env.backend.behave((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": LARGE.length });
      res.end(LARGE);
      res.once("close", () => cut(!res.writableFinished));
    });
    const call = await prepareSignedCall({ signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
    const head = Object.entries({ ...call.headers, Host: "localhost" })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    const socket = await tlsClient();
    socket.write(`GET ${call.target} HTTP/1.1\r\n${head}\r\n`);
    return { socket, backendCut };
  }

  it("closes a connection whose client takes none of its answer for sendTimeoutSeconds, and aborts the backend's response", async () => {
    env.backend.reset();
    const before = await counted("send-timeout");
    const { socket, backendCut } = await largeAnswer();
    socket.pause(); // never reads: the buffers fill and the gateway's writes stop completing
    let received = 0;
    socket.on("data", (chunk: Buffer) => (received += chunk.length));
    // The gateway gives up on the client and aborts the backend's response...
    expect(await backendCut).toBe(true);
    expect(await counted("send-timeout")).toBe(before + 1);
    await sleep(100);
    const scrape = new Scrape(await registry().metrics());
    expect(scrape.value("psd2_gateway_backend_requests", { state: "in-flight" })).toBe(0);
    // ...and the client, reading again, gets what the buffers held, then the end: a cut answer.
    socket.resume();
    await closedWithin(socket, 8_000);
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(LARGE.length);
  });

  it("does not cut a client that reads in bursts, for longer than sendTimeoutSeconds in all", async () => {
    env.backend.reset();
    const before = await counted("send-timeout");
    const { socket } = await largeAnswer();
    let received = 0;
    let budget = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
      budget -= chunk.length;
      if (budget <= 0) socket.pause();
    });
    socket.pause();
    // Takes 1 MB every 400 ms: each pause is shorter than the timeout, the whole far longer.
    const bursts = setInterval(() => {
      budget = 1024 * 1024;
      socket.resume();
    }, 400);
    try {
      await sleep(7_000);
      expect(socket.destroyed).toBe(false);
      expect(received).toBeGreaterThan(0);
      expect(await counted("send-timeout")).toBe(before);
    } finally {
      clearInterval(bursts);
      socket.destroy();
    }
  });

  it("reports open connections", async () => {
    const socket = await tlsClient("127.0.0.5");
    const scrape = new Scrape(await registry().metrics());
    expect(scrape.value("psd2_gateway_connections_open")).toBeGreaterThanOrEqual(1);
    socket.destroy();
  });
});

describe("egress", () => {
  let bank: RecordingBackend;
  let egress: EgressGateway;
  const counted = (limit: string) =>
    limitCount(egress.metrics.registry, "psd2_gateway_egress_connection_limit_total", limit);
  const port = () => Number(new URL(egress.url).port);

  beforeAll(async () => {
    const pki = await testPki();
    bank = await startRecordingBackend();
    egress = await startGateway(
      validateEgressConfig({
        mode: "egress",
        listen: { port: 0, ...LIMITS },
        admin: { enabled: false },
        log: { level: "silent" },
        banks: [{ name: "bank", prefix: "/bank", url: bank.url, qseal: tppFiles(pki).qseal }],
      }),
      { logger: createLogger("silent") },
    );
  }, 60_000);
  afterAll(async () => {
    await egress?.close(0);
    await bank?.close();
  });

  const client = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = netConnect({ host: "127.0.0.1", port: port() }, () => resolve(socket));
      socket.once("error", reject);
    });

  it("closes an application connection that sends nothing, after idleTimeoutSeconds", async () => {
    const before = await counted("idle-timeout");
    await closedWithin(await client(), 3_000);
    expect(await counted("idle-timeout")).toBe(before + 1);
  });

  it("refuses a head trickled past headersTimeoutSeconds, marked as the gateway's answer", async () => {
    const text = await trickledHead(await client(), "/bank/v1/accounts");
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain("psd2-gateway-origin: gateway");
    expect(text).toContain("headersTimeoutSeconds");
    expect(bank.requests).toHaveLength(0);
  });

  it("caps connections per address", async () => {
    const before = await counted("max-connections-per-address");
    const held = await Promise.all([1, 2, 3].map(() => client()));
    const extra = await client(); // TCP accepts it; the gateway closes it at once
    await closedWithin(extra, 1_000);
    expect(await counted("max-connections-per-address")).toBe(before + 1);
    for (const s of held) s.destroy();
    await sleep(50);
  });

  it("still serves, and never cuts a request the bank takes long over", async () => {
    bank.behave((req, res, recorded) => setTimeout(() => answerOk(req, res, recorded), 1_600));
    const r = await request(`${egress.url}/bank/v1/accounts`, { headers: { "psu-id": "PSU-1" } });
    expect(r.statusCode).toBe(200);
    await r.body.text();
  });
});
