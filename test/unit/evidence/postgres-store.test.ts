/**
 * The evidence store in PostgreSQL (src/evidence/postgres-store.ts), against a real PostgreSQL on
 * loopback: the same chain as the folder's, read back and checked by the same verify.ts; the
 * certificate once per fingerprint; rows edited, deleted or swapped in the table named by their
 * key; and the database stopped mid-run: nothing offered with mustKeep is taken while it is down,
 * and nothing acknowledged is lost once it is back.
 */

import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  droppedOf,
  openEvidenceReadPool,
  PostgresEvidenceStore,
  type PostgresStoreOptions,
  postgresChainHeads,
  postgresFailureReason,
  readPostgresEvidence,
  readPostgresEvidenceOf,
  redactedUrl,
  verifyPostgresEvidence,
} from "../../../src/evidence/postgres-store.js";
import { chainLines, checkpointKeys, publicKeyOf, verifyChain } from "../../../src/evidence/verify.js";
import {
  describeWithPostgres,
  type PostgresServer,
  startPostgresServer,
} from "../../helpers/postgres-server.js";
import { offerOneByOne, request } from "./evidence-fixtures.js";

const FIXTURE_CA = "test/fixtures/interop/certs/ext-adorsys-fakeca-leading-zero-serial.pem";

let n = 0;
function open(server: PostgresServer, options: Partial<PostgresStoreOptions> = {}) {
  n += 1;
  return PostgresEvidenceStore.open({
    url: server.url,
    instance: "gw",
    instanceId: `chain-${n}`,
    rotateBytes: 1024 * 1024,
    rotateSeconds: 3600,
    retainDays: 0,
    queueLength: 100,
    checkpointSeconds: 60,
    queryTimeoutMs: 2000,
    ...options,
  });
}

/** The chain's report as `evidence verify` makes it: streamed from the table in pages. */
async function verified(url: string, chain: string, pageRows?: number) {
  const found = (await verifyPostgresEvidence(url, publicKeyOf, pageRows)).reports.find(
    (r) => r.chain === chain,
  );
  if (!found) throw new Error(`no chain ${chain}`);
  return found;
}

