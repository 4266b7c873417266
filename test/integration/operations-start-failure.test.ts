/**
 * Issue 11, operability: when the gateway cannot start it says why and exits non-zero at once,
 * instead of logging and hanging; nothing (demo bank, timers, watchers) starts before the
 * listeners are bound, and what did start is closed again.
 *
 * The real command (`node --import tsx src/main.ts start --config …`) with a port another server
 * holds: the TPP-facing one, the admin one, and the shared one of `workers: 2`. Then, in-process,
 * a failure after the listeners were bound: everything started is closed again.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/app.js";
import { validateConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";
import { testPki } from "../helpers/gateway-fixture.js";
import { freeLoopbackPort, REPO_ROOT } from "../helpers/gateway-process.js";
import { named } from "../helpers/named-rows.js";

/**
 * Beyond what loading the command takes on this machine right now (`start --help`, measured in
 * the same run, once per process generation): tsx and the module graph alone take 1–2 s on a
 * loaded machine, so a bound from spawn without it would measure the machine, not the gateway.
 * The allowance grows with that baseline too (a loaded machine slows the failed start as much as
 * the loading: one full run gave 5.5 s against a 2.1 s baseline for two workers); a gateway that
 * hangs instead of exiting is still caught, by the 20 s kill.
 */
const EXIT_WITHIN_MS = 2_000;
const EXIT_WITHIN_LOADINGS = 2;

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly ms: number;
  readonly output: string;
}

/** Runs the CLI until it exits (SIGKILL after `killAfterMs`: a hang is a failure, not a stuck suite). */
function run(args: readonly string[], killAfterMs = 20_000): Promise<Exit & { child: ChildProcess }> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ["--conditions=psd2-gateway-source", "--import", "tsx", "src/main.ts", ...args],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LOG_LEVEL: "info" },
    },
  );
  let output = "";
  child.stdout!.on("data", (c: Buffer) => {
    output += c.toString("utf8");
  });
  child.stderr!.on("data", (c: Buffer) => {
    output += c.toString("utf8");
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  return new Promise((resolve) => {
    child.once("close", (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, ms: performance.now() - started, output, child });
    });
  });
}

/** A plain TCP server on a free loopback port that answers every connection with one line. */
async function blocker(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end("held by someone else\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** What the port's own server answers: it still holds the port and works. */
function greeting(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: "127.0.0.1", port });
    let text = "";
    socket.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
}

/** Every process that wrote a JSON log line (the primary and its workers). */
function loggedPids(output: string): number[] {
  const pids = new Set<number>();
  for (const line of output.split("\n")) {
    try {
      const pid = (JSON.parse(line) as { pid?: unknown }).pid;
      if (typeof pid === "number") pids.add(pid);
    } catch {
      // not a JSON log line
    }
  }
  return [...pids];
}

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Row {
  readonly name: string;
  /** Which port the other server holds. */
  readonly taken: "listen" | "admin";
  readonly workers?: number;
}

const ROWS: readonly Row[] = [
  { name: "the TPP-facing listen port", taken: "listen" },
  { name: "the admin port", taken: "admin" },
  { name: "the listen port, with workers: 2", taken: "listen", workers: 2 },
  { name: "the admin port, with workers: 2", taken: "admin", workers: 2 },
];

describe("start with a port another server holds", () => {
  let pki: DevPki;
  let dir: string;
  let startupMs = 0;

  beforeAll(async () => {
    pki = await testPki();
    dir = mkdtempSync(join(tmpdir(), "psd2-start-failure-"));
    // What loading the command takes here and now (tsx, the whole module graph): the baseline.
    const help = await run(["start", "--help"]);
    expect(help.code).toBe(0);
    startupMs = help.ms;
  });

  it.each(named(ROWS))("%s → exits non-zero at once, says why, leaves nothing behind", async (_name, row) => {
    const held = await blocker();
    try {
      const listenPort = row.taken === "listen" ? held.port : await freeLoopbackPort();
      const adminPort = row.taken === "admin" ? held.port : await freeLoopbackPort();
      const config = {
        ...(row.workers ? { workers: row.workers } : {}),
        listen: {
          host: "127.0.0.1",
          port: listenPort,
          tls: { cert: pki.paths.gatewayCert, key: pki.paths.gatewayKey },
        },
        // The demo bank would be started by this run: it must not be, or be closed again.
        backend: { url: "sandbox" },
        trust: { caDir: pki.paths.trustDir },
        register: { file: pki.paths.register },
        admin: { host: "127.0.0.1", port: adminPort },
        // workers > 1 needs a shared store; nothing connects to it before the listeners are bound.
        ...(row.workers ? { store: { type: "redis", url: "redis://127.0.0.1:1" } } : {}),
      };
      const file = join(dir, `taken-${row.taken}-${row.workers ?? 1}.json`);
      writeFileSync(file, JSON.stringify(config));

      const exit = await run(["start", "--config", file]);
      expect(exit.signal, `killed: still running after 20 s\n${exit.output}`).toBeNull();
      expect(exit.code, exit.output).not.toBe(0);
      // Each worker process loads the command again after the primary did.
      const loading = startupMs * (row.workers ? 2 : 1);
      expect(
        exit.ms,
        `exit after ${Math.round(exit.ms)} ms; loading takes ${Math.round(loading)} ms`,
      ).toBeLessThan(loading * EXIT_WITHIN_LOADINGS + EXIT_WITHIN_MS);
      // The reason, naming the port.
      expect(exit.output).toMatch(/EADDRINUSE/);
      expect(exit.output).toContain(String(held.port));
      expect(exit.output).toMatch(/could not start/);
      // Nothing started that could be left behind.
      expect(exit.output).not.toMatch(/built-in demo bank started|ingress gateway listening/);
      // Neither the process nor any worker it forked is still running.
      expect(alive(exit.child.pid)).toBe(false);
      for (const pid of loggedPids(exit.output)) expect(alive(pid), `process ${pid}`).toBe(false);
      // The other server keeps its port and works.
      expect(await greeting(held.port)).toBe("held by someone else\n");
      // The port the gateway did bind (if any) is free again.
      const other = row.taken === "listen" ? adminPort : listenPort;
      const probe = createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once("error", reject);
        probe.listen(other, "127.0.0.1", resolve);
      });
      await new Promise<void>((resolve) => probe.close(() => resolve()));
    } finally {
      await new Promise<void>((resolve) => held.server.close(() => resolve()));
    }
  });
});

