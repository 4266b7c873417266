/**
 * The gateway processes for a fuzz run: `node --import tsx src/main.ts start --config <yaml>`, like
 * test/helpers/gateway-process.ts, but logging at warn (the access log of 100,000 requests would
 * cost the gateway CPU and the harness memory), so readiness is /healthz answering 200 rather than
 * a log line. Keeps only the last warnings and errors each printed. The ingress gateway listens
 * with TLS; the egress gateway (startFuzzEgress) with plain HTTP on loopback, as applications
 * reach it.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, writeFileSync } from "node:fs";
import { get as httpGet, Server } from "node:http";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { stringify as toYaml } from "yaml";
import { TIMEOUT_CHECK_INTERVAL_MS } from "../../src/listener/guard.js";
import { freeLoopbackPort, REPO_ROOT } from "../helpers/gateway-process.js";
import type { ListenLimits } from "./types.js";

/**
 * The connection limits of the fuzz gateways (`listen.*`), short so that each one bites within a
 * case of the idle families, yet well above the deliberate pauses of the others: the slowest head
 * (slow.ts, egress-connection.ts) takes under a second, the longest wait before a first request is
 * 300 ms and between requests 120 ms, the slowest body a second.
 *
 * Node times a connection's first head from the connection's start (the TLS handshake's end), so
 * whichever of the idle and headers timeouts is shorter closes a connection that says nothing or
 * stalls in its first head. Ingress has them in the defaults' order (idle 15 s after headers 10 s:
 * the headers timeout's 400 answers both); egress the other way round, so that the idle timeout
 * itself is seen to close what sends nothing (without an answer).
 */
export const FUZZ_LISTEN_SECONDS = {
  ingress: {
    tlsHandshakeTimeoutSeconds: 2,
    idleTimeoutSeconds: 4,
    headersTimeoutSeconds: 2,
    requestTimeoutSeconds: 5,
    keepAliveTimeoutSeconds: 2,
    // Short, so that the send timeout's sweep runs under hostile traffic: the harness reads every
    // answer at once, so a cut would show as an answer missing.
    sendTimeoutSeconds: 4,
  },
  egress: {
    tlsHandshakeTimeoutSeconds: 2,
    idleTimeoutSeconds: 2,
    headersTimeoutSeconds: 3,
    requestTimeoutSeconds: 5,
    keepAliveTimeoutSeconds: 2,
    sendTimeoutSeconds: 4,
  },
} as const;

/**
 * The per-address cap: far above what the harness itself has open from 127.0.0.1 (each worker's
 * case holds a few connections at most, replays up to six at once, and closed ones linger a
 * moment on the gateway's side), so only the idle families' own loopback addresses reach it.
 */
export function perAddressCap(concurrency: number): number {
  return Math.max(64, 6 * concurrency);
}

/** The `listen` settings of a fuzz gateway for a run with this many connections in flight. */
export function fuzzListenConfig(side: "ingress" | "egress", concurrency: number): Record<string, number> {
  return { ...FUZZ_LISTEN_SECONDS[side], maxConnectionsPerAddress: perAddressCap(concurrency) };
}

/** The same limits in ms, as the idle families time them. */
export function fuzzListenLimits(side: "ingress" | "egress", concurrency: number): ListenLimits {
  const s = FUZZ_LISTEN_SECONDS[side];
  return {
    maxConnectionsPerAddress: perAddressCap(concurrency),
    tlsHandshakeTimeoutMs: s.tlsHandshakeTimeoutSeconds * 1000,
    idleTimeoutMs: s.idleTimeoutSeconds * 1000,
    headersTimeoutMs: s.headersTimeoutSeconds * 1000,
    requestTimeoutMs: s.requestTimeoutSeconds * 1000,
    keepAliveTimeoutMs: s.keepAliveTimeoutSeconds * 1000,
    checkIntervalMs: TIMEOUT_CHECK_INTERVAL_MS,
    // The gateway runs on this Node: its servers close this much after the keep-alive timeout.
    keepAliveBufferMs:
      (new Server() as Server & { keepAliveTimeoutBuffer?: number }).keepAliveTimeoutBuffer ?? 0,
  };
}

export interface FuzzGateway {
  /** `ingress` or `egress`: how reports name the process. */
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly adminUrl: string;
  /** The last lines it printed (bounded). */
  readonly lines: string[];
  /**
   * Changes its config file (`change` edits the config as written) and sends SIGHUP: the running
   * gateway reads it again (and may also see the file change on its own).
   */
  reconfigure(change: (config: Record<string, unknown>) => void): void;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(timeoutMs?: number): Promise<void>;
}

const KEEP_LINES = 50;

