/**
 * The one lifecycle of both modes: the application listener is bound first (a taken port fails
 * before anything else starts), then the admin listener, then the mode's parts; the connection
 * metrics, the config file watch, SIGHUP, the configuration reload (read, validate, keep what needs a
 * restart, let the mode build its new parts beside the running ones, swap them for new requests, let
 * the old ones close once the requests under way are done, report) and the drain on shutdown. A mode
 * (ingress.ts, egress.ts) supplies only what differs: its parts and the handler they make.
 */

import type { Server } from "node:http";
import { AggregatorRegistry, type Registry } from "prom-client";
import type { z } from "zod";
import { keepRestartKeys, restartKeysChanged } from "../config/restart.js";
import type { AnyGatewayConfig, EgressConfig, GatewayConfig } from "../config/schema.js";
import type { ExchangeFactory } from "../listener/connection.js";
import { type Listener, startListener } from "../listener/listener.js";
import {
  type AdminServer,
  type ReadinessCheck,
  startAdminServer,
  type ValidationReports,
} from "../observability/admin.js";
import type { ConfigReloadMetrics } from "../observability/config-reload.js";
import type { ConnectionLimitMetrics } from "../observability/connection-limits.js";
import type { Logger } from "../observability/logger.js";
import { adminAccessOf } from "./admin-access.js";
import { connectionLimitsOf } from "./connection-limits.js";
import { type FileWatch, watchFiles } from "./file-watch.js";
import { drain, Started } from "./started.js";

/** The configuration file a gateway was started from: read again (validated; throws why not) on reload. */
export interface ConfigFile {
  readonly path: string;
  read(): AnyGatewayConfig;
}

/** One readiness check as /readyz shows it. */
export type Check = ReadinessCheck["checks"][string];

/** What the lifecycle reads of a mode's metrics: the registry and the series every mode has. */
export interface LifecycleMetrics {
  readonly registry: Registry;
  readonly connections: ConnectionLimitMetrics;
  readonly configReloads: ConfigReloadMetrics;
}

/** A reload's new parts, built beside the running ones: `commit` puts them in place for new requests. */
export interface PreparedReload {
  commit(): void;
}

/** A mode's parts once started. */
export interface ModeParts<C> {
  readonly metrics: LifecycleMetrics;
  /** What the listener serves now (a committed reload changes it). */
  factory(): ExchangeFactory;
  /** The mode's own readiness checks, beside the listener's. */
  readiness(): Promise<Record<string, Check>>;
  /** The start-up line's fields. */
  readonly listening: Record<string, unknown>;
  /**
   * Builds what `next` needs beside the running parts (throws, keeping them, when it cannot); the
   * restart-only keys of `next` are already set back to their running values.
   */
  prepareReload(running: C, next: C): Promise<PreparedReload>;
  /** SIGHUP, before the configuration: files read anew (ingress: TLS and trust); throws why not. */
  reloadFiles?(): void;
  /** SIGHUP, when no new configuration was taken over: files read anew (egress: the profiles' keys). */
  reloadUnchanged?(): void;
  /** Shutdown, before the drain: what polls stops. */
  stopping?(): void;
}

/** Certificate validation and the demo bank, which the admin listener serves for ingress. */
export interface AdminRoutes {
  readonly trust?: () => ReturnType<NonNullable<Parameters<typeof startAdminServer>[0]["trust"]>>;
  readonly reports?: () => ValidationReports | undefined;
  readonly sandboxReset?: () => (() => void) | undefined;
}

/** What a mode is: its name and schema, and what it builds once the listeners are bound. */
export interface Mode<C extends GatewayConfig | EgressConfig, P extends ModeParts<C>> {
  readonly name: C["mode"];
  readonly schema: z.ZodType;
  /** Keys beyond the schema's marks that a reload cannot take over (ingress's demo bank). */
  restartKeys?(running: C, next: C): string[];
  /** Keeps what those keys name as it runs. */
  keep?(running: C, next: C): C;
  start(config: C, context: ModeContext): Promise<P>;
  /** The admin listener's routes beyond /metrics and the probes, read from the parts once started. */
  adminRoutes?(parts: () => P | undefined): AdminRoutes;
  /** In a cluster worker, once started: what the primary asks of the worker beyond metrics. */
  answerPrimary?(parts: P): void;
}

export interface ModeContext {
  readonly listener: Listener;
  /** The gateway's readiness (listener and the mode's checks), for the readiness gauge. */
  readonly readiness: () => Promise<ReadinessCheck>;
  readonly started: Started;
  readonly draining: () => boolean;
}

export interface LifecycleDependencies {
  readonly logger: Logger;
  readonly now?: () => number;
  /** A cluster worker: the primary owns the admin listener and asks for the metrics. */
  readonly clusterWorker?: boolean;
  readonly configFile?: ConfigFile;
}

/** A running mode as both gateways show it. */
export interface RunningMode<C, P> {
  readonly listener: Listener;
  readonly url: string;
  readonly server: Server;
  readonly adminUrl: string | undefined;
  readonly parts: P;
  /** The configuration in force (the last one a reload committed). */
  readonly running: C;
  readiness(): Promise<ReadinessCheck>;
  /** SIGHUP: files, then the configuration file; rejects with why the files were kept. */
  reload(): Promise<void>;
  /** Takes over `next` for new requests; returns the keys kept until a restart. */
  reconfigure(next: C): Promise<string[]>;
  /** Stops accepting, lets requests in flight finish, closes what is still open after `graceMs` (default: the running config's). */
  close(graceMs?: number): Promise<void>;
}

