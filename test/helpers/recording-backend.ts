/**
 * A real backend for integration tests that records what reached it: every request's method,
 * target, headers, the body bytes received and whether the body arrived complete.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingMessage["headers"];
  body: Buffer;
  /** True once the whole body arrived (the 'end' event); false when the connection was cut. */
  complete: boolean;
  /** Resolves when the request is over: its body ended or its connection closed. */
  readonly settled: Promise<void>;
}

export type BackendBehaviour = (req: IncomingMessage, res: ServerResponse, recorded: RecordedRequest) => void;

export interface RecordingBackend {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Replaces how the backend answers (default: 200 with a small JSON body, after the body ends). */
  behave(behaviour: BackendBehaviour): void;
  /**
   * Answers every request as soon as its head arrives, before its body, as a legacy core's GET or
   * DELETE handler acts (`{"acted":true}`, 200); the body is still recorded. Undone by reset().
   */
  actOnHead(): void;
  reset(): void;
  /** Waits until at least `count` requests have arrived (throws after `timeoutMs`). */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

export const answerOk: BackendBehaviour = (_req, res, recorded) => {
  const body = JSON.stringify({ ok: true, received: recorded.body.length });
  res.writeHead(200, { "content-type": "application/json", "x-backend": "recording" });
  res.end(body);
};

export async function startRecordingBackend(): Promise<RecordingBackend> {
  const requests: RecordedRequest[] = [];
  let behaviour: BackendBehaviour = answerOk;
  let eager = false;
  const server: Server = createServer((req, res) => {
    if (eager) {
      res.writeHead(200, { "content-type": "application/json", "x-backend": "acted-on-head" });
      res.end(JSON.stringify({ acted: true }));
    }
    let settle = () => {};
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      target: req.url ?? "",
      headers: req.headers,
      body: Buffer.alloc(0),
      complete: false,
      settled: new Promise<void>((resolve) => {
        settle = resolve;
      }),
    };
    requests.push(recorded);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => {});
    req.on("end", () => {
      recorded.body = Buffer.concat(chunks);
      recorded.complete = true;
      settle();
      if (!eager) behaviour(req, res, recorded);
    });
    req.on("close", () => {
      if (!recorded.complete) recorded.body = Buffer.concat(chunks);
      settle();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    behave(b) {
      behaviour = b;
    },
    actOnHead() {
      eager = true;
    },
    reset() {
      requests.length = 0;
      behaviour = answerOk;
      eager = false;
    },
    async waitForRequests(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline)
          throw new Error(`backend saw ${requests.length} requests, expected ${count}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return requests;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
