/**
 * Streams a request to a backend and its response back, with undici's low-level dispatch so the
 * hot path allocates little: response bytes go straight from the backend socket to the client.
 * One `Forwarding` object per request is the undici handler; the outcome goes to the call's
 * `finished` (a callback, not a promise: no microtask hops per request). What happens to the
 * answer — headers added, its body held for a step that must see it, the gateway's own answers —
 * is the mode's (its chain's) ResponsePhase; the forwarder only moves bytes.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { type Rejection, reject } from "../errors.js";
import type { ReceivedHeaders } from "../response-inspector.js";
import type { Backend } from "./backend.js";
import { BodyRejected, ClientAborted, type StreamedBody } from "./body.js";
import { downstreamResponseHeaders } from "./headers.js";

/** The step of the gateway's answer when the backend could not be reached or was too slow. */
export const UPSTREAM_STEP = "upstream";

export type Headers = Record<string, string | string[]>;

/** The request as the backend gets it. */
export interface UpstreamRequest {
  readonly method: string;
  /** Path and query as the backend gets them (below the backend URL's path). */
  readonly target: string;
  /** An object, or name/value pairs (ingress: a flat list does not grow a dictionary per request). */
  readonly headers: Headers | string[];
  /** `null` for a request without a body. */
  readonly body: StreamedBody | Buffer | null;
}

/** A wish to see the response body before it goes out (a step of the mode's chain). */
export interface BodyHold {
  readonly maxBodyBytes: number;
}

/** What the mode does with the backend's answer, and its own answers. */
export interface ResponsePhase<H extends BodyHold = BodyHold> {
  /**
   * The request was read whole before it was forwarded (egress): when the gateway answers a
   * failure itself, the connection stays open, since no unread body is left on it.
   */
  readonly readWhole: boolean;
  /** The head about to go out (`send`, hop-by-hop headers dropped): the mode adds to it and says who holds the body. */
  head(status: number, received: ReceivedHeaders, send: Headers): readonly H[] | undefined;
  /** `hold`'s bound was passed: a refusal withholds the response, undefined lets it pass without `hold`. */
  tooLarge(hold: H, send: Headers): Rejection | undefined;
  /** The whole held body past its holders: a refusal withholds it and is answered instead. */
  body(
    holds: readonly H[],
    body: Buffer,
    received: ReceivedHeaders,
    send: Headers,
  ): Promise<Rejection | undefined>;
  /** Writes the gateway's own answer (a refusal or an upstream failure); returns the body's size. */
  answer(rejection: Rejection): number;
  /** Called just before the response head is written (the mode may still change keep-alive). */
  beforeHead(): void;
  /** The answer when the backend cannot be reached or is too slow. */
  unreachable(error: Error, backend: Backend): Rejection;
}

/** What the forwarder needs from the mode that calls it: transport, and its response phase. */
export interface ForwardCall<H extends BodyHold = BodyHold> extends ResponsePhase<H> {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly upstream: UpstreamRequest;
  /** Told once what happened, when the answer is out or the exchange ended without one. */
  finished(outcome: ForwardOutcome): void;
}

export interface ForwardOutcome {
  /** The status sent to the client (the backend's, or the gateway's own on failure). */
  readonly status: number;
  /** Set when the gateway answered instead of the backend. */
  readonly rejection?: Rejection;
  /** Set when the forwarder itself named why (the backend unreachable: `upstream`). */
  readonly step?: string;
  /** Milliseconds from dispatch to the backend's response headers. */
  readonly upstreamMs?: number;
  readonly bytesOut: number;
}

const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

/** True when undici gave up waiting on the backend (connect, response head or body). */
export function isUpstreamTimeout(error: Error): boolean {
  return TIMEOUT_CODES.has((error as { code?: string }).code ?? "");
}

