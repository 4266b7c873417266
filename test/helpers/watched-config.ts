/**
 * An ingress gateway started in process from a YAML config file it reloads from (SIGHUP's reload()
 * or polling), as the reload tests need it: the test PKI's trust and register, a backend, silent
 * logs, no admin listener, and what the test adds on top.
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { stringify } from "yaml";
import { type IngressGateway, startGateway } from "../../src/app.js";
import { loadConfigFile } from "../../src/config/load.js";
import type { GatewayConfig } from "../../src/config/schema.js";
import { createLogger } from "../../src/observability/logger.js";
import { Scrape } from "./prometheus-text.js";

export interface WatchedConfigGateway {
  readonly gateway: IngressGateway;
  /** The folder the config file is in, and the file. */
  readonly dir: string;
  readonly file: string;
}

/** `extra` is merged over the base config at its top level (a key given there replaces the base's). */
export async function startWatchedConfigGateway(
  prefix: string,
  pki: DevPki,
  backendUrl: string,
  extra: Record<string, unknown>,
): Promise<WatchedConfigGateway> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = join(dir, "gateway.yaml");
  writeFileSync(
    file,
    stringify({
      listen: { host: "127.0.0.1", port: 0 },
      backend: { url: backendUrl },
      trust: { caDir: pki.paths.trustDir },
      register: { file: pki.paths.register },
      log: { level: "silent" },
      admin: { enabled: false },
      ...extra,
    }),
  );
  const gateway = await startGateway(loadConfigFile(file) as GatewayConfig, {
    logger: createLogger("silent"),
    configFile: { path: file, read: () => loadConfigFile(file) },
  });
  return { gateway, dir, file };
}

/** How many reloads the gateway has applied (psd2_gateway_config_reloads_total{outcome="applied"}). */
export async function reloadsApplied(gateway: IngressGateway): Promise<number> {
  return new Scrape(await gateway.metrics.registry.metrics()).only("psd2_gateway_config_reloads_total", {
    outcome: "applied",
  });
}
