/**
 * The gateway processes for a fuzz run: `node --import tsx src/main.ts start --config <yaml>`, like
 * test/helpers/gateway-process.ts, but logging at warn (the access log of 100,000 requests would
 * cost the gateway CPU and the harness memory), so readiness is /healthz answering 200 rather than
 * a log line. Keeps only the last warnings and errors each printed. The ingress gateway listens
 * with TLS; the egress gateway (startFuzzEgress) with plain HTTP on loopback, as applications
 * reach it.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { join } from "node:path";
import { stringify as toYaml } from "yaml";
import type { DevPki } from "../../src/dev/pki.js";
import { freeLoopbackPort, REPO_ROOT } from "../helpers/gateway-process.js";

export interface FuzzGateway {
  /** `ingress` or `egress`: how reports name the process. */
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly adminUrl: string;
  /** The last lines it printed (bounded). */
  readonly lines: string[];
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
      ...(extra["listen"] ?? {}),
    },
    backend: { url: options.backendUrl, ...(extra["backend"] ?? {}) },
    trust: { caDir: pki.paths.trustDir, ...(extra["trust"] ?? {}) },
    register: { file: pki.paths.register, ...(extra["register"] ?? {}) },
    admin: { host: "127.0.0.1", port: adminPort },
    log: { level: "warn", ...(extra["log"] ?? {}) },
  };
  return spawnFuzzProcess({ name: "ingress", dir, config, port, adminPort });
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
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "start", "--config", configFile], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env,
  });
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
  const collect = () => {
    let pending = "";
    return (chunk: Buffer) => {
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
    if ((await status(`${adminUrl}/healthz`)) === 200) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the ${name} gateway did not answer /healthz within 60 s:\n${lines.join("\n")}`);
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
    async stop(timeoutMs = 10_000) {
      if (done) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
