/**
 * Streams a request to a backend and its response back, with undici's low-level dispatch so the
 * hot path allocates little: response bytes go straight from the backend socket to the client.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { type Rejection, reject } from "../errors.js";
import type { Backend } from "./backend.js";
import { BodyRejected, ClientAborted } from "./body.js";
import { downstreamResponseHeaders } from "./headers.js";

export interface ForwardRequest {
  readonly method: string;
  /** Path and query as received. */
  readonly target: string;
  readonly headers: Record<string, string | string[]>;
  /** `null` for a request without a body. */
  readonly body: AsyncIterable<Buffer> | null;
}

export interface ForwardOutcome {
  /** The status sent to the client (the backend's, or the gateway's own on failure). */
  readonly status: number;
  /** Set when the gateway answered instead of the backend. */
  readonly rejection?: Rejection;
  /** Milliseconds from dispatch to the backend's response headers. */
  readonly upstreamMs?: number;
  readonly bytesOut: number;
}

/** Writes a gateway answer (refusal or upstream failure); the caller supplies the writer. */
export type RejectionWriter = (res: ServerResponse, rejection: Rejection) => void;

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

export function forward(
  backend: Backend,
  req: IncomingMessage,
  res: ServerResponse,
  request: ForwardRequest,
  writeRejection: RejectionWriter,
  extraResponseHeaders?: Record<string, string>,
  /** Called just before the response head is written (the caller may still change keep-alive). */
  beforeHead?: () => void,
): Promise<ForwardOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    let upstreamMs: number | undefined;
    let bytesOut = 0;
    let settled = false;
    let controller: Dispatcher.DispatchController | undefined;

    const finish = (outcome: ForwardOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };

    const fail = (rejection: Rejection) => {
      // The client may still be sending a body nobody reads: answer, then close the connection.
      res.shouldKeepAlive = false;
      beforeHead?.();
      if (!res.headersSent) {
        writeRejection(res, rejection);
        finish({ status: res.statusCode, rejection, upstreamMs, bytesOut });
      } else {
        // The backend already answered in part: the only honest thing left is to cut the response.
        res.destroy();
        finish({ status: res.statusCode, rejection, upstreamMs, bytesOut });
      }
    };

    // A client that goes away aborts the upstream request too.
    res.on("close", () => {
      if (!res.writableFinished && controller && !controller.aborted)
        controller.abort(new ClientAborted("client closed"));
      if (!settled) finish({ status: 499, upstreamMs, bytesOut });
    });
    res.on("drain", () => controller?.resume());

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
      },
      onResponseStart(c, statusCode, headers) {
        if (statusCode < 200) return; // 1xx informational: wait for the final response
        upstreamMs = performance.now() - started;
        const out = downstreamResponseHeaders(headers);
        if (extraResponseHeaders) Object.assign(out, extraResponseHeaders);
        beforeHead?.();
        try {
          res.writeHead(statusCode, out);
        } catch {
          c.abort(new Error("invalid response headers from backend"));
        }
      },
      onResponseData(c, chunk) {
        bytesOut += chunk.length;
        if (!res.write(chunk)) c.pause();
      },
      onResponseEnd() {
        res.end();
        finish({ status: res.statusCode, upstreamMs, bytesOut });
      },
      onResponseError(_c, error) {
        if (error instanceof BodyRejected) return fail(error.rejection);
        if (error instanceof ClientAborted || req.destroyed) {
          res.destroy();
          return finish({ status: 499, upstreamMs, bytesOut });
        }
        fail(upstreamFailure(error, backend));
      },
    };

    backend.pool.dispatch(
      {
        origin: backend.origin,
        path: backend.basePath + request.target,
        method: request.method,
        headers: request.headers,
        // undici accepts any async iterable as a body; its typings only name Readable.
        body: request.body as unknown as Readable | null,
      },
      handler,
    );
  });
}
