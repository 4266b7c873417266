/**
 * Issue 25, point 1: the gateway runs on a supported LTS line even where the machine's own `node`
 * is end of life. `npm ci` installs Node 26 as an optional dependency; a command started by an
 * older node hands itself over to it with its arguments, its exit code and its signals.
 */

import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundledNode, MINIMUM_NODE_MAJOR, nodeMajor, unsupportedRuntime } from "../../src/runtime.js";

const REPO = new URL("../../", import.meta.url).pathname;
const RUNTIME = new URL("../../src/runtime.ts", import.meta.url).href;
const version = JSON.parse(execFileSync("git", ["-C", REPO, "show", "HEAD:package.json"]).toString()).version;

describe("the runtime", () => {
  it("is the supported line the package's engines name, and the tests run on it", () => {
    const engines = JSON.parse(
      execFileSync("git", ["-C", REPO, "show", "HEAD:package.json"]).toString(),
    ).engines;
    expect(engines.node).toBe(`>=${MINIMUM_NODE_MAJOR}`);
    expect(nodeMajor()).toBeGreaterThanOrEqual(MINIMUM_NODE_MAJOR);
  });

  it("is installed by npm ci for this platform", () => {
    const binary = bundledNode();
    expect(binary).toBeDefined();
    expect(existsSync(binary!)).toBe(true);
    const bundled = execFileSync(binary!, ["-p", "process.versions.node"]).toString().trim();
    expect(nodeMajor(bundled)).toBeGreaterThanOrEqual(MINIMUM_NODE_MAJOR);
  });

  it("says what to install when no supported one is at hand", () => {
    expect(unsupportedRuntime("20.20.2")).toMatch(/needs Node\.js 26 or later.*this is Node\.js 20\.20\.2/);
    expect(nodeMajor("20.20.2")).toBe(20);
  });
});

/** A script that hands itself over once (to this node), the second process doing what `body` says. */
function handOverScript(body: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "handover-")), "script.mjs");
  writeFileSync(
    file,
    `import { handOver } from ${JSON.stringify(RUNTIME)};
if (process.env.HANDED_OVER) { ${body} }
else { process.env.HANDED_OVER = "1"; handOver(process.execPath); }`,
  );
  return file;
}

describe("handOver", () => {
  it("passes the arguments and the standard streams on, and ends with the new process's exit code", () => {
    const script = handOverScript(
      "console.log(JSON.stringify(process.argv.slice(2))); process.exitCode = Number(process.argv[3]);",
    );
    const run = spawnSync(process.execPath, ["--import", "tsx", script, "hello", "7"], { encoding: "utf8" });
    expect(run.stdout.trim()).toBe('["hello","7"]');
    expect(run.status).toBe(7);
  });

  it("forwards SIGTERM and SIGHUP (reload) and ends by the signal that ended the new process", async () => {
    const script = handOverScript(
      `process.on("SIGHUP", () => console.log("reloaded")); console.log("ready"); setInterval(() => {}, 1000);`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    const saw = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => out.includes(text) && resolve();
        child.stdout.on("data", (c: Buffer) => {
          out += c.toString();
          check();
        });
        check();
      });
    await saw("ready");
    child.kill("SIGHUP");
    await saw("reloaded");
    const ended = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("exit", (_code, signal) => resolve(signal)),
    );
    child.kill("SIGTERM");
    expect(await ended).toBe("SIGTERM");
  });
});

/** The machine's own node, when it is older than the supported line (as on these build machines). */
function olderSystemNode(): string | undefined {
  for (const candidate of ["/usr/bin/node", "/usr/local/bin/node"]) {
    if (!existsSync(candidate)) continue;
    const v = execFileSync(candidate, ["-p", "process.versions.node"]).toString().trim();
    if (nodeMajor(v) < MINIMUM_NODE_MAJOR) return candidate;
  }
  return undefined;
}

describe.skipIf(olderSystemNode() === undefined)("the command line started by an end-of-life node", () => {
  it("hands over to the installed Node 26 and runs the command", () => {
    const run = spawnSync(olderSystemNode()!, ["--import", "tsx", "src/main.ts", "--version"], {
      cwd: REPO,
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.stdout.trim()).toBe(`psd2-gateway ${version}`);
    expect(run.status).toBe(0);
  });
});
