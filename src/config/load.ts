/** Loading the configuration: YAML (or JSON) file → environment overrides → schema validation. */

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { type GatewayConfig, parseConfig } from "./schema.js";

export class ConfigError extends Error {}

/** Explains every problem with its key path, e.g. `verification.dateToleranceSeconds: expected number, received string`. */
function explain(error: z.ZodError, source: string): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.length > 0 ? issue.path.join(".") : "(top level)";
    return `  - ${key}: ${issue.message}`;
  });
  return `invalid configuration in ${source}:\n${lines.join("\n")}`;
}

/** Validates a config; relative file paths are resolved against `baseDir` (default: left as they are). */
export function validateConfig(raw: unknown, source = "configuration", baseDir?: string): GatewayConfig {
  const parsed = parseConfig(raw, baseDir);
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
  const config = validateConfig(raw ?? {}, file, dirname(resolve(file)));
  return applyEnvironment(config, env);
}
