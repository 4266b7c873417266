/**
 * A real PostgreSQL on a free loopback port, owned by one test file: a cluster made by `initdb` in a
 * temporary folder, never the machine's own service. `initdb` and `postgres` refuse to run as root,
 * so under root (CI's container) they run as `nobody`, owning the folder. The binaries are found on
 * PATH, or where Debian's `postgresql` package puts them (/usr/lib/postgresql/<version>/bin, newest
 * first). Tests that need it use `describeWithPostgres`: skipped with a message on a developer
 * machine without PostgreSQL, failed in CI, where a missing PostgreSQL must never pass as a skip.
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe } from "vitest";
import { freeLoopbackPort } from "./free-port.js";

export interface PostgresServer {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust auth on loopback). */
  readonly url: string;
  /** Graceful shutdown (SIGTERM: smart); resolves when the process has exited. */
  stop(): Promise<void>;
  /** Abrupt death (SIGKILL), as in a crash. */
  kill(): Promise<void>;
  /** Starts again on the same port with the same data; resolves once it answers a query. */
  start(): Promise<void>;
  /** Stops it for good and removes its folder. */
  remove(): Promise<void>;
}

const INSTALL_HINT = "install it with `apt-get install postgresql` (.ci/run does so in CI)";
const STARTUP_TIMEOUT_MS = 30_000;
/** Under root, the user initdb and postgres run as. */
const UNPRIVILEGED = { uid: 65534, gid: 65534 };

let binDir: string | null | undefined;

/** The folder holding `initdb` and `postgres`, or null. */
export function postgresBinDir(): string | null {
  if (binDir !== undefined) return binDir;
  const candidates: string[] = [];
  const which = spawnSync("sh", ["-c", "command -v postgres"], { encoding: "utf8" });
  const onPath = which.stdout?.trim();
  if (onPath) candidates.push(join(onPath, ".."));
  candidates.push("/usr/local/bin");
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian))
    for (const v of readdirSync(debian).sort((a, b) => Number(b) - Number(a)))
      candidates.push(join(debian, v, "bin"));
  binDir = candidates.find((d) => existsSync(join(d, "postgres")) && existsSync(join(d, "initdb"))) ?? null;
  return binDir;
}

/** True when PostgreSQL's binaries are there; in CI (CI=true) their absence throws instead. */
export function postgresAvailable(): boolean {
  const found = postgresBinDir() !== null;
  if (!found && process.env["CI"] === "true")
    throw new Error(
      `postgres/initdb not found and CI=true: PostgreSQL tests must run in CI; ${INSTALL_HINT}`,
    );
  return found;
}

/** `describe` when PostgreSQL is available, a skipped `describe` saying why otherwise. */
export function describeWithPostgres(name: string, body: () => void): void {
  if (postgresAvailable()) {
    describe(name, body);
    return;
  }
  const reason = `postgres/initdb not found; ${INSTALL_HINT}`;
  console.warn(`skipping "${name}": ${reason}`);
  describe.skip(`${name} (skipped: ${reason})`, body);
}

export interface PostgresServerOptions {
  /** `fsync` of the server (default off: tests lose nothing to a killed process, only to a crashed machine). */
  readonly fsync?: boolean;
}

export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (bin === null) throw new Error(`postgres/initdb not found; ${INSTALL_HINT}`);
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "psd2gw-postgres-"));
  if (root) chownSync(dir, UNPRIVILEGED.uid, UNPRIVILEGED.gid);
  const as = root ? UNPRIVILEGED : {};
  const data = join(dir, "data");
  const init = spawnSync(
    join(bin, "initdb"),
    ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
    { encoding: "utf8", ...as },
  );
  if (init.status !== 0)
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.error?.message}`);
  const port = await freeLoopbackPort();
  let child: ChildProcess | undefined;
  const output: string[] = [];

  const start = async (): Promise<void> => {
    if (child) throw new Error(`postgres on port ${port} is already running`);
    const launched = spawn(
      join(bin, "postgres"),
      [
        "-D",
        data,
        "-p",
        String(port),
        "-h",
        "127.0.0.1",
        "-c",
        "unix_socket_directories=",
        "-c",
        `fsync=${options.fsync ? "on" : "off"}`,
        "-c",
        "max_connections=50",
      ],
      { stdio: ["ignore", "pipe", "pipe"], ...as },
    );
    const keep = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.length > 30) output.shift();
    };
    launched.stdout?.on("data", keep);
    launched.stderr?.on("data", keep);
    child = launched;
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (launched.exitCode !== null || launched.signalCode !== null) break;
      if (await answers(port)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    launched.kill("SIGKILL");
    child = undefined;
    throw new Error(`postgres on 127.0.0.1:${port} did not answer:\n${output.join("")}`);
  };
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    child = undefined;
    if (running) await terminate(running, signal);
  };

  // A test that fails before its afterAll must not leave a PostgreSQL behind.
  const killOnExit = () => child?.kill("SIGKILL");
  process.once("exit", killOnExit);

  await start();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    // SIGINT is PostgreSQL's "fast" shutdown: open sessions are ended, as when a database is stopped mid-run.
    stop: () => end("SIGINT"),
    kill: () => end("SIGKILL"),
    remove: async () => {
      await end("SIGINT");
      process.removeListener("exit", killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function answers(port: number): Promise<boolean> {
  const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}
