/**
 * The ingress gateway of bench/trust.ts, from a compiled build: `dist` is a build's output folder
 * (its `tsc -p tsconfig.build.json`), so the gateway as it was before live trust (a git worktree of
 * the older commit) and the gateway at HEAD run the same way, from the same compiler's output, in
 * a process of their own. The config (JSON, absolute paths) comes in BENCH_TRUST_CONFIG and is
 * validated by that build's own schema. Answers "cpu" with its CPU time so far.
 */

import "reflect-metadata";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dist] = process.argv.slice(2) as [string];

async function main() {
  const from = (file: string) => import(pathToFileURL(join(dist, file)).href);
  const { startGateway } = await from("app.js");
  const { validateConfig } = await from("config/load.js");
  const { createLogger } = await from("observability/logger.js");
  const config = validateConfig(JSON.parse(process.env.BENCH_TRUST_CONFIG ?? "{}"));
  const gateway = await startGateway(config, { logger: createLogger("silent") });
  process.send?.({ ready: Number(new URL(gateway.url).port) });
}

process.on("message", (m) => {
  if (m === "cpu") process.send?.({ cpu: process.cpuUsage() });
});
process.on("disconnect", () => process.exit(0));
void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
