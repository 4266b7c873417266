/**
 * The proxies under test, one per process so that their CPU can be measured apart from the
 * backend's: a bare http-proxy pass-through (the baseline to beat), a bare undici pass-through
 * (the ceiling), `undici-verify` (the same plus the least a verifying proxy must do: the reference
 * build of the 2026-11-22 anchor measurements' "undici + full verification"), and the gateway with full
 * verification. Behind TLS (bench/tls.ts), with the dev gateway certificate from `pkiDir`:
 * `undici-tls` (bare undici behind Node's https server),
 * `undici-tls-data` (the same with the gateway listener's no-op 'data' listener on each TLS socket,
 * src/listener/listener.ts), `undici-verify-tls` and `undici-verify-head-tls` (the verifying
 * pass-throughs behind Node's https server: the ceiling of any proxy that verifies in Node), `gateway-tls`
 * and `gateway-mtls` (the QWAC requested, `request`).
 */

import { createHash, type KeyObject, randomBytes, verify, X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { Session } from "node:inspector";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GCProfiler, getHeapStatistics } from "node:v8";
import httpProxy from "http-proxy";
import { Pool } from "undici";
import { startGateway } from "../../src/app.js";
import { createLogger } from "../../src/observability/logger.js";
import { benchGatewayConfig } from "./gateway-config.js";

const [mode, backendUrl, pkiDir, redisUrl] = process.argv.slice(2) as [
  string,
  string,
  string,
  string | undefined,
];

function ready(port: number) {
  process.send?.({ ready: port });
}

/** The dev gateway certificate (with its issuing CA) and key, as the gateway's `listen.tls` names them. */
function tlsMaterial() {
  return { cert: readFileSync(`${pkiDir}/gateway.pem`), key: readFileSync(`${pkiDir}/gateway.key.pem`) };
}

/**
 * The head the gateway sends upstream on top of the client's, with values of the same length: its
 * identity (5), forwarding (6, the defaults of `backend.forwardedHeaders`) and trace (1) headers,
 * the new span id made per request as the gateway makes it.
 */
function gatewayHead(req: IncomingMessage, out: string[]): void {
  const peer = req.socket.remoteAddress ?? "";
  const host = req.headers.host ?? "";
  out.push(
    "x-tpp-organization-id",
    "PSDNO-FSA-123456789",
    "x-tpp-name",
    "Development%20TPP%20A",
    "x-tpp-roles",
    "PSP_AI,PSP_PI",
    "x-tpp-certificate-fingerprint",
    "3f0a8ad6b1c1f4a0a3b0e5f5c8d3e1a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3",
    "x-psu-present",
    "true",
    "x-forwarded-for",
    peer,
    "x-real-ip",
    peer,
    "x-forwarded-proto",
    "http",
    "x-forwarded-host",
    host,
    "x-forwarded-port",
    String(req.socket.localPort ?? ""),
    "forwarded",
    `for=${peer};host=${host};proto=http`,
    "traceparent",
    `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`,
  );
}

/**
 * Bare undici `Pool.dispatch` pass-through: the request streamed to the backend, the answer
 * streamed back. With `withGatewayHead`, the head goes as the gateway's does (the client's headers
 * as name/value pairs, then gatewayHead's) and the answer carries X-Request-ID, as the gateway's.
 */
function undiciPassThrough(
  backendUrl: string,
  withGatewayHead = false,
): (req: IncomingMessage, res: ServerResponse, body?: Buffer) => void {
  const pool = new Pool(backendUrl, { connections: 128 });
  const headersOf = (req: IncomingMessage): Record<string, string> | string[] => {
    if (withGatewayHead) {
      const list: string[] = [];
      for (const name in req.headers)
        if (name !== "connection" && name !== "keep-alive" && name !== "host")
          list.push(name, req.headers[name] as string);
      gatewayHead(req, list);
      return list;
    }
    // Hop-by-hop headers stay on this hop (RFC 9110 7.6.1), as nginx and the gateway drop them: a
    // client's `Connection: close` would otherwise close the pooled backend connection too.
    const { connection: _connection, "keep-alive": _keepAlive, ...headers } = req.headers;
    return headers as Record<string, string>;
  };
  return (req: IncomingMessage, res: ServerResponse, body?: Buffer) => {
    const requestId = withGatewayHead ? req.headers["x-request-id"] : undefined;
    pool.dispatch(
      {
        path: req.url ?? "/",
        method: req.method ?? "GET",
        headers: headersOf(req),
        body: body ?? (req.method === "GET" ? null : req),
      },
      {
        onRequestStart() {},
        onResponseStart(_c, status, headers) {
          if (requestId !== undefined) headers["x-request-id"] = requestId;
          res.writeHead(status, headers as Record<string, string>);
        },
        onResponseData(c, chunk) {
          if (!res.write(chunk)) c.pause();
        },
        onResponseEnd() {
          res.end();
        },
        onResponseError() {
          res.destroy();
        },
      },
    );
  };
}

