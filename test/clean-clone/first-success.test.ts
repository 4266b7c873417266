/**
 * Time to first success, as a newcomer meets it: the repository cloned afresh into an empty folder,
 * `npm ci`, `npm start` until its readiness endpoint answers 200, then `npm run demo` until it prints
 * its first 201. Run on the system's own `node` and `npm` (the outer run's node_modules/.bin taken off
 * PATH), on the ports the README names, so nothing else may listen on them.
 *
 * Slow (npm ci fetches some 470 MB): not part of `npm test` (vitest.config.ts excludes test/clean-clone/);
 * `npm run test:clean-clone` runs it, and so does CI (.ci/run) after `npm test`. It prints the durations
 * and asserts none of them: the README states the figures measured on one machine.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/gateway-process.js";

/** The ports `npm start` (config/default.yaml) listens on: gateway, SCA page, demo QTSP, admin. */
const START_PORTS = [8443, 8081, 8099, 9090] as const;
const READY_URL = "http://127.0.0.1:9090/readyz";

/** The environment a newcomer's shell has: no npm_ variables of an outer npm run, no node_modules/.bin on PATH. */
function newcomerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key)) env[key] = value;
  env.PATH = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !/node_modules[\\/]\.bin$/.test(dir))
    .join(delimiter);
  env.CI = "";
  return env;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** A command started in its own process group (npm start runs a shell that runs node), its output collected. */
interface Running {
  readonly child: ChildProcess;
  output: string;
  readonly exited: Promise<number | null>;
}

function start(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const running: Running = {
    child,
    output: "",
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
  };
  const collect = (chunk: Buffer) => {
    running.output += chunk.toString("utf8");
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  return running;
}

/** Runs a command to its end; its exit code, output and duration in seconds. */
async function timed(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string; seconds: number }> {
  const begun = performance.now();
  const running = start(command, args, cwd, env);
  const code = await running.exited;
  return { code, output: running.output, seconds: (performance.now() - begun) / 1000 };
}

/** Polls until `done` holds or the process ends; false when it ended first. */
async function until(done: () => boolean | Promise<boolean>, running: Running): Promise<boolean> {
  for (;;) {
    if (await done()) return true;
    if (running.child.exitCode !== null || running.child.signalCode !== null) return done();
    await new Promise((r) => setTimeout(r, 100));
  }
}

const background: Running[] = [];
let work: string | undefined;

afterAll(async () => {
  for (const running of background) {
    if (running.child.exitCode === null && running.child.signalCode === null) {
      // The whole group: npm, its shell and the gateway.
      process.kill(-running.child.pid!, "SIGTERM");
      await running.exited;
    }
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

it("a clean clone: npm ci, npm start ready, npm run demo's first 201", async () => {
  for (const port of START_PORTS)
    expect(
      await portFree(port),
      `127.0.0.1:${port} is taken: stop what listens there (npm start needs it)`,
    ).toBe(true);
  const env = newcomerEnv();
  work = mkdtempSync(join(tmpdir(), "psd2-clean-clone-"));
  const clone = join(work, "psd2-gateway");
  const durations: Record<string, number> = {};

  // What is committed, as a newcomer gets it: the checkout's HEAD, none of its ignored or untracked files.
  const cloned = await timed("git", ["clone", "--quiet", REPO_ROOT, clone], work, env);
  expect(cloned.code, cloned.output).toBe(0);
  durations["git clone"] = cloned.seconds;

  const ci = await timed("npm", ["ci"], clone, env);
  expect(ci.code, ci.output.slice(-4000)).toBe(0);
  durations["npm ci"] = ci.seconds;

  const startBegun = performance.now();
  const gateway = start("npm", ["start"], clone, env);
  background.push(gateway);
  const ready = await until(
    () =>
      fetch(READY_URL).then(
        (r) => r.status === 200,
        () => false,
      ),
    gateway,
  );
  expect(ready, `npm start never became ready:\n${gateway.output.slice(-4000)}`).toBe(true);
  durations["npm start, until /readyz answers 200"] = (performance.now() - startBegun) / 1000;

  const demoBegun = performance.now();
  const demo = start("npm", ["run", "demo"], clone, env);
  background.push(demo);
  const firstCreated = await until(() => /^201 /m.test(demo.output), demo);
  expect(firstCreated, `npm run demo printed no 201:\n${demo.output}`).toBe(true);
  durations["npm run demo, until its first 201"] = (performance.now() - demoBegun) / 1000;
  expect(await demo.exited, demo.output).toBe(0);

  const total = Object.values(durations).reduce((a, b) => a + b, 0);
  const report = [
    ...Object.entries(durations).map(([step, s]) => `${step.padEnd(40)} ${s.toFixed(1)} s`),
    `${"total".padEnd(40)} ${total.toFixed(1)} s`,
  ].join("\n");
  console.log(`time to first success on a clean clone (node ${await nodeVersion(env)}):\n${report}`);
}, 1_200_000);

async function nodeVersion(env: NodeJS.ProcessEnv): Promise<string> {
  const run = await timed("node", ["--version"], tmpdir(), env);
  return run.output.trim();
}
