/**
 * The egress request handler: the TPP's application sends a plain request; the gateway picks the
 * bank profile, reads the (bounded) body, signs the request the way that bank wants, sends it over
 * mutual TLS with the QWAC, checks the bank's signed response when the profile asks, and answers.
 * The gateway's own answers carry `PSD2-Gateway-Origin: gateway`, the bank's `… bank`.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import type { Dispatcher } from "undici";
import { hasBody } from "../checks/index.js";
import { type Rejection, reject } from "../errors.js";
import type { EgressEvent, ResponseSignatureStatus } from "../events.js";
import type { Backend } from "../forward/backend.js";
import { downstreamResponseHeaders, joinedHeaders, upstreamRequestHeaders } from "../forward/headers.js";
import { writeRejection } from "../forward/respond.js";
import type { RequestSigner } from "../signature/index.js";
import type { ResponseVerifier } from "./response-verifier.js";
import type { BankRouter } from "./router.js";

export const ORIGIN_HEADER = "psd2-gateway-origin";
export const RESPONSE_SIGNATURE_HEADER = "psd2-gateway-response-signature";

export type ResponseVerificationMode = "off" | "advisory" | "enforce";

export interface BankProfile {
  readonly name: string;
  readonly prefix?: string | undefined;
  readonly host?: string | undefined;
  readonly backend: Backend;
  readonly signer: RequestSigner;
  /** Lower-case names → values added when the application's request does not carry them. */
  readonly defaultHeaders: Readonly<Record<string, string>>;
  /** Lower-case names the application may not set: the gateway writes them. */
  readonly gatewayHeaders: ReadonlySet<string>;
  readonly responseMode: ResponseVerificationMode;
  readonly responseVerifier?: ResponseVerifier;
  readonly maxResponseBytes: number;
}

export interface EgressHandlerOptions {
  readonly router: Pick<BankRouter<BankProfile>, "route" | "describe">;
  readonly maxBodyBytes: number;
  readonly onRequest?: (event: EgressEvent) => void;
}

const GATEWAY_ORIGIN = { [ORIGIN_HEADER]: "gateway" } as const;
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

/**
 * Headers the gateway writes itself (from the body, the clock, the signature): never copied from
 * the application's request. A profile's `gatewayHeaders` holds these and its certificate header.
 */
export const GATEWAY_WRITTEN_HEADERS = [
  "content-length",
  "date",
  "digest",
  "signature",
  "tpp-signature-certificate",
];

export function createEgressHandler(options: EgressHandlerOptions) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    void new EgressExchange(options, req, res).run();
  };
}

class EgressExchange {
  private readonly started = performance.now();
  private profile: BankProfile | undefined;
  private requestId: string | undefined;
  private signingMs: number | undefined;
  private upstreamMs: number | undefined;
  private bytesOut = 0;