function status(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpGet(url, { timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve(0));
  });
}

export async function startFuzzGateway(options: {
  pki: DevPki;
  dir: string;
  backendUrl: string;
  /** Connections the run keeps in flight (sizes the per-address cap). */
  concurrency: number;
  config: Record<string, Record<string, unknown>>;
}): Promise<FuzzGateway> {
  const { pki, dir } = options;
  const port = await freeLoopbackPort();
  const adminPort = await freeLoopbackPort();
  const extra = options.config;
  const config = {
    ...extra,
    listen: {
      host: "127.0.0.1",
      port,
      tls: { cert: pki.paths.gatewayCert, key: pki.paths.gatewayKey },
      ...fuzzListenConfig("ingress", options.concurrency),
      ...(extra["listen"] ?? {}),
    },
    backend: { url: options.backendUrl, ...(extra["backend"] ?? {}) },
    trust: { caDir: pki.paths.trustDir, ...(extra["trust"] ?? {}) },
    register: { file: pki.paths.register, ...(extra["register"] ?? {}) },
    admin: { host: "127.0.0.1", port: adminPort },
    log: { level: process.env.FUZZ_LOG_LEVEL ?? "warn", ...(extra["log"] ?? {}) },
  };
  return spawnFuzzProcess({ name: "ingress", dir, config, port, adminPort });
}

/** The gateways' V8 old-space bound in MB (FUZZ_HEAP_MB, default 256, as the shipped pod runs). */
function fuzzHeapMb(): number {
  const mb = Number(process.env.FUZZ_HEAP_MB ?? 256);
  if (!Number.isInteger(mb) || mb < 64)
    throw new Error("FUZZ_HEAP_MB: a whole number of megabytes, at least 64");
  return mb;
}

/** Writes `config` as YAML, starts the process, waits for /healthz on `adminPort`. */
export async function spawnFuzzProcess(options: {
  name: string;
  dir: string;
  config: Record<string, unknown>;
  port: number;
  adminPort: number;
}): Promise<FuzzGateway> {
  const { name, port, adminPort } = options;
  const configFile = join(options.dir, `fuzz-${name}.yaml`);
  writeFileSync(configFile, toYaml(options.config));
  const env = { ...process.env };
  delete env["LOG_LEVEL"];
  // V8's old space bounded, as the shipped pod bounds it (deploy/kubernetes/base/deployment.yaml's
  // NODE_OPTIONS, 512 MB there; the fuzz stores hold a few thousand entries): on a big machine V8 lets
  // garbage grow for hundreds of MB before a full collection, and the RSS bound would measure that
  // rather than memory that grows with input. A live heap that outgrows it crashes the gateway, a violation.
  const heap = `--max-old-space-size=${fuzzHeapMb()}`;
  const child = spawn(
    process.execPath,
    [
      heap,
      "--conditions=psd2-gateway-source",
      "--import",
      "tsx",
      "src/main.ts",
      "start",
      "--config",
      configFile,
    ],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env,
    },
  );
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      done = true;
      process.removeListener("exit", killOnExit);
      resolve({ code, signal });
    }),
  );
  const lines: string[] = [];
  // FUZZ_LOG_DIR=<dir>: every line the gateway prints, kept whole there (the report keeps the last).
  const logFile = process.env.FUZZ_LOG_DIR
    ? join(process.env.FUZZ_LOG_DIR, `${name}-${port}.log`)
    : undefined;
  const collect = () => {
    let pending = "";
    return (chunk: Buffer) => {
      if (logFile) appendFileSync(logFile, chunk);
      pending += chunk.toString("utf8");
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const part of parts) {
        if (part.trim() === "") continue;
        lines.push(part.slice(0, 2_000));
        if (lines.length > KEEP_LINES) lines.shift();
      }
    };
  };
  child.stdout!.on("data", collect());
  child.stderr!.on("data", collect());
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (done) throw new Error(`the ${name} gateway exited at start:\n${lines.join("\n")}`);
    // Ready, not only alive: until then the TPP listener answers 503 "the gateway is starting", which
    // a loaded machine showed as violations of the first cases.
    if ((await status(`${adminUrl}/readyz`)) === 200) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the ${name} gateway was not ready (/readyz) within 60 s:\n${lines.join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // The TPP listener is bound before the admin listener; wait until a handshake would work too.
  return {
    name,
    child,
    pid: child.pid!,
    port,
    adminUrl,
    lines,
    exited,
    reconfigure(change) {
      change(options.config);
      writeFileSync(configFile, toYaml(options.config));
      if (!done) child.kill("SIGHUP");
    },
    async stop(timeoutMs = 10_000) {
      if (done) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
