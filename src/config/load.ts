/** Loading the configuration: YAML (or JSON) file → environment overrides → schema validation. */

import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { configSchema, type GatewayConfig } from "./schema.js";

export class ConfigError extends Error {}

/** Explains every problem with its key path, e.g. `verification.dateToleranceSeconds: expected number, received string`. */
function explain(error: z.ZodError, source: string): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.length > 0 ? issue.path.join(".") : "(top level)";
    return `  - ${key}: ${issue.message}`;
  });
  return `invalid configuration in ${source}:\n${lines.join("\n")}`;
}

export function validateConfig(raw: unknown, source = "configuration"): GatewayConfig {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(explain(parsed.error, source));
  return parsed.data;
}

/** Applies the few overrides operators expect from the environment. */
function applyEnvironment(config: GatewayConfig, env: NodeJS.ProcessEnv): GatewayConfig {
  const level = env.LOG_LEVEL;
  if (level) {
    const checked = validateConfig({ ...config, log: { level } }, "LOG_LEVEL");
    return { ...config, log: checked.log };
  }
  return config;
}

/** Makes every file path in the config absolute, relative to the config file's folder. */
function resolvePaths(config: GatewayConfig, baseDir: string): GatewayConfig {
  const abs = (p: string | undefined) =>
    p === undefined ? undefined : isAbsolute(p) ? p : resolve(baseDir, p);
  const tls = config.listen.tls;
  return {
    ...config,
    listen: { ...config.listen, tls: tls ? { ...tls, cert: abs(tls.cert)!, key: abs(tls.key)! } : undefined },
    backend: {
      ...config.backend,
      ca: abs(config.backend.ca),
      cert: abs(config.backend.cert),
      key: abs(config.backend.key),
    },
    trust: { caDir: abs(config.trust.caDir)!, crlDir: abs(config.trust.crlDir) },
    register: { ...config.register, file: abs(config.register.file) },
    store: { ...config.store, snapshotFile: abs(config.store.snapshotFile) },
  };
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read configuration file ${file}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`configuration file ${file} is not valid YAML: ${(error as Error).message}`);
  }
  const config = validateConfig(raw ?? {}, file);
  return applyEnvironment(resolvePaths(config, dirname(resolve(file))), env);
}
