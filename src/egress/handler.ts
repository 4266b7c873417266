/**
 * The egress request handler: the TPP's application sends a plain request; the gateway picks the
 * bank profile, reads the (bounded) body, signs the request the way that bank wants, sends it over
 * mutual TLS with the QWAC, checks the bank's signed response when the profile asks, and answers.
 * The gateway's own answers carry `PSD2-Gateway-Origin: gateway`, the bank's `… bank`.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { hasBody } from "../checks/index.js";
import { type Rejection, reject, statusFor } from "../errors.js";
import { type EgressEvent, unparsedRequestEvent } from "../events.js";
import type { Backend } from "../forward/backend.js";
import {
  type ForwardCall,
  type ForwardOutcome,
  forward,
  type Headers,
  isUpstreamTimeout,
  type UpstreamRequest,
} from "../forward/forwarder.js";
import { joinedHeaders, upstreamRequestHeaders } from "../forward/headers.js";
import { type TraceContext, traceContextOf, writeTraceContext } from "../forward/trace-context.js";
import type { Exchange, ExchangeFactory } from "../listener/connection.js";
import { MALFORMED_REQUEST } from "../listener/listener.js";
import { rawRejection, writeRejection } from "../listener/respond.js";
import type { ReceivedHeaders } from "../response-inspector.js";
import { lowerCasedHeaders, type RequestToSign } from "../signature/index.js";
import { RESPONSE_SIGNATURE_STEP, ResponseSignatureCheck } from "./response-signature.js";
import type { ResponseVerifying } from "./response-verifier.js";
import type { BankRouter } from "./router.js";

export const ORIGIN_HEADER = "psd2-gateway-origin";

/** A bank profile's request signer, whatever its dialect: the headers to add to a request. */
export interface RequestSigning {
  /** The keyId or keyid it names the QSealC by (logged at start and on reload). */
  readonly keyId: string;
  sign(request: RequestToSign): Promise<Record<string, string>>;
}

export type ResponseVerificationMode = "off" | "advisory" | "enforce";

export interface BankProfile {
  readonly name: string;
  readonly prefix?: string | undefined;
  readonly host?: string | undefined;
  readonly backend: Backend;
  readonly signer: RequestSigning;
  /** The signing dialect of its requests, and of the responses it checks. */
  readonly dialect: "cavage" | "rfc9421" | "jades" | "uk-ob";
  /** Lower-case names → values added when the application's request does not carry them. */
  readonly defaultHeaders: Readonly<Record<string, string>>;
  /** Lower-case names the application may not set: the gateway writes them. */
  readonly gatewayHeaders: ReadonlySet<string>;
  readonly responseMode: ResponseVerificationMode;
  readonly responseVerifier?: ResponseVerifying;
  readonly maxResponseBytes: number;
}

export interface EgressHandlerOptions {
  readonly router: Pick<BankRouter<BankProfile>, "route" | "describe">;
  readonly maxBodyBytes: number;
  readonly onRequest?: (event: EgressEvent) => void;
}

const GATEWAY_ORIGIN = { [ORIGIN_HEADER]: "gateway" } as const;
const NO_BODY = Buffer.alloc(0);
/** The access line's step when the application went away before its request was sent. */
const APPLICATION_GONE_STEP = "application-gone";

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
  // The other dialects', whatever the profile's: an application's own would be sent unchecked.
  "signature-input",
  "content-digest",
  "x-jws-signature",
];

/** The egress mode's exchanges for the listener; its own answers are marked `psd2-gateway-origin: gateway`. */
export function createEgressHandler(options: EgressHandlerOptions): ExchangeFactory {
  return {
    create: (req, res) => new EgressExchange(options, req, res),
    rawRefusal: (message, step) => {
      const answer = rawRejection(reject("FORMAT_ERROR", message), "spec", GATEWAY_ORIGIN);
      options.onRequest?.(
        unparsedRequestEvent(
          "egress",
          statusFor("FORMAT_ERROR"),
          step ?? MALFORMED_REQUEST,
          Buffer.byteLength(answer),
          message,
        ),
      );
      return answer;
    },
    connectRefused: "the CONNECT method is not served; send the request itself",
  };
}

/** The only expectation Node understands (its own pattern, from lib/_http_server.js). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * One application request: read, signed, then handed to the forwarder (the same undici dispatch
 * relay as ingress), which streams the bank's answer back or holds it for the response check.
 */
class EgressExchange implements ForwardCall<ResponseSignatureCheck>, Exchange {
  private readonly started = performance.now();
  private profile: BankProfile | undefined;
  private requestId: string | undefined;
  private signingMs: number | undefined;
  /** What becomes of the bank's response signature: judged, marked and reported in one place. */
  private signatureCheck: ResponseSignatureCheck | undefined;
  /** Why the gateway answered itself, when a named step decided it (access line, metrics). */
  private step: string | undefined;
  readonly method: string;
  upstream: UpstreamRequest = NOT_SENT;
  readonly readWhole = true;

