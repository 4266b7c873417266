/** The evidence tables in a (throwaway) PostgreSQL, as the gateway makes them at its first start. */

import { newCheckpointKey } from "../src/evidence/checkpoint.js";
import { PostgresEvidenceStore } from "../src/evidence/postgres-store.js";

export async function makeEvidenceTables(url: string): Promise<void> {
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
}
