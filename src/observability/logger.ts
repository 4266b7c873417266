/**
 * pino, with the redaction the house rules ask for: signatures, certificates, keys and passwords
 * never appear; PSU identifiers only as salted hashes (see hashPsuId).
 */

import { createHash, randomBytes } from "node:crypto";
import pino, { type Logger } from "pino";

export type { Logger } from "pino";

const REDACT = [
  "signature",
  "headers.signature",
  'headers["tpp-signature-certificate"]',
  'headers["psu-id"]',
  'headers["psu-corporate-id"]',
  "key",
  "privateKey",
  "password",
  "passphrase",
  "certificate",
  "*.signature",
  "*.key",
  "*.privateKey",
  "*.password",
  "*.passphrase",
];

export function createLogger(
  level: string,
  options: { pretty?: boolean; destination?: pino.DestinationStream } = {},
): Logger {
  const base: pino.LoggerOptions = {
    level,
    base: { service: "psd2-gateway", pid: process.pid },
    redact: { paths: REDACT, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (options.destination) return pino(base, options.destination);
  if (options.pretty) {
    try {
      return pino({
        ...base,
        transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l" } },
      });
    } catch {
      // pino-pretty is a development dependency; without it, plain JSON.
    }
  }
  return pino(base);
}

// A per-process salt: hashes are stable within one run (to follow one PSU through the log) and useless outside it.
const SALT = randomBytes(16);

/** PSU-ID and PSU-Corporate-ID only ever appear in logs as this. */
export function hashPsuId(value: string): string {
  return createHash("sha256").update(SALT).update(value).digest("hex").slice(0, 16);
}
