/**
 * The egress request handler: the TPP's application sends a plain request; the gateway picks the
 * bank profile, reads the (bounded) body, signs the request the way that bank wants, sends it over
 * mutual TLS with the QWAC, checks the bank's signed response when the profile asks, and answers.
 * The gateway's own answers carry `PSD2-Gateway-Origin: gateway`, the bank's `… bank`.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import {
  Chain,
  hasBody,
  moreThanOneHost,
  type Step,
  type StepResult,
  type StepTrace,
} from "../checks/index.js";
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
import { lowerCasedHeaders } from "../signature/index.js";
import type { BankProfile } from "./profile.js";
import {
  type CheckedResponse,
  RESPONSE_SIGNATURE_STEP,
  ResponseSignatureCheck,
} from "./response-signature.js";
import type { BankRouter } from "./router.js";

export const ORIGIN_HEADER = "psd2-gateway-origin";

export type { BankProfile, RequestSigning, ResponseVerificationMode } from "./profile.js";

export interface EgressHandlerOptions {
  readonly router: Pick<BankRouter<BankProfile>, "route" | "describe">;
  readonly maxBodyBytes: number;
  readonly onRequest?: (event: EgressEvent) => void;
  /** The request steps' chain, kept across reloads so that its counters cover the whole run. */
  readonly chain?: EgressRequestChain;
  /** Each bank answer whose signature was checked: evidence, when the config keeps it. */
  readonly keepResponse?: (checked: CheckedResponse) => void;
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
  const chain = options.chain ?? egressRequestChain();
  return {
    create: (req, res) => new EgressExchange(options, chain, req, res),
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
class EgressExchange implements ForwardCall<ResponseSignatureCheck>, Exchange, StepTrace {
  private readonly started = performance.now();
  /** The bank profile the request goes to (the bank-profile step), and the target below its base. */
  profile: BankProfile | undefined;
  routeTarget = "/";
  /** The request body as read whole (the body step); empty without one. */
  requestBody: Buffer = NO_BODY;
  sendsBody = false;
  requestId: string | undefined;
  signingMs: number | undefined;
  /** What becomes of the bank's response signature: judged, marked and reported in one place. */
  signatureCheck: ResponseSignatureCheck | undefined;
  /** Why the gateway answered itself, when a named step decided it (access line, metrics). */
  failedStep: string | undefined;
  /** The refusal must also close the connection (a body not read, an Expect not met). */
  closeConnection = false;
  readonly method: string;
  upstream: UpstreamRequest = NOT_SENT;
  readonly readWhole = true;

  /** The application's trace (W3C traceparent) or a new one: passed on to the bank, in the access line. */
  readonly trace: TraceContext;

  constructor(
    readonly options: EgressHandlerOptions,
    private readonly chain: EgressRequestChain,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    this.method = req.method ?? "GET";
    this.trace = traceContextOf(req.headers);
  }

  run(): void {
    try {
      const result = this.chain.runHead(this);
      if (result instanceof Promise)
        result.then(
          (r) => this.checked(r),
          (e: unknown) => this.failed(e),
        );
      else this.checked(result);
    } catch (error) {
      this.failed(error);
    }
  }

  /** Every request step passed: the signed request goes to the bank; otherwise the gateway answers. */
  private checked(result: StepResult): void {
    if (result === APPLICATION_GONE) {
      this.notSent(this.profile!);
    } else if (result) {
      if (this.closeConnection) this.res.shouldKeepAlive = false;
      this.refuse(result);
    } else {
      forward(this.profile!.backend, this);
    }
  }

  /** Our own defect: answered, never a crash; the text names no key material. */
  private failed(error: unknown): void {
    this.refuse(reject("INTERNAL_SERVER_ERROR", `the egress gateway failed: ${(error as Error).message}`));
  }

  /** Exchange: its body stopped arriving or could not be parsed; nothing was sent to the bank. */
  refuseIncomplete(message: string, step: string | undefined): void {
    this.failedStep = step;
    this.res.shouldKeepAlive = false;
    if (!this.res.headersSent && !this.res.writableEnded) this.refuse(reject("FORMAT_ERROR", message));
  }

  /**
   * The application closed its connection, or its side of it, before the request went out. A
   * FIN could be a half-close, but whoever sends a payment must learn what became of it: what
   * cannot surely be answered is not sent, as ingress never dispatches a request behind a FIN.
   */
  applicationGone(): boolean {
    const socket = this.req.socket;
    return socket.destroyed || socket.readableEnded || this.res.destroyed;
  }

  /**
   * Nothing was sent to the bank. An application that only half-closed still reads why; one that
   * is gone gets nothing (499 in the access line). Either way the connection then closes.
   */
  private notSent(profile: BankProfile): void {
    this.failedStep = APPLICATION_GONE_STEP;
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
    if (refusal) this.failedStep = RESPONSE_SIGNATURE_STEP;
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
    if (outcome.step) this.failedStep = outcome.step;
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

  /** The backend pool it picked, held until it is done. */
  private held: Backend | undefined;

  hold(backend: Backend): void {
    this.held = backend;
    backend.hold();
  }

  private report(status: number, bytesOut: number, code?: string, upstreamMs?: number): void {
    this.held?.release();
    this.held = undefined;
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
      step: this.failedStep,
    };
  }
}

/** What an exchange forwards before it is signed: nothing. */
const NOT_SENT: UpstreamRequest = { method: "GET", target: "/", headers: {}, body: null };

/**
 * Stands for "the application went away" among a step's results: nothing was sent, and the
 * exchange answers an application that only half-closed (or records 499 for one that is gone).
 */
const APPLICATION_GONE = reject("FORMAT_ERROR", "the application went away before its request was sent");

/** Egress's request side: its named steps in one chain, counted per step like ingress's. */
export type EgressRequestChain = Chain<EgressExchange>;

/** The chain of egress's request steps; built once per gateway, it reads each exchange's options. */
export function egressRequestChain(): EgressRequestChain {
  return new Chain(EGRESS_REQUEST_STEPS);
}

const EGRESS_REQUEST_STEPS: readonly Step<EgressExchange>[] = [
  {
    // Node hands an Expect it does not know over as is (instead of a bare 417): refused here.
    name: "expect",
    run: (c) => {
      const expect = c.req.headers.expect;
      if (expect === undefined || CONTINUE.test(expect)) return undefined;
      c.closeConnection = true;
      return reject(
        "FORMAT_ERROR",
        `Expect: ${expect.slice(0, 100)} is not supported; send 100-continue or no Expect`,
      );
    },
  },
  {
    // Node keeps the first of two Host lines and the router would pick a bank by it, where another
    // hop may take the second (RFC 9112 3.2): refused as ingress's host step refuses it.
    name: "host",
    run: (c) => {
      const twoHosts = moreThanOneHost(c.req.rawHeaders);
      if (twoHosts) c.closeConnection = true;
      return twoHosts;
    },
  },
  {
    // Which bank profile serves the request, by path prefix or Host.
    name: "bank-profile",
    run: (c) => {
      const { router } = c.options;
      const route = router.route(c.req.headers.host, c.req.url ?? "/");
      if (!route)
        return reject(
          "RESOURCE_UNKNOWN",
          `no bank profile serves ${(c.req.url ?? "").slice(0, 200)}; the banks are reached as ${router.describe()}`,
        );
      c.profile = route.profile;
      c.routeTarget = route.target;
      // Held until the exchange is done: a reload retires the old profile's pool only then.
      c.hold(route.profile.backend);
      return undefined;
    },
  },
  {
    // The body is signed (its digest), so it is read whole first, within maxBodyBytes.
    name: "body",
    run: (c) => {
      // No Content-Length or Transfer-Encoding: no body on the wire, nothing to wait for.
      c.sendsBody = hasBody(c.req.headers);
      if (!c.sendsBody) return undefined;
      const max = c.options.maxBodyBytes;
      const declared = Number(c.req.headers["content-length"] ?? 0);
      if (declared > max) return bodyTooLarge(c, String(declared));
      return readBody(c, max);
    },
  },
  {
    // The bank's signing rules over what will be sent: its default headers, Host and Content-Length.
    name: "sign",
    run: (c) => signRequest(c),
  },
];

async function readBody(c: EgressExchange, max: number): Promise<StepResult> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of c.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) return bodyTooLarge(c, `more than ${max}`);
      chunks.push(chunk);
    }
  } catch {
    return APPLICATION_GONE; // it went away mid-body: nothing was sent
  }
  c.requestBody = Buffer.concat(chunks, size);
  return c.applicationGone() ? APPLICATION_GONE : undefined;
}

