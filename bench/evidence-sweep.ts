/**
 * Retention's sweep on a long PostgreSQL table (src/evidence/postgres-store.ts, RETENTION_SWEEP):
 * its time with nothing to delete (the hourly case) and with one segment to delete, against the
 * GROUP BY over every row it replaced, interleaved, each in a transaction rolled back, medians of 5;
 * and what the index it reads (evidence_lines_segments) costs an INSERT of payment-sized lines. A
 * throwaway PostgreSQL (test/helpers/postgres-server.ts); synthetic rows, one a second, in segments
 * of 100,000.
 *
 *     npx tsx bench/evidence-sweep.ts [rows, default 1000000]
 */

import { RETENTION_SWEEP } from "../src/evidence/postgres-store.js";
import { startPostgresServer } from "../test/helpers/postgres-server.js";
import { makeEvidenceTables } from "./evidence-tables.js";
import { machineLine } from "./results-file.js";

/** The sweep before (2026-11-29): every row grouped by segment, once an hour. */
const GROUP_BY_SWEEP = `DELETE FROM evidence_lines e USING (
  SELECT instance, chain, segment FROM evidence_lines GROUP BY instance, chain, segment
  HAVING max(written_at) < $1
) old
WHERE e.instance = old.instance AND e.chain = old.chain AND e.segment = old.segment
  AND NOT (e.instance = $2 AND e.chain = $3 AND e.segment = $4)`;

const rows = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const server = await startPostgresServer();
try {
  const sql = await makeEvidenceTables(server.url);
  await sql.query(
    `INSERT INTO evidence_lines (instance, chain, seq, segment, request_id, line, written_at)
     SELECT 'gw', 'long', s, 1 + s / 100000, 'r' || s,
       '{"chain":"long","prev":"x","requestId":"r' || s || '","seq":' || s || ',"type":"request"}',
       now() - ($1::bigint - s) * interval '1 second'
     FROM generate_series(0, $1::bigint - 1) s`,
    [rows],
  );
  await sql.query("ANALYZE evidence_lines");
  const timed = async (text: string, before: Date) => {
    await sql.query("BEGIN");
    const started = performance.now();
    const result = await sql.query(text, [before, "gw", "the-sweeper", 1]);
    const ms = performance.now() - started;
    await sql.query("ROLLBACK");
    return { ms, deleted: result.rowCount ?? 0 };
  };
  const lines: string[] = [];
  const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000);
  // The oldest segment's newest line is (rows − 100,000) s old: a cutoff 0.1 day after it takes that one.
  const oneSegment = daysAgo((rows - 100_000) / 86_400 - 0.1);
  for (const [label, before] of [
    ["nothing to delete", daysAgo(rows / 86_400 + 30)],
    ["one segment of 100,000 rows to delete", oneSegment],
  ] as const) {
    const now: number[] = [];
    const old: number[] = [];
    let deleted = [0, 0];
    for (let round = 0; round < ROUNDS; round++) {
      const a = await timed(GROUP_BY_SWEEP, before);
      const b = await timed(RETENTION_SWEEP, before);
      old.push(a.ms);
      now.push(b.ms);
      deleted = [a.deleted, b.deleted];
    }
    if (deleted[0] !== deleted[1])
      throw new Error(`${label}: the two sweeps deleted ${deleted.join(" and ")} rows`);
    lines.push(`| ${label} | ${median(old).toFixed(1)} | ${median(now).toFixed(1)} | ${deleted[1]} |`);
  }
  // The index's cost to a writer: 100,000 lines of 2.8 KB (a payment's record) with and without it.
  const definition = (
    await sql.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE indexname = 'evidence_lines_segments'",
    )
  ).rows[0]!.indexdef;
  const insert = async (chain: string) => {
    await sql.query("BEGIN");
    const started = performance.now();
    await sql.query(
      `INSERT INTO evidence_lines (instance, chain, seq, segment, request_id, line)
       SELECT 'gw', $1, s, 1 + s / 10000, 'r' || s, repeat('x', 2800) FROM generate_series(0, 99999) s`,
      [chain],
    );
    const ms = performance.now() - started;
    await sql.query("ROLLBACK");
    return ms;
  };
  const withIndex: number[] = [];
  const without: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    withIndex.push(await insert(`with-${round}`));
    await sql.query("DROP INDEX evidence_lines_segments");
    without.push(await insert(`without-${round}`));
    await sql.query(definition);
  }
  await sql.end();
  console.log(
    [
      `${machineLine()}, PostgreSQL (test/helpers/postgres-server.ts), ${rows.toLocaleString("en-US")} rows in segments of 100,000, one line a second; medians of ${ROUNDS} interleaved rounds, each in a transaction rolled back. Run with \`npx tsx bench/evidence-sweep.ts ${rows}\`.`,
      "",
      "| sweep | GROUP BY every row (before) ms | loose index scan (now) ms | rows deleted |",
      "|---|---:|---:|---:|",
      ...lines,
      "",
      `INSERT of 100,000 lines of 2.8 KB: ${median(without).toFixed(0)} ms without evidence_lines_segments, ${median(withIndex).toFixed(0)} ms with it (×${(median(withIndex) / median(without)).toFixed(2)}).`,
    ].join("\n"),
  );
} finally {
  await server.remove();
}
process.exit(0);
