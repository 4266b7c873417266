/** The command line: picks the command and hands over to its file in cli/. */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../config/load.js";
import { certsCommand } from "./certs.js";
import { type Command, runCommand, USAGE_ERROR } from "./command.js";
import { demoCommand } from "./demo.js";
import { evidenceCommand } from "./evidence.js";
import { healthCommand } from "./health.js";
import { PACKAGE_ROOT } from "./paths.js";
import { sandboxCommand } from "./sandbox.js";
import { signCommand } from "./sign.js";
import { startCommand } from "./start.js";
import { trustCommand } from "./trust.js";
import { verifyCommand } from "./verify.js";

// biome-ignore lint/suspicious/noExplicitAny: each command has its own option types
export const COMMANDS: readonly Command<any>[] = [
  startCommand,
  certsCommand,
  signCommand,
  verifyCommand,
  demoCommand,
  sandboxCommand,
  healthCommand,
  trustCommand,
  evidenceCommand,
];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `psd2-gateway <command> [options]

commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join("\n")}

psd2-gateway <command> --help   explains a command and its options
psd2-gateway --version          prints the version
`;
}

/** The version in package.json, which sits beside dist/ and src/ alike. */
function version(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  return manifest.version;
}

async function dispatch(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(usage());
    return name === undefined ? USAGE_ERROR : 0;
  }
  if (name === "--version" || name === "-v") {
    console.log(`psd2-gateway ${version()}`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    console.error(`psd2-gateway: unknown command '${name}'; see psd2-gateway --help`);
    return USAGE_ERROR;
  }
  return runCommand(command, rest);
}

/** Runs the command named by `argv` and sets the process's exit code from it. */
export function main(argv: string[]): void {
  dispatch(argv).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (error: unknown) => {
      console.error(
        error instanceof ConfigError ? error.message : `psd2-gateway: ${(error as Error).message ?? error}`,
      );
      process.exitCode = 1;
    },
  );
}