function bodyTooLarge(c: EgressExchange, size: string): StepResult {
  c.closeConnection = true;
  return reject(
    "PAYLOAD_TOO_LARGE",
    `the request body is ${size} bytes; egress mode signs at most ${c.options.maxBodyBytes} (maxBodyBytes); nothing was sent to bank '${c.profile!.name}'`,
  );
}

async function signRequest(c: EgressExchange): Promise<StepResult> {
  const profile = c.profile!;
  const { requestBody: body, sendsBody } = c;
  const headers = upstreamRequestHeaders(c.req.headers, profile.gatewayHeaders);
  writeTraceContext(headers, c.trace);
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
  const target = profile.backend.basePath + c.routeTarget;
  const signStart = performance.now();
  let signed: Record<string, string>;
  try {
    signed = await profile.signer.sign({ method: c.method, target, headers: flat, body });
  } catch (error) {
    return reject("FORMAT_ERROR", `the request cannot be signed: ${(error as Error).message}`);
  }
  c.signingMs = performance.now() - signStart;
  // Signing waits its turn on the thread pool: the application may have gone meanwhile.
  if (c.applicationGone()) return APPLICATION_GONE;
  for (const [name, value] of Object.entries(signed)) {
    delete headers[name.toLowerCase()];
    headers[name] = value;
  }
  c.requestId = signed["X-Request-ID"];
  c.upstream = { method: c.method, target: c.routeTarget, headers, body: sendsBody ? body : null };
  c.signatureCheck = new ResponseSignatureCheck(
    profile,
    {
      method: c.method,
      target,
      requestId: c.requestId ?? "",
      // A dialect binding the answer to the request (RFC 9421's `;req`): what was sent, lower-cased.
      ...(profile.responsesBindRequest
        ? {
            targetUri: `${profile.backend.origin.slice(0, profile.backend.origin.indexOf(":"))}://${profile.backend.host}${target}`,
            headers: lowerCasedHeaders(headers),
          }
        : {}),
    },
    c.options.keepResponse,
    c.trace.traceId,
  );
  return undefined;
}