  /** The application's trace (W3C traceparent) or a new one: passed on to the bank, in the access line. */
  private readonly trace: TraceContext;

  constructor(
    private readonly options: EgressHandlerOptions,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    this.method = req.method ?? "GET";
    this.trace = traceContextOf(req.headers);
  }

  run(): void {
    this.prepare().catch((error: unknown) => {
      // Our own defect: answered, never a crash; the text names no key material.
      this.refuse(reject("INTERNAL_SERVER_ERROR", `the egress gateway failed: ${(error as Error).message}`));
    });
  }

  /** Exchange: its body stopped arriving or could not be parsed; nothing was sent to the bank. */
  refuseIncomplete(message: string, step: string | undefined): void {
    this.step = step;
    this.res.shouldKeepAlive = false;
    if (!this.res.headersSent && !this.res.writableEnded) this.refuse(reject("FORMAT_ERROR", message));
  }

  /** Routes, reads and signs the request, then forwards it; answers itself when it cannot. */
  private async prepare(): Promise<void> {
    const { req } = this;
    // Node hands an Expect it does not know over as is (instead of a bare 417): refused here.
    const expect = req.headers.expect;
    if (expect !== undefined && !CONTINUE.test(expect)) {
      this.res.shouldKeepAlive = false;
      return this.refuse(
        reject(
          "FORMAT_ERROR",
          `Expect: ${expect.slice(0, 100)} is not supported; send 100-continue or no Expect`,
        ),
      );
    }
    const route = this.options.router.route(req.headers.host, req.url ?? "/");
    if (!route)
      return this.refuse(
        reject(
          "RESOURCE_UNKNOWN",
          `no bank profile serves ${(req.url ?? "").slice(0, 200)}; the banks are reached as ${this.options.router.describe()}`,
        ),
      );
    const profile = route.profile;
    this.profile = profile;

    // No Content-Length or Transfer-Encoding: no body on the wire, nothing to wait for.
    const sendsBody = hasBody(req.headers);
    const body = sendsBody ? await this.readBody(profile) : NO_BODY;
    if (body === undefined) return;
    if (this.applicationGone()) return this.notSent(profile);

    const headers = upstreamRequestHeaders(req.headers, profile.gatewayHeaders);
    writeTraceContext(headers, this.trace);
    const flat = joinedHeaders(headers);
    for (const [name, value] of Object.entries(profile.defaultHeaders)) {
      if (flat[name] !== undefined) continue;
      flat[name] = value;
      headers[name] = value;
    }
    // Host and Content-Length are the HTTP client's to write; they are handed to the signer as they
    // will be sent, so that a bank whose rules sign them gets them signed, never silently left out.
    flat.host = headers.host = profile.backend.host;
    if (sendsBody) flat["content-length"] = headers["content-length"] = String(body.length);
    const signStart = performance.now();
    let signed: Record<string, string>;
    try {
      signed = await profile.signer.sign({
        method: this.method,
        target: profile.backend.basePath + route.target,
        headers: flat,
        body,
      });
    } catch (error) {
      return this.refuse(reject("FORMAT_ERROR", `the request cannot be signed: ${(error as Error).message}`));
    }
    this.signingMs = performance.now() - signStart;
    // Signing waits its turn on the thread pool: the application may have gone meanwhile.
    if (this.applicationGone()) return this.notSent(profile);
    for (const [name, value] of Object.entries(signed)) {
      delete headers[name.toLowerCase()];
      headers[name] = value;
    }
    this.requestId = signed["X-Request-ID"];
    this.upstream = { method: this.method, target: route.target, headers, body: sendsBody ? body : null };
    const target = profile.backend.basePath + route.target;
    this.signatureCheck = new ResponseSignatureCheck(profile, {
      method: this.method,
      target,
      requestId: this.requestId ?? "",
      // RFC 9421 binds the answer to the request (`;req`): what was sent, lower-cased.
      ...(profile.dialect === "rfc9421"
        ? {
            targetUri: `${profile.backend.origin.slice(0, profile.backend.origin.indexOf(":"))}://${profile.backend.host}${target}`,
            headers: lowerCasedHeaders(headers),
          }
        : {}),
    });
    forward(profile.backend, this);
  }

  /**
   * The application closed its connection, or its side of it, before the request went out. A
   * FIN could be a half-close, but whoever sends a payment must learn what became of it: what
   * cannot surely be answered is not sent, as ingress never dispatches a request behind a FIN.
   */
  private applicationGone(): boolean {
    const socket = this.req.socket;
    return socket.destroyed || socket.readableEnded || this.res.destroyed;
  }

