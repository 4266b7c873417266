/**
 * The sandbox bank ("the legacy core") that `npm start`, the tests and the benchmarks put behind
 * the gateway. Two listeners: the API, which only the gateway reaches (loopback or a Unix socket)
 * and which answers only calls carrying this start's gateway secret (gateway-proof.ts), and the
 * SCA page that PSUs' browsers open (`publicUrl`), which serves nothing else. The API verifies no
 * signature: it believes the identity headers on calls that carry the secret, and keeps each TPP
 * in its own room (rooms.ts). Every answer is JSON with the caller's X-Request-ID echoed; bad
 * input gets a 4xx with a tppMessages body, never a crash.
 */

import { randomUUID } from "node:crypto";
import { chmodSync, lstatSync, rmSync } from "node:fs";
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { nextBatchAt, runBatch } from "./batch.js";
import { buildCatalogue } from "./catalogue.js";
import type { BankControl, BankSettings, BankState, RouteHandler } from "./context.js";
import { buildInitialData, DEFAULT_SEED } from "./data.js";
import { isoDate } from "./dates.js";
import { checkGatewaySecret, digest, refuseWithoutProof } from "./gateway-proof.js";
import {
  errorReply,
  headerValue,
  isReply,
  JSON_CONTENT_TYPE,
  parseTarget,
  payloadTooLarge,
  quote,
  type Reply,
} from "./http.js";
import { type IdentityHeaderNames, normaliseIdentityHeaders, readIdentity } from "./identity.js";
import type { BankData } from "./model.js";
import { DEFAULT_PAYMENT_CAPACITY, PaymentStore } from "./payment-store.js";
import { DEFAULT_MAX_ROOMS, Rooms } from "./rooms.js";
import { Router } from "./router.js";
import { API_ROUTES, SCA_ROUTES } from "./routes.js";
import { ScaStore } from "./sca-store.js";
import { loadStateFile, type RoomSnapshot, saveStateFile, snapshotOf } from "./state-file.js";

export interface SandboxBankOptions {
  /**
   * The secret the gateway adds to every call it forwards (header x-sandbox-gateway-secret, at
   * least 32 characters): API calls without it are refused before any route. Generated per start
   * by `npm start`; `psd2-gateway sandbox` reads it from a file or the environment.
   */
  readonly gatewaySecret: string;
  /** Milliseconds since the epoch; transaction dates are relative to it at start and at reset. */
  readonly clock?: () => number;
  /** Same seed, same customers, accounts and amounts (payment, consent and basket ids are random). */
  readonly seed?: number;
  /** The gateway's `identityHeaders` names: the bank reads these (and only these). */
  readonly identityHeaders?: Partial<IdentityHeaderNames>;
  /**
   * Where PSUs' browsers reach the SCA listener, for the SCA page links (e.g. https://sandbox.example);
   * default: the URL the SCA listener listens on (http://127.0.0.1:<port>).
   */
  readonly publicUrl?: string;
  /**
   * Default false: the sandbox filters pending transactions like booked ones (SPEC 4.5: the known
   * issue does not affect it); true reproduces production's (dateFrom, dateTo, limit ignored).
   */
  readonly pendingIgnoresDateFilter?: boolean;
  /** How long an SCA page link stays usable (default 900: 15 minutes); then the page says it expired. */
  readonly scaLinkTtlSeconds?: number;
  /** Default 1 MiB; larger bodies get 413. */
  readonly maxBodyBytes?: number;
  /** Default 100 000 per room; the oldest payments are forgotten beyond it. */
  readonly maxStoredPayments?: number;
  /** Default 1 000: TPPs beyond it are refused (503) until the operator resets all rooms. */
  readonly maxRooms?: number;
  /**
   * Keeps every room across restarts (state-file.ts): read at start when it exists (an invalid
   * file throws), written (mode 0600) after every request that may change something.
   */
  readonly stateFile?: string;
}

/** A TCP address (default 127.0.0.1, port 0: any free port) or a Unix socket's path. */
export type ListenAt = { readonly port?: number; readonly host?: string } | { readonly socket: string };

export interface SandboxListener {
  /** For example http://127.0.0.1:40123, without a trailing slash; http://localhost on a Unix socket. */
  readonly url: string;
  /** 0 on a Unix socket. */
  readonly port: number;
  readonly socketPath?: string;
  readonly server: Server;
  /** Stops listening and closes open keep-alive connections. Safe to call twice. */
  close(): Promise<void>;
}

