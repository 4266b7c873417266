/**
 * Streams a request to a backend and its response back, with undici's low-level dispatch so the
 * hot path allocates little: response bytes go straight from the backend socket to the client.
 * One `Forwarding` object per request is the undici handler; the outcome goes to the call's
 * `finished` (a callback, not a promise: no microtask hops per request).
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { type Rejection, reject } from "../errors.js";
import type { ReceivedHeaders, ResponseInspector } from "../response-inspector.js";
import type { Backend } from "./backend.js";
import { BodyRejected, ClientAborted } from "./body.js";
import { downstreamResponseHeaders } from "./headers.js";

/**
 * Signs a response before it goes out (ingress `responseSigning`): the body is held, up to
 * `maxBodyBytes`, because its Digest is signed; a larger response is refused, never sent unsigned.
 */
export interface ResponseSigner {
  readonly maxBodyBytes: number;
  /** The headers to add to the response (Digest, Date, X-Request-ID, Signature, the certificate). */
  sign(body: Buffer, headers: Readonly<Record<string, string | string[]>>): Promise<Record<string, string>>;
}

/** The step name the gateway's refusals of a response carry (access log, rejections metric). */
export const RESPONSE_SIGNING_STEP = "response-signing";
/** The step of the gateway's answer when the backend could not be reached or was too slow. */
export const UPSTREAM_STEP = "upstream";

/** Thrown into undici to stop reading a held response that has grown past its bound. */
class ResponseTooLarge extends Error {
  constructor(
    readonly rejection: Rejection,
    readonly step: string,
  ) {
    super(rejection.text);
  }
}

/** What the forwarder needs from the mode that calls it (ingress or egress). */
export interface ForwardCall {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  /** Path and query as the backend gets them (below the backend URL's path). */
  readonly target: string;
  readonly upstreamHeaders: Record<string, string | string[]>;
  /** `null` for a request without a body. */
  readonly upstreamBody: AsyncIterable<Buffer> | Buffer | null;
  /**
   * The request was read whole before it was forwarded (egress): when the gateway answers a
   * failure itself, the connection stays open, since no unread body is left on it.
   */
  readonly readWhole?: boolean;
  /** Headers added to the backend's response (X-Request-ID echoed, egress's marks). */
  addResponseHeaders(headers: Record<string, string | string[]>, status: number): void;
  /** Writes the gateway's own answer (a refusal or an upstream failure). */
  writeRejection(rejection: Rejection): number;
  /** Called just before the response head is written (the caller may still change keep-alive). */
  beforeHead(): void;
  /** The answer when the backend cannot be reached or is too slow (default: ingress's wording). */
  unreachable?(error: Error): Rejection;
  readonly responseSigner?: ResponseSigner | undefined;
  /** Judges the bank's answer before it goes out: set by an ingress check, or by egress. */
  readonly responseInspector?: ResponseInspector | undefined;
  /** Told once what happened, when the answer is out or the exchange ended without one. */
  finished(outcome: ForwardOutcome): void;
}