/** SHA-256 of zero bytes, as a body-less request's Digest carries it. */
const EMPTY_DIGEST = `SHA-256=${createHash("sha256").digest("base64")}`;
const SIGNATURE_PARAM = /(\w+)="([^"]*)"/g;

/**
 * The verification a proxy cannot do without, and nothing else: Date within the window, Digest
 * over the body, the Signature header's parameters, the signing string from the listed headers and
 * one RSA verify with the certificate's public key (kept per certificate header). No trust chain,
 * register, roles, replay, character policy, metrics or log. What the issue calls "one RSA verify
 * on top": the same-run ceiling for a gateway that verifies every request.
 */
function undiciVerifyingPassThrough(backendUrl: string, withGatewayHead = false): RequestListener {
  const pass = undiciPassThrough(backendUrl, withGatewayHead);
  const keys = new Map<string, KeyObject>();
  const refuse = (res: ServerResponse, why: string) => {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ tppMessages: [{ category: "ERROR", code: "SIGNATURE_INVALID", text: why }] }));
  };
  const check = (req: IncomingMessage, digest: string): string | undefined => {
    const h = req.headers;
    if (Math.abs(Date.parse(h.date ?? "") - Date.now()) > 3_600_000) return "date";
    if (h.digest !== digest) return "digest";
    const params: Record<string, string> = {};
    for (const m of ((h.signature as string | undefined) ?? "").matchAll(SIGNATURE_PARAM))
      params[m[1]!] = m[2]!;
    const certificate = (h["tpp-signature-certificate"] as string | undefined) ?? "";
    let key = keys.get(certificate);
    if (!key) {
      key = new X509Certificate(Buffer.from(certificate, "base64")).publicKey;
      keys.set(certificate, key);
    }
    const signingString = (params.headers ?? "")
      .split(" ")
      .map((name) =>
        name === "(request-target)"
          ? `(request-target): ${req.method!.toLowerCase()} ${req.url}`
          : `${name}: ${h[name] as string}`,
      )
      .join("\n");
    const ok = verify(
      "sha256",
      Buffer.from(signingString, "latin1"),
      key,
      Buffer.from(params.signature ?? "", "base64"),
    );
    return ok ? undefined : "signature";
  };
  return (req, res) => {
    if (req.method === "GET") {
      const failed = check(req, EMPTY_DIGEST);
      return failed ? refuse(res, failed) : pass(req, res);
    }
    // The body is read whole to be hashed, then sent on (the anchors' build did the same).
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const failed = check(req, `SHA-256=${createHash("sha256").update(body).digest("base64")}`);
      if (failed) return refuse(res, failed);
      pass(req, res, body);
    });
  };
}

