/**
 * A configuration reload's outcome, for both modes: counted (`<prefix>config_reloads_total{outcome}`),
 * the time of the last success as a gauge, and one log line saying what happened and why — a config
 * that fails validation keeps the running one, and the line names the key and what it expects.
 */

import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "./logger.js";

export interface ConfigReloadReporter {
  applied(why: string, needsRestart: readonly string[]): void;
  failed(why: string, error: Error): void;
}

/** `<prefix>config_reloads_total{outcome}` and the last success's time, in a mode's registry. */
export class ConfigReloadMetrics {
  private readonly reloads: Counter<"outcome">;
  private readonly lastSuccess: Gauge;

  constructor(registry: Registry, prefix: string, now: () => number = Date.now) {
    this.reloads = new Counter({
      name: `${prefix}config_reloads_total`,
      help: "Configuration reloads (SIGHUP, or the config file changed), by outcome: applied, or failed (the running configuration kept)",
      labelNames: ["outcome"] as const,
      registers: [registry],
    });
    this.reloads.inc({ outcome: "applied" }, 0);
    this.reloads.inc({ outcome: "failed" }, 0);
    this.lastSuccess = new Gauge({
      name: `${prefix}config_last_reload_success_timestamp_seconds`,
      help: "Unix time the configuration was last loaded (at start, or by a reload that applied)",
      registers: [registry],
    });
    this.lastSuccess.set(now() / 1000);
  }

  /** Counts and logs each reload's outcome. */
  reporter(logger: Logger, now: () => number = Date.now): ConfigReloadReporter {
    return {
      applied: (why, needsRestart) => {
        this.reloads.inc({ outcome: "applied" });
        this.lastSuccess.set(now() / 1000);
        if (needsRestart.length === 0) logger.info({ why }, "configuration reloaded");
        else
          logger.warn(
            { why, needsRestart },
            `configuration reloaded; these keys changed but take effect only after a restart: ${needsRestart.join(", ")}`,
          );
      },
      failed: (why, error) => {
        this.reloads.inc({ outcome: "failed" });
        logger.error(
          { why, err: error.message },
          `configuration reload failed; the running configuration is kept: ${error.message}`,
        );
      },
    };
  }
}
