/**
 * jwcrypto (Debian's python3-jwcrypto), an independent JOSE implementation, run as a child process
 * over test/helpers/jwcrypto-tool.py. Tests that need it skip with a message on a developer machine
 * without it and fail in CI, where a missing interop partner must never pass as a skipped suite.
 */

import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe } from "vitest";

const INSTALL_HINT = "install it with `apt-get install python3-jwcrypto` (.ci/run does so in CI)";
const TOOL = fileURLToPath(new URL("./jwcrypto-tool.py", import.meta.url));
/** PATH's python3 may be a pyenv one without Debian's dist-packages: Debian's own comes second. */
const CANDIDATES = ["python3", "/usr/bin/python3"];

let python: string | null | undefined;

function findPython(): string | null {
  for (const candidate of CANDIDATES) {
    const run = spawnSync(candidate, ["-c", "import jwcrypto"], { stdio: "ignore" });
    if (run.error === undefined && run.status === 0) return candidate;
  }
  return null;
}

/** True when a python3 imports jwcrypto; in CI (CI=true) its absence throws instead. */
export function jwcryptoAvailable(): boolean {
  python ??= findPython();
  if (python === null && process.env["CI"] === "true") {
    throw new Error(
      `no python3 imports jwcrypto and CI=true: JWS interop tests must run in CI; ${INSTALL_HINT}`,
    );
  }
  return python !== null;
}

/** `describe` when jwcrypto is available, a skipped `describe` saying why otherwise. */
export function describeWithJwcrypto(name: string, body: () => void): void {
  if (jwcryptoAvailable()) {
    describe(name, body);
    return;
  }
  const reason = `python3-jwcrypto not importable; ${INSTALL_HINT}`;
  console.warn(`skipping "${name}": ${reason}`);
  describe.skip(`${name} (skipped: ${reason})`, body);
}

export type JwcryptoOp =
  | {
      op: "sign";
      key?: string;
      secret?: string;
      protected: Record<string, unknown> | string;
      payload: string;
    }
  | { op: "verify"; key: string; jws: string; payload: string };

export interface JwcryptoResult {
  jws?: string;
  valid?: boolean;
  error?: string;
}

/** Runs the operations in one Python process; payloads are base64 of their bytes. */
export function runJwcrypto(ops: readonly JwcryptoOp[]): JwcryptoResult[] {
  if (!jwcryptoAvailable() || python === null || python === undefined)
    throw new Error("jwcrypto is not available");
  const run = spawnSync(python, [TOOL], { input: JSON.stringify(ops), encoding: "utf8", timeout: 60_000 });
  if (run.status !== 0) throw new Error(`jwcrypto-tool.py failed (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout) as JwcryptoResult[];
}
