/**
 * The proxies under test, one per process so that their CPU can be measured apart from the
 * backend's: a bare http-proxy pass-through (the baseline to beat), a bare undici pass-through
 * (the ceiling), and the gateway with full verification. Behind TLS (bench/tls.ts), with the dev
 * gateway certificate from `pkiDir`: `undici-tls` (bare undici behind Node's https server),
 * `undici-tls-data` (the same with the gateway listener's no-op 'data' listener on each TLS socket,
 * src/ingress/listener.ts), `gateway-tls` and `gateway-mtls` (the QWAC requested, `request`).
 */

import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { Session } from "node:inspector";
import type { AddressInfo, Socket } from "node:net";
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

/** Bare undici `Pool.dispatch` pass-through: the request streamed to the backend, the answer streamed back. */
function undiciPassThrough(backendUrl: string): RequestListener {
  const pool = new Pool(backendUrl, { connections: 128 });
  return (req: IncomingMessage, res: ServerResponse) => {
    // Hop-by-hop headers stay on this hop (RFC 9110 7.6.1), as nginx and the gateway drop them: a
    // client's `Connection: close` would otherwise close the pooled backend connection too.
    const { connection: _connection, "keep-alive": _keepAlive, ...headers } = req.headers;
    pool.dispatch(
      {
        path: req.url ?? "/",
        method: req.method ?? "GET",
        headers: headers as Record<string, string>,
        body: req.method === "GET" ? null : req,
      },
      {
        onRequestStart() {},
        onResponseStart(_c, status, headers) {
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
  } else if (mode === "undici" || mode === "undici-tls" || mode === "undici-tls-data") {
    const listener = undiciPassThrough(backendUrl);
    const server =
      mode === "undici"
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
  if (m === "cpu") process.send?.({ cpu: process.cpuUsage(), heapAllocated: heapAllocatedSoFar() });
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
