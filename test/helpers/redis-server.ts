/**
 * A real `redis-server` on a free loopback port, owned by one test file: nothing persisted, and
 * never the machine's own Redis service. Tests that need it use `describeWithRedis`, which skips
 * with a message on a developer machine without Redis and fails in CI, where a missing Redis
 * must never pass as a skipped suite.
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe } from "vitest";

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Graceful shutdown (SIGTERM); resolves when the process has exited. */
  stop(): Promise<void>;
  /** Abrupt death (SIGKILL), as in a crash. */
  kill(): Promise<void>;
  /** Starts again on the same port (an empty Redis, script cache included); resolves once PING answers. */
  start(): Promise<void>;
  /** SIGSTOP: the connection stays open but nothing answers, as behind a dropped network path. */
  freeze(): void;
  /** SIGCONT: it answers again, working through what arrived meanwhile. */
  thaw(): void;
}

const BINARY = "redis-server";
const INSTALL_HINT = "install it with `apt-get install redis-server` (.ci/run does so in CI)";
const STARTUP_TIMEOUT_MS = 10_000;

let available: boolean | undefined;

/** True when `redis-server` runs; in CI (CI=true) its absence throws instead. */
export function redisAvailable(): boolean {
  available ??= spawnSync(BINARY, ["--version"], { stdio: "ignore" }).error === undefined;
  if (!available && process.env["CI"] === "true") {
    throw new Error(`${BINARY} is not on PATH and CI=true: Redis tests must run in CI; ${INSTALL_HINT}`);
  }
  return available;
}

/** `describe` when Redis is available, a skipped `describe` saying why otherwise. */
export function describeWithRedis(name: string, body: () => void): void {
  if (redisAvailable()) {
    describe(name, body);
    return;
  }
  const reason = `${BINARY} not on PATH; ${INSTALL_HINT}`;
  console.warn(`skipping "${name}": ${reason}`);
  describe.skip(`${name} (skipped: ${reason})`, body);
}

export interface RedisServerOptions {
  /** More arguments after the defaults (`--cluster-enabled yes`, `--replicaof 127.0.0.1 6379`, …). */
  readonly args?: (port: number, dir: string) => readonly string[];
  /**
   * Runs `redis-server <file> --sentinel`: the file is written into the server's own directory
   * before each start (Sentinel rewrites it as it learns), from this function of the port.
   */
  readonly sentinelConfig?: (port: number) => string;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freeLoopbackPort();
  const dir = mkdtempSync(join(tmpdir(), "psd2gw-redis-"));
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    if (child) throw new Error(`redis-server on port ${port} is already running`);
    const launched = launch(port, dir, options);
    child = launched.process;
    try {
      await waitForPong(port, launched);
    } catch (error) {
      child = undefined;
      throw error;
    }
  };
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    child = undefined;
    if (running) await terminate(running, signal);
  };

  // A test that fails before its afterAll must not leave a Redis behind.
  const killOnExit = () => {
    child?.kill("SIGCONT");
    child?.kill("SIGKILL");
  };
  process.once("exit", killOnExit);

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    kill: () => end("SIGKILL"),
    freeze: () => child?.kill("SIGSTOP"),
    thaw: () => child?.kill("SIGCONT"),
    stop: async () => {
      await end("SIGTERM");
      process.removeListener("exit", killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Launched {
  readonly process: ChildProcess;
  /** The tail of its output, for the error message when it does not come up. */
  recentOutput(): string;
}

function launch(port: number, dir: string, options: RedisServerOptions): Launched {
  let args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  if (options.sentinelConfig) {
    const file = join(dir, "sentinel.conf");
    writeFileSync(file, options.sentinelConfig(port));
    args = [file, "--sentinel", "--port", String(port), "--bind", "127.0.0.1"];
  }
  args.push(...(options.args?.(port, dir) ?? []));
  const child = spawn(BINARY, [...args, "--dir", dir, "--daemonize", "no"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 20) output.shift();
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { process: child, recentOutput: () => output.join("") };
}

async function waitForPong(port: number, launched: Launched): Promise<void> {
  const child = launched.process;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    if (await answersPing(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill("SIGKILL");
  throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING:\n${launched.recentOutput()}`);
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let reply = "";
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => finish(false));
    socket.on("error", () => finish(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk.toString();
      // "-LOADING" or similar means not yet; only PONG means ready.
      if (reply.includes("\r\n")) finish(reply.startsWith("+PONG"));
    });
  });
}

function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
    // A frozen process only acts on SIGTERM once it runs again.
    child.kill("SIGCONT");
  });
}

import { freeLoopbackPort } from "./free-port.js";

export { freeLoopbackPort };

/** Polls `check` every 100 ms until it answers true; errors count as not yet. */
export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}