describeWithPostgres("the PostgreSQL evidence store", () => {
  let server: PostgresServer;
  let sql: pg.Pool;
  beforeAll(async () => {
    server = await startPostgresServer();
    sql = new pg.Pool({ connectionString: server.url, max: 1 });
    sql.on("error", () => undefined);
  }, 60_000);
  afterAll(async () => {
    await sql?.end();
    await server?.remove();
  });

  async function storeWith(ids: readonly string[], options: Partial<PostgresStoreOptions> = {}) {
    const store = await open(server, options);
    await offerOneByOne(store, ids);
    await store.close();
    return store.chainId;
  }

  const rows = async (chain: string) =>
    (
      await sql.query<{ seq: string; line: string }>(
        "SELECT seq, line FROM evidence_lines WHERE chain = $1 ORDER BY seq",
        [chain],
      )
    ).rows;

  it("writes each record once, a row per line keyed (instance, chain, seq), a checkpoint at close: verify passes", async () => {
    const chain = await storeWith(["a", "b", "c"]);
    const lines = (await rows(chain)).map((r) => JSON.parse(r.line));
    expect(lines.map((l) => l.type)).toEqual(["file", "request", "request", "request", "checkpoint"]);
    expect(lines.map((l) => l.seq)).toEqual([0, 1, 2, 3, 4]);
    const report = await verified(server.url, chain);
    expect(report).toMatchObject({ records: 3, checkpoints: 1, uncovered: 0, endsWithCheckpoint: true });
    expect(report.problem).toBeUndefined();
  });

  it("rotates by size into segments, each closed by a checkpoint; verify follows the chain across them", async () => {
    const chain = await storeWith(["a", "b", "c", "d", "e", "f"], { rotateBytes: 600 });
    const segments = await sql.query<{ segment: number }>(
      "SELECT DISTINCT segment FROM evidence_lines WHERE chain = $1 ORDER BY segment",
      [chain],
    );
    expect(segments.rows.length).toBeGreaterThan(1);
    const report = await verified(server.url, chain);
    expect(report.problem).toBeUndefined();
    expect(report.records).toBe(6);
  });

  it("a whole segment deleted from the middle of a chain: verify says which segments are missing", async () => {
    // One record per write, so that each rotates: segments 1, 2, 3, …
    const store = await open(server, { rotateBytes: 600 });
    for (const id of ["a", "b", "c", "d"]) {
      expect(store.offer(request(id), true)).toBe(true);
      for (let i = 0; i < 100 && store.status().written < "abcd".indexOf(id) + 1; i++)
        await new Promise((r) => setTimeout(r, 10));
    }
    await store.close();
    const chain = store.chainId;
    const segments = await sql.query("SELECT DISTINCT segment FROM evidence_lines WHERE chain = $1", [chain]);
    expect(segments.rowCount).toBeGreaterThan(2);
    await sql.query("DELETE FROM evidence_lines WHERE chain = $1 AND segment = 2", [chain]);
    const problem = (await verified(server.url, chain)).problem!;
    expect(problem.kind).toBe("removed");
    expect(problem.text).toContain("segments 2 to 2 are missing before evidence_lines");
  });

  it("keeps each validation report and certificate once, by id and fingerprint", async () => {
    const pem = readFileSync(
      "test/fixtures/interop/certs/ext-adorsys-fakeca-leading-zero-serial.pem",
      "utf8",
    );
    const ca = Buffer.from(new X509Certificate(pem).raw);
    const fingerprint = createHash("sha256").update(ca).digest("hex");
    const asked: string[] = [];
    const store = await open(server, {
      validation: (id) => {
        asked.push(id);
        return { report: { id, indication: "TOTAL_PASSED" }, issuers: [ca] };
      },
    });
    expect(store.offer(request("a", { validationReport: "r-1" }), true)).toBe(true);
    expect(store.offer(request("b", { validationReport: "r-1" }), true)).toBe(true);
    store.putCertificate(fingerprint, ca);
    await store.close();
    expect(asked).toEqual(["r-1"]);
    const read = await readPostgresEvidence(server.url);
    expect(read.reportJson("r-1")).toContain("TOTAL_PASSED");
    expect(read.certificatePem(fingerprint)).toBe(new X509Certificate(ca).toString());
    const count = await sql.query("SELECT 1 FROM evidence_certificates WHERE fingerprint = $1", [
      fingerprint,
    ]);
    expect(count.rowCount).toBe(1);
  });

  it("refuses a second process on the same chain: each gateway process needs its own", async () => {
    await storeWith(["x"], { instanceId: "taken" });
    await expect(storeWith(["y"], { instanceId: "taken" })).rejects.toThrow(/already holds chain taken/);
  });

  describe("evidence verify names the row that was changed", () => {
    // rows: file (0), a (1), b (2), c (3), d (4), checkpoint (5)
    async function tampered(change: (chain: string) => Promise<void>) {
      const chain = await storeWith(["a", "b", "c", "d"]);
      await change(chain);
      return (await verified(server.url, chain)).problem!;
    }

    it("a row edited", async () => {
      const problem = await tampered(async (chain) => {
        await sql.query(
          'UPDATE evidence_lines SET line = replace(line, \'"method":"POST"\', \'"method":"PUT"\') WHERE chain = $1 AND seq = 2',
          [chain],
        );
      });
      expect(problem).toMatchObject({ kind: "altered", requestId: "b", seq: 2 });
      expect(problem.text).toContain("chain 'chain-");
      expect(problem.text).toContain("seq 2)");
    });

    it("a row deleted", async () => {
      const problem = await tampered(async (chain) => {
        await sql.query("DELETE FROM evidence_lines WHERE chain = $1 AND seq = 3", [chain]);
      });
      expect(problem).toMatchObject({ kind: "removed", seq: 3 });
      expect(problem.text).toContain("seq 3 removed");
    });

    it("two rows' lines swapped", async () => {
      const problem = await tampered(async (chain) => {
        await sql.query(
          `UPDATE evidence_lines e SET line = o.line FROM evidence_lines o
           WHERE e.chain = $1 AND o.chain = $1 AND ((e.seq = 2 AND o.seq = 3) OR (e.seq = 3 AND o.seq = 2))`,
          [chain],
        );
      });
      expect(problem).toMatchObject({ kind: "reordered", seq: 3, requestId: "c" });
      expect(problem.text).toContain("seq 2)");
      expect(problem.text).toContain("out of order");
    });
  });

  describe("read without the whole table: show and bundle by request id, status by chain heads, verify in pages", () => {
    it("the schema indexes request_id; opening the store again on existing tables keeps it", async () => {
      await storeWith(["idx"]);
      await storeWith(["idx-again"]);
      const indexes = await sql.query<{ indexdef: string }>(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'evidence_lines' AND indexname = 'evidence_lines_request_id'",
      );
      expect(indexes.rows.map((r) => r.indexdef)).toEqual([expect.stringContaining("(request_id)")]);
    });

    it("by request id: only the lines from the record to the checkpoint after it, and what they name", async () => {
      // Another chain's many rows, and lines before the record in its own: none is read.
      await storeWith(Array.from({ length: 90 }, (_, i) => `other-${i}`));
      const store = await open(server);
      expect(store.offer(request("first"), true)).toBe(true);
      expect(store.offer(request("wanted"), true)).toBe(true);
      expect(store.offer(request("after"), true)).toBe(true);
      store.putCertificate("ab".repeat(32), new X509Certificate(readFileSync(FIXTURE_CA, "utf8")).raw);
      await store.close();
      const read = await readPostgresEvidenceOf(server.url, "wanted");
      expect(read.chains.map((c) => c.id)).toEqual([store.chainId]);
      const lines = [...chainLines(read.chains[0]!)].map((p) => p.line);
      expect(lines.map((l) => [l.type, l.seq])).toEqual([
        ["request", 2],
        ["request", 3],
        ["checkpoint", 4],
      ]);
      expect(read.certificatePem("ab".repeat(32))).toContain("BEGIN CERTIFICATE");
      expect(read.publicKeyPem((lines[2] as { key: string }).key)).toContain("BEGIN PUBLIC KEY");
      expect((await readPostgresEvidenceOf(server.url, "nobody")).chains).toEqual([]);
    });

    it("the whole read, a page at a time: the same chains, and the same reports, as one page", async () => {
      const chain = await storeWith(["p1", "p2", "p3", "p4", "p5"]);
      const whole = await readPostgresEvidence(server.url);
      const paged = await readPostgresEvidence(server.url, 2);
      expect(paged.chains.map((c) => c.id)).toEqual(whole.chains.map((c) => c.id));
      expect(paged.chains.map((c) => c.id)).toContain(chain);
      for (const c of paged.chains) {
        const report = verifyChain(
          c,
          checkpointKeys((id) => paged.publicKeyPem(id)),
        );
        const again = verifyChain(
          whole.chains.find((w) => w.id === c.id)!,
          checkpointKeys((id) => whole.publicKeyPem(id)),
        );
        expect(report).toEqual(again);
      }
    });

    it("verify streams: the whole-read report, page by page, for every chain; a long chain's later pages checked", async () => {
      const whole = await readPostgresEvidence(server.url);
      const streamed = await verifyPostgresEvidence(server.url, publicKeyOf, 3);
      expect(streamed.reports).toEqual(
        whole.chains.map((c) =>
          verifyChain(
            c,
            checkpointKeys((id) => whole.publicKeyPem(id)),
          ),
        ),
      );
      // A few thousand rows read 100 at a time: the chain is checked across 30-odd pages.
      const store = await open(server, { queueLength: 5000 });
      const ids = Array.from({ length: 3000 }, (_, i) => `long-${i}`);
      for (const id of ids) expect(store.offer(request(id), true)).toBe(true);
      await store.close();
      const chain = store.chainId;
      const report = await verified(server.url, chain, 100);
      expect(report).toMatchObject({ records: 3000, problem: undefined });
      await sql.query(
        'UPDATE evidence_lines SET line = replace(line, \'"method":"POST"\', \'"method":"PUT"\') WHERE chain = $1 AND seq = 2500',
        [chain],
      );
      const altered = (await verified(server.url, chain, 100)).problem!;
      expect(altered).toMatchObject({ kind: "altered", seq: 2500, requestId: "long-2499" });
      expect(altered.text).toContain("seq 2500)");
      // Moved to a page after the one it is missing from: the row it went to is named.
      await sql.query(
        `UPDATE evidence_lines e SET line = o.line FROM evidence_lines o
         WHERE e.chain = $1 AND o.chain = $1 AND ((e.seq = 1200 AND o.seq = 2900) OR (e.seq = 2900 AND o.seq = 1200))`,
        [chain],
      );
      const moved = (await verified(server.url, chain, 100)).problem!;
      expect(moved).toMatchObject({ kind: "reordered", seq: 2900, requestId: "long-2899" });
      expect(moved.text).toContain("seq 1200 was expected here (it is at evidence_lines");
      expect(moved.text).toContain("seq 2900))");
    }, 60_000);

    it("status counts the records dropped under continue (gap lines), as verify and the folder's report do", async () => {
      const store = await open(server, { queueLength: 2 });
      // Offered in one go: the writer has not run yet, so the queue is full from the third on.
      expect(store.offer(request("g1"), true)).toBe(true);
      expect(store.offer(request("g2"), true)).toBe(true);
      expect(store.offer(request("g3"), true)).toBe(false);
      expect(store.offer(request("g4"), false)).toBe(false);
      expect(store.offer(request("g5"), false)).toBe(false);
      await store.close();
      const full = await verified(server.url, store.chainId);
      expect(full).toMatchObject({ records: 2, dropped: 2, problem: undefined });
      const { heads } = await postgresChainHeads(server.url, publicKeyOf);
      expect(heads.find((h) => h.chain === store.chainId)).toMatchObject({ records: 2, dropped: 2 });
      // The sum reads the chain's gap lines through their partial index, not every row of the chain:
      // with sequential scans priced out, a predicate the index does not match would still scan.
      const client = await sql.connect();
      try {
        await client.query("SET enable_seqscan = off");
        const plan = await client.query<{ "QUERY PLAN": string }>(
          `EXPLAIN SELECT (${droppedOf("c")}) FROM (SELECT 'gw'::text AS instance, $1::text AS chain) c`,
          [store.chainId],
        );
        expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toContain("evidence_lines_gaps");
      } finally {
        client.release();
      }
    });

    // A long chain's row estimates put the head query above jit_above_cost: compiling it was the
    // whole of a 0.57 s status at 300,000 rows, for 1 ms of execution (bench/RESULTS.md).
    it("status, verify, show and bundle read with JIT off (the server's default is on)", async () => {
      expect((await sql.query<{ jit: string }>("SHOW jit")).rows[0]!.jit).toBe("on");
      const pool = await openEvidenceReadPool(server.url);
      try {
        expect((await pool.query<{ jit: string }>("SHOW jit")).rows[0]!.jit).toBe("off");
      } finally {
        await pool.end();
      }
    });

    it("status reads each chain's head: records, files, times, and a last checkpoint that no longer holds", async () => {
      const chain = await storeWith(["h1", "h2", "h3"], { rotateBytes: 600 });
      const full = await verified(server.url, chain);
      const { heads } = await postgresChainHeads(server.url, publicKeyOf);
      const head = heads.find((h) => h.chain === chain)!;
      expect(head).toEqual({
        chain,
        files: full.files,
        records: 3,
        lastTime: full.lastTime,
        lastCheckpointTime: full.lastCheckpointTime,
        endsWithCheckpoint: full.endsWithCheckpoint,
        dropped: 0,
        problem: undefined,
      });
      expect(full.files).toBeGreaterThan(1);
      await sql.query(
        `UPDATE evidence_lines SET line = replace(line, '"time":"', '"time":"1') WHERE chain = $1 AND seq = (
           SELECT max(seq) FROM evidence_lines WHERE chain = $1 AND line LIKE '%"type":"checkpoint"%')`,
        [chain],
      );
      const altered = (await postgresChainHeads(server.url, publicKeyOf)).heads.find(
        (h) => h.chain === chain,
      )!;
      expect(altered.problem?.kind).toBe("checkpoint");
      expect(altered.problem?.text).toContain("signature does not hold");
      // A row edited into something that is not JSON: status and show still answer (verify names it).
      // The last row: the one each walk back along the key, and the walk forward from h3, read first.
      await sql.query(
        "UPDATE evidence_lines SET line = 'not json' WHERE chain = $1 AND seq = (SELECT max(seq) FROM evidence_lines WHERE chain = $1)",
        [chain],
      );
      expect((await postgresChainHeads(server.url, publicKeyOf)).heads.map((h) => h.chain)).toContain(chain);
      const read = await readPostgresEvidenceOf(server.url, "h3");
      expect(read.chains.map((c) => c.id)).toEqual([chain]);
    });
  });

  // Last but one: the sweep is the whole table's, so it takes the earlier tests' chains too.
  it("retention: a start deletes whole segments whose newest line is older than retainDays, never a segment being written", async () => {
    const chain = await storeWith(["a", "b", "c", "d"], { rotateBytes: 600 });
    const bySegment = async (c: string) =>
      (
        await sql.query<{ segment: number; lines: string }>(
          "SELECT segment, count(*) AS lines FROM evidence_lines WHERE chain = $1 GROUP BY segment ORDER BY segment",
          [c],
        )
      ).rows.map((r) => [r.segment, Number(r.lines)]);
    const written = await bySegment(chain);
    expect(written.length).toBeGreaterThan(2);
    // Segment 2's newest line after the cutoff (the rest of it before): it stays whole.
    await sql.query(
      `UPDATE evidence_lines SET written_at = now() + interval '5 days' WHERE chain = $1 AND segment = 2
         AND seq = (SELECT max(seq) FROM evidence_lines WHERE chain = $1 AND segment = 2)`,
      [chain],
    );
    // The sweeping gateway's clock 3 days ahead, retainDays 1: the cutoff is 2 days from now, after
    // every line but that one, its own current segment's included.
    const store = await open(server, { retainDays: 1, now: () => Date.now() + 3 * 86_400_000 });
    for (let i = 0; i < 250 && (await bySegment(chain)).length !== 1; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(await bySegment(chain)).toEqual([written.find(([segment]) => segment === 2)]);
    expect((await rows(store.chainId)).length).toBeGreaterThan(0);
    await store.close();
    expect((await verified(server.url, store.chainId)).problem).toBeUndefined();
    const indexes = await sql.query(
      "SELECT indexdef FROM pg_indexes WHERE indexname = 'evidence_lines_segments'",
    );
    expect(indexes.rows[0]?.indexdef).toContain("(instance, chain, segment, written_at)");
  });

  it("PostgreSQL stopped mid-run: nothing kept-only is taken while it is down, nothing acknowledged is lost", async () => {
    const failures: string[] = [];
    const recovered: number[] = [];
    const store = await open(server, {
      events: { failed: (reason) => failures.push(reason), recovered: () => recovered.push(1) },
    });
    const acknowledged: string[] = [];
    const refused: string[] = [];
    const offer = (id: string) => (store.offer(request(id), true) ? acknowledged : refused).push(id);
    for (let i = 0; i < 20; i++) offer(`before-${i}`);
    await server.stop();
    // Offered while it goes down: queued (acknowledged) until the store finds out, refused after.
    for (let i = 0; i < 50 && !store.status().failing; i++) {
      offer(`during-${i}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(store.status().failing?.reason).toBe("gone");
    for (let i = 0; i < 5; i++) offer(`down-${i}`);
    expect(refused).toEqual(expect.arrayContaining(["down-0", "down-4"]));
    expect(failures).toContain("gone");
    expect(failures).toContain("store-failing");
    await server.start();
    for (let i = 0; i < 100 && store.status().failing; i++) await new Promise((r) => setTimeout(r, 100));
    expect(store.status().failing).toBeUndefined();
    expect(recovered.length).toBeGreaterThan(0);
    offer("after");
    await store.close();
    const kept = (await rows(store.chainId))
      .map((r) => JSON.parse(r.line))
      .filter((l) => l.type === "request")
      .map((l) => l.requestId);
    expect(kept).toEqual(acknowledged);
    for (const id of refused) expect(kept).not.toContain(id);
    expect((await verified(server.url, store.chainId)).problem).toBeUndefined();
  }, 60_000);
});

describe("what a failed query means, and the URL as logged", () => {
  it.each([
    ["ECONNREFUSED", "gone"],
    ["57P01", "gone"], // admin_shutdown: the server stopped
    ["08006", "gone"],
    ["53100", "disk-full"],
    ["25006", "read-only"],
    ["42501", "read-only"], // insufficient_privilege: a user without INSERT
    ["23505", "conflict"],
    ["42P01", "io"],
  ])("%s is %s", (code, reason) => {
    expect(postgresFailureReason(Object.assign(new Error("x"), { code }))).toBe(reason);
  });

  it("never shows the password", () => {
    expect(redactedUrl("postgres://gw:s3cret@db:5432/e")).toBe("postgres://gw:***@db:5432/e");
    expect(redactedUrl("postgres://gw:s3cret@db:5432/e")).not.toContain("s3cret");
  });
});
