/**
 * Evidence under a failing disk (issue 40), over a real gateway on loopback: its evidence folder on
 * a small tmpfs that fills up mid-run. Under `onFailure: refuse` (payments) no request is forwarded
 * without its record: the TPP gets a Berlin Group 503 saying evidence could not be kept, the backend
 * never sees the request, and /readyz fails; under `continue` (the other routes) requests pass and
 * the loss is counted (the metric, and a gap line in the chain). Every request answered 200 before
 * or while the disk filled is in the chain once space is back: nothing acknowledged is lost.
 *
 * Mounting a tmpfs needs root (CI's container runs as root); elsewhere the file is skipped, saying why.
 */

import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { paymentRun } from "../helpers/evidence-payments.js";
import { signedCall, startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const mountPoint = mkdtempSync(join(tmpdir(), "psd2-evidence-tmpfs-"));
function mounted(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const canMount = mounted();
if (!canMount) console.warn("skipping evidence-faults.test.ts: mounting a tmpfs needs root");

describe.skipIf(!canMount)("the evidence folder's disk fills up mid-run", () => {
  const folder = join(mountPoint, "evidence");
  const filler = join(mountPoint, "filler");
  let backend: RecordingBackend;
  let gw: TestGateway;
  let passedWhileFailing = 0;
  const READS = 6;
  const reads: string[] = [];
  let readyWhileFailing = 0;
  let metricsWhileFailing = "";

  const run = paymentRun(() => gw);
  const { acknowledged, refused, metricsText, until, pay } = run;

  beforeAll(async () => {
    mkdirSync(folder);
    backend = await startRecordingBackend();
    gw = await startTestGateway({
      backendUrl: backend.url,
      // A short queue: under continue, reads while the disk is full overflow it and are lost, counted.
      config: { evidence: { folder, queueLength: 4, onFailure: { payments: "refuse", others: "continue" } } },
    });
    const first = randomUUID();
    expect((await pay(first)).status).toBe(200);
    acknowledged.push(first);
    await until("psd2_gateway_evidence_records_written_total 1");

    // The disk fills up.
    try {
      for (;;) appendFileSync(filler, Buffer.alloc(16 * 1024, 1));
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
    }
    // Payments go on while their records are queued; the first write that fails turns them away.
    await run.payUntilRefused(40);
    metricsWhileFailing = await until("psd2_gateway_evidence_store_failing 1");
    const more = randomUUID();
    expect((await pay(more)).status).toBe(503);
    refused.push(more);
    // Account reads (onFailure continue) pass: queued while there is room, then without their record.
    for (let i = 0; i < READS; i++) {
      const id = randomUUID();
      const read = await signedCall(gw, {
        signer: gw.pki.tppA.qseal,
        target: "/v1/accounts",
        headers: { "X-Request-ID": id },
      });
      if (read.status === 200) passedWhileFailing += 1;
      reads.push(id);
    }
    readyWhileFailing = (await fetch(`${gw.gateway.adminUrl}/readyz`)).status;
    metricsWhileFailing = await metricsText();

    // Space again: the store writes what it acknowledged, and takes records again.
    unlinkSync(filler);
    await until("psd2_gateway_evidence_store_failing 0");
    const after = randomUUID();
    expect((await pay(after)).status).toBe(200);
    acknowledged.push(after);
    await gw.close(1_000);
  }, 120_000);

  afterAll(async () => {
    await backend?.close();
    if (canMount) execFileSync("umount", [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });

  const chainText = () => {
    const [chain] = readdirSync(join(folder, "chains"));
    return readdirSync(join(folder, "chains", chain!))
      .sort()
      .map((f) => readFileSync(join(folder, "chains", chain!, f), "utf8"))
      .join("");
  };

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
  });

  it("says so: store failing (disk-full), not ready, the loss under continue counted", () => {
    expect(metricsWhileFailing).toContain("psd2_gateway_evidence_store_failing 1");
    expect(metricsWhileFailing).toMatch(/psd2_gateway_evidence_failures_total\{reason="disk-full"\} [1-9]/);
    expect(metricsWhileFailing).toMatch(/psd2_gateway_evidence_failures_total\{reason="queue-full"\} [1-9]/);
    expect(readyWhileFailing).toBe(503);
    expect(passedWhileFailing).toBe(READS);
    expect(metricsWhileFailing).toMatch(
      /psd2_gateway_rejections_total\{code="SERVICE_UNAVAILABLE",step="evidence"\} [1-9]/,
    );
  });

  it("loses nothing it acknowledged: every payment answered 200 is in the chain, none refused, and it verifies", async () => {
    const text = chainText();
    for (const id of acknowledged) expect(text).toContain(`"requestId":"${id}"`);
    for (const id of refused) expect(text).not.toContain(`"requestId":"${id}"`);
    // Each account read is in the chain (queued while failing, written once space was back) or
    // counted in a gap line (the queue was full); some of each.
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    const dropped = lines.filter((l) => l.type === "gap").reduce((n, g) => n + g.dropped, 0);
    const kept = reads.filter((id) => text.includes(`"requestId":"${id}"`)).length;
    expect(dropped).toBeGreaterThan(0);
    expect(kept).toBeGreaterThan(0);
    expect(kept + dropped).toBe(READS);
    const verified = await runCli(["evidence", "verify", folder]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(`${dropped} records not kept (gap lines)`);
  }, 60_000);
});
