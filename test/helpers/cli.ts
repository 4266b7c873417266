/** The command line run as a user runs it (`psd2-gateway …`, through tsx), to its end. */

import { spawn } from "node:child_process";
import { REPO_ROOT } from "./gateway-process.js";

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  /** Killed after this long, and the test failed (a usage error must not start anything). */
  readonly timeoutMs?: number;
  /**
   * Without the power to read any file (root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped
   * with util-linux's setpriv), so that file permissions apply to root too.
   */
  readonly withoutFileOverride?: boolean;
  readonly env?: NodeJS.ProcessEnv;
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    const command = [
      process.execPath,
      "--conditions=psd2-gateway-source",
      "--import",
      "tsx",
      "src/main.ts",
      ...args,
    ];
    const [file, ...rest] = options.withoutFileOverride
      ? ["setpriv", "--bounding-set=-dac_override,-dac_read_search", ...command]
      : command;
    const child = spawn(file!, rest, {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...(options.env ?? {}) },
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
