/**
 * Integration fixture: a development PKI generated at test time (once per test file), a real
 * gateway over real TLS on loopback, and a TPP client that signs like a real one.
 */

import { sign as cryptoSign } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { type DevPki, generateDevPki, type IssuedCertificate } from "@psd2-gateway/dev-pki";
import { Agent, request } from "undici";
import { expect } from "vitest";
import { type IngressDependencies, type IngressGateway, startGateway } from "../../src/app.js";
import { validateConfig } from "../../src/config/load.js";
import type { GatewayConfig, GatewayConfigInput } from "../../src/config/schema.js";
import type { LimitStore } from "../../src/limits/store.js";
import { createLogger, type Logger } from "../../src/observability/logger.js";
import { buildKeyId, keyIdTargetFromDer, RequestSigner } from "../../src/signature/index.js";

let pkiPromise: Promise<DevPki> | undefined;

/** One PKI per test file (module instance): generating RSA keys is the slow part. */
export function testPki(): Promise<DevPki> {
  pkiPromise ??= generateDevPki(mkdtempSync(join(tmpdir(), "psd2-pki-")));
  return pkiPromise;
}

type DeepPartial<T> = {
  [K in keyof T]?: NonNullable<T[K]> extends readonly unknown[]
    ? T[K]
    : NonNullable<T[K]> extends object
      ? DeepPartial<NonNullable<T[K]>>
      : T[K];
};

export interface TestGateway {
  readonly gateway: IngressGateway;
  /** The validated configuration it started with (for `gateway.reconfigure`). */
  readonly config: GatewayConfig;
  readonly url: string;
  readonly pki: DevPki;
  /** A TLS client that trusts the demo root; `withClientCertificate` adds a QWAC. */
  readonly client: Agent;
  withClientCertificate(cert: IssuedCertificate): Agent;
  /** Closes the clients, then the gateway (connections still open after `graceMs` are cut). */
  close(graceMs?: number): Promise<void>;
}

export interface GatewayOptions {
  /** `sandbox` starts the demo bank through `startDemoBank` (cli/start.ts's, as `npm start` does). */
  readonly backendUrl: string;
  readonly startDemoBank?: IngressDependencies["startDemoBank"];
  readonly config?: DeepPartial<GatewayConfigInput>;
  readonly now?: () => number;
  readonly store?: LimitStore;
  readonly tls?: boolean;
  /** Another PKI than the file's shared one (one whose certificates name a test QTSP). */
  readonly pki?: DevPki;
  /** Where the gateway logs (silent by default): a test that reads access lines passes its own. */
  readonly logger?: Logger;
}

export async function startTestGateway(options: GatewayOptions): Promise<TestGateway> {
  const pki = options.pki ?? (await testPki());
  const tls = options.tls ?? true;
  const overrides = options.config ?? {};
  const listen: Record<string, unknown> = { host: "127.0.0.1", port: 0, ...(overrides.listen ?? {}) };
  if (tls)
    listen.tls = { cert: pki.paths.gatewayCert, key: pki.paths.gatewayKey, ...(overrides.listen?.tls ?? {}) };
  else delete listen.tls;
  const config = validateConfig({
    ...overrides,
    listen,
    backend: { url: options.backendUrl, timeoutSeconds: 5, ...(overrides.backend ?? {}) },
    trust: { caDir: pki.paths.trustDir, ...(overrides.trust ?? {}) },
    register: { file: pki.paths.register, ...(overrides.register ?? {}) },
    log: { level: "silent" },
    // Port 0: test files run in parallel, each gateway with its own admin listener.
    admin: { port: 0, ...(overrides.admin ?? {}) },
  });
  const gateway = await startGateway(config, {
    logger: options.logger ?? createLogger("silent"),
    ...(options.now ? { now: options.now } : {}),
    ...(options.store ? { store: options.store } : {}),
    ...(options.startDemoBank ? { startDemoBank: options.startDemoBank } : {}),
  });
  const agents: Agent[] = [];
  const makeAgent = (cert?: IssuedCertificate) => {
    const agent = new Agent({
      connect: { ca: pki.root.pem, ...(cert ? { cert: cert.pem, key: cert.keyPem } : {}) },
    });
    agents.push(agent);
    return agent;
  };
  const client = makeAgent();
  return {
    gateway,
    config,
    url: gateway.url,
    pki,
    client,
    withClientCertificate: makeAgent,
    async close(graceMs?: number) {
      await Promise.all(agents.map((a) => a.close()));
      await gateway.close(graceMs);
    },
  };
}