  /**
   * Nothing was sent to the bank. An application that only half-closed still reads why; one that
   * is gone gets nothing (499 in the access line). Either way the connection then closes.
   */
  private notSent(profile: BankProfile): void {
    this.step = APPLICATION_GONE_STEP;
    const { res } = this;
    if (res.destroyed || !this.req.socket.writable) {
      res.destroy();
      this.report(499, 0);
      return;
    }
    res.shouldKeepAlive = false;
    this.refuse(
      reject(
        "FORMAT_ERROR",
        `the application closed its side of the connection before the request went to bank '${profile.name}'; nothing was sent: keep the connection open until the answer has come`,
      ),
    );
  }

  /** The body, or undefined when it was refused (answered) or the application went away. */
  private async readBody(profile: BankProfile): Promise<Buffer | undefined> {
    const max = this.options.maxBodyBytes;
    const declared = Number(this.req.headers["content-length"] ?? 0);
    if (declared > max) return this.bodyTooLarge(profile, String(declared));
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of this.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > max) return this.bodyTooLarge(profile, `more than ${max}`);
        chunks.push(chunk);
      }
    } catch {
      return undefined; // the application went away mid-body: nothing was sent
    }
    return Buffer.concat(chunks, size);
  }

  private bodyTooLarge(profile: BankProfile, size: string): undefined {
    this.res.shouldKeepAlive = false;
    this.refuse(
      reject(
        "PAYLOAD_TOO_LARGE",
        `the request body is ${size} bytes; egress mode signs at most ${this.options.maxBodyBytes} (maxBodyBytes); nothing was sent to bank '${profile.name}'`,
      ),
    );
    return undefined;
  }

  // ResponsePhase: the bank's answer, its signature judged by the one ResponseSignatureCheck.
  head(
    status: number,
    received: ReceivedHeaders,
    send: Headers,
  ): readonly ResponseSignatureCheck[] | undefined {
    send[ORIGIN_HEADER] = "bank";
    return this.signatureCheck?.head(status, received, send) ? [this.signatureCheck] : undefined;
  }

  tooLarge(check: ResponseSignatureCheck, send: Headers): Rejection | undefined {
    return this.withStep(check.tooLarge(send));
  }

  async body(
    holds: readonly ResponseSignatureCheck[],
    body: Buffer,
    received: ReceivedHeaders,
    send: Headers,
  ) {
    for (const check of holds) {
      const refusal = this.withStep(await check.body(body, received, send));
      if (refusal) return refusal;
    }
    return undefined;
  }

  /** A refusal of the bank's answer names the step it came from. */
  private withStep(refusal: Rejection | undefined): Rejection | undefined {
    if (refusal) this.step = RESPONSE_SIGNATURE_STEP;
    return refusal;
  }

  answer(rejection: Rejection): number {
    return writeRejection(this.res, rejection, "spec", this.requestId, GATEWAY_ORIGIN);
  }

  beforeHead(): void {}

  unreachable(error: Error): Rejection {
    const profile = this.profile!;
    if (isUpstreamTimeout(error))
      return reject(
        "GATEWAY_TIMEOUT",
        `bank '${profile.name}' (${profile.backend.origin}) did not answer within ${profile.backend.timeoutMs} ms; the request may have been executed, and was not retried`,
      );
    const code = (error as { code?: string }).code ?? "";
    const cause = (error.cause as { code?: string; message?: string } | undefined) ?? {};
    const why = cause.code ?? cause.message ?? (code || error.message);
    return reject(
      "BAD_GATEWAY",
      `bank '${profile.name}' (${profile.backend.origin}) could not be reached: ${why}`,
    );
  }

  finished(outcome: ForwardOutcome): void {
    if (outcome.step) this.step = outcome.step;
    this.report(outcome.status, outcome.bytesOut, outcome.rejection?.code, outcome.upstreamMs);
  }

  /** The gateway's own answer, before anything was forwarded. */
  private refuse(rejection: Rejection): void {
    const { res } = this;
    let bytesOut = 0;
    if (res.headersSent) res.destroy();
    else bytesOut = this.answer(rejection);
    this.report(res.statusCode, bytesOut, rejection.code);
  }

  private report(status: number, bytesOut: number, code?: string, upstreamMs?: number): void {
    this.options.onRequest?.(this.event(status, bytesOut, code, upstreamMs));
  }

  private event(status: number, bytesOut: number, code?: string, upstreamMs?: number): EgressEvent {
    const psuId = this.req.headers["psu-id"];
    return {
      mode: "egress",
      requestId: this.requestId,
      traceId: this.trace.traceId,
      method: this.method,
      routeClass: this.profile?.name ?? "none",
      status,
      code,
      totalMs: performance.now() - this.started,
      upstreamMs,
      bytesOut,
      psuId: typeof psuId === "string" ? psuId : undefined,
      signingMs: this.signingMs,
      responseSignature: this.signatureCheck?.status,
      responseProblem: this.signatureCheck?.problem,
      step: this.step,
    };
  }
}

/** What an exchange forwards before it is signed: nothing. */
const NOT_SENT: UpstreamRequest = { method: "GET", target: "/", headers: {}, body: null };
