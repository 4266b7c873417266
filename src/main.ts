#!/usr/bin/env node
/**
 * Command line: `start` (ingress gateway), `certs` (development PKI), `sign` (sign one request,
 * for TPP developers and curl), `demo` (send signed requests to a running gateway).
 */

import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { answerReadiness, isPrimary, isWorker, runPrimary } from "./app/cluster.js";
import { DEFAULT_CONFIG, DEV_CERTS_DIR } from "./cli/paths.js";
import { signCommand } from "./cli/sign.js";
import { ConfigError, loadConfigFile } from "./config/load.js";
import { type IngressGateway, startIngress } from "./ingress/gateway.js";
import { createLogger } from "./observability/logger.js";

const USAGE = `psd2-gateway <command> [options]

commands:
  start [--config <file>]       run the ingress gateway (default: config/default.yaml, which
                                generates development certificates on first run)
  certs [--out <dir>] [--force] generate the development PKI (default: certs/dev)
  sign  --key <pem> --cert <pem> --method <M> --target </path?query> [--body <file>]
        [--header "Name: value"]...   print the headers a TPP sends with this request
  demo  [--url <gateway url>]   send a few signed requests (good and broken) to a running gateway
`;

async function ensureDevCertificates(
  log: (msg: string) => void,
  force = false,
  out = DEV_CERTS_DIR,
): Promise<void> {
  if (!force && existsSync(`${out}/register.json`)) return;
  log(`generating development certificates in ${out} …`);
  const { generateDevPki } = await import("./cli/dev-pki.js");
  await generateDevPki(out);
  log(`development certificates written to ${out} (private keys stay there; never commit them)`);
}

async function start(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { config: { type: "string" } } });
  const file = values.config ?? DEFAULT_CONFIG;
  const usingDefault = values.config === undefined;
  const bootLogger = createLogger(process.env.LOG_LEVEL ?? "info", { pretty: process.stdout.isTTY });
  if (usingDefault) await ensureDevCertificates((m) => bootLogger.info(m));
  const config = loadConfigFile(file);
  const logger = createLogger(config.log.level, { pretty: process.stdout.isTTY });
  if (config.workers > 1 && isPrimary()) {
    await runPrimary(config, logger);
    return;
  }
  // Signals are handled from before the listener opens: a SIGTERM while starting still drains
  // (once started), and an early SIGHUP does not kill the process (its default action).
  let gateway: IngressGateway | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    if (!gateway) return; // still starting: closed as soon as it has started
    await gateway.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGHUP", () => {
    if (!gateway) return logger.warn("SIGHUP while starting: nothing to reload yet");
    try {
      gateway.reload();
      logger.info("reloaded on SIGHUP");
    } catch (error) {
      logger.error(
        { err: (error as Error).message },
        "reload failed; keeping the previous certificates and trust store",
      );
    }
  });

  // A worker leaves the admin listener to the primary, which asks every worker.
  gateway = await startIngress(config, { logger, clusterWorker: isWorker() });
  if (stopping) {
    await gateway.close();
    process.exit(0);
  }
  const started = gateway;
  if (isWorker()) answerReadiness(() => started.readiness());
  if (usingDefault) {
    logger.info(
      `try it: npm run demo   (or: node dist/main.js sign --key certs/dev/tpp/tpp-a-qseal.key.pem --cert certs/dev/tpp/tpp-a-qseal.pem --method GET --target /v1/accounts --header "TPP-Redirect-URI: https://tpp.example/cb" --curl ${started.url})`,
    );
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "start":
      await start(rest);
      return -1; // keeps running
    case "certs": {
      const { values } = parseArgs({
        args: rest,
        options: { out: { type: "string" }, force: { type: "boolean" } },
      });
      await ensureDevCertificates(
        (m) => console.error(m),
        values.force ?? false,
        values.out ?? DEV_CERTS_DIR,
      );
      return 0;
    }
    case "sign":
      return signCommand(rest, (file) => readFileSync(file));
    case "demo": {
      const { runDemo } = await import("./cli/demo.js");
      return runDemo(rest);
    }
    case undefined:
    case "help":
    case "--help":
      console.log(USAGE);
      return command === undefined ? 1 : 0;
    default:
      console.error(`unknown command '${command}'\n\n${USAGE}`);
      return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof ConfigError ? error.message : error);
    process.exitCode = 1;
  },
);
