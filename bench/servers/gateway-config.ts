/** The ingress gateway every bench runs (bench/servers/proxy.ts, signing-gateway.ts), before each adds its own keys. */

import { validateConfig } from "../../src/config/load.js";
import type { GatewayConfig } from "../../src/config/schema.js";

export function benchGatewayConfig(
  pkiDir: string,
  backendUrl: string,
  extra: Record<string, unknown> = {},
): GatewayConfig {
  return validateConfig({
    listen: { host: "127.0.0.1", port: 0 },
    backend: { url: backendUrl },
    trust: { caDir: `${pkiDir}/trust` },
    register: { file: `${pkiDir}/register.json` },
    // Requests are signed before the run; a wide Date window lets one pool serve a whole round.
    // It changes nothing per request: the Date is still parsed and checked.
    verification: { dateToleranceSeconds: 3600 },
    replay: { windowSeconds: 7200 },
    log: { level: "silent" },
    admin: { enabled: false },
    ...extra,
  });
}
