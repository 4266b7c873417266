/**
 * The supported runtime. Node 20 is end of life (2026-04-30) and gets no security fixes, so the
 * gateway runs on a supported LTS line. `npm ci` installs one from the npm registry as an
 * optional dependency (`node-<platform>-<arch>`, a registry package holding the official binary,
 * no install script), which npm scripts find first on their PATH; a command started directly with
 * an older system `node` hands itself over to that binary, or says what to install.
 */

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The oldest major version the gateway runs on and is tested on: Node 26, the Active LTS. */
export const MINIMUM_NODE_MAJOR = 26;

export function nodeMajor(version: string = process.versions.node): number {
  return Number.parseInt(version.split(".")[0] ?? "0", 10);
}

/** The Node binary `npm ci` installed beside the gateway for this platform, if there is one. */
export function bundledNode(): string | undefined {
  const require = createRequire(import.meta.url);
  try {
    const manifest = require.resolve(`node-${process.platform}-${process.arch}/package.json`);
    const binary = join(dirname(manifest), "bin", process.platform === "win32" ? "node.exe" : "node");
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

/** Signals a supervisor or a terminal sends that the gateway acts on: handed to the new process. */
const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP", "SIGUSR2"];

/**
 * Runs this same command line on `binary` and ends this process as that one ends (its exit code, or
 * the signal that ended it). Node 20 has no execve, so the old process stays as a thin parent.
 */
export function handOver(binary: string): void {
  const child = spawn(binary, [...process.execArgv, ...process.argv.slice(1)], { stdio: "inherit" });
  for (const signal of FORWARDED_SIGNALS) {
    // A terminal's Ctrl-C reaches the whole process group; the child decides what it means.
    process.on(signal, () => {
      if (signal !== "SIGINT") child.kill(signal);
    });
  }
  child.on("error", (error) => {
    console.error(`psd2-gateway: could not start ${binary}: ${error.message}`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      for (const s of FORWARDED_SIGNALS) process.removeAllListeners(s);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

/** Why this runtime cannot run the gateway, with what to do about it. */
export function unsupportedRuntime(version: string = process.versions.node): string {
  return `psd2-gateway needs Node.js ${MINIMUM_NODE_MAJOR} or later (a supported LTS line); this is Node.js ${version}. \`npm ci\` installs Node.js 26 into node_modules on Linux (x64, arm64) and macOS (x64), and npm scripts use it; elsewhere install Node.js 26 from nodejs.org or your package manager.`;
}
