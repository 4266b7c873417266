/**
 * Evidence when its folder turns read-only mid-run (issue 40), over a real gateway on loopback: the
 * folder bind-mounted onto itself and remounted read-only, as a disk the kernel remounts read-only
 * after an error. The file being written stays open (its handle predates the mount), so the store
 * finds out at its next file (`rotateSeconds: 1`); from then on payments (onFailure refuse) get a
 * Berlin Group 503 and are never forwarded, and the failure is counted as `read-only`. Once the
 * folder is writable again every payment answered 200 is in the chain and it verifies.
 *
 * Bind mounts need root (CI's container runs as root); elsewhere the file is skipped, saying why.
 */

import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { paymentRun } from "../helpers/evidence-payments.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const folder = mkdtempSync(join(tmpdir(), "psd2-evidence-ro-"));
function canBindMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync("mount", ["--bind", folder, folder], { stdio: "ignore" });
    execFileSync("umount", [folder], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const canMount = canBindMount();
if (!canMount) console.warn("skipping evidence-read-only.test.ts: a read-only bind mount needs root");

describe.skipIf(!canMount)("the evidence folder turns read-only mid-run", () => {
  let backend: RecordingBackend;
  let gw: TestGateway;
  let readOnly = false;
  let metricsWhileFailing = "";

  const run = paymentRun(() => gw);
  const { acknowledged, refused, until, pay } = run;

  beforeAll(async () => {
    backend = await startRecordingBackend();
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { evidence: { folder, rotateSeconds: 1, onFailure: "refuse" } },
    });
    const first = randomUUID();
    expect((await pay(first)).status).toBe(200);
    acknowledged.push(first);
    await until("psd2_gateway_evidence_records_written_total 1");

    execFileSync("mount", ["--bind", folder, folder]);
    execFileSync("mount", ["-o", "remount,bind,ro", folder]);
    readOnly = true;
    // Payments go on while the open file takes them; the next file cannot be made: they are refused.
    await run.payUntilRefused(100);
    metricsWhileFailing = await until("psd2_gateway_evidence_store_failing 1");
    const more = randomUUID();
    expect((await pay(more)).status).toBe(503);
    refused.push(more);

    // Writable again: the store writes what it acknowledged, and takes records again.
    execFileSync("umount", [folder]);
    readOnly = false;
    await until("psd2_gateway_evidence_store_failing 0");
    const after = randomUUID();
    expect((await pay(after)).status).toBe(200);
    acknowledged.push(after);
    await gw.close(1_000);
  }, 120_000);

  afterAll(async () => {
    if (readOnly) execFileSync("umount", [folder]);
    await backend?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("refuses payments with a Berlin Group 503 while it cannot keep their records; the backend never sees them", () => {
    expect(run.refusal?.status).toBe(503);
    expect(run.refusal?.json.tppMessages?.[0]).toMatchObject({
      category: "ERROR",
      code: "SERVICE_UNAVAILABLE",
    });
    expect(run.refusal?.json.tppMessages?.[0]?.text).toContain("could not keep the evidence");
    const forwarded = backend.requests.map((r) => r.headers["x-request-id"]);
    for (const id of refused) expect(forwarded).not.toContain(id);
    for (const id of acknowledged) expect(forwarded).toContain(id);
    expect(metricsWhileFailing).toMatch(/psd2_gateway_evidence_failures_total\{reason="read-only"\} [1-9]/);
  });

  it("loses nothing it acknowledged: every payment answered 200 is in the chain once, none refused, and it verifies", async () => {
    const [chain] = readdirSync(join(folder, "chains"));
    const text = readdirSync(join(folder, "chains", chain!))
      .sort()
      .map((f) => readFileSync(join(folder, "chains", chain!, f), "utf8"))
      .join("");
    const ids = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === "request")
      .map((l) => l.requestId);
    expect(ids).toEqual(acknowledged);
    for (const id of refused) expect(ids).not.toContain(id);
    const verified = await runCli(["evidence", "verify", folder]);
    expect(verified.stdout).toContain("ok ");
    expect(verified.code).toBe(0);
  }, 60_000);
});
