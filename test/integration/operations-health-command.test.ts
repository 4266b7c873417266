/**
 * `psd2-gateway health --config <file>`, the Docker HEALTHCHECK: it finds the admin listener from
 * the same config the gateway runs with, exits 0 while the gateway is alive (and ready, with
 * `--ready`), and 1 with one line saying why once it is gone.
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { testPki } from "../helpers/gateway-fixture.js";
import { type GatewayProcess, startGatewayProcess } from "../helpers/gateway-process.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

function health(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cli(["health", ...args]);
}

const cli = (args: readonly string[]) =>
  runCli(args, { env: { LOG_LEVEL: process.env.LOG_LEVEL ?? "info" } });

describe("psd2-gateway health (the Docker HEALTHCHECK) and trust status", () => {
  let backend: RecordingBackend;
  let gateway: GatewayProcess;

  beforeAll(async () => {
    backend = await startRecordingBackend();
    gateway = await startGatewayProcess({
      pki: await testPki(),
      dir: mkdtempSync(join(tmpdir(), "psd2-health-")),
      backendUrl: backend.url,
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await backend?.close();
  });

  it("trust status: every source of the running gateway with its state; --json the admin listener's /trust", async () => {
    const [text, json] = await Promise.all([
      cli(["trust", "status", "--config", gateway.configFile]),
      cli(["trust", "status", "--config", gateway.configFile, "--json"]),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^register\s+fresh\s+register: \S+register\.json$/m);
    expect(text.stdout).toMatch(/last success \d{4}-\d\d-\d\dT.*; 2 entries; 0 failures/);
    const parsed = JSON.parse(json.stdout) as { sources: { kind: string; stale: boolean }[] };
    expect(parsed.sources.some((s) => s.kind === "register" && !s.stale)).toBe(true);
    const usage = await cli(["trust", "--config", gateway.configFile]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("psd2-gateway trust status");
  });

  it("a running gateway: exit 0 for /healthz, and for /readyz with --ready --json", async () => {
    const [alive, ready] = await Promise.all([
      health(["--config", gateway.configFile]),
      health(["--config", gateway.configFile, "--ready", "--json"]),
    ]);
    expect(alive.code, alive.stderr).toBe(0);
    expect(alive.stdout.trim()).toBe(`200 ${gateway.adminUrl}/healthz`);
    expect(ready.code, ready.stderr).toBe(0);
    expect(JSON.parse(ready.stdout)).toMatchObject({ status: "ready" });
  });

  it("once the gateway has stopped: exit 1 and one line naming the URL", async () => {
    await gateway.stop();
    const gone = await health(["--config", gateway.configFile]);
    expect(gone.code).toBe(1);
    const lines = gone.stderr.split("\n").filter((l) => l.trim() !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${gateway.adminUrl}/healthz did not answer`);
  });
});
