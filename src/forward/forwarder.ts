/**
 * Streams a request to a backend and its response back, with undici's low-level dispatch so the
 * hot path allocates little: response bytes go straight from the backend socket to the client.
 * One `Forwarding` object per request is both the undici handler and the outcome's promise.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { type Rejection, reject } from "../errors.js";
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

/** Thrown into undici to stop reading a response that is too large to sign. */
class ResponseTooLarge extends Error {}

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
  /** Headers added to the backend's response (X-Request-ID echoed). */
  addResponseHeaders(headers: Record<string, string | string[]>): void;
  /** Writes the gateway's own answer (a refusal or an upstream failure). */
  writeRejection(rejection: Rejection): number;
  /** Called just before the response head is written (the caller may still change keep-alive). */
  beforeHead(): void;
  readonly responseSigner?: ResponseSigner | undefined;
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

function upstreamFailure(error: Error, backend: Backend): Rejection {
  const code = (error as { code?: string }).code ?? "";
  if (TIMEOUT_CODES.has(code)) {
    return reject(
      "GATEWAY_TIMEOUT",
      `the bank's backend did not answer within ${backend.timeoutMs} ms; try again later`,
    );
  }
  return reject(
    "BAD_GATEWAY",
    `the bank's backend could not be reached (${code || error.message}); try again later`,
  );
}

class Forwarding implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private upstreamMs: number | undefined = undefined;
  private bytesOut = 0;
  private settled = false;
  private controller: Dispatcher.DispatchController | undefined = undefined;
  /** A response held back to be signed: its status, headers and body so far. */
  private held:
    | { status: number; headers: Record<string, string | string[]>; chunks: Buffer[]; size: number }
    | undefined = undefined;
  private resolve!: (outcome: ForwardOutcome) => void;
  readonly outcome: Promise<ForwardOutcome>;

  constructor(
    private readonly backend: Backend,
    private readonly call: ForwardCall,
  ) {
    this.outcome = new Promise((resolve) => {
      this.resolve = resolve;
    });
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
    this.resolve({
      status,
      bytesOut: this.bytesOut,
      ...(rejection ? { rejection } : {}),
      ...(step ? { step } : {}),
      ...(this.upstreamMs !== undefined ? { upstreamMs: this.upstreamMs } : {}),
    });
  }

  private fail(rejection: Rejection, step?: string): void {
    const { res } = this.call;
    // The client may still be sending a body nobody reads: answer, then close the connection.
    res.shouldKeepAlive = false;
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

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx informational: wait for the final response
    this.upstreamMs = performance.now() - this.started;
    const out = downstreamResponseHeaders(headers);
    this.call.addResponseHeaders(out);
    if (this.call.responseSigner) {
      this.held = { status: statusCode, headers: out, chunks: [], size: 0 };
      return;
    }
    this.call.beforeHead();
    try {
      this.call.res.writeHead(statusCode, out);
    } catch {
      controller.abort(new Error("invalid response headers from backend"));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const held = this.held;
    if (held) {
      held.size += chunk.length;
      if (held.size > this.call.responseSigner!.maxBodyBytes) {
        if (!controller.aborted) controller.abort(new ResponseTooLarge());
        return;
      }
      held.chunks.push(chunk);
      return;
    }
    this.bytesOut += chunk.length;
    if (!this.call.res.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    if (this.held) {
      void this.signAndSend(this.held);
      return;
    }
    this.call.res.end();
    this.finish(this.call.res.statusCode);
  }

  private async signAndSend(held: NonNullable<Forwarding["held"]>): Promise<void> {
    const body = Buffer.concat(held.chunks, held.size);
    let signed: Record<string, string>;
    try {
      signed = await this.call.responseSigner!.sign(body, held.headers);
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
    const { res } = this.call;
    const headers = held.headers;
    for (const [name, value] of Object.entries(signed)) {
      delete headers[name.toLowerCase()];
      headers[name] = value;
    }
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
      this.fail(
        reject(
          "BAD_GATEWAY",
          `the bank's response is larger than ${this.call.responseSigner!.maxBodyBytes} bytes (responseSigning.maxBodyBytes) and cannot be signed; it is never sent unsigned`,
        ),
        RESPONSE_SIGNING_STEP,
      );
    } else if (error instanceof BodyRejected) {
      this.fail(error.rejection);
    } else if (error instanceof ClientAborted || this.call.req.socket.destroyed) {
      // The client is gone (its socket, not just the request stream, which ends with its body).
      this.call.res.destroy();
      this.finish(499);
    } else {
      this.fail(upstreamFailure(error, this.backend));
    }
  }
}

export function forward(backend: Backend, call: ForwardCall): Promise<ForwardOutcome> {
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
  return forwarding.outcome;
}