export interface SandboxListeners {
  /** The bank's API: for the gateway only. */
  readonly api: SandboxListener;
  /** The SCA page (`publicUrl`): for PSUs' browsers; API paths answer 404 there. */
  readonly sca: SandboxListener;
  close(): Promise<void>;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

export interface SandboxBank {
  /** The API as a node:http request listener, for mounting the bank on a server of one's own. */
  readonly apiHandler: RequestListener;
  /** The SCA page as a node:http request listener. */
  readonly scaHandler: RequestListener;
  listen(at?: { readonly api?: ListenAt; readonly sca?: ListenAt }): Promise<SandboxListeners>;
  /**
   * Every room back to the initial state (SPEC 1.7), the operator's reset: rooms are opened again
   * from the generated data at each TPP's next call; the state file (if any) is rewritten.
   * POST /v1/sandbox/reset resets the caller's room only.
   */
  reset(): void;
  /** The generated customers and accounts a room starts with, for tests and tools that need ids. */
  readonly data: BankData;
  /** A TPP's customers and accounts now (the generated ones while it has no room). */
  dataOf(organizationId: string): BankData;
}

/** The SCA links of a bank mounted as a plain request listener without `publicUrl`. */
export const DEFAULT_PUBLIC_URL = "http://127.0.0.1:8081";
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_SCA_LINK_TTL_SECONDS = 15 * 60;
const DRAIN_FACTOR = 8;

export function createSandboxBank(options: SandboxBankOptions): SandboxBank {
  const expectedSecret = digest(checkGatewaySecret(options.gatewaySecret));
  const clock = options.clock ?? Date.now;
  const seed = options.seed ?? DEFAULT_SEED;
  const capacity = positiveInteger(
    "maxStoredPayments",
    options.maxStoredPayments ?? DEFAULT_PAYMENT_CAPACITY,
  );
  const maxBodyBytes = positiveInteger("maxBodyBytes", options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  const settings: BankSettings = {
    now: clock,
    identityHeaders: normaliseIdentityHeaders(options.identityHeaders),
    publicUrl: { value: (options.publicUrl ?? DEFAULT_PUBLIC_URL).replace(/\/+$/, "") },
    scaLinkTtlMs:
      positiveInteger("scaLinkTtlSeconds", options.scaLinkTtlSeconds ?? DEFAULT_SCA_LINK_TTL_SECONDS) * 1000,
    pendingIgnoresDateFilter: options.pendingIgnoresDateFilter ?? false,
    maxBodyBytes,
    drainBytes: maxBodyBytes * DRAIN_FACTOR,
  };
  const apiRouter = new Router(API_ROUTES);
  const scaRouter = new Router(SCA_ROUTES);
  const roomOf = (data: BankData): BankState => ({
    catalogue: buildCatalogue(data),
    payments: new PaymentStore(capacity),
    sca: new ScaStore(),
  });
  const rooms = new Rooms(
    () => roomOf(buildInitialData(seed, clock())),
    positiveInteger("maxRooms", options.maxRooms ?? DEFAULT_MAX_ROOMS),
  );
  const stateFile = options.stateFile;
  const persist = (): void => {
    if (stateFile !== undefined) saveStateFile(stateFile, snapshotOf(rooms));
  };
  const loaded = stateFile === undefined ? undefined : loadStateFile(stateFile);
  // The file's dates are absolute; "today" (the balances' reference date) is the clock's.
  const restored = (saved: RoomSnapshot): BankState => {
    const room = roomOf({ ...saved.data, today: isoDate(clock()) });
    room.payments.restore(saved);
    room.sca.restore(saved.sca);
    return room;
  };
  for (const saved of loaded?.rooms ?? []) rooms.restore(saved.organizationId, restored(saved));
  // A new file is written at once, so that an unwritable path shows at start, not at the first change.
  if (stateFile !== undefined && loaded === undefined) persist();

  const controlOf = (organizationId: string): BankControl => ({
    reset: () => rooms.reset(organizationId),
    commit: (from, data) => {
      const previous = from.catalogue;
      from.catalogue = buildCatalogue(data);
      // A request that began before a reset changes a room nothing reads any more: not written.
      if (rooms.get(organizationId) !== from) return;
      try {
        persist();
      } catch (error) {
        from.catalogue = previous;
        throw error;
      }
    },
  });

  // SPEC 1.7: the payment batch's runs whose time has come, caught up before the next request is
  // answered; the clock decides (tests move it), no timer. One run at the latest due time does
  // what the missed ones would have: each run takes everything waiting.
  let nextRun = nextBatchAt(clock());
  const catchUpBatch = (): void => {
    const now = clock();
    if (now < nextRun) return;
    let at = nextRun;
    for (let next = nextBatchAt(at); next <= now; next = nextBatchAt(next)) at = next;
    nextRun = nextBatchAt(at);
    let changed = false;
    for (const [, room] of rooms.entries()) {
      const outcome = runBatch(room.catalogue.data, room.payments.accepted(), at);
      for (const payment of outcome.executed) payment.transactionStatus = "ACSC";
      changed ||= outcome.executed.length > 0 || outcome.data !== room.catalogue.data;
      if (outcome.data !== room.catalogue.data) room.catalogue = buildCatalogue(outcome.data);
    }
    if (changed) persist();
  };

  /** The route of a request, or the refusal; the routers' 404 and 405 in the bank's words. */
  const match = (
    router: Router<RouteHandler>,
    req: IncomingMessage,
  ):
    | Reply
    | {
        readonly handle: RouteHandler;
        readonly query: URLSearchParams;
        readonly params: readonly string[];
      } => {
    const tooLarge = checkDeclaredLength(req, settings);
    if (tooLarge !== undefined) return tooLarge;
    const target = parseTarget(req.url);
    if (isReply(target)) return target;
    const method = req.method ?? "";
    const found = router.match(method, target.segments);
    if (found.kind === "not-found") {
      return errorReply(
        404,
        "RESOURCE_UNKNOWN",
        `No operation at ${method} ${quote(`/${target.segments.join("/")}`, 120)}`,
      );
    }
    if (found.kind === "method-not-allowed") {
      return errorReply(
        405,
        "SERVICE_INVALID",
        `${quote(method)} is not allowed here; use ${found.allow.join(" or ")}`,
        { headers: { allow: found.allow.join(", ") } },
      );
    }
    return { handle: found.handler, query: target.query, params: found.params };
  };

  const routeApi = (req: IncomingMessage): Reply | Promise<Reply> => {
    catchUpBatch();
    const route = match(apiRouter, req);
    if (isReply(route)) return route;
    const organizationId = readIdentity(req, settings.identityHeaders).organizationId;
    if (organizationId === undefined) {
      return errorReply(
        401,
        "CERTIFICATE_MISSING",
        "The call names no TPP: the gateway adds the organisation header from the TPP's certificate; check its identityHeaders are the bank's",
      );
    }
    const state = rooms.open(organizationId);
    if (state === undefined) {
      return errorReply(
        503,
        "SERVICE_BLOCKED",
        "The sandbox holds as many TPPs' rooms as it is configured for: ask the bank's operator to reset all rooms",
      );
    }
    const { handle, query, params } = route;
    return handle({ req, query, params, state, settings, control: controlOf(organizationId) });
  };

  const unknownLinkRoom = roomOf(buildInitialData(seed, clock()));
  const routeSca = (req: IncomingMessage): Reply | Promise<Reply> => {
    catchUpBatch();
    const route = match(scaRouter, req);
    if (isReply(route)) return route;
    const { handle, query, params } = route;
    // The authorisation id names the room; an unknown one meets an empty room and its "not found" page.
    const found = rooms.findAuthorisation(params[0]!);
    const state = found?.room ?? unknownLinkRoom;
    return handle({ req, query, params, state, settings, control: controlOf(found?.organizationId ?? "") });
  };

  const serve =
    (
      route: (req: IncomingMessage) => Reply | Promise<Reply>,
      changes: (req: IncomingMessage, status: number) => boolean,
    ) =>
    (req: IncomingMessage, res: ServerResponse): void => {
      const requestId = headerValue(req, "x-request-id") ?? randomUUID();
      const settle = (reply: Reply): void => {
        send(res, requestId, changes(req, reply.status) ? persisted(reply) : reply);
      };
      try {
        const reply = route(req);
        if (reply instanceof Promise) reply.then(settle, (error: unknown) => settle(internalError(error)));
        else settle(reply);
      } catch (error) {
        settle(internalError(error));
      }
    };
  /** Written before the answer goes: a TPP told 201 finds its payment after a restart. */
  const persisted = (reply: Reply): Reply => {
    try {
      persist();
      return reply;
    } catch (error) {
      return internalError(error);
    }
  };
  // A refusal changes nothing, but for the 401 that starts a consent (on GET too); opening the SCA
  // page moves its authorisation to STARTED: every SCA request answered below 400 may change something.
  const apiChanges = (req: IncomingMessage, status: number) =>
    status === 401 || (status < 400 && req.method !== "GET" && req.method !== "HEAD");
  const serveApi = serve(routeApi, apiChanges);
  // Before anything else: a call without this start's secret reaches no route and changes nothing.
  const apiHandler: RequestListener = (req, res) => {
    const refused = refuseWithoutProof(req, expectedSecret);
    if (refused === undefined) serveApi(req, res);
    else send(res, headerValue(req, "x-request-id") ?? randomUUID(), refused);
  };
  const scaHandler = serve(routeSca, (_req, status) => status < 400);

  return {
    apiHandler,
    scaHandler,
    listen: async (at = {}) => {
      const api = await listen(apiHandler, at.api ?? {});
      let sca: SandboxListener;
      try {
        sca = await listen(scaHandler, at.sca ?? {});
      } catch (error) {
        await api.close();
        throw error;
      }
      if (options.publicUrl === undefined) settings.publicUrl.value = sca.url;
      return { api, sca, close: async () => void (await Promise.all([api.close(), sca.close()])) };
    },
    reset: () => {
      rooms.resetAll();
      persist();
    },
    get data() {
      return buildInitialData(seed, clock());
    },
    dataOf: (organizationId) => rooms.get(organizationId)?.catalogue.data ?? buildInitialData(seed, clock()),
  };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`sandbox bank option ${name} must be a positive integer; got ${value}`);
  }
  return value;
}

