/**
 * The proxies under test, one per process so that their CPU can be measured apart from the
 * backend's: a bare http-proxy pass-through (the baseline to beat), a bare undici pass-through
 * (the ceiling), and the gateway with full verification.
 */

import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Session } from "node:inspector";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import httpProxy from "http-proxy";
import { Agent, Pool } from "undici";
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
  } else if (mode === "undici") {
    const pool = new Pool(backendUrl, { connections: 128 });
    const server = createServer((req, res) => {
      pool.dispatch(
        {
          path: req.url ?? "/",
          method: req.method ?? "GET",
          headers: req.headers as Record<string, string>,
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
    });
    server.keepAliveTimeout = 60_000;
    server.listen(0, "127.0.0.1", () => ready((server.address() as AddressInfo).port));
    void Agent;
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
          : {},
    );
    const gateway = await startGateway(config, { logger: createLogger("silent") });
    ready(Number(new URL(gateway.url).port));
  }
}

process.on("message", (m) => {
  if (m === "cpu") process.send?.({ cpu: process.cpuUsage() });
});

// BENCH_CPU_PROF=<dir>: a V8 CPU profile of the gateway process, written when the run ends.
const profileDir = process.env.BENCH_CPU_PROF;
let profiler: Session | undefined;
if (profileDir && mode.startsWith("gateway")) {
  profiler = new Session();
  profiler.connect();
  profiler.post("Profiler.enable", () => profiler!.post("Profiler.start"));
}
process.on("disconnect", () => {
  if (!profiler) process.exit(0);
  profiler.post("Profiler.stop", (error, result) => {
    if (!error)
      writeFileSync(join(profileDir!, `gateway-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    process.exit(0);
  });
});
void main();
