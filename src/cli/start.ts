/** `psd2-gateway start`: run the gateway of the config's mode until SIGTERM/SIGINT. */

import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { answerReadiness, isPrimary, isWorker, reportStarted, runPrimary } from "../app/cluster.js";
import { type DemoBankRequest, type Gateway, type StartedBackend, startGateway } from "../app.js";
import { loadConfigFile } from "../config/load.js";
import { createLogger, type Logger } from "../observability/logger.js";
import { defineCommand } from "./command.js";
import { loadDevPki, loadSandboxBank } from "./demo-packages.js";
import { DEFAULT_CONFIG, DEV_CERTS_DIR, EGRESS_EXAMPLE_CONFIG } from "./paths.js";

/** Generates the development PKI unless it is there already; true when it generated it. */
export async function ensureDevCertificates(
  log: (msg: string) => void,
  force = false,
  out = DEV_CERTS_DIR,
): Promise<boolean> {
  // The newest files the PKI has: an older certs/dev without them is generated again.
  if (
    !force &&
    existsSync(`${out}/bank/bank-qseal.pem`) &&
    existsSync(`${out}/qtsp/status.json`) &&
    existsSync(`${out}/qtsp/demo-root-ca.crl`)
  )
    return false;
  log(`generating development certificates in ${out} …`);
  const { generateDevPki } = await loadDevPki("generating the development certificates");
  await generateDevPki(out, Date.now(), { qtspUrl: DEMO_QTSP_URL });
  log(`development certificates written to ${out} (private keys stay there; never commit them)`);
  return true;
}

/** Where config/default.yaml runs the demo QTSP, and so where the dev certificates point. */
export const DEMO_QTSP_URL = "http://127.0.0.1:8099";

/**
 * The demo bank (config `sandbox:`); loaded only when a config names `backend.url: sandbox`. Its API
 * believes only calls carrying the gateway's secret for this start, and reads the identity
 * headers under the names the gateway writes them.
 */
export async function startDemoBank(
  request: DemoBankRequest,
  /** The bank's clock (tests move it to expire SCA links); default the system's. */
  clock?: () => number,
): Promise<StartedBackend> {
  const { createSandboxBank, GATEWAY_SECRET_HEADER } = await loadSandboxBank(
    "backend.url: sandbox (the demo bank)",
  );
  const { sandbox, identityHeaders, gatewaySecret } = request;
  const bank = createSandboxBank({
    gatewaySecret,
    ...(clock ? { clock } : {}),
    // The names the gateway writes, the TPP's registered name among them (shown on the SCA page).
    identityHeaders,
    scaLinkTtlSeconds: sandbox.scaLinkTtlSeconds,
    ...(sandbox.publicUrl !== undefined ? { publicUrl: sandbox.publicUrl } : {}),
    ...(sandbox.stateFile !== undefined ? { stateFile: sandbox.stateFile } : {}),
    ...(sandbox.seed !== undefined ? { seed: sandbox.seed } : {}),
  });
  const { api } = sandbox;
  const listeners = await bank.listen({
    api: api.socket !== undefined ? { socket: api.socket } : { host: api.host, port: api.port },
    sca: { host: sandbox.host, port: sandbox.port },
  });
  return {
    url: listeners.api.url,
    ...(listeners.api.socketPath !== undefined ? { socketPath: listeners.api.socketPath } : {}),
    scaUrl: listeners.sca.url,
    forwardHeaders: { [GATEWAY_SECRET_HEADER]: gatewaySecret },
    resetAll: () => bank.reset(),
    close: () => listeners.close(),
  };
}

