/**
 * The TPP register assembled from the config: one layer per source (the simple form is one layer
 * called `register`), each source loaded once before the gateway serves and then refreshed in the
 * background on its own schedule.
 */

import type { GatewayConfig } from "../config/schema.js";
import { TppRegister } from "../eidas/index.js";
import type { Logger } from "../observability/logger.js";
import {
  createRegisterSource,
  FileRegisterSource,
  HttpRegisterSource,
  type RegisterSource,
} from "../trust/register-sources.js";
import type { TrustSourceStatus } from "../trust/source-status.js";

export interface RegisterParts {
  readonly register: TppRegister;
  readonly sources: readonly RegisterSource[];
  statuses(): TrustSourceStatus[];
}

/** A file is cheap to look at: checked every few seconds whatever the poll interval. */
const FILE_POLL_MS = 5_000;

export async function startRegister(
  config: Pick<GatewayConfig, "register">,
  logger: Logger,
  now: () => number,
): Promise<RegisterParts> {
  const log = (message: string, error?: boolean) => (error ? logger.warn(message) : logger.info(message));
  const r = config.register;
  const bankCountry = r.bankCountry ? { bankCountry: r.bankCountry } : {};
  let register: TppRegister;
  const sources: RegisterSource[] = [];
  if (r.sources) {
    register = new TppRegister({
      sources: r.sources.map((s) => ({ name: s.name, maxAgeMs: s.maxAgeSeconds * 1000 })),
      now,
      ...bankCountry,
    });
    for (const s of r.sources) {
      const pollMs = s.pollSeconds * 1000;
      sources.push(
        createRegisterSource(
          {
            name: s.name,
            format: s.format,
            ...(s.file ? { file: s.file, pollMs: Math.min(pollMs, FILE_POLL_MS) } : { url: s.url!, pollMs }),
          },
          register,
          log,
        ),
      );
    }
  } else {
    register = new TppRegister({
      sources: [{ name: "register", maxAgeMs: r.maxAgeSeconds * 1000 }],
      now,
      ...bankCountry,
    });
    const pollMs = r.pollSeconds * 1000;
    const options = { format: r.format, name: "register" };
    if (r.file)
      sources.push(new FileRegisterSource(r.file, register, Math.min(pollMs, FILE_POLL_MS), log, options));
    if (r.url) sources.push(new HttpRegisterSource(r.url, register, pollMs, log, options));
  }
  await Promise.all(sources.map((s) => s.refresh()));
  for (const source of sources) source.start();
  return {
    register,
    sources,
    statuses: () =>
      register.stats.sources.map((s) => ({
        kind: "register" as const,
        source: `${s.name}: ${s.description ?? "not loaded"}`,
        lastSuccess: s.lastSuccess,
        failures: s.failures,
        ...(s.lastError ? { lastError: s.lastError } : {}),
        size: s.entries,
        stale: !s.fresh,
        failsReadiness: true,
      })),
  };
}