export async function runMode<C extends GatewayConfig | EgressConfig, P extends ModeParts<C>>(
  mode: Mode<C, P>,
  config: C,
  deps: LifecycleDependencies,
): Promise<RunningMode<C, P>> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const workersOf = (c: C) => (deps.clusterWorker ? c.workers : 1);
  const started = new Started();
  let draining = false;
  let parts: P | undefined;
  let running = config;

  // 1. The listeners, before anything with timers or sockets of its own.
  const listen = config.listen as GatewayConfig["listen"] & EgressConfig["listen"];
  const listener = await startListener({
    host: listen.host,
    port: listen.port,
    ...(listen.socket !== undefined ? { socket: listen.socket } : {}),
    ...(listen.tls ? { tls: listen.tls } : {}),
    ...(listen.clientCertificate !== undefined
      ? { requestClientCertificate: listen.clientCertificate !== "none" }
      : {}),
    limits: connectionLimitsOf(config.listen, workersOf(config)),
  });
  started.add(() => drain(listener.server, 0));

  const readiness = async (): Promise<ReadinessCheck> => {
    if (!parts)
      return { ready: false, checks: { gateway: { ok: false, detail: "starting", reason: "starting" } } };
    const checks: Record<string, Check> = {
      listener: {
        ok: listener.server.listening && !draining,
        ...(draining ? { detail: "draining", reason: "draining" } : {}),
      },
      ...(await parts.readiness()),
    };
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  };

  try {
    const routes = mode.adminRoutes?.(() => parts) ?? {};
    const admin: AdminServer | undefined =
      config.admin.enabled && !deps.clusterWorker
        ? await startAdminServer({
            host: config.admin.host,
            port: config.admin.port,
            metrics: {
              metrics: () => (parts ? parts.metrics.registry.metrics() : Promise.resolve("")),
              get contentType() {
                return parts?.metrics.registry.contentType ?? "text/plain; version=0.0.4";
              },
            },
            readiness,
            ...routes,
            access: adminAccessOf(config.admin, mode.name, logger),
          })
        : undefined;
    if (admin) started.add(() => admin.close());

    // 2. The mode's parts.
    parts = await mode.start(config, { listener, started, draining: () => draining, readiness });
    const { metrics } = parts;
    metrics.connections.countOpen(listener.guard.open);
    listener.guard.observe(metrics.connections.observer(logger, now));
    listener.serve(parts.factory());
    if (deps.clusterWorker) {
      // Constructing one installs prom-client's listener that answers the primary's metric requests.
      new AggregatorRegistry();
      AggregatorRegistry.setRegistries([metrics.registry]);
      mode.answerPrimary?.(parts);
    }
    logger.info({ url: listener.url, ...parts.listening }, `${mode.name} gateway listening`);
    if (admin) logger.info({ url: admin.url }, "admin listener: /metrics, /healthz, /readyz");

    const running_ = parts;
    let configWatch: FileWatch | undefined;
    const reloads = metrics.configReloads.reporter(logger, now);
    const takeOver = async (requested: C): Promise<string[]> => {
      const needsRestart = [
        ...restartKeysChanged(mode.schema, running, requested),
        ...(mode.restartKeys?.(running, requested) ?? []),
      ];
      const kept = keepRestartKeys(mode.schema, running, requested);
      const next = mode.keep ? mode.keep(running, kept) : kept;
      const prepared = await running_.prepareReload(running, next);
      prepared.commit();
      // The config file's watch polls at the new pace; what it last saw stays, so no change is missed.
      if (next.reload.pollSeconds !== running.reload.pollSeconds)
        configWatch?.pace(next.reload.pollSeconds * 1000);
      running = next;
      // The log level and the shutdown grace apply at once (close() reads the running config).
      logger.level = next.log.level;
      listener.guard.apply(connectionLimitsOf(next.listen, workersOf(next)));
      listener.serve(running_.factory());
      return needsRestart;
    };
    // One reload at a time: a second waits for the first (new trust sources may take a while to load).
    let reloading: Promise<unknown> = Promise.resolve();
    const reconfigure = (requested: C): Promise<string[]> => {
      const run = reloading.then(() => takeOver(requested));
      reloading = run.catch(() => {});
      return run;
    };
    /** Reads the configuration file again and takes it over (true), or keeps the running one and says why. */
    const reloadConfiguration = (why: string): Promise<boolean> => {
      const file = deps.configFile;
      if (!file) return Promise.resolve(false);
      const run = reloading.then(async () => {
        try {
          const next = file.read();
          if (next.mode !== mode.name)
            throw new Error(
              `${file.path}: mode is ${next.mode}; this gateway runs ${mode.name} (a restart changes it)`,
            );
          reloads.applied(why, await takeOver(next as C));
          return true;
        } catch (error) {
          reloads.failed(why, error as Error);
          return false;
        }
      });
      reloading = run;
      return run;
    };
    configWatch = deps.configFile
      ? watchFiles([deps.configFile.path], config.reload.pollSeconds * 1000, () => {
          void reloadConfiguration("the config file changed");
        })
      : undefined;
    started.add(() => configWatch?.stop());

    return {
      listener,
      url: listener.url,
      server: listener.server,
      adminUrl: admin?.url,
      parts: running_,
      get running() {
        return running;
      },
      readiness,
      reconfigure,
      async reload() {
        let failure: unknown;
        try {
          running_.reloadFiles?.();
        } catch (error) {
          failure = error;
        }
        if (!(await reloadConfiguration("SIGHUP"))) running_.reloadUnchanged?.();
        if (failure !== undefined) throw failure;
      },
      async close(graceMs = running.shutdown.graceSeconds * 1000) {
        draining = true;
        configWatch?.stop();
        running_.stopping?.();
        await drain(listener.server, graceMs);
        await started.closeAll();
        logger.info("gateway stopped");
      },
    };
  } catch (error) {
    await started.closeAll();
    throw error;
  }
}
