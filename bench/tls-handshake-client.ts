/**
 * bench/tls.ts's client for the new-connection case, a process of its own (pinned with the load
 * generator): every request on a new TLS connection (an https.Agent without keep-alive, so Node
 * sends `Connection: close`), `concurrency` of them in flight. With `resume` the Agent keeps the
 * server's session tickets and offers them on the next connection (TLS session resumption); without
 * it (`maxCachedSessions: 0`) every connection is a full handshake. autocannon cannot do either: it
 * keeps its connections.
 *
 * Driven over IPC: `prepare` (a new server: new Agent, the pool from its start), then `run` for a
 * number of seconds, as often as the parent likes; each run answers a `HandshakeRun`.
 */

import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import type { TLSSocket } from "node:tls";
import type { PresignedRequest } from "./presign.js";

export interface HandshakePrepare {
  readonly type: "prepare";
  readonly port: number;
  readonly resume: boolean;
  readonly concurrency: number;
  readonly ca: string;
  /** The client certificate (chain) and key, for servers that ask for one. */
  readonly cert?: string;
  readonly key?: string;
}

export interface HandshakeStart {
  readonly type: "run";
  readonly seconds: number;
}

export interface HandshakeRun {
  readonly requests: number;
  readonly seconds: number;
  readonly statuses: Record<string, number>;
  readonly errors: number;
  /** TLS connections opened, and of them resumed (`isSessionReused()`). */
  readonly connections: number;
  readonly resumed: number;
  readonly p50: number;
  readonly p99: number;
  /** This process's CPU time during the run, µs. */
  readonly clientCpuUs: number;
  /** What the first connection negotiated: protocol, cipher, key exchange group. */
  readonly negotiated: string;
  /** Requests sent again from the pool's start (a gateway refuses those as replays). */
  readonly wrapped: number;
  /** The pool's size, and the entries taken from it since the server was prepared (warm-up included). */
  readonly poolSize: number;
  readonly poolConsumed: number;
}

const pool = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as PresignedRequest[];
let prepared: HandshakePrepare | undefined;
let agent: Agent | undefined;
let next = 0;

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function run(seconds: number): Promise<HandshakeRun> {
  const p = prepared!;
  const deadline = performance.now() + seconds * 1000;
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  let errors = 0;
  let connections = 0;
  let resumed = 0;
  let wrapped = 0;
  let negotiated = "";
  const one = () =>
    new Promise<void>((resolve) => {
      if (next >= pool.length) wrapped++;
      const r = pool[next++ % pool.length]!;
      const started = performance.now();
      const req = request(
        { host: "127.0.0.1", port: p.port, method: r.method, path: r.path, headers: r.headers, agent },
        (res) => {
          const code = String(res.statusCode);
          statuses[code] = (statuses[code] ?? 0) + 1;
          res.resume();
          res.once("end", () => {
            latencies.push(performance.now() - started);
            resolve();
          });
        },
      );
      req.once("socket", (socket: TLSSocket) => {
        socket.once("secureConnect", () => {
          connections++;
          if (socket.isSessionReused()) resumed++;
          if (!negotiated) {
            const group = socket.getEphemeralKeyInfo();
            negotiated = `${socket.getProtocol()} ${socket.getCipher().name} ${group && "name" in group ? group.name : "?"}`;
          }
        });
      });
      req.once("error", () => {
        errors++;
        resolve();
      });
      req.end(r.body);
    });
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: p.concurrency }, async () => {
      // A server that refuses connections would spin here: give up after many errors.
      while (performance.now() < deadline && errors < 1000) await one();
    }),
  );
  const wall = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const sorted = Float64Array.from(latencies).sort();
  return {
    requests: latencies.length,
    seconds: wall,
    statuses,
    errors,
    connections,
    resumed,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    clientCpuUs: cpu.user + cpu.system,
    negotiated,
    wrapped,
    poolSize: pool.length,
    poolConsumed: next,
  };
}

process.on("message", (m: HandshakePrepare | HandshakeStart) => {
  if (m.type === "prepare") {
    agent?.destroy();
    prepared = m;
    next = 0; // a new server: a gateway has seen none of the pool
    agent = new Agent({
      keepAlive: false,
      maxCachedSessions: m.resume ? 100 : 0,
      ca: m.ca,
      ...(m.cert && m.key ? { cert: m.cert, key: m.key } : {}),
    });
    process.send?.({ prepared: true });
  } else {
    void run(m.seconds).then((result) => process.send?.({ result }));
  }
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: true });