  constructor(
    private readonly options: EgressHandlerOptions,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {}

  async run(): Promise<void> {
    try {
      await this.exchange();
    } catch (error) {
      // Our own defect: answered, never a crash; the text names no key material.
      this.answer(reject("INTERNAL_SERVER_ERROR", `the egress gateway failed: ${(error as Error).message}`));
    }
  }

  private async exchange(): Promise<void> {
    const { req } = this;
    const route = this.options.router.route(req.headers.host, req.url ?? "/");
    if (!route)
      return this.answer(
        reject(
          "RESOURCE_UNKNOWN",
          `no bank profile serves ${(req.url ?? "").slice(0, 200)}; the banks are reached as ${this.options.router.describe()}`,
        ),
      );
    const profile = route.profile;
    this.profile = profile;

    const body = await this.readBody();
    if (body === undefined) return;

    const headers = upstreamRequestHeaders(req.headers, profile.gatewayHeaders);
    const flat = joinedHeaders(headers);
    for (const [name, value] of Object.entries(profile.defaultHeaders)) {
      if (flat[name] !== undefined) continue;
      flat[name] = value;
      headers[name] = value;
    }
    // Host and Content-Length are the HTTP client's to write; they are handed to the signer as they
    // will be sent, so that a bank whose rules sign them gets them signed, never silently left out.
    const sendsBody = body.length > 0 || hasBody(req.headers);
    flat.host = headers.host = profile.backend.host;
    if (sendsBody) flat["content-length"] = headers["content-length"] = String(body.length);
    const target = profile.backend.basePath + route.target;
    const signStart = performance.now();
    let signed: Record<string, string>;
    try {
      signed = await profile.signer.sign({ method: req.method ?? "GET", target, headers: flat, body });
    } catch (error) {
      return this.answer(reject("FORMAT_ERROR", `the request cannot be signed: ${(error as Error).message}`));
    }
    this.signingMs = performance.now() - signStart;
    for (const [name, value] of Object.entries(signed)) {
      delete headers[name.toLowerCase()];
      headers[name] = value;
    }
    this.requestId = signed["X-Request-ID"];

    let response: Dispatcher.ResponseData;
    const sent = performance.now();
    try {
      response = await profile.backend.pool.request({
        path: target,
        method: (req.method ?? "GET") as Dispatcher.HttpMethod,
        headers,
        body: sendsBody ? body : null,
      });
    } catch (error) {
      return this.answer(this.unreachable(error as Error, profile));
    }
    this.upstreamMs = performance.now() - sent;
    await this.relay(response, target);
  }

  /** The body, or undefined when it was refused (answered) or the application went away. */
  private async readBody(): Promise<Buffer | undefined> {
    const max = this.options.maxBodyBytes;
    const declared = Number(this.req.headers["content-length"] ?? 0);
    const tooLarge = (size: string) =>
      reject(
        "PAYLOAD_TOO_LARGE",
        `the request body is ${size} bytes; egress mode signs at most ${max} (maxBodyBytes); nothing was sent to bank '${this.profile!.name}'`,
      );
    if (declared > max) {
      this.res.shouldKeepAlive = false;
      this.answer(tooLarge(String(declared)));
      return undefined;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of this.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > max) {
          this.res.shouldKeepAlive = false;
          this.answer(tooLarge(`more than ${max}`));
          return undefined;
        }
        chunks.push(chunk);
      }
    } catch {
      return undefined; // the application went away mid-body: nothing was sent
    }
    return Buffer.concat(chunks, size);
  }

  private unreachable(error: Error, profile: BankProfile): Rejection {
    const code = (error as { code?: string }).code ?? "";
    if (TIMEOUT_CODES.has(code))
      return reject(
        "GATEWAY_TIMEOUT",
        `bank '${profile.name}' (${profile.backend.origin}) did not answer within ${profile.backend.timeoutMs} ms; the request may have been executed, and was not retried`,
      );
    const cause = (error.cause as { code?: string; message?: string } | undefined) ?? {};
    const why = cause.code ?? cause.message ?? (code || error.message);
    return reject(
      "BAD_GATEWAY",
      `bank '${profile.name}' (${profile.backend.origin}) could not be reached: ${why}`,
    );
  }

  private async relay(response: Dispatcher.ResponseData, target: string): Promise<void> {
    const profile = this.profile!;
    const { res } = this;
    const headers = downstreamResponseHeaders(response.headers);
    headers[ORIGIN_HEADER] = "bank";
    if (profile.responseMode === "off" || !profile.responseVerifier) {
      headers[RESPONSE_SIGNATURE_HEADER] = "not-checked";
      res.writeHead(response.statusCode, headers);
      return this.stream(response.body, [], "not-checked");
    }
    if (response.headers.signature === undefined && response.statusCode >= 400) {
      // A bank (and our own ingress) answers refusals unsigned: signing each would hand attackers
      // an RSA signature per garbage request. Withholding them would hide the bank's reason, so
      // they pass, marked; a signature that is there and fails is never passed under enforce.
      headers[RESPONSE_SIGNATURE_HEADER] = "unsigned-error";
      res.writeHead(response.statusCode, headers);
      return this.stream(response.body, [], "unsigned-error");
    }
    const read = await readBounded(response.body, profile.maxResponseBytes);
    if (read.overflow) {
      if (profile.responseMode === "enforce") {
        response.body.destroy();
        return this.answer(
          reject(
            "BAD_GATEWAY",
            `bank '${profile.name}' answered ${response.statusCode} with a body over ${profile.maxResponseBytes} bytes (responses.maxBodyBytes), too large to verify; the response was withheld`,
          ),
          { responseSignature: "unchecked-too-large" },
        );
      }
      headers[RESPONSE_SIGNATURE_HEADER] = "unchecked-too-large";
      res.writeHead(response.statusCode, headers);
      return this.stream(read.rest, read.chunks, "unchecked-too-large");
    }
    const body = Buffer.concat(read.chunks);
    const verdict = await profile.responseVerifier.verify({
      headers: response.headers as Record<string, string | string[] | undefined>,
      body,
      request: { method: this.req.method ?? "GET", target, requestId: this.requestId ?? "" },
    });
    if (verdict !== true && profile.responseMode === "enforce") {
      return this.answer(
        reject(
          "BAD_GATEWAY",
          `bank '${profile.name}' answered ${response.statusCode}, but its response signature failed (${verdict.code}: ${verdict.text}); the response was withheld`,
        ),
        { responseSignature: "invalid", responseProblem: `${verdict.code}: ${verdict.text}` },
      );
    }
    const status: ResponseSignatureStatus = verdict === true ? "verified" : "invalid";
    headers[RESPONSE_SIGNATURE_HEADER] = status;
    res.writeHead(response.statusCode, headers);
    res.end(body);
    this.bytesOut = body.length;
    this.report(response.statusCode, {
      responseSignature: status,
      ...(verdict !== true ? { responseProblem: `${verdict.code}: ${verdict.text}` } : {}),
    });
  }

  private async stream(
    body: AsyncIterable<Buffer>,
    first: readonly Buffer[],
    responseSignature: ResponseSignatureStatus,
  ): Promise<void> {
    const { res } = this;
    for (const chunk of first) {
      this.bytesOut += chunk.length;
      res.write(chunk);
    }
    const counting = async function* (this: EgressExchange) {
      for await (const chunk of body) {
        this.bytesOut += chunk.length;
        yield chunk;
      }
    }.call(this);
    try {
      await pipeline(counting, res);
    } catch {
      // The bank or the application went away mid-body: the connection is cut, nothing to add.
      res.destroy();
    }
    this.report(res.statusCode, { responseSignature });
  }

  private answer(rejection: Rejection, extra: Partial<EgressEvent> = {}): void {
    const { res } = this;
    if (res.headersSent) {
      res.destroy();
    } else {
      this.bytesOut = writeRejection(res, rejection, "spec", this.requestId, GATEWAY_ORIGIN);
    }
    this.report(res.statusCode, { code: rejection.code, ...extra });
  }

  private report(status: number, extra: Partial<EgressEvent>): void {
    const event: EgressEvent = {
      mode: "egress",
      requestId: this.requestId,
      method: this.req.method ?? "",
      routeClass: this.profile?.name ?? "none",
      status,
      totalMs: performance.now() - this.started,
      bytesOut: this.bytesOut,
      ...(this.upstreamMs !== undefined ? { upstreamMs: this.upstreamMs } : {}),
      ...(this.signingMs !== undefined ? { signingMs: this.signingMs } : {}),
      ...(typeof this.req.headers["psu-id"] === "string" ? { psuId: this.req.headers["psu-id"] } : {}),
      ...extra,
    };
    this.options.onRequest?.(event);
  }
}

async function readBounded(
  body: AsyncIterable<Buffer>,
  max: number,
): Promise<{ chunks: Buffer[]; overflow: boolean; rest: AsyncIterable<Buffer> }> {
  const chunks: Buffer[] = [];
  let size = 0;
  const iterator = body[Symbol.asyncIterator]();
  // What is left after an overflow is read from the same iterator, never from a second one.
  const rest = { [Symbol.asyncIterator]: () => iterator };
  for (;;) {
    const next = await iterator.next();
    if (next.done) return { chunks, overflow: false, rest };
    chunks.push(next.value);
    size += next.value.length;
    if (size > max) return { chunks, overflow: true, rest };
  }
}