export interface SignedCall {
  readonly signer: IssuedCertificate;
  readonly method?: string;
  readonly target: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  /** Changes the signed request before it is sent. */
  readonly tamper?: (r: { headers: Record<string, string>; body?: string | Buffer }) => {
    headers: Record<string, string>;
    body?: string | Buffer;
  };
  readonly dispatcher?: Agent;
  readonly signRequestTarget?: boolean;
  readonly now?: number;
  /** Default headers to leave out before signing (PSU-IP-Address for a call without the PSU). */
  readonly omitHeaders?: readonly string[];
}

export interface CallResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly json: { tppMessages?: { category: string; code: string; text: string }[] } & Record<
    string,
    unknown
  >;
}

const signers = new WeakMap<IssuedCertificate, RequestSigner>();

export interface PreparedCall {
  readonly method: string;
  readonly target: string;
  /** Every header to send, signed ones included (after `tamper`). */
  readonly headers: Record<string, string>;
  readonly body?: string | Buffer;
}

/**
 * Signs the call as a TPP would (PSU-ID, TPP-Redirect-URI and JSON content type filled in) without
 * sending it: for replays, raw sockets and streamed bodies.
 */
export async function prepareSignedCall(call: SignedCall): Promise<PreparedCall> {
  const method = call.method ?? "GET";
  let signer = signers.get(call.signer);
  if (!signer || call.now !== undefined || call.signRequestTarget === false) {
    signer = new RequestSigner({
      privateKey: call.signer.privateKey,
      certificate: call.signer.der,
      ...(call.now !== undefined ? { clock: () => call.now! } : {}),
      ...(call.signRequestTarget === false ? { signRequestTarget: false } : {}),
    });
    if (call.now === undefined && call.signRequestTarget !== false) signers.set(call.signer, signer);
  }
  const base: Record<string, string> = {
    "TPP-Redirect-URI": "https://tpp.example/cb",
    "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
    "PSU-IP-Address": "192.0.2.10",
    ...(call.body !== undefined ? { "Content-Type": "application/json" } : {}),
    ...(call.headers ?? {}),
  };
  for (const name of call.omitHeaders ?? []) delete base[name];
  const signed = await signer.sign({
    method,
    target: call.target,
    headers: base,
    ...(call.body !== undefined ? { body: call.body } : {}),
  });
  let headers: Record<string, string> = { ...base, ...signed };
  let body = call.body;
  if (call.tamper) {
    const changed = call.tamper({ headers, ...(body !== undefined ? { body } : {}) });
    headers = changed.headers;
    body = changed.body;
  }
  return { method, target: call.target, headers, ...(body !== undefined ? { body } : {}) };
}

/** Signs the call as a TPP would (PSU-ID, TPP-Redirect-URI and JSON content type filled in) and sends it. */
export async function signedCall(gw: TestGateway, call: SignedCall): Promise<CallResult> {
  const prepared = await prepareSignedCall(call);
  return send(gw, prepared.method, prepared.target, prepared.headers, prepared.body, call.dispatcher);
}

export async function send(
  gw: TestGateway,
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: string | Buffer | Readable,
  dispatcher?: Agent,
): Promise<CallResult> {
  const response = await request(gw.url + target, {
    method: method as "GET",
    headers,
    ...(body !== undefined ? { body } : {}),
    dispatcher: dispatcher ?? gw.client,
  });
  const text = await response.body.text();
  let json = {};
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.statusCode, headers: response.headers, text, json };
}

export interface RawResponse {
  /** Everything the gateway wrote on the connection. */
  readonly raw: string;
  /** Status of the first response, when one arrived. */
  readonly status: number | undefined;
  /** Headers of the first response (lower-case names). */
  readonly headers: Record<string, string>;
  /** Body of the first response (by Content-Length), or the rest of the bytes. */
  readonly body: string;
}

/** Opens a raw connection (TLS when the gateway listens on https) trusting the demo root. */
export function rawConnect(gw: TestGateway): Promise<Socket> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = gw.url.startsWith("https:")
      ? tlsConnect({ host: "127.0.0.1", port: Number(port), ca: gw.pki.root.pem, servername: hostname }, () =>
          resolve(socket),
        )
      : netConnect({ host: "127.0.0.1", port: Number(port) }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Parses the first HTTP response in `raw`; `done` is true once its whole body is there. */
export function parseRawResponse(raw: string): RawResponse & { done: boolean } {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return { raw, status: undefined, headers: {}, body: "", done: false };
  const [statusLine, ...lines] = raw.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = raw.slice(end + 4);
  const result = { raw, status: Number.isNaN(status) ? undefined : status, headers };
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    let body = "";
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf("\r\n", at);
      if (lineEnd < 0) return { ...result, body, done: false };
      const size = Number.parseInt(rest.slice(at, lineEnd), 16);
      if (Number.isNaN(size)) return { ...result, body, done: false };
      if (size === 0) return { ...result, body, done: rest.indexOf("\r\n\r\n", lineEnd - 2) >= 0 };
      if (rest.length < lineEnd + 2 + size + 2) return { ...result, body, done: false };
      body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
      at = lineEnd + 2 + size + 2;
    }
  }
  const length = headers["content-length"] !== undefined ? Number(headers["content-length"]) : undefined;
  const body = length !== undefined ? rest.slice(0, length) : rest;
  const done = length !== undefined && rest.length >= length;
  return { ...result, body, done };
}

