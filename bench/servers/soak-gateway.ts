/**
 * The gateway under the soak (bench/soak.ts): started like bench/servers/proxy.ts starts it, over
 * the same plain-HTTP loopback listener, but with the configuration's defaults for everything that
 * bounds memory — Date tolerance, replay window (twice the tolerance), replay.maxEntries, the
 * memory store, the certificate cache — and with the admin listener on, so that the soak can read
 * the heap from /metrics. Logs at `info` (an access line per request) into stdout, which the soak
 * points at /dev/null.
 */

import { startGateway } from "../../src/app.js";
import { validateConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";

const [backendUrl, pkiDir] = process.argv.slice(2) as [string, string];

export interface SoakGatewayReady {
  readonly ready: number;
  readonly adminUrl: string | undefined;
  /** The bounds in force, as the validated configuration has them. */
  readonly dateToleranceSeconds: number;
  readonly replayWindowSeconds: number;
  readonly replayMaxEntries: number;
  readonly store: string;
  readonly heapLimitMb: number;
}

async function main() {
  const config = validateConfig({
    listen: { host: "127.0.0.1", port: 0 },
    backend: { url: backendUrl },
    trust: { caDir: `${pkiDir}/trust` },
    register: { file: `${pkiDir}/register.json` },
    log: { level: "info" },
    admin: { enabled: true, host: "127.0.0.1", port: 0 },
  });
  const logger = createLogger(config.log.level);
  const gateway = await startGateway(config, { logger });
  const { getHeapStatistics } = await import("node:v8");
  const ready: SoakGatewayReady = {
    ready: Number(new URL(gateway.url).port),
    adminUrl: gateway.adminUrl,
    dateToleranceSeconds: config.verification.dateToleranceSeconds,
    replayWindowSeconds: config.replay.windowSeconds ?? 2 * config.verification.dateToleranceSeconds,
    replayMaxEntries: config.replay.maxEntries,
    store: config.store.type,
    heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
  };
  process.send?.(ready);
  process.on("disconnect", () => {
    void gateway.close(1000).finally(() => process.exit(0));
  });
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