export const startCommand = defineCommand({
  name: "start",
  summary: "run the gateway",
  usage: `psd2-gateway start [--config <file>]

  --config <file>   the configuration (YAML); default config/default.yaml, the embedded demo:
                    development certificates are generated on first run and the demo bank
                    is started behind the gateway. A config with mode: egress runs the TPP's
                    side (config/egress.example.yaml: npm run egress)

Runs until SIGTERM or SIGINT (then drains for shutdown.graceSeconds); SIGHUP reloads certificates,
trust store, CRLs, the register and the configuration file (also when it changes): the chain of
steps, routes, limits and bank profiles are swapped for new requests; a config that fails
validation keeps the running one and the log says why. Exits 1 when the gateway cannot start (a taken port, a bad
config key, unreadable certificates), with the reason on stderr.`,
  options: { config: { type: "string", path: "file" } },
  async run(values) {
    const file = values.config ?? DEFAULT_CONFIG;
    const usingDefault = values.config === undefined;
    const bootLogger = createLogger(process.env.LOG_LEVEL || "info", { pretty: process.stdout.isTTY });
    if (usingDefault || resolve(file) === EGRESS_EXAMPLE_CONFIG)
      await ensureDevCertificates((m) => bootLogger.info(m));
    const config = loadConfigFile(file);
    const logger = createLogger(config.log.level, { pretty: process.stdout.isTTY });
    // Once per machine, before the gateway that fetches from it (a cluster's workers find it running).
    const demoQtsp = config.mode === "ingress" ? config.demoQtsp : undefined;
    if (demoQtsp && !isWorker()) {
      try {
        const { startDemoQtsp } = await loadDevPki("demoQtsp (the demo QTSP)");
        const qtsp = await startDemoQtsp({ pkiDir: demoQtsp.pki, ...demoQtsp });
        logger.info(
          { url: qtsp.url },
          "demo QTSP started: CRL, OCSP, trusted lists and EBA register of the dev PKI",
        );
      } catch (error) {
        logger.fatal(
          { err: (error as Error).message },
          `the demo QTSP could not start: ${(error as Error).message}`,
        );
        return 1;
      }
    }
    if (config.workers > 1 && isPrimary()) {
      let started: boolean;
      try {
        started = await runPrimary(config, logger);
      } catch (error) {
        // The admin listener, bound before any worker starts.
        logger.fatal(
          { err: (error as Error).message },
          `the gateway could not start: ${(error as Error).message}`,
        );
        return 1;
      }
      return started ? -1 : 1; // keeps running, or every worker and the admin listener are closed
    }
    const gateway = await runUntilSignalled(logger, () =>
      startGateway(config, {
        logger,
        // A worker leaves the admin listener to the primary, which asks every worker.
        clusterWorker: isWorker(),
        startDemoBank,
        // Read again on SIGHUP and when it changes; the mode's builder checks the mode.
        configFile: { path: resolve(file), read: () => loadConfigFile(file) },
      }),
    );
    if (!gateway) return 1;
    if (isWorker()) {
      answerReadiness(() => gateway.readiness());
      reportStarted();
    }
    if (usingDefault) {
      logger.info(
        `try it: npm run demo   (or: node dist/main.js sign --key certs/dev/tpp/tpp-a-qseal.key.pem --cert certs/dev/tpp/tpp-a-qseal.pem --method GET --target /v1/accounts --header "TPP-Redirect-URI: https://tpp.example/cb" --curl ${gateway.url})`,
      );
    }
    return -1; // keeps running
  },
});

/**
 * Starts the gateway with signals handled from before its listener opens: a SIGTERM while starting
 * still drains once started, and an early SIGHUP does not kill the process (its default action).
 * Returns undefined when it could not start (logged; everything it had started is closed).
 */
async function runUntilSignalled(
  logger: Logger,
  start: () => Promise<Gateway>,
): Promise<Gateway | undefined> {
  let gateway: Gateway | undefined;
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
    gateway.reload().then(
      () => logger.info("reloaded on SIGHUP"),
      (error: Error) =>
        logger.error(
          { err: error.message },
          "reload failed; keeping the previous certificates and trust store",
        ),
    );
  });
  try {
    gateway = await start();
  } catch (error) {
    logger.fatal(
      { err: (error as Error).message },
      `the gateway could not start: ${(error as Error).message}`,
    );
    // Everything started was closed; this only guards against a handle someone forgot. A worker's
    // channel to the primary keeps it alive, and the primary waits for its exit: at once then.
    setTimeout(() => process.exit(1), isWorker() ? 0 : 1_000).unref();
    return undefined;
  }
  if (stopping) {
    await gateway.close();
    process.exit(0);
  }
  return gateway;
}
