/**
 * The sandbox bank ("the legacy core"): a plain node:http server on loopback that `npm start`, the
 * tests and the benchmarks put behind the gateway. It verifies no signature and trusts the identity
 * headers the gateway adds. Every answer is JSON with the caller's X-Request-ID echoed; bad input
 * gets a 4xx with a tppMessages body, never a crash.
 */

import { randomUUID } from "node:crypto";
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
import { type IdentityHeaderNames, normaliseIdentityHeaders } from "./identity.js";
import type { BankData } from "./model.js";
import { DEFAULT_PAYMENT_CAPACITY, PaymentStore } from "./payment-store.js";
import { createRouter } from "./routes.js";
import { ScaStore } from "./sca-store.js";
import { loadStateFile, saveStateFile, snapshotOf } from "./state-file.js";

export interface SandboxBankOptions {
  /** Milliseconds since the epoch; transaction dates are relative to it at start and at reset. */
  readonly clock?: () => number;
  /** Same seed, same customers, ids, amounts and payment ids. */
  readonly seed?: number;
  readonly identityHeaders?: Partial<IdentityHeaderNames>;
  /**
   * Where PSUs' browsers reach this bank, for the SCA page links (e.g. https://sandbox.example);
   * default: the URL it listens on (http://127.0.0.1:<port>).
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
  /** Default 100 000; the oldest payments are forgotten beyond it. */
  readonly maxStoredPayments?: number;
  /**
   * Keeps customers, accounts and transactions across restarts (state-file.ts): read at start when
   * it exists (an invalid file throws), written after every change and on reset.
   */
  readonly stateFile?: string;
}

export interface SandboxListener {
  /** For example http://127.0.0.1:40123, without a trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Stops listening and closes open keep-alive connections. Safe to call twice. */
  close(): Promise<void>;
}

export interface SandboxBank {
  /** A node:http request listener, for mounting the bank on a server of one's own. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  listen(port?: number, host?: string): Promise<SandboxListener>;
  /**
   * Back to the initial state (SPEC 1.7): data rebuilt for the clock's today, created customers
   * and payments forgotten, the state file (if any) rewritten. POST /v1/sandbox/reset does the same.
   */
  reset(): void;
  /** The current customers and accounts, for tests and tools that need ids without an HTTP call. */
  readonly data: BankData;
}

/** The SCA links of a bank mounted as a plain request listener without `publicUrl`. */
export const DEFAULT_PUBLIC_URL = "http://127.0.0.1:8081";
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_SCA_LINK_TTL_SECONDS = 15 * 60;
const DRAIN_FACTOR = 8;

export function createSandboxBank(options: SandboxBankOptions = {}): SandboxBank {
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
  const router = createRouter();
  const initialState = (data = buildInitialData(seed, clock())): BankState => ({
    catalogue: buildCatalogue(data),
    payments: new PaymentStore(seed, capacity),
    sca: new ScaStore(seed),
  });
  const stateFile = options.stateFile;
  const save = (saved: BankState): void => {
    if (stateFile !== undefined) saveStateFile(stateFile, snapshotOf(saved));
  };
  const loaded = stateFile === undefined ? undefined : loadStateFile(stateFile);
  // The file's dates are absolute; "today" (the balances' reference date) is the clock's.
  let state = initialState(loaded && { ...loaded.data, today: isoDate(clock()) });
  // A new file is written at once, so that an unwritable path shows at start, not at the first change.
  if (stateFile !== undefined && loaded === undefined) save(state);

  const control: BankControl = {
    reset: () => {
      const fresh = initialState();
      save(fresh);
      state = fresh;
      return fresh;
    },
    commit: (from, data) => {
      const catalogue = buildCatalogue(data);
      // A request that began before a reset changes a state nothing reads any more: not written.
      if (from === state) save({ ...from, catalogue });
      from.catalogue = catalogue;
    },
  };

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
    const outcome = runBatch(state.catalogue.data, state.payments.accepted(), at);
    for (const payment of outcome.executed) payment.transactionStatus = "ACSC";
    if (outcome.data !== state.catalogue.data) control.commit(state, outcome.data);
  };

  const route = (req: IncomingMessage): Reply | Promise<Reply> => {
    catchUpBatch();
    const tooLarge = checkDeclaredLength(req, settings);
    if (tooLarge !== undefined) return tooLarge;
    const target = parseTarget(req.url);
    if (isReply(target)) return target;
    const method = req.method ?? "";
    const match = router.match(method, target.segments);
    if (match.kind === "not-found") {
      return errorReply(
        404,
        "RESOURCE_UNKNOWN",
        `No operation at ${method} ${quote(`/${target.segments.join("/")}`, 120)}`,
      );
    }
    if (match.kind === "method-not-allowed") {
      return errorReply(
        405,
        "SERVICE_INVALID",
        `${quote(method)} is not allowed here; use ${match.allow.join(" or ")}`,
        { headers: { allow: match.allow.join(", ") } },
      );
    }
    const handle: RouteHandler = match.handler;
    return handle({ req, query: target.query, params: match.params, state, settings, control });
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const requestId = headerValue(req, "x-request-id") ?? randomUUID();
    try {
      const reply = route(req);
      if (reply instanceof Promise) {
        reply.then(
          (settled) => send(res, requestId, settled),
          (error: unknown) => send(res, requestId, internalError(error)),
        );
      } else {
        send(res, requestId, reply);
      }
    } catch (error) {
      send(res, requestId, internalError(error));
    }
  };

  return {
    handler,
    listen: async (port = 0, host = "127.0.0.1") => {
      const listener = await listen(handler, port, host);
      if (options.publicUrl === undefined) settings.publicUrl.value = listener.url;
      return listener;
    },
    reset: () => {
      control.reset();
    },
    get data() {
      return state.catalogue.data;
    },
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

function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  port: number,
  host: string,
): Promise<SandboxListener> {
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      const shownHost = host.includes(":") ? `[${host}]` : host;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://${shownHost}:${bound}`,
        port: bound,
        server,
        close: () => {
          closing ??= new Promise<void>((done, fail) => {
            server.close((error) => (error === undefined ? done() : fail(error)));
            server.closeAllConnections();
          });
          return closing;
        },
      });
    });
  });
}