/** Ingress's wording of an unreachable or slow backend. */
export function upstreamFailure(error: Error, backend: Backend): Rejection {
  if (isUpstreamTimeout(error)) {
    return reject(
      "GATEWAY_TIMEOUT",
      `the bank's backend did not answer within ${backend.timeoutMs} ms; try again later`,
    );
  }
  const code = (error as { code?: string }).code ?? "";
  return reject(
    "BAD_GATEWAY",
    `the bank's backend could not be reached (${code || error.message}); try again later`,
  );
}

/** Thrown into undici to stop reading a held response that has grown past a bound. */
class ResponseTooLarge extends Error {
  constructor(readonly rejection: Rejection) {
    super(rejection.text);
  }
}

/** A response held back for the steps that must see its body: its head and its body so far. */
interface HeldResponse<H> {
  readonly status: number;
  readonly received: ReceivedHeaders;
  /** The head to send (hop-by-hop headers dropped, the mode's headers added). */
  readonly headers: Headers;
  readonly chunks: Buffer[];
  size: number;
  /** Those still holding it (one whose bound was passed and let it pass has left). */
  holds: H[];
}

class Forwarding<H extends BodyHold> implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private upstreamMs: number | undefined = undefined;
  private bytesOut = 0;
  private settled = false;
  private controller: Dispatcher.DispatchController | undefined = undefined;
  private held: HeldResponse<H> | undefined = undefined;

  constructor(
    private readonly backend: Backend,
    private readonly call: ForwardCall<H>,
    private readonly body: StreamedBody | undefined,
  ) {
    const { res } = call;
    res.on("close", () => {
      // A client that goes away aborts the upstream request too.
      const c = this.controller;
      if (!res.writableFinished && c && !c.aborted) c.abort(new ClientAborted("client closed"));
      // The exchange is over, answered or not: a body still on its way upstream will never be
      // needed (and, refused mid-body, might never end).
      if (this.body && !this.body.ended) this.body.stop(new ClientAborted("the exchange is over"));
      this.finish(499);
    });
    res.on("drain", () => this.controller?.resume());
  }

  private finish(status: number, rejection?: Rejection, step?: string): void {
    if (this.settled) return;
    this.settled = true;
    this.call.finished({ status, bytesOut: this.bytesOut, rejection, step, upstreamMs: this.upstreamMs });
  }

  private fail(rejection: Rejection, step?: string): void {
    const { call } = this;
    const { res } = call;
    // The client may still be sending a body nobody reads: answer, then close the connection.
    if (!call.readWhole) res.shouldKeepAlive = false;
    call.beforeHead();
    if (!res.headersSent) {
      call.answer(rejection);
    } else {
      // The backend already answered in part: the only honest thing left is to cut the response,
      // by closing the connection (lingering, so answers before it on the connection survive).
      if (res.socket) res.socket.destroySoon();
      else res.destroy();
    }
    this.finish(res.statusCode, rejection, step);
  }

  /** Writes the response head; false (and the exchange aborted) when Node refuses the backend's headers. */
  private writeHead(controller: Dispatcher.DispatchController, status: number, headers: Headers): boolean {
    this.call.beforeHead();
    try {
      this.call.res.writeHead(status, headers);
      return true;
    } catch {
      controller.abort(new Error("invalid response headers from backend"));
      return false;
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    received: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx informational: wait for the final response
    this.upstreamMs = performance.now() - this.started;
    const headers = downstreamResponseHeaders(received);
    const holds = this.call.head(statusCode, received, headers);
    if (holds && holds.length > 0) {
      this.held = { status: statusCode, received, headers, chunks: [], size: 0, holds: [...holds] };
      return;
    }
    this.writeHead(controller, statusCode, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const held = this.held;
    if (held) {
      held.size += chunk.length;
      held.chunks.push(chunk);
      this.holdOrRelease(controller, held);
      return;
    }
    this.bytesOut += chunk.length;
    if (!this.call.res.write(chunk)) controller.pause();
  }

  /** A held response past a holder's bound: withheld, or that holder lets it pass without it. */
  private holdOrRelease(controller: Dispatcher.DispatchController, held: HeldResponse<H>): void {
    for (const hold of held.holds) {
      if (held.size <= hold.maxBodyBytes) continue;
      const refusal = this.call.tooLarge(hold, held.headers);
      if (refusal) {
        if (!controller.aborted) controller.abort(new ResponseTooLarge(refusal));
        return;
      }
      held.holds = held.holds.filter((h) => h !== hold);
    }
    // Nothing holds it any more: what came so far goes out, and the rest streams as it comes.
    if (held.holds.length === 0) this.release(controller, held);
  }

  /** Sends the head and the body held so far; what follows is streamed. */
  private release(controller: Dispatcher.DispatchController, held: HeldResponse<H>): void {
    this.held = undefined;
    if (!this.writeHead(controller, held.status, held.headers)) return;
    let flowing = true;
    for (const chunk of held.chunks) {
      this.bytesOut += chunk.length;
      flowing = this.call.res.write(chunk);
    }
    if (!flowing) controller.pause();
  }

  onResponseEnd(): void {
    if (this.held) {
      void this.sendHeld(this.held);
      return;
    }
    this.call.res.end();
    this.finish(this.call.res.statusCode);
  }

  /** A held response: past its holders (withheld when one refuses), then sent whole. */
  private async sendHeld(held: HeldResponse<H>): Promise<void> {
    const body = Buffer.concat(held.chunks, held.size);
    const headers = held.headers;
    let refusal: Rejection | undefined;
    try {
      refusal = await this.call.body(held.holds, body, held.received, headers);
    } catch (error) {
      refusal = reject(
        "INTERNAL_SERVER_ERROR",
        `the gateway failed to check the bank's response (${(error as Error).message}); it was withheld`,
      );
    }
    if (this.settled) return; // the client went away while the response was checked
    if (refusal) return this.fail(refusal);
    const { res } = this.call;
    // Only a response with content is framed by its body: a HEAD answer keeps the backend's
    // Content-Length (the length a GET would get), a 204 or 304 gets none (RFC 9110 8.6).
    if (this.call.upstream.method !== "HEAD" && held.status !== 204 && held.status !== 304)
      headers["content-length"] = String(body.length);
    this.call.beforeHead();
    try {
      res.writeHead(held.status, headers);
    } catch {
      return this.fail(reject("BAD_GATEWAY", "the bank's backend answered with invalid response headers"));
    }
    this.bytesOut = body.length;
    res.end(body);
    this.finish(held.status);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return; // the exchange ended first (its body was stopped then)
    if (error instanceof ResponseTooLarge) {
      this.fail(error.rejection);
    } else if (error instanceof BodyRejected) {
      this.fail(error.rejection, error.step);
    } else if (error instanceof ClientAborted || this.call.req.socket.destroyed) {
      // The client is gone (its socket, not just the request stream, which ends with its body).
      this.call.res.destroy();
      this.finish(499);
    } else {
      this.fail(this.call.unreachable(error, this.backend), UPSTREAM_STEP);
    }
  }
}

/** Streams `call` to the backend and its answer back; `call.finished` is told the outcome. */
export function forward<H extends BodyHold>(backend: Backend, call: ForwardCall<H>): void {
  // What cannot be answered is not sent: a client gone while its request was checked or signed.
  if (call.res.destroyed || call.req.socket.destroyed) {
    call.finished({ status: 499, bytesOut: 0 });
    return;
  }
  const { upstream } = call;
  const body = upstream.body === null || Buffer.isBuffer(upstream.body) ? undefined : upstream.body;
  backend.pool.dispatch(
    {
      origin: backend.origin,
      path: backend.basePath + upstream.target,
      method: upstream.method,
      headers: upstream.headers,
      // undici accepts any async iterable as a body; its typings only name Readable.
      body: upstream.body as unknown as Readable | Buffer | null,
    },
    new Forwarding(backend, call, body),
  );
}
