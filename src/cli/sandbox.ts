/**
 * `psd2-gateway sandbox`: the demo bank on its own, without a gateway in front (for developers).
 * Its API still believes only calls carrying the gateway secret, given here in a file or the
 * environment, so that the bank on its own is no more open than behind `npm start`.
 */

import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { defineCommand } from "./command.js";
import { loadSandboxBank } from "./demo-packages.js";

/** Not 9090, which is the gateway's admin listener, nor 8443 (ingress) or 8090 (egress). */
export const DEFAULT_SANDBOX_PORT = 8081;
/** The API's port on its own; `npm start` gives the API any free loopback port instead. */
export const DEFAULT_SANDBOX_API_PORT = 8082;
export const SECRET_ENVIRONMENT_VARIABLE = "PSD2_SANDBOX_GATEWAY_SECRET";

export const sandboxCommand = defineCommand({
  name: "sandbox",
  summary: "run the demo bank on its own",
  usage: `psd2-gateway sandbox [--port <n>] [--host <addr>] [--api-port <n> | --api-socket <path>]
                    [--secret-file <path>] [--seed <n>] [--state-file <path>]

  --port <n>            default ${DEFAULT_SANDBOX_PORT}: the SCA page's listener (what browsers open)
  --host <addr>         default 127.0.0.1
  --api-port <n>        default ${DEFAULT_SANDBOX_API_PORT}: the bank's API, on loopback only
  --api-socket <path>   the API on a Unix socket (mode 0600) instead of --api-port
  --secret-file <path>  the gateway secret (32 characters or more) API calls must carry in
                        X-Sandbox-Gateway-Secret; a random one is written there (mode 0600) when
                        the file does not exist. Or set ${SECRET_ENVIRONMENT_VARIABLE}
  --seed <n>            seed of the generated customers and accounts (same seed, same data)
  --state-file <path>   keep every TPP's room (customers, accounts, payments, consents, baskets)
                        in this JSON file across restarts: read at start if it exists, rewritten
                        (mode 0600) after every change`,
  options: {
    port: { type: "string", default: String(DEFAULT_SANDBOX_PORT) },
    host: { type: "string", default: "127.0.0.1" },
    "api-port": { type: "string", default: String(DEFAULT_SANDBOX_API_PORT) },
    "api-socket": { type: "string", path: "new-file" },
    "secret-file": { type: "string", path: "new-file" },
    seed: { type: "string" },
    "state-file": { type: "string", path: "new-file" },
  },
  async run(values) {
    const port = portNumber("--port", values.port!);
    const apiPort = portNumber("--api-port", values["api-port"]!);
    if (port === undefined || apiPort === undefined) return 2;
    const seed = values.seed === undefined ? undefined : Number(values.seed);
    if (seed !== undefined && !Number.isInteger(seed)) {
      console.error(`psd2-gateway sandbox: --seed ${values.seed} is not an integer`);
      return 2;
    }
    const secretFile = values["secret-file"];
    const fromEnvironment = process.env[SECRET_ENVIRONMENT_VARIABLE];
    if (secretFile === undefined && fromEnvironment === undefined) {
      console.error(
        `psd2-gateway sandbox: give the gateway secret with --secret-file <path> (created when missing) or ${SECRET_ENVIRONMENT_VARIABLE}`,
      );
      return 2;
    }
    const { createSandboxBank, GATEWAY_SECRET_HEADER } = await loadSandboxBank("psd2-gateway sandbox");
    const stateFile = values["state-file"];
    const apiSocket = values["api-socket"];
    let bank: ReturnType<typeof createSandboxBank>;
    try {
      const gatewaySecret = secretFile === undefined ? fromEnvironment! : readOrCreateSecret(secretFile);
      bank = createSandboxBank({
        gatewaySecret,
        ...(seed === undefined ? {} : { seed }),
        ...(stateFile === undefined ? {} : { stateFile }),
      });
    } catch (error) {
      // An unreadable secret or state file: one line naming it, not a stack trace.
      console.error(`psd2-gateway sandbox: ${(error as Error).message}`);
      return 1;
    }
    const listeners = await bank.listen({
      // The API stays on loopback: only a gateway on this machine (or a developer's curl) calls it.
      api: apiSocket !== undefined ? { socket: apiSocket } : { host: "127.0.0.1", port: apiPort },
      sca: { host: values.host!, port },
    });
    const api = listeners.api.socketPath ?? listeners.api.url;
    console.log(`sandbox bank: SCA page on ${listeners.sca.url}, API on ${api}`);
    console.log(
      `  try: curl -s -H "${GATEWAY_SECRET_HEADER}: $(cat ${secretFile ?? "<secret file>"})" -H "X-TPP-Organization-Id: PSDNO-FSA-DEMO0001" ${
        listeners.api.socketPath === undefined ? "" : `--unix-socket ${listeners.api.socketPath} `
      }'${listeners.api.url}/v1/sandbox/customers?withAccounts=true'`,
    );
    const stop = () => {
      listeners.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    return -1; // keeps running
  },
});

function portNumber(option: string, value: string): number | undefined {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(`psd2-gateway sandbox: ${option} ${value} is not a port number`);
    return undefined;
  }
  return port;
}

/** The secret in `path`, or a new random one written there (0600) when there is no file yet. */
function readOrCreateSecret(path: string): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new Error(`the secret file ${path} cannot be read: ${(error as Error).message}`);
    }
  }
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: "wx" });
  return secret;
}
