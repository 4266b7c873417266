/**
 * The admin listener's access options from a mode's `admin:` block: allowed Host names, the bearer
 * token file, mutual TLS (its PEM files read as the TPP listener reads its own), the log and metric.
 */

import { readFileSync } from "node:fs";
import type { AnyGatewayConfig } from "../config/schema.js";
import { tlsMaterial } from "../listener/listener.js";
import type { AdminAccess } from "../observability/admin.js";
import type { Logger } from "../observability/logger.js";

export function adminAccessOf(
  admin: AnyGatewayConfig["admin"],
  mode: AnyGatewayConfig["mode"],
  logger: Logger,
): AdminAccess {
  return {
    hostNames: admin.hostNames,
    ...(admin.tokenFile !== undefined ? { tokenFile: admin.tokenFile } : {}),
    ...(admin.tls ? { tls: { ...tlsMaterial(admin.tls), ca: readFileSync(admin.tls.clientCa) } } : {}),
    logger,
    metricPrefix: mode === "egress" ? "psd2_gateway_egress_" : "psd2_gateway_",
  };
}
