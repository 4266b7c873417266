/**
 * Evidence in PostgreSQL (issue 40), end to end: a real gateway with `evidence.store: postgres` in
 * front of a recording backend, and a real PostgreSQL on loopback. Each accepted request is a row;
 * `evidence verify|show|bundle|status <postgres-url>` read the table back. PostgreSQL stopped
 * mid-run: payments (onFailure refuse) are turned away with a Berlin Group 503 and never forwarded,
 * /readyz fails, and every payment answered 200 is in the table once it is back. Then a row edited,
 * deleted or swapped in the table: `evidence verify` names it by its key.
 */

import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { paymentRun } from "../helpers/evidence-payments.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";
import {
  describeWithPostgres,
  type PostgresServer,
  startPostgresServer,
} from "../helpers/postgres-server.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

describeWithPostgres("evidence kept in PostgreSQL by a running gateway", () => {
  let server: PostgresServer;
  let sql: pg.Pool;
  let backend: RecordingBackend;
  let gw: TestGateway;
  let readyWhileDown = 0;
  let metricsWhileDown = "";

  const run = paymentRun(() => gw, 200);
  const { acknowledged, refused, until, pay } = run;

  beforeAll(async () => {
    server = await startPostgresServer();
    sql = new pg.Pool({ connectionString: server.url, max: 1 });
    sql.on("error", () => undefined);
    backend = await startRecordingBackend();
    gw = await startTestGateway({
      backendUrl: backend.url,
      config: { evidence: { store: "postgres", postgres: { url: server.url } } },
    });
    const first = randomUUID();
    expect((await pay(first)).status).toBe(200);
    acknowledged.push(first);
    await until("psd2_gateway_evidence_records_written_total 1");

    await server.stop();
    // Payments go on while their records are queued; the first write that fails turns them away.
    await run.payUntilRefused(100);
    metricsWhileDown = await until("psd2_gateway_evidence_store_failing 1");
    const more = randomUUID();
    expect((await pay(more)).status).toBe(503);
    refused.push(more);
    readyWhileDown = (await fetch(`${gw.gateway.adminUrl}/readyz`)).status;

    // Back: the store writes what it acknowledged, and takes records again.
    await server.start();
    await until("psd2_gateway_evidence_store_failing 0");
    const after = randomUUID();
    expect((await pay(after)).status).toBe(200);
    acknowledged.push(after);
    await gw.close(1_000);
  }, 120_000);

  afterAll(async () => {
    await backend?.close();
    await sql?.end();
    await server?.remove();
  });

  const requestRows = async () =>
    (
      await sql.query<{ chain: string; seq: string; request_id: string }>(
        'SELECT chain, seq, request_id FROM evidence_lines WHERE line LIKE \'{%"type":"request"%\' ORDER BY chain, seq',
      )
    ).rows;

  it("refuses payments with a Berlin Group 503 while PostgreSQL is down; the backend never sees them; not ready", () => {
    expect(run.refusal?.status).toBe(503);
    expect(run.refusal?.json.tppMessages?.[0]).toMatchObject({
      category: "ERROR",
      code: "SERVICE_UNAVAILABLE",
    });
    expect(run.refusal?.json.tppMessages?.[0]?.text).toContain("could not keep the evidence");
    const forwarded = backend.requests.map((r) => r.headers["x-request-id"]);
    for (const id of refused) expect(forwarded).not.toContain(id);
    for (const id of acknowledged) expect(forwarded).toContain(id);
    expect(metricsWhileDown).toMatch(/psd2_gateway_evidence_failures_total\{reason="gone"\} [1-9]/);
    expect(readyWhileDown).toBe(503);
  });

  it("loses nothing it acknowledged: every payment answered 200 is a row, once; no refused one is", async () => {
    const ids = (await requestRows()).map((r) => r.request_id);
    expect(ids).toEqual(acknowledged);
    for (const id of refused) expect(ids).not.toContain(id);
  });

  it("`evidence verify|show|bundle|status <postgres-url>` read the table (show and bundle by request id, status by chain heads)", async () => {
    const verified = await runCli(["evidence", "verify", server.url]);
    expect(verified.stdout).toMatch(new RegExp(`^ok {5}\\S+: ${acknowledged.length} records in 1 file`, "m"));
    expect(verified.code).toBe(0);
    const shown = await runCli([
      "evidence",
      "show",
      "--request-id",
      acknowledged[0]!,
      "--folder",
      server.url,
    ]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^# evidence_lines \(instance '[^']+', chain '[^']+', seq 1\)$/m);
    const out = join(mkdtempSync(join(tmpdir(), "psd2-bundle-")), "bundle");
    const bundled = await runCli([
      "evidence",
      "bundle",
      "--request-id",
      acknowledged[0]!,
      "--out",
      out,
      "--folder",
      server.url,
    ]);
    expect(bundled.stderr).toBe("");
    expect(bundled.code).toBe(0);
    expect(existsSync(join(out, "README.txt"))).toBe(true);
    // status reads each chain's head (its last checkpoint's or file line's count, the records after it).
    const status = await runCli(["evidence", "status", "--folder", server.url, "--json"]);
    const read = JSON.parse(status.stdout) as { ok: boolean; chains: { records: number }[] };
    expect(read.ok).toBe(true);
    expect(read.chains.reduce((sum, c) => sum + c.records, 0)).toBe(acknowledged.length);
  }, 60_000);

  it("a row edited, deleted or swapped in the table: `evidence verify` names it by its key", async () => {
    const [a, b] = await requestRows();
    const key = (seq: string) => `chain '${a!.chain}', seq ${seq})`;
    await sql.query("CREATE TABLE original AS SELECT * FROM evidence_lines");
    const tampered = async (change: string, params: readonly unknown[]) => {
      await sql.query(change, [...params]);
      const run = await runCli(["evidence", "verify", server.url]);
      await sql.query("DELETE FROM evidence_lines");
      await sql.query("INSERT INTO evidence_lines SELECT * FROM original");
      return run;
    };

    const edited = await tampered(
      'UPDATE evidence_lines SET line = replace(line, \'"method":"POST"\', \'"method":"PUT"\') WHERE chain = $1 AND seq = $2',
      [a!.chain, a!.seq],
    );
    expect(edited.code).toBe(1);
    expect(edited.stdout).toContain(
      `${key(a!.seq)}: seq ${a!.seq} (X-Request-ID ${a!.request_id}) was altered`,
    );

    const deleted = await tampered("DELETE FROM evidence_lines WHERE chain = $1 AND seq = $2", [
      a!.chain,
      a!.seq,
    ]);
    expect(deleted.code).toBe(1);
    expect(deleted.stdout).toContain(`seq ${a!.seq} removed`);

    const swapped = await tampered(
      `UPDATE evidence_lines e SET line = o.line FROM evidence_lines o
       WHERE e.chain = $1 AND o.chain = $1 AND ((e.seq = $2 AND o.seq = $3) OR (e.seq = $3 AND o.seq = $2))`,
      [a!.chain, a!.seq, b!.seq],
    );
    expect(swapped.code).toBe(1);
    expect(swapped.stdout).toContain(
      `${key(a!.seq)}: seq ${b!.seq} (X-Request-ID ${b!.request_id}) is out of order`,
    );

    // Put back, the table verifies again: the CLI named the change, not the reading.
    expect((await runCli(["evidence", "verify", server.url])).code).toBe(0);
  }, 60_000);
});
