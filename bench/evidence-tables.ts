/**
 * The evidence tables in a (throwaway) PostgreSQL, as the gateway makes them at its first start,
 * and a client connected to it for the bench to fill and time them.
 */

import pg from "pg";
import { newCheckpointKey } from "../src/evidence/checkpoint.js";
import { PostgresEvidenceStore } from "../src/evidence/postgres-store.js";

export async function makeEvidenceTables(url: string): Promise<pg.Client> {
  const store = await PostgresEvidenceStore.open({
    url,
    instance: "gw",
    instanceId: "made-the-schema",
    key: newCheckpointKey(),
    rotateBytes: 1 << 30,
    rotateSeconds: 3600,
    retainDays: 0,
    queueLength: 10,
    checkpointSeconds: 3600,
  });
  await store.close();
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  return sql;
}
