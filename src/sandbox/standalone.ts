/**
 * Runs the sandbox bank on its own, for developers:
 *   npx tsx src/sandbox/standalone.ts --port 9090 [--host 127.0.0.1] [--seed 20260813]
 *   node dist/sandbox/standalone.js --port 9090
 */

import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createSandboxBank } from "./server.js";

export async function runStandalone(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      port: { type: "string", default: "9090" },
      host: { type: "string", default: "127.0.0.1" },
      seed: { type: "string" },
    },
    strict: true,
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`--port ${values.port} is not a port number`);
  const seed = values.seed === undefined ? undefined : Number(values.seed);
  if (seed !== undefined && !Number.isInteger(seed))
    throw new Error(`--seed ${values.seed} is not an integer`);

  const bank = createSandboxBank(seed === undefined ? {} : { seed });
  const listener = await bank.listen(port, values.host);
  console.log(`sandbox bank listening on ${listener.url}`);
  console.log(`  try: curl -s '${listener.url}/v1/sandbox/customers?withAccounts=true&withAgreements=true'`);
  const stop = () => {
    listener.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

/** True when this file is the program node was started with, not a module someone imported. */
function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  runStandalone(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
