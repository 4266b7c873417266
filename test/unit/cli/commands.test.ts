/**
 * The command line as a user meets it (issue 11, operability): the real CLI spawned as
 * `node --import tsx src/main.ts …`. Every command answers `--help` with its usage and exit 0; an
 * unknown or malformed option gets exactly one line on stderr naming it and exit code 2, and
 * nothing starts; no command or an unknown one is exit code 2 with the way out.
 */

import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { COMMANDS as ALL_COMMANDS } from "../../../src/cli/main.js";
import { validateConfig } from "../../../src/config/load.js";
import { type CliRun, runCli } from "../../helpers/cli.js";
import { REPO_ROOT } from "../../helpers/gateway-process.js";

type Run = CliRun;

/** Runs the CLI to its end (killed after `timeoutMs`: a usage error must not start anything). */
const cli = (args: readonly string[], timeoutMs = 20_000, withoutFileOverride = false): Promise<Run> =>
  runCli(args, { timeoutMs, env: { LOG_LEVEL: "silent" }, withoutFileOverride });

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
  { name: "trust", valueOption: "--config" },
  { name: "evidence", valueOption: "--request-id" },
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
      const secret = join(dir, "secret");
      const run = await cli(["sandbox", "--port", "0", "--secret-file", secret, "--state-file", file]);
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

  it("sandbox without a gateway secret: one line saying how to give it, exit 2, nothing listening", async () => {
    expectUsageError(await cli(["sandbox", "--port", "0"]), "sandbox", "--secret-file");
  });

  it("certs where the development PKI already is: says so and how to generate it anew, exit 0", async () => {
    const dir = mkdtempSync(join(tmpdir(), "certs-cli-"));
    try {
      // The files whose presence says the PKI is complete.
      for (const file of ["bank/bank-qseal.pem", "qtsp/status.json", "qtsp/demo-root-ca.crl"]) {
        mkdirSync(join(dir, dirname(file)), { recursive: true });
        writeFileSync(join(dir, file), "");
      }
      const run = await cli(["certs", "--out", dir]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe("");
      expect(run.stderr).toBe(
        `development certificates already in ${dir}; psd2-gateway certs --force generates them anew\n`,
      );
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

  it.each(["--version", "-v"])("%s: the version in package.json, exit 0", async (flag) => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      version: string;
    };
    const run = await cli([flag]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe(`psd2-gateway ${version}\n`);
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

/** A path that names nothing. */
const NOPE = "no-such-dir/nope.pem";
/** Paths that exist, for the options a command needs beside the one under test. */
const FILE = "package.json";
const FOLDER = "config";

/**
 * Every path option of every command, given a path that names nothing, with the other options
 * it needs: the command line the option goes in, and the problem named.
 */
const PATH_OPTIONS: readonly [command: string, option: string, args: string[], problem: string][] = [
  ["start", "config", ["start", "--config", NOPE], "no such file"],
  ["health", "config", ["health", "--config", NOPE], "no such file"],
  ["verify", "config", ["verify", FILE, "--config", NOPE], "no such file"],
  ["trust", "config", ["trust", "status", "--config", NOPE], "no such file"],
  ["trust", "certificate", ["trust", "status", "--certificate", NOPE], "no such file"],
  ["evidence", "config", ["evidence", "verify", "--config", NOPE], "no such file"],
  ["evidence", "folder", ["evidence", "status", "--folder", NOPE], "no such folder"],
  ["evidence", "out", ["evidence", "bundle", "--request-id", "x", "--out", FILE], "is a file, not a folder"],
  ["certs", "out", ["certs", "--out", FILE], "is a file, not a folder"],
  ["sandbox", "state-file", ["sandbox", "--state-file", NOPE], "no such folder no-such-dir to write it in"],
  ["sandbox", "secret-file", ["sandbox", "--secret-file", NOPE], "no such folder no-such-dir to write it in"],
  ["sandbox", "api-socket", ["sandbox", "--api-socket", NOPE], "no such folder no-such-dir to write it in"],
  ["demo", "certs", ["demo", "--certs", NOPE], "no such folder"],
  ["sign", "profile", ["sign", "--target", "/", "--profile", NOPE], "no such file"],
  ["sign", "key", ["sign", "--target", "/", "--key", NOPE, "--cert", FILE], "no such file"],
  ["sign", "cert", ["sign", "--target", "/", "--key", FILE, "--cert", NOPE], "no such file"],
  ["sign", "p12", ["sign", "--target", "/", "--p12", NOPE], "no such file"],
  [
    "sign",
    "password-file",
    ["sign", "--target", "/", "--p12", FILE, "--password-file", NOPE],
    "no such file",
  ],
  ["sign", "body", ["sign", "--target", "/", "--key", FILE, "--cert", FILE, "--body", NOPE], "no such file"],
  ...(["ca", "qwac", "qwac-key"] as const).map((option): [string, string, string[], string] => [
    "sign",
    option,
    [
      ...["sign", "--target", "/", "--key", FILE, "--cert", FILE, "--send", "--url", "https://bank.example"],
      ...["--ca", FILE, "--qwac", FILE, "--qwac-key", FILE],
    ].map((a, i, all) => (all[i - 1] === `--${option}` ? NOPE : a)),
    "no such file",
  ]),
  ["verify", "body", ["verify", FILE, "--body", NOPE], "no such file"],
  ["verify", "trust", ["verify", FILE, "--trust", NOPE], "no such folder"],
  ["verify", "register", ["verify", FILE, "--trust", FOLDER, "--register", NOPE], "no such file"],
  ["verify", "request", ["verify", "--response", FILE, "--request", NOPE], "no such file"],
  ["verify", "profile", ["verify", "--response", FILE, "--profile", NOPE], "no such file"],
];

/** The string options that name no path: anything else a command takes as a string must declare what it names. */
const NOT_PATHS = new Set([
  "sign --bank",
  "sign --password-env",
  "sign --dialect",
  "sign --method",
  "sign --target",
  "sign --header",
  "sign --curl",
  "sign --url",
  "verify --now",
  "verify --algorithm",
  "verify --bank",
  "verify --certificate-header",
  "verify --dialect",
  "trust --purpose",
  "evidence --request-id",
  "evidence --kind",
  "demo --url",
  "sandbox --port",
  "sandbox --host",
  "sandbox --api-port",
  "sandbox --seed",
]);

describe("path options: a path that names nothing usable is exit 2, one line naming the option, the path and what is wrong", () => {
  it("every string option of every command is either a path option (checked before it runs) or known not to be one", () => {
    const declared: string[] = [];
    for (const command of ALL_COMMANDS)
      for (const [name, option] of Object.entries(
        command.options as Record<string, { type: string; path?: string }>,
      )) {
        if (option.path) declared.push(`${command.name} --${name}`);
        else if (option.type === "string")
          expect(NOT_PATHS, `${command.name} --${name}`).toContain(`${command.name} --${name}`);
      }
    expect(declared.sort()).toEqual(PATH_OPTIONS.map(([c, o]) => `${c} --${o}`).sort());
  });

  it.each(PATH_OPTIONS)("%s --%s", async (command, option, args, problem) => {
    const run = await cli(args);
    expectUsageError(run, command, `--${option} ${args[args.indexOf(`--${option}`) + 1]}: ${problem}`);
  });

  it("verify <file> that names nothing", async () => {
    expectUsageError(await cli(["verify", NOPE]), "verify", `${NOPE}: no such file`);
  });

  it("a folder where a file goes, a file where a folder goes", async () => {
    expectUsageError(
      await cli(["sign", "--target", "/", "--key", FOLDER, "--cert", FILE]),
      "sign",
      `--key ${FOLDER}: is a folder, not a file`,
    );
    expectUsageError(
      await cli(["verify", FILE, "--trust", FILE]),
      "verify",
      `--trust ${FILE}: is a file, not a folder`,
    );
  });

  it("a file the user may not read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cli-paths-"));
    try {
      const file = join(dir, "secret.yaml");
      writeFileSync(file, "{}");
      chmodSync(file, 0o000);
      // Root reads any file: as root (CI), the command runs without that power.
      expectUsageError(
        await cli(["health", "--config", file], 20_000, process.getuid?.() === 0),
        "health",
        `--config ${file}: permission denied`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("options that do not go together are named before any path is looked at", async () => {
    expectUsageError(
      await cli(["sign", "--target", "/", "--key", NOPE, "--cert", NOPE, "--bank", "b"]),
      "sign",
      "--bank goes with --profile",
    );
  });

  it("demo --certs a folder that is no development PKI: names the file it lacks", async () => {
    expectUsageError(
      await cli(["demo", "--certs", FOLDER]),
      "demo",
      `--certs ${FOLDER}: not a development PKI (no trust/demo-root-ca.pem in it)`,
    );
  });
});

describe("verify --response on a file that is not an HTTP response: exit 1, one line saying so and what the file holds", () => {
  it.each<[string, string, string]>([
    [
      "JSON",
      '{"accounts": []}\n',
      `not an HTTP response: its first line '{"accounts": []}' is not a status line (HTTP/1.1 200 OK)`,
    ],
    [
      "a request",
      "GET /v1/accounts HTTP/1.1\r\nHost: bank.example\r\n\r\n",
      "not an HTTP response but a request (GET /v1/accounts): a response starts with a status line (HTTP/1.1 200 OK",
    ],
    ["nothing", "", "empty: expected an HTTP response (HTTP/1.1 200 OK first) or a curl -v dump"],
  ])("%s", async (_what, content, message) => {
    const dir = mkdtempSync(join(tmpdir(), "verify-response-"));
    try {
      const file = join(dir, "answer.txt");
      writeFileSync(file, content);
      const run = await cli(["verify", "--response", file]);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stdout).toBe("");
      expect(lines(run.stderr)).toEqual([
        expect.stringContaining(`psd2-gateway verify: ${file}: ${message}`),
      ]);
      expect(run.stderr).not.toContain("request line");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
