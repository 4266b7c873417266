/**
 * A real headless Chromium for browser tests, driven by playwright-core: Debian's `chromium`
 * (never a browser build downloaded by Playwright), or the one `CHROMIUM_PATH` names. Tests that
 * need it use `describeWithBrowser`, which skips with a message on a developer machine without
 * Chromium and fails in CI, where a missing browser must never pass as a skipped suite.
 */

import { spawnSync } from "node:child_process";
import { type Browser, chromium } from "playwright-core";
import { describe } from "vitest";

const DEFAULT_PATH = "/usr/bin/chromium";
const INSTALL_HINT =
  "install it with `apt-get install chromium` (.ci/run does so in CI) or point CHROMIUM_PATH at one";

/** The Chromium the tests drive: `CHROMIUM_PATH`, else Debian's. */
export function chromiumPath(): string {
  return process.env["CHROMIUM_PATH"] || DEFAULT_PATH;
}

let available: boolean | undefined;

/** True when Chromium runs; in CI (CI=true) its absence throws instead. */
export function browserAvailable(): boolean {
  // Debian's /usr/bin/chromium is a shell wrapper: `--version` runs it without starting a browser.
  available ??= spawnSync(chromiumPath(), ["--version"], { stdio: "ignore", timeout: 30_000 }).status === 0;
  if (!available && process.env["CI"] === "true") {
    throw new Error(
      `${chromiumPath()} does not run and CI=true: browser tests must run in CI; ${INSTALL_HINT}`,
    );
  }
  return available;
}

/** `describe` when Chromium is available, a skipped `describe` saying why otherwise. */
export function describeWithBrowser(name: string, body: () => void): void {
  if (browserAvailable()) {
    describe(name, body);
    return;
  }
  const reason = `${chromiumPath()} does not run; ${INSTALL_HINT}`;
  console.warn(`skipping "${name}": ${reason}`);
  describe.skip(`${name} (skipped: ${reason})`, body);
}

/**
 * A headless Chromium. Its sandbox needs user namespaces an unprivileged user has, not root (CI
 * runs as root), so `--no-sandbox` is added only there. Close it in `afterAll`.
 */
export function launchBrowser(): Promise<Browser> {
  const root = process.getuid?.() === 0;
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    ...(root ? { args: ["--no-sandbox"] } : {}),
  });
}