describe("start with a config it cannot use", () => {
  let pki: DevPki;
  let dir: string;

  beforeAll(async () => {
    pki = await testPki();
    dir = mkdtempSync(join(tmpdir(), "psd2-start-config-"));
  });

  const CONFIGS = [
    {
      name: "a key that does nothing (verification.unsignedPrefixes, removed)",
      extra: { verification: { unsignedPrefixes: ["/v1/public"] } },
      says: "unsignedPrefixes",
    },
    { name: "a misspelt section", extra: { lisen: { port: 8443 } }, says: "lisen" },
    { name: "a value of the wrong type", extra: { admin: { port: "ninety" } }, says: "admin.port" },
  ] as const;

  it.each(named(CONFIGS))("%s → exit 1 naming it, nothing started", async (_name, row) => {
    const listenPort = await freeLoopbackPort();
    const config = {
      listen: { host: "127.0.0.1", port: listenPort },
      backend: { url: "sandbox" },
      trust: { caDir: pki.paths.trustDir },
      register: { file: pki.paths.register },
      admin: { host: "127.0.0.1", port: 0 },
      ...row.extra,
    };
    const file = join(dir, `${row.says.replace(/\W/g, "-")}.json`);
    writeFileSync(file, JSON.stringify(config));
    const exit = await run(["start", "--config", file]);
    expect(exit.signal, exit.output).toBeNull();
    expect(exit.code, exit.output).toBe(1);
    expect(exit.output).toContain(row.says);
    expect(exit.output).not.toMatch(/listening|demo bank started/);
  });

  it("a config file that is not there → exit 2 (a wrong command line), one line naming the option and the file", async () => {
    const missing = join(dir, "no-such-config.yaml");
    const exit = await run(["start", "--config", missing]);
    expect(exit.code, exit.output).toBe(2);
    expect(exit.output).toBe(`psd2-gateway start: --config ${missing}: no such file\n`);
  });
});

describe("a failure after the listeners were bound (in-process)", () => {
  let pki: DevPki;

  beforeAll(async () => {
    pki = await testPki();
  });

  it("closes the listeners, the admin listener and the demo bank it had started, and rejects with the reason", async () => {
    const listenPort = await freeLoopbackPort();
    const adminPort = await freeLoopbackPort();
    const config = validateConfig({
      listen: {
        host: "127.0.0.1",
        port: listenPort,
        tls: { cert: pki.paths.gatewayCert, key: pki.paths.gatewayKey },
      },
      // The demo bank starts, then the backend's CA file cannot be read.
      backend: { url: "sandbox", ca: join(pki.dir, "no-such-ca.pem") },
      trust: { caDir: pki.paths.trustDir },
      register: { file: pki.paths.register },
      admin: { host: "127.0.0.1", port: adminPort },
      log: { level: "silent" },
    });
    const bank = { started: 0, closed: 0 };
    const resourcesBefore = countResources();
    await expect(
      startGateway(config, {
        logger: createLogger("silent"),
        startDemoBank: async () => {
          bank.started++;
          return {
            url: "http://127.0.0.1:9",
            close: async () => {
              bank.closed++;
            },
          };
        },
      }),
    ).rejects.toThrow(/no-such-ca\.pem|ENOENT/);
    expect(bank).toEqual({ started: 1, closed: 1 });
    // No server handle or timer of the gateway's is left running.
    await new Promise((resolve) => setImmediate(resolve));
    const after = countResources();
    expect(after.TCPServerWrap ?? 0).toBeLessThanOrEqual(resourcesBefore.TCPServerWrap ?? 0);
    expect(after.Timeout ?? 0).toBeLessThanOrEqual(resourcesBefore.Timeout ?? 0);
    // Both ports can be bound again: their listeners were closed.
    for (const port of [listenPort, adminPort]) {
      const probe = createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once("error", reject);
        probe.listen(port, "127.0.0.1", resolve);
      });
      await new Promise<void>((resolve) => probe.close(() => resolve()));
    }
  });
});

function countResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}