export interface ForwardOutcome {
  /** The status sent to the client (the backend's, or the gateway's own on failure). */
  readonly status: number;
  /** Set when the gateway answered instead of the backend. */
  readonly rejection?: Rejection;
  /** Set when that answer came from a step after the backend's (response signing). */
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

function upstreamFailure(error: Error, backend: Backend): Rejection {
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

/** A response held back to be inspected and/or signed: its head and its body so far. */
interface HeldResponse {
  readonly status: number;
  readonly received: ReceivedHeaders;
  /** The head to send (hop-by-hop headers dropped, the call's headers added). */
  readonly headers: Record<string, string | string[]>;
  readonly chunks: Buffer[];
  size: number;
  /** Undefined once a response too large to inspect was let pass unchecked. */
  inspector: ResponseInspector | undefined;
}

class Forwarding implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private upstreamMs: number | undefined = undefined;
  private bytesOut = 0;
  private settled = false;
  private controller: Dispatcher.DispatchController | undefined = undefined;
  private held: HeldResponse | undefined = undefined;

  constructor(
    private readonly backend: Backend,
    private readonly call: ForwardCall,
  ) {
    const { res } = call;
    // A client that goes away aborts the upstream request too.
    res.on("close", () => {
      const c = this.controller;
      if (!res.writableFinished && c && !c.aborted) c.abort(new ClientAborted("client closed"));
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
    const { res } = this.call;
    // The client may still be sending a body nobody reads: answer, then close the connection.
    if (!this.call.readWhole) res.shouldKeepAlive = false;
    this.call.beforeHead();
    if (!res.headersSent) {
      this.call.writeRejection(rejection);
    } else {
      // The backend already answered in part: the only honest thing left is to cut the response,
      // by closing the connection (lingering, so answers before it on the connection survive).
      if (res.socket) res.socket.destroySoon();
      else res.destroy();
    }
    this.finish(res.statusCode, rejection, step);
  }

  /** Writes the response head; false (and the exchange aborted) when Node refuses the backend's headers. */
  private writeHead(
    controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[]>,
  ): boolean {
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
    this.call.addResponseHeaders(headers, statusCode);
    const candidate = this.call.responseInspector;
    const inspector = candidate?.wants(statusCode, received) ? candidate : undefined;
    if (inspector || this.call.responseSigner) {
      this.held = { status: statusCode, received, headers, chunks: [], size: 0, inspector };
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

  /** A held response past its inspector's bound or the signer's: withheld, or let pass unchecked. */
  private holdOrRelease(controller: Dispatcher.DispatchController, held: HeldResponse): void {
    const inspector = held.inspector;
    if (inspector && held.size > inspector.maxBodyBytes) {
      const refusal = inspector.tooLarge
        ? inspector.tooLarge(held.status, held.received, held.headers)
        : reject(
            "BAD_GATEWAY",
            `the bank's response is larger than ${inspector.maxBodyBytes} bytes, too large for the gateway's ${inspector.step} check; it was withheld`,
          );
      if (refusal) {
        if (!controller.aborted) controller.abort(new ResponseTooLarge(refusal, inspector.step));
        return;
      }
      held.inspector = undefined;
      // Nothing else holds it: what came so far goes out, and the rest streams as it comes.
      if (!this.call.responseSigner) {
        this.release(controller, held);
        return;
      }
    }
    const signer = this.call.responseSigner;
    if (signer && held.size > signer.maxBodyBytes && !controller.aborted) {
      controller.abort(
        new ResponseTooLarge(
          reject(
            "BAD_GATEWAY",
            `the bank's response is larger than ${signer.maxBodyBytes} bytes (responseSigning.maxBodyBytes) and cannot be signed; it is never sent unsigned`,
          ),
          RESPONSE_SIGNING_STEP,
        ),
      );
    }
  }

  /** Sends the head and the body held so far; what follows is streamed. */
  private release(controller: Dispatcher.DispatchController, held: HeldResponse): void {
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

  /** A held response: inspected (withheld when refused), then signed when configured, then sent. */
  private async sendHeld(held: HeldResponse): Promise<void> {
    const body = Buffer.concat(held.chunks, held.size);
    const headers = held.headers;
    const inspector = held.inspector;
    if (inspector) {
      let refusal: Rejection | undefined;
      try {
        refusal = await inspector.inspect(body, held.received, headers);
      } catch (error) {
        refusal = reject(
          "INTERNAL_SERVER_ERROR",
          `the gateway failed to check the bank's response (${(error as Error).message}); it was withheld`,
        );
      }
      if (this.settled) return; // the client went away while the response was checked
      if (refusal) return this.fail(refusal, inspector.step);
    }
    const signer = this.call.responseSigner;
    if (signer) {
      let signed: Record<string, string>;
      try {
        signed = await signer.sign(body, headers);
      } catch (error) {
        return this.fail(
          reject(
            "BAD_GATEWAY",
            `the bank's response could not be signed (${(error as Error).message}); it is never sent unsigned`,
          ),
          RESPONSE_SIGNING_STEP,
        );
      }
      if (this.settled) return; // the client went away while the response was signed
      for (const [name, value] of Object.entries(signed)) {
        delete headers[name.toLowerCase()];
        headers[name] = value;
      }
    }
    const { res } = this.call;
    // Only a response with content is framed by its body: a HEAD answer keeps the backend's
    // Content-Length (the length a GET would get), a 204 or 304 gets none (RFC 9110 8.6).
    if (this.call.method !== "HEAD" && held.status !== 204 && held.status !== 304)
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
    if (error instanceof ResponseTooLarge) {
      this.fail(error.rejection, error.step);
    } else if (error instanceof BodyRejected) {
      this.fail(error.rejection, error.step);
    } else if (error instanceof ClientAborted || this.call.req.socket.destroyed) {
      // The client is gone (its socket, not just the request stream, which ends with its body).
      this.call.res.destroy();
      this.finish(499);
    } else {
      this.fail(this.call.unreachable?.(error) ?? upstreamFailure(error, this.backend), UPSTREAM_STEP);
    }
  }
}

/** Streams `call` to the backend and its answer back; `call.finished` is told the outcome. */
export function forward(backend: Backend, call: ForwardCall): void {
  // What cannot be answered is not sent: a client gone while its request was checked or signed.
  if (call.res.destroyed || call.req.socket.destroyed) {
    call.finished({ status: 499, bytesOut: 0 });
    return;
  }
  const forwarding = new Forwarding(backend, call);
  backend.pool.dispatch(
    {
      origin: backend.origin,
      path: backend.basePath + call.target,
      method: call.method,
      headers: call.upstreamHeaders,
      // undici accepts any async iterable as a body; its typings only name Readable.
      body: call.upstreamBody as unknown as Readable | Buffer | null,
    },
    forwarding,
  );
}
