/** `psd2-gateway sandbox`: the demo bank on its own, without a gateway in front (for developers). */

import { defineCommand } from "./command.js";

/** Not 9090, which is the gateway's admin listener, nor 8443 (ingress) or 8090 (egress). */
export const DEFAULT_SANDBOX_PORT = 8081;

export const sandboxCommand = defineCommand({
  name: "sandbox",
  summary: "run the demo bank on its own",
  usage: `psd2-gateway sandbox [--port <n>] [--host <addr>] [--seed <n>] [--state-file <path>]

  --port <n>            default ${DEFAULT_SANDBOX_PORT}
  --host <addr>         default 127.0.0.1
  --seed <n>            seed of the generated customers and accounts (same seed, same data)
  --state-file <path>   keep customers, accounts and transactions in this JSON file across
                        restarts: read at start if it exists, rewritten after every change and
                        on POST /v1/sandbox/reset`,
  options: {
    port: { type: "string", default: String(DEFAULT_SANDBOX_PORT) },
    host: { type: "string", default: "127.0.0.1" },
    seed: { type: "string" },
    "state-file": { type: "string", path: "new-file" },
  },
  async run(values) {
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) {
      console.error(`psd2-gateway sandbox: --port ${values.port} is not a port number`);
      return 2;
    }
    const seed = values.seed === undefined ? undefined : Number(values.seed);
    if (seed !== undefined && !Number.isInteger(seed)) {
      console.error(`psd2-gateway sandbox: --seed ${values.seed} is not an integer`);
      return 2;
    }
    const { createSandboxBank } = await import("../sandbox/index.js");
    const stateFile = values["state-file"];
    let bank: ReturnType<typeof createSandboxBank>;
    try {
      bank = createSandboxBank({
        ...(seed === undefined ? {} : { seed }),
        ...(stateFile === undefined ? {} : { stateFile }),
      });
    } catch (error) {
      // An unreadable or invalid state file: one line naming it, not a stack trace.
      console.error(`psd2-gateway sandbox: ${(error as Error).message}`);
      return 1;
    }
    const listener = await bank.listen(port, values.host!);
    console.log(`sandbox bank listening on ${listener.url}`);
    console.log(
      `  try: curl -s '${listener.url}/v1/sandbox/customers?withAccounts=true&withAgreements=true'`,
    );
    const stop = () => {
      listener.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    return -1; // keeps running
  },
});
