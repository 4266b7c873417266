/**
 * Real HTTP on 127.0.0.1: a server that reads each request whole and lets a judge answer it, and
 * a client that sends one request (optionally letting a signer touch the ClientRequest first).
 */

import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  readonly message: IncomingMessage;
  readonly body: Buffer;
}

export interface Verdict {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
}

export interface LoopbackServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startLoopbackServer(
  judge: (received: ReceivedRequest) => Verdict | Promise<Verdict>,
): Promise<LoopbackServer> {
  const server = createServer((message, response) => {
    const chunks: Buffer[] = [];
    message.on("data", (chunk: Buffer) => chunks.push(chunk));
    message.on("end", async () => {
      let verdict: Verdict;
      try {
        verdict = await judge({ message, body: Buffer.concat(chunks) });
      } catch (error) {
        // A judge that throws is a finding of its own: report it instead of hanging the client.
        verdict = { status: 500, body: { thrown: error instanceof Error ? error.message : String(error) } };
      }
      response.writeHead(verdict.status, { "content-type": "application/json" });
      response.end(JSON.stringify(verdict.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}

export interface OutgoingRequest {
  readonly method: string;
  /** Path and query, sent as they are. */
  readonly path: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Buffer;
}

export interface LoopbackResponse {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
}

/** Sends one request on a fresh connection; `prepare` runs after the headers are set and before any byte is sent. */
export function sendRequest(
  port: number,
  outgoing: OutgoingRequest,
  prepare?: (request: ClientRequest) => void,
): Promise<LoopbackResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: outgoing.method,
        path: outgoing.path,
        headers: outgoing.headers,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          try {
            const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            if (typeof parsed !== "object" || parsed === null)
              throw new Error("response body is not a JSON object");
            resolve({ status: response.statusCode ?? 0, body: parsed as Record<string, unknown> });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    request.on("error", reject);
    try {
      prepare?.(request);
    } catch (error) {
      request.destroy();
      reject(error);
      return;
    }
    request.end(outgoing.body);
  });
}
