/**
 * `npm run fuzz`: a seeded, bounded hostile-traffic run against real gateway processes on
 * loopback: the ingress gateway over TLS (response signing on) and, for the `egress-*` families,
 * the egress gateway over plain HTTP (the invariants: exchange-check.ts, ingress.ts, egress.ts and
 * harness.ts). Only the gateways the selected families need are started. Environment:
 *
 *   FUZZ_COUNT         requests to send (default 100000)
 *   FUZZ_SEED          the seed (default: random, printed)
 *   FUZZ_FAMILIES      comma list of families (default: all; e.g. egress-headers,responses)
 *   FUZZ_CASE          run only this case index of each family (a reproduction)
 *   FUZZ_RSS_LIMIT_MB  each gateway process's VmRSS bound (default 400)
 *   FUZZ_HEAP_MB       each gateway's V8 old-space bound, --max-old-space-size (default 256; the shipped
 *                      pod sets 512), so that RSS measures memory kept, not garbage not yet collected
 *   FUZZ_CONCURRENCY   connections in flight (default 16)
 *   FUZZ_EAGER         per mille of ingress requests the backend answers on the head, before the
 *                      body, as a legacy core's GET or DELETE handler does (default 100; 1000: all)
 *   FUZZ_RELOADS       configuration reloads (a changed config file and SIGHUP) spread over the run,
 *                      each judging nothing differently; every one must apply (default 0)
 *   FUZZ_EVIDENCE      1: the ingress gateway keeps evidence (onFailure refuse); after the run its
 *                      chain must verify, hold one record per request the backend executed and none
 *                      of a request it never saw (evidence.ts; default 0)
 *   FUZZ_LOG_DIR       keep every gateway log line there, and cases.log: each case's end and duration
 *   FUZZ_LOG_LEVEL     the gateways' log level (default warn; info adds every access line)
 *
 * After the run, no backend request may still be in flight or queued in either gateway (their
 * `backend_requests` metrics): an upstream request left behind holds a backend connection for ever.
 *
 * Exit 0 when every invariant check passed, 1 on any violation, 2 on bad arguments.
 */

import { ALL_FAMILIES } from "./families/index.js";
import { runFuzz } from "./harness.js";
import { formatReport } from "./report.js";

function intFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`${name} must be a non-negative integer, not '${text}'`);
    process.exit(2);
  }
  return value;
}

const seed = intFromEnv("FUZZ_SEED", Math.floor(Math.random() * 0x7fffffff));
const count = intFromEnv("FUZZ_COUNT", 100_000);
const rssLimitMb = intFromEnv("FUZZ_RSS_LIMIT_MB", 400);
const concurrency = Math.max(1, intFromEnv("FUZZ_CONCURRENCY", 16));
const eagerPerMille = Math.min(1000, intFromEnv("FUZZ_EAGER", 100));
const reloads = intFromEnv("FUZZ_RELOADS", 0);
const onlyCaseText = process.env["FUZZ_CASE"];
const names = (process.env["FUZZ_FAMILIES"] ?? "")
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const unknown = names.filter((n) => !ALL_FAMILIES.some((f) => f.name === n));
if (unknown.length > 0) {
  console.error(
    `unknown family ${unknown.join(", ")}; families: ${ALL_FAMILIES.map((f) => f.name).join(", ")}`,
  );
  process.exit(2);
}
const families = names.length > 0 ? ALL_FAMILIES.filter((f) => names.includes(f.name)) : ALL_FAMILIES;

const report = await runFuzz({
  count,
  seed,
  families,
  rssLimitMb,
  concurrency,
  eagerPerMille,
  reloads,
  evidence: intFromEnv("FUZZ_EVIDENCE", 0) === 1,
  ...(onlyCaseText !== undefined && onlyCaseText !== "" ? { onlyCase: intFromEnv("FUZZ_CASE", 0) } : {}),
  log: (line) => console.log(line),
});
console.log(
  formatReport(
    report,
    families.map((f) => f.name),
  ),
);
process.exit(report.failed === 0 ? 0 : 1);