/** A Content-Length over the limit is refused before a byte of the body is read. */
function checkDeclaredLength(req: IncomingMessage, settings: BankSettings): Reply | undefined {
  const declared = req.headers["content-length"];
  if (declared === undefined) return undefined;
  const length = Number(declared);
  if (!(length > settings.maxBodyBytes)) return undefined;
  const reply = payloadTooLarge(settings.maxBodyBytes, `${declared} bytes`);
  // Draining a vast body would only waste time: close instead, at the risk of the client missing the answer.
  return length > settings.drainBytes ? { ...reply, headers: { connection: "close" } } : reply;
}

function internalError(error: unknown): Reply {
  const message = error instanceof Error ? error.message : String(error);
  return errorReply(500, "INTERNAL_SERVER_ERROR", `The sandbox bank failed: ${message.slice(0, 200)}`);
}

function send(res: ServerResponse, requestId: string, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  const body = typeof reply.body === "string" ? Buffer.from(reply.body, "utf8") : reply.body;
  const headers: OutgoingHttpHeaders = {
    "content-type": JSON_CONTENT_TYPE,
    "content-length": body.length,
    "x-request-id": requestId,
  };
  if (reply.headers !== undefined) Object.assign(headers, reply.headers);
  try {
    res.writeHead(reply.status, headers);
    res.end(body);
  } catch {
    res.destroy();
  }
}

