/**
 * The command line as a user meets it (issue 11, operability): the real CLI spawned as
 * `node --import tsx src/main.ts …`. Every command answers `--help` with its usage and exit 0; an
 * unknown or malformed option gets exactly one line on stderr naming it and exit code 2, and
 * nothing starts; no command or an unknown one is exit code 2 with the way out.
 */

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validateConfig } from "../../../src/config/load.js";
import { REPO_ROOT } from "../../helpers/gateway-process.js";

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to its end (killed after `timeoutMs`: a usage error must not start anything). */
function cli(args: readonly string[], timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LOG_LEVEL: "silent" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString("utf8");
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString("utf8");
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`psd2-gateway ${args.join(" ")} still running after ${timeoutMs} ms:\n${stdout}${stderr}`),
      );
    }, timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function lines(text: string): string[] {
  return text.split("\n").filter((l) => l.trim() !== "");
}

interface CommandRow {
  readonly name: string;
  /** An option that needs a value, given without one. */
  readonly valueOption: string;
}

const COMMANDS: readonly CommandRow[] = [
  { name: "start", valueOption: "--config" },
  { name: "certs", valueOption: "--out" },
  { name: "sign", valueOption: "--key" },
  { name: "verify", valueOption: "--body" },
  { name: "demo", valueOption: "--url" },
  { name: "sandbox", valueOption: "--port" },
  { name: "health", valueOption: "--config" },
];

/** One usage error: exit 2, nothing on stdout, one stderr line naming the command and `fragment`. */
function expectUsageError(run: Run, command: string, fragment: string): void {
  expect(run.code, run.stdout + run.stderr).toBe(2);
  expect(run.stdout).toBe("");
  const errors = lines(run.stderr);
  expect(errors, run.stderr).toHaveLength(1);
  expect(errors[0]).toContain(`psd2-gateway ${command}`);
  expect(errors[0]).toContain(fragment);
  expect(run.stderr).not.toMatch(/\bat .*\(.*:\d+:\d+\)|ERR_PARSE_ARGS/); // no stack trace
}

describe("every command", () => {
  it.each(COMMANDS.map((c) => [c.name, c] as const))(
    "%s: --help and -h print its usage (exit 0); unknown, malformed and stray arguments are exit 2 with one line",
    async (name, row) => {
      const [help, short, unknown, malformed] = await Promise.all([
        cli([name, "--help"]),
        cli([name, "-h"]),
        cli([name, "--no-such-option"]),
        cli([name, row.valueOption]),
      ]);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stderr).toBe("");
      expect(help.stdout).toMatch(new RegExp(`^psd2-gateway ${name} — \\S`));
      // The usage itself, not just the summary line.
      expect(help.stdout).toContain(`\n\npsd2-gateway ${name}`);
      expect(help.stdout).toMatch(/--\w/);

      expect(short.code).toBe(0);
      expect(short.stdout).toBe(help.stdout);

      expectUsageError(unknown, name, "--no-such-option");
      expectUsageError(malformed, name, row.valueOption);
    },
  );

  it.each(["start", "certs", "sign", "demo", "sandbox", "health"])(
    "%s takes no positional argument: one line and exit 2",
    async (name) => {
      expectUsageError(await cli([name, "stray-word"]), name, "stray-word");
    },
  );

  it("a boolean option given a value is a usage error too", async () => {
    expectUsageError(await cli(["health", "--json=yes"]), "health", "--json");
  });

  it("sandbox --port that is not a port number: one line and exit 2, nothing listening", async () => {
    expectUsageError(await cli(["sandbox", "--port", "http"]), "sandbox", "--port http");
  });

  it("sandbox defaults to a port of its own, not the admin listener's", async () => {
    const help = await cli(["sandbox", "--help"]);
    const port = Number(/--port <n>\s+default (\d+)/.exec(help.stdout)?.[1]);
    expect(port).toBe(8081);
    const config = validateConfig({
      backend: { url: "http://127.0.0.1:1" },
      trust: { caDir: "/nonexistent" },
      register: { file: "/nonexistent/register.json" },
    });
    expect(config.admin.port).not.toBe(port);
    expect(config.listen.port).not.toBe(port);
  });

  it("sandbox --state-file that is not a sandbox state: one line naming the file and exit 1, nothing listening", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-cli-"));
    try {
      const file = join(dir, "state.json");
      writeFileSync(file, "{ not json");
      const run = await cli(["sandbox", "--port", "0", "--state-file", file]);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.stdout).toBe("");
      const errors = lines(run.stderr);
      expect(errors, run.stderr).toHaveLength(1);
      expect(errors[0]).toContain("psd2-gateway sandbox: Sandbox state file");
      expect(errors[0]).toContain(file);
      expect(errors[0]).toContain("not JSON");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("sign without --key/--cert/--target: one line and exit 2", async () => {
    expectUsageError(await cli(["sign", "--method", "GET"]), "sign", "--key");
  });
});

describe("psd2-gateway itself", () => {
  const names = COMMANDS.map((c) => c.name);

  it("without a command: exit 2 and the list of commands", async () => {
    const run = await cli([]);
    expect(run.code).toBe(2);
    const text = run.stdout + run.stderr;
    for (const name of names) expect(text).toMatch(new RegExp(`^  ${name}\\s+\\S`, "m"));
    expect(text).toContain("--help");
  });

  it("--help: exit 0 and the list of commands", async () => {
    const run = await cli(["--help"]);
    expect(run.code).toBe(0);
    for (const name of names) expect(run.stdout).toMatch(new RegExp(`^  ${name}\\s+\\S`, "m"));
  });

  it("an unknown command: exit 2 and one line naming it", async () => {
    const run = await cli(["frobnicate", "--config", "x.yaml"]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    const errors = lines(run.stderr);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("'frobnicate'");
    expect(errors[0]).toContain("--help");
  });
});