async function main() {
  if (mode === "http-proxy" || mode === "http-proxy-keepalive") {
    // Bare http-proxy as usually deployed opens a connection per request; with a keep-alive agent it is faster.
    const agent =
      mode === "http-proxy-keepalive"
        ? new (await import("node:http")).Agent({ keepAlive: true, maxSockets: 128 })
        : undefined;
    const proxy = httpProxy.createProxyServer({ target: backendUrl, ...(agent ? { agent } : {}) });
    const server = createServer((req, res) => proxy.web(req, res));
    server.keepAliveTimeout = 60_000;
    server.listen(0, "127.0.0.1", () => ready((server.address() as AddressInfo).port));
  } else if (mode.startsWith("undici")) {
    const listener: RequestListener = mode.startsWith("undici-verify")
      ? undiciVerifyingPassThrough(backendUrl, mode.startsWith("undici-verify-head"))
      : undiciPassThrough(backendUrl);
    const server = !mode.includes("tls")
      ? createServer(listener)
      : createHttpsServer({ ...tlsMaterial(), minVersion: "TLSv1.2" }, listener);
    // What the gateway's TLS listener does for pipelined requests, alone: its cost shows apart.
    if (mode === "undici-tls-data")
      server.on("secureConnection", (socket: Socket) => socket.on("data", () => {}));
    server.keepAliveTimeout = 60_000;
    server.listen(0, "127.0.0.1", () => ready((server.address() as AddressInfo).port));
  } else {
    const config = benchGatewayConfig(
      pkiDir,
      backendUrl,
      mode === "gateway-redis"
        ? { store: { type: "redis", url: redisUrl } }
        : mode === "gateway-redis-cluster"
          ? {
              // host:port,host:port — the Cluster's startup nodes.
              store: {
                type: "redis",
                cluster: (redisUrl ?? "").split(",").map((node) => {
                  const [host, port] = node.split(":");
                  return { host: host!, port: Number(port) };
                }),
              },
            }
          : mode === "gateway-evidence" || mode === "gateway-evidence-no-bodies"
            ? // Issue 40: every accepted request's evidence record, to files (fsync once a second);
              // the payment's body in it by default, or not (`evidence.bodies: none`).
              {
                evidence: {
                  folder: mkdtempSync(join(tmpdir(), "bench-evidence-")),
                  ...(mode === "gateway-evidence-no-bodies" ? { bodies: "none" } : {}),
                },
              }
            : mode === "gateway-tls" || mode === "gateway-mtls"
              ? {
                  listen: {
                    host: "127.0.0.1",
                    port: 0,
                    tls: { cert: `${pkiDir}/gateway.pem`, key: `${pkiDir}/gateway.key.pem` },
                    clientCertificate: mode === "gateway-mtls" ? "request" : "none",
                  },
                }
              : {},
    );
    const gateway = await startGateway(config, { logger: createLogger("silent") });
    ready(Number(new URL(gateway.url).port));
  }
}

/**
 * Bytes the V8 heap has allocated since start: what is in use now plus everything the collections
 * freed (each GC's used size before minus after, from GCProfiler). Buffers' backing stores live
 * outside the heap and are not counted.
 */
const gcProfiler = new GCProfiler();
gcProfiler.start();
const usedAtStart = getHeapStatistics().used_heap_size;
let freedByGc = 0;
function heapAllocatedSoFar(): number {
  for (const gc of gcProfiler.stop().statistics)
    freedByGc += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  gcProfiler.start();
  return freedByGc + getHeapStatistics().used_heap_size - usedAtStart;
}

process.on("message", (m) => {
  // `loop`: the event loop's thread alone (the request path), beside the whole process's (its
  // thread pool's file writes and syncs, V8's GC helpers).
  if (m === "cpu")
    process.send?.({
      cpu: process.cpuUsage(),
      loop: process.threadCpuUsage(),
      heapAllocated: heapAllocatedSoFar(),
    });
});

// BENCH_CPU_PROF=<dir>: a V8 CPU profile of the proxy process, written when the run ends.
// BENCH_HEAP_PROF=<dir>: a sampling heap profile instead, counting what the collections freed too
// (where the bytes per request are allocated, not what stays).
const profileDir = process.env.BENCH_CPU_PROF ?? process.env.BENCH_HEAP_PROF;
const heapProfile = process.env.BENCH_HEAP_PROF !== undefined;
let profiler: Session | undefined;
if (profileDir && mode !== "http-proxy" && mode !== "http-proxy-keepalive") {
  profiler = new Session();
  profiler.connect();
  if (heapProfile)
    profiler.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never);
  else profiler.post("Profiler.enable", () => profiler!.post("Profiler.start"));
}
process.on("disconnect", () => {
  if (!profiler) process.exit(0);
  const file = join(profileDir!, `${mode}-${process.pid}.${heapProfile ? "heapprofile" : "cpuprofile"}`);
  if (heapProfile) {
    profiler.post("HeapProfiler.stopSampling", (error, result) => {
      if (!error) writeFileSync(file, JSON.stringify(result.profile));
      process.exit(0);
    });
    return;
  }
  profiler.post("Profiler.stop", (error, result) => {
    if (!error) writeFileSync(file, JSON.stringify(result.profile));
    process.exit(0);
  });
});
void main();