function listen(handler: RequestListener, at: ListenAt): Promise<SandboxListener> {
  const server = createServer(handler);
  const socketPath = "socket" in at ? at.socket : undefined;
  if (socketPath !== undefined) removeStaleSocket(socketPath);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    const listening = () => {
      server.off("error", reject);
      let url: string;
      let port = 0;
      if (socketPath !== undefined) {
        // Only this user (the gateway's) may connect.
        chmodSync(socketPath, 0o600);
        url = "http://localhost";
      } else {
        const host = (at as { host?: string }).host ?? "127.0.0.1";
        port = (server.address() as AddressInfo).port;
        url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
      }
      let closing: Promise<void> | undefined;
      resolve({
        url,
        port,
        ...(socketPath === undefined ? {} : { socketPath }),
        server,
        close: () => {
          closing ??= new Promise<void>((done, fail) => {
            server.close((error) => (error === undefined ? done() : fail(error)));
            server.closeAllConnections();
          });
          return closing;
        },
      });
    };
    if (socketPath !== undefined) server.listen(socketPath, listening);
    else {
      const tcp = at as { port?: number; host?: string };
      server.listen(tcp.port ?? 0, tcp.host ?? "127.0.0.1", listening);
    }
  });
}

/** A socket file left by a previous run would make listen fail; anything else at the path is kept. */
function removeStaleSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) rmSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
