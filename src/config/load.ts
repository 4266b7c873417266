/** Loading the configuration: YAML (or JSON) file → environment overrides → schema validation. */

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import {
  type AnyGatewayConfig,
  type EgressConfig,
  type GatewayConfig,
  logSchema,
  parseConfig,
  parseEgressConfig,
} from "./schema.js";

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

export function validateEgressConfig(raw: unknown, source = "configuration", baseDir?: string): EgressConfig {
  const parsed = parseEgressConfig(raw, baseDir);
  if (!parsed.success) throw new ConfigError(explain(parsed.error, source));
  return parsed.data;
}

/** Either mode's config, by its `mode` key (ingress when absent). */
export function validateAnyConfig(
  raw: unknown,
  source = "configuration",
  baseDir?: string,
): AnyGatewayConfig {
  const mode = (raw as { mode?: unknown } | null)?.mode;
  return mode === "egress"
    ? validateEgressConfig(raw, source, baseDir)
    : validateConfig(raw, source, baseDir);
}

/** Applies the few overrides operators expect from the environment. */
function applyEnvironment<C extends AnyGatewayConfig>(config: C, env: NodeJS.ProcessEnv): C {
  const level = env.LOG_LEVEL;
  if (level) {
    const parsed = logSchema.safeParse({ level });
    if (!parsed.success) throw new ConfigError(explain(parsed.error, "the LOG_LEVEL environment variable"));
    return { ...config, log: parsed.data };
  }
  return config;
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): AnyGatewayConfig {
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
  const config = validateAnyConfig(raw ?? {}, file, dirname(resolve(file)));
  return applyEnvironment(config, env);
}