/**
 * Writes bytes on a fresh raw connection and reads until the first response is complete, the
 * gateway closes the connection, or `timeoutMs` passes. For inputs undici refuses to send.
 */
export async function rawExchange(
  gw: TestGateway,
  data: string | Buffer | readonly (string | Buffer)[],
  timeoutMs = 5000,
): Promise<RawResponse> {
  const socket = await rawConnect(gw);
  return new Promise((resolve) => {
    let raw = "";
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const { done: _done, ...response } = parseRawResponse(raw);
      resolve(response);
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      raw += chunk.toString("latin1");
      if (parseRawResponse(raw).done) finish();
    });
    socket.on("error", finish);
    socket.on("close", finish);
    for (const part of Array.isArray(data) ? data : [data]) socket.write(part);
  });
}

/** The request line and header block of a prepared call, for raw sockets. */
export function rawHead(
  call: { method: string; target: string; headers: Record<string, string> },
  host = "localhost",
): string {
  let head = `${call.method} ${call.target} HTTP/1.1\r\nHost: ${host}\r\n`;
  for (const [name, value] of Object.entries(call.headers)) head += `${name}: ${value}\r\n`;
  return `${head}\r\n`;
}

export interface ExpectedRejection {
  readonly status: number;
  readonly code: string;
  /** Fragments the tppMessages text must contain (strings) or match (regular expressions). */
  readonly text?: readonly (string | RegExp)[];
  /** The X-Request-ID the response must echo; `null`: the response must carry none. */
  readonly requestId?: string | null;
}

/** Asserts a gateway refusal: status, exactly one Berlin Group tppMessage, its code and text. */
export function expectRejected(r: CallResult | RawResponse, expected: ExpectedRejection): string {
  const bodyText = "text" in r ? r.text : r.body;
  expect(r.status, bodyText).toBe(expected.status);
  expect(String(r.headers["content-type"])).toMatch(/^application\/json/);
  const json = JSON.parse(bodyText) as unknown;
  expect(json).toEqual({
    tppMessages: [{ category: "ERROR", code: expected.code, text: expect.any(String) }],
  });
  const text = (json as { tppMessages: { text: string }[] }).tppMessages[0]!.text;
  for (const fragment of expected.text ?? []) {
    if (typeof fragment === "string") expect(text).toContain(fragment);
    else expect(text).toMatch(fragment);
  }
  if (expected.requestId === null) expect(r.headers["x-request-id"]).toBeUndefined();
  else if (expected.requestId !== undefined) expect(r.headers["x-request-id"]).toBe(expected.requestId);
  return text;
}

/**
 * Builds a Signature header by hand (node:crypto over our own signing string), listing exactly
 * `signed`: for requests RequestSigner would never produce (an eligible header left unsigned, a
 * non-eligible header signed). Returns the headers with Signature and TPP-Signature-Certificate added.
 */
export function signManually(
  signer: IssuedCertificate,
  call: { method: string; target: string; headers: Record<string, string>; signed: readonly string[] },
): Record<string, string> {
  const lower = new Map(Object.entries(call.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const lines = call.signed.map((name) => {
    if (name === "(request-target)") return `${name}: ${call.method.toLowerCase()} ${call.target}`;
    const value = lower.get(name);
    if (value === undefined) throw new Error(`signManually: no ${name} header to sign`);
    return `${name}: ${value}`;
  });
  const signature = cryptoSign("sha256", Buffer.from(lines.join("\n"), "utf8"), signer.privateKey).toString(
    "base64",
  );
  const keyId = buildKeyId(keyIdTargetFromDer(signer.der));
  return {
    ...call.headers,
    Signature: `keyId="${keyId}",algorithm="rsa-sha256",headers="${call.signed.join(" ")}",signature="${signature}"`,
    "TPP-Signature-Certificate": signer.headerValue,
  };
}
