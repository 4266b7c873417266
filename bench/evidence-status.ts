/**
 * `evidence status` on a long PostgreSQL chain (issue 40): the time `postgresChainHeads` takes on a
 * chain of N rows with a few gap lines, with the partial index on gap lines and without it
 * (dropped for the comparison), interleaved, medians. A throwaway PostgreSQL
 * (test/helpers/postgres-server.ts); the rows are synthetic (short lines: what is timed is the
 * walk over them, not their parse).
 *
 *     npx tsx bench/evidence-status.ts [rows, default 1000000]
 */

import { postgresChainHeads } from "../src/evidence/postgres-store.js";
import { publicKeyOf } from "../src/evidence/verify.js";
import { startPostgresServer } from "../test/helpers/postgres-server.js";
import { makeEvidenceTables } from "./evidence-tables.js";

const rows = Number(process.argv[2] ?? 1_000_000);
const server = await startPostgresServer();
try {
  const sql = await makeEvidenceTables(server.url);
  await sql.query(
    `INSERT INTO evidence_lines (instance, chain, seq, segment, request_id, line)
     SELECT 'gw', 'long', s, 1 + s / 100000, 'r' || s,
       CASE WHEN s = 0
         THEN '{"chain":"long","count":0,"file":1,"prev":"x","retainDays":0,"seq":0,"time":"t","type":"file"}'
         -- A checkpoint near the end (its signature does not hold: status says so, and still counts).
         WHEN s = $1::bigint - 10
         THEN '{"alg":"ed25519","chain":"long","count":' || s || ',"key":"k","prev":"x","seq":' || s || ',"signature":"x","time":"t","type":"checkpoint"}'
         WHEN s % 100000 = 50000
         THEN '{"chain":"long","dropped":3,"prev":"x","reason":"queue-full","seq":' || s || ',"time":"t","type":"gap"}'
         ELSE '{"chain":"long","prev":"x","requestId":"r' || s || '","seq":' || s || ',"type":"request"}' END
     FROM generate_series(0, $1::bigint - 1) s`,
    [rows],
  );
  await sql.query("ANALYZE evidence_lines");
  const timed = async () => {
    const started = performance.now();
    const { heads } = await postgresChainHeads(server.url, publicKeyOf);
    const head = heads.find((h) => h.chain === "long")!;
    return { ms: performance.now() - started, dropped: head.dropped };
  };
  const withIndex: number[] = [];
  const without: number[] = [];
  const definition = (
    await sql.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE indexname = 'evidence_lines_gaps'",
    )
  ).rows[0]!.indexdef;
  for (let round = 0; round < 3; round++) {
    const a = await timed();
    withIndex.push(a.ms);
    await sql.query("DROP INDEX evidence_lines_gaps");
    const b = await timed();
    without.push(b.ms);
    await sql.query(definition);
    console.error(
      `round ${round + 1}: with the index ${a.ms.toFixed(0)} ms, without ${b.ms.toFixed(0)} ms (dropped ${a.dropped}/${b.dropped})`,
    );
  }
  const median = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)]!;
  console.log(
    `evidence status, a chain of ${rows} rows (${Math.floor(rows / 100000)} gap lines): with evidence_lines_gaps ${median(withIndex).toFixed(0)} ms, without ${median(without).toFixed(0)} ms (medians of 3)`,
  );
  await sql.end();
} finally {
  await server.remove();
}
