/**
 * Evidence records per second into PostgreSQL (issue 40): the store alone (no gateway), a throwaway
 * PostgreSQL with fsync on (test/helpers/postgres-server.ts), records offered as fast as the queue
 * takes them for a few seconds; what reached the table once it drained is the rate. Also the same
 * for the folder store on the same machine, for scale. Short on purpose: the machine may be shared.
 *
 *     npx tsx bench/evidence-postgres.ts [seconds]
 */

import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { FileEvidenceStore } from "../src/evidence/file-store.js";
import { PostgresEvidenceStore } from "../src/evidence/postgres-store.js";
import type { QueuedEvidenceStore } from "../src/evidence/queued-store.js";
import type { RequestCapture } from "../src/evidence/record.js";
import { startPostgresServer } from "../test/helpers/postgres-server.js";
import { request } from "../test/unit/evidence/evidence-fixtures.js";

const seconds = Number(process.argv[2] ?? 3);
const QUEUE = 10_000;

/** A request's record at typical sizes: a draft-cavage signing string (~400 bytes) and an RSA-2048 signature. */
function record(i: number): RequestCapture {
  return request(`bench-${i}`, {
    at: Date.now(),
    signedBytes: Buffer.alloc(400, 0x61),
    signature: Buffer.alloc(256, 0x62),
  });
}

/** Offers records for `seconds` whenever the queue has room, then closes: records written per second. */
async function drive(
  store: QueuedEvidenceStore,
): Promise<{ perSecond: number; written: number; refused: number }> {
  const started = performance.now();
  let i = 0;
  let refused = 0;
  while (performance.now() - started < seconds * 1000) {
    for (let k = 0; k < 200; k++) if (!store.offer(record(i++), true)) refused++;
    await new Promise((r) => setImmediate(r));
  }
  await store.close();
  const elapsed = (performance.now() - started) / 1000;
  const written = store.status().written;
  return { perSecond: Math.round(written / elapsed), written, refused };
}

const common = {
  instanceId: "bench",
  rotateBytes: 64 * 1024 * 1024,
  rotateSeconds: 86_400,
  retainDays: 0,
  queueLength: QUEUE,
  checkpointSeconds: 60,
};

const server = await startPostgresServer({ fsync: true });
const folder = mkdtempSync(join(tmpdir(), "psd2-bench-evidence-"));
try {
  const pg = await drive(await PostgresEvidenceStore.open({ ...common, url: server.url }));
  const every = await drive(await FileEvidenceStore.open({ ...common, folder, fsync: "every" }));
  console.log(
    `${new Date().toISOString().slice(0, 10)} on ${cpus()[0]?.model ?? "?"}, ${cpus().length} cores, Node ${process.version}; ${seconds} s each, queue ${QUEUE}`,
  );
  console.log("| store | records/s | written | refused (queue full) |");
  console.log("|---|---:|---:|---:|");
  console.log(
    `| PostgreSQL (fsync on, one INSERT per batch of ≤ 512) | ${pg.perSecond} | ${pg.written} | ${pg.refused} |`,
  );
  console.log(`| folder, fsync: every | ${every.perSecond} | ${every.written} | ${every.refused} |`);
} finally {
  await server.remove();
  rmSync(folder, { recursive: true, force: true });
}
