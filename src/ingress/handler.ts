/**
 * The ingress exchange: the chain of named steps on the request's head, then the request streamed
 * to the backend with the verified TPP identity attached, its body and the backend's answer past
 * the same chain's body and response phases. One `IngressExchange` per request holds its state (it
 * is the steps' context too); the listener's Connection runs them one at a time per socket.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import {
  type Chain,
  CheckContext,
  type Holder,
  hasBody,
  type RoleTable,
  type Route,
  routeClass,
  routingPath,
  type TppIdentity,
  verifiedBeforeSending,
} from "../checks/index.js";
import { type Rejection, reject, type StatusProfile, statusFor } from "../errors.js";
import { type RequestEvent, type RequestObserver, unparsedRequestEvent } from "../events.js";
import type { Backend } from "../forward/backend.js";
import { type BodyInspector, BodyRejected, StreamedBody } from "../forward/body.js";
import {
  type ForwardCall,
  type ForwardOutcome,
  forward,
  type Headers,
  type UpstreamRequest,
  upstreamFailure,
} from "../forward/forwarder.js";
import { appendUpstreamRequestHeaders, HeadPairs } from "../forward/headers.js";
import { pushTraceContext, type TraceContext, traceContextOf } from "../forward/trace-context.js";
import type { Exchange, ExchangeFactory } from "../listener/connection.js";
import { MALFORMED_REQUEST } from "../listener/listener.js";
import { rawRejection, writeRejection } from "../listener/respond.js";
import type { ReceivedHeaders } from "../response-inspector.js";
import { headerValue } from "../signature/index.js";
import { DEFAULT_FORWARDED_HEADER_NAMES, type ForwardedHeaderNames, ForwardedHeaders } from "./forwarded.js";

export interface IdentityHeaderNames {
  readonly organizationId: string;
  readonly name: string;
  readonly roles: string;
  readonly certificateFingerprint: string;
  readonly psuPresent: string;
}

/** config/schema.ts's defaults, lower-cased as node:http keys headers. */
export const DEFAULT_IDENTITY_HEADER_NAMES: IdentityHeaderNames = {
  organizationId: "x-tpp-organization-id",
  name: "x-tpp-name",
  roles: "x-tpp-roles",
  certificateFingerprint: "x-tpp-certificate-fingerprint",
  psuPresent: "x-psu-present",
};

export interface HandlerOptions {
  /** The named steps, every phase (requestChecks as a Chain). */
  readonly chain: Chain<CheckContext>;
  readonly roles: RoleTable;
  readonly backend: Backend;
  /** Added to every forwarded request (the demo bank's gateway secret); clients' copies are removed. */
  readonly backendHeaders?: Readonly<Record<string, string>>;
  readonly identityHeaders: IdentityHeaderNames;
  readonly statusProfile: StatusProfile;
  /** Peers allowed to hand the client certificate over in `clientCertificateHeader`. */
  readonly trustedProxies: ReadonlySet<string>;
  readonly clientCertificateHeader: string;
  /** The forwarding headers written for the backend (the client's own never pass). */
  readonly forwardedHeaders?: ForwardedHeaderNames;
  /** True once the gateway is shutting down: answers then close their connection. */
  readonly draining?: () => boolean;
  /** A reserved slot could not be given back (the store is down). */
  readonly onStoreError?: (error: unknown) => void;
  /** Called once per request with what happened, for logs and metrics. */
  readonly onRequest?: RequestObserver;
}

/** What the handler shares between requests: options and the set of headers a client may not send. */
class Ingress {
  /** Every identity and forwarding header is removed from the incoming request before ours are added. */
  readonly strip: ReadonlySet<string>;
  readonly forwarded: ForwardedHeaders;
  /** `backendHeaders` as name/value pairs, appended to every upstream head. */
  readonly backendPairs: readonly string[];

  constructor(readonly options: HandlerOptions) {
    const names = options.identityHeaders;
    this.forwarded = new ForwardedHeaders(
      options.forwardedHeaders ?? DEFAULT_FORWARDED_HEADER_NAMES,
      options.trustedProxies,
    );
    const written = new Set([
      names.organizationId,
      names.name,
      names.roles,
      names.certificateFingerprint,
      names.psuPresent,
      // The default names too: a backend that still reads them after a rename must never see a client's.
      ...Object.values(DEFAULT_IDENTITY_HEADER_NAMES),
      options.clientCertificateHeader,
      // Written by the gateway; listed so that their '_' and '.' look-alikes are stripped too.
      ...this.forwarded.strip,
      // Replaced by the gateway's (pushTraceContext): the head is a list, so a client's copy would stay.
      "traceparent",
      "tracestate",
    ]);
    // The head is a flat list: a name written twice would go out twice, and the backend would read
    // whichever it likes. Refused when the handler is built (start or reload), naming what to rename.
    const own = [
      ...Object.entries(names).map(([key, name]) => [`identityHeaders.${key}`, name] as const),
      ...Object.entries(options.forwardedHeaders ?? DEFAULT_FORWARDED_HEADER_NAMES)
        .filter((entry): entry is [string, string] => typeof entry[1] === "string")
        .map(([key, name]) => [`backend.forwardedHeaders.${key}`, name] as const),
      ["the trace context", "traceparent"] as const,
      ["the trace context", "tracestate"] as const,
    ];
    const firstBy = new Map<string, string>();
    for (const [key, name] of own) {
      const lower = name.toLowerCase();
      const before = firstBy.get(lower);
      if (before !== undefined)
        throw new Error(
          `${key} names '${lower}', which ${before} writes too: the backend would get it twice; give each header the gateway writes its own name`,
        );
      firstBy.set(lower, key);
    }
    const backendNames = Object.keys(options.backendHeaders ?? {}).map((name) => name.toLowerCase());
    const clash = backendNames.find((name) => written.has(name));
    if (clash !== undefined)
      throw new Error(
        `the backend header '${clash}' is also one the gateway writes or strips itself (identityHeaders, forwarded headers, the client certificate header, trace context); rename that one in the config`,
      );
    this.strip = new Set([...written, ...backendNames]);
    this.backendPairs = Object.entries(options.backendHeaders ?? {}).flat();
    // Identity (5 pairs), forwarding (7 at most), trace (2) and the backend's pairs.
    this.addedEntries = 2 * (5 + 7 + 2) + this.backendPairs.length;
  }

  /** At most how many names and values the gateway adds to a client's head. */
  readonly addedEntries: number;

  /** The client certificate as base64 DER: from the TLS socket, or from a trusted proxy's header. */
  clientCertificateOf(req: IncomingMessage): string | undefined {
    const socket = req.socket as Partial<TLSSocket> & { [PEER_CERTIFICATE]?: string | null };
    if (typeof socket.getPeerX509Certificate === "function") {
      // Once per connection: the listener refuses renegotiation, so the certificate cannot change,
      // and getPeerCertificate built a whole JS object on every request (about 45 µs, bench:tls).
      let peer = socket[PEER_CERTIFICATE];
      if (peer === undefined) {
        peer = socket.getPeerX509Certificate()?.raw.toString("base64") ?? null;
        socket[PEER_CERTIFICATE] = peer;
      }
      if (peer !== null) return peer;
    }
    const fromHeader = headerValue(req.headers, this.options.clientCertificateHeader);
    if (fromHeader !== undefined && this.options.trustedProxies.has(req.socket.remoteAddress ?? "")) {
      // URL-encoded PEM (nginx $ssl_client_escaped_cert); RFC 9440 uses base64 DER in colons.
      return fromHeader;
    }
    return undefined;
  }
}

/** The name and roles headers of an identity, worked out once per trusted certificate. */
const identityValues = new WeakMap<TppIdentity, { readonly name: string; readonly roles: string }>();

function identityHeaderValues(identity: TppIdentity): { readonly name: string; readonly roles: string } {
  let values = identityValues.get(identity);
  if (!values) {
    values = { name: encodeURIComponent(identity.name), roles: [...identity.roles].join(",") };
    identityValues.set(identity, values);
  }
  return values;
}

/**
 * Bodies up to this declared length are read whole before they are forwarded: no more than one
 * streamed chunk would hold (a socket read is at most 64 KiB), and a payment's JSON is a few KB.
 */
const SMALL_BODY_BYTES = 64 * 1024;

/** A body of declared length (not chunked) no larger than SMALL_BODY_BYTES. */
function smallBody(headers: IncomingMessage["headers"]): boolean {
  if (headers["transfer-encoding"] !== undefined) return false;
  const length = Number(headers["content-length"]);
  return length > 0 && length <= SMALL_BODY_BYTES;
}

/** What an exchange forwards before it is sent: nothing. */
const NOT_SENT: UpstreamRequest = { method: "GET", target: "/", headers: {}, body: null };

/** The connection's client certificate (base64 DER), or null without one; set at its first request. */
const PEER_CERTIFICATE = Symbol("psd2-gateway peer certificate");

type IngressHold = Holder<CheckContext>;

/** One request on its way through the chain to the backend; also the steps' context. */
class IngressExchange extends CheckContext implements ForwardCall<IngressHold>, Exchange, BodyInspector {
  private readonly started = performance.now();
  readonly requestId: string | undefined;
  upstream: UpstreamRequest = NOT_SENT;
  /** True once a body-authenticated request's body was read whole (nothing unread is left). */
  readWhole = false;
  /** The trace it belongs to (W3C traceparent), passed on to the backend and in the access line. */
  private readonly trace: TraceContext;
  private reported = false;
  /** The backend pool it will be sent on, held until it is done (a reload retires the old pool). */
  private readonly backend: Backend;
  private holdsBackend = true;
  /** Its body stopped arriving before it was forwarded: answered, never forwarded. */
  private stalled = false;

  constructor(
    private readonly ingress: Ingress,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    const target = req.url ?? "/";
    // The route is worked out once: the checks use it, refusals and metrics are labelled with it.
    const path = routingPath(target);
    const claimed = ingress.options.roles.routeFor(path);
    const route: Route = claimed
      ? { path, role: claimed.role, pattern: claimed.prefix }
      : { path, role: undefined };
    super(req.method ?? "GET", target, req.headers, route, ingress.clientCertificateOf(req));
    this.httpVersion = req.httpVersion;
    this.rawHeaders = req.rawHeaders;
    this.requestId = headerValue(req.headers, "x-request-id");
    this.trace = traceContextOf(req.headers);
    this.backend = ingress.options.backend;
    this.backend.hold();
  }

  run(): void {
    const { options } = this.ingress;
    try {
      const result = options.chain.runHead(this);
      if (result instanceof Promise) this.checkedWhenSettled(result);
      else this.checked(result);
    } catch (error) {
      this.failed(error);
    }
  }

  // Promise continuations in methods of their own, here and below: an arrow function in the method
  // that runs on every request would make V8 allocate a context on every call (issue 42).
  private checkedWhenSettled(result: Promise<Rejection | undefined>): void {
    result.then(
      (r) => this.checked(r),
      (e: unknown) => this.failed(e),
    );
  }

  /**
   * Exchange: the body stopped arriving or could not be parsed. A body being forwarded fails as a
   * refused one does (the backend never gets its tail); one not yet forwarded (its checks still
   * run, or it never ran) is answered now.
   */
  refuseIncomplete(message: string, step: string | undefined): void {
    const rejection = reject("FORMAT_ERROR", message);
    this.failedStep = step;
    this.res.shouldKeepAlive = false;
    if (this.upstream.body !== null && this.req.listenerCount("error") > 0) {
      // The body iterator listens for errors: it throws this, and the forwarder answers with it.
      this.req.emit("error", new BodyRejected(rejection, step));
      return;
    }
    this.stalled = true;
    if (!this.res.headersSent) this.refuse(rejection);
  }

  private checked(result: Rejection | undefined): void {
    if (this.stalled) return; // answered already
    if (result) {
      this.refuse(result);
      return;
    }
    try {
      this.send();
    } catch (error) {
      this.failed(error);
    }
  }

  /** A bug, not the TPP's fault: still answer in the Berlin Group shape and keep serving. */
  private failed(error: unknown): void {
    this.refuse(
      reject(
        "INTERNAL_SERVER_ERROR",
        `the gateway failed to check this request (${(error as Error).message})`,
      ),
    );
  }

  private refuse(rejection: Rejection): void {
    // A refusal that leaves the connection unusable (no Host; a body too large to read) closes it.
    if (this.closeConnection) this.res.shouldKeepAlive = false;
    this.beforeHead();
    const bytesOut = this.answer(rejection);
    this.done(this.res.statusCode, bytesOut, rejection);
  }

  // BodyInspector: the chain's body phases, as the body streams to the backend.
  update(chunk: Buffer): Rejection | undefined {
    return this.ingress.options.chain.runBody(this, chunk);
  }

  finish(): Rejection | undefined {
    return this.ingress.options.chain.runBodyEnd(this);
  }

  // ResponsePhase: the backend's answer past the chain's response phases.
  head(status: number, received: ReceivedHeaders, send: Headers): readonly IngressHold[] | undefined {
    if (this.requestId !== undefined) send["x-request-id"] = this.requestId;
    return this.ingress.options.chain.holders(this, status, received, send);
  }

  tooLarge(holder: IngressHold, send: Headers): Rejection | undefined {
    const { step, hold } = holder;
    const refusal = hold.tooLarge
      ? hold.tooLarge(send)
      : reject(
          "BAD_GATEWAY",
          `the bank's response is larger than ${hold.maxBodyBytes} bytes, too large for the gateway's ${step.name} check; it was withheld`,
        );
    return refusal && this.ingress.options.chain.refuse(step, refusal, this);
  }

  body(holds: readonly IngressHold[], body: Buffer, received: ReceivedHeaders, send: Headers) {
    return this.ingress.options.chain.runResponseBody(this, holds, body, received, send);
  }

  answer(rejection: Rejection): number {
    return writeRejection(this.res, rejection, this.ingress.options.statusProfile, this.requestId);
  }

  unreachable(error: Error, backend: Backend): Rejection {
    return upstreamFailure(error, backend);
  }

  /** While draining every answer closes its connection, so no new request arrives on it. */
  beforeHead(): void {
    if (this.ingress.options.draining?.()) this.res.shouldKeepAlive = false;
  }

  private send(): void {
    const { options, strip } = this.ingress;
    const names = options.identityHeaders;
    const identity = this.certificate!.identity;
    // One flat list of name/value pairs, every name the gateway writes stripped from the client's,
    // sized once: a client's pairs are at most its raw header lines.
    const head = new HeadPairs(this.req.rawHeaders.length + this.ingress.addedEntries);
    appendUpstreamRequestHeaders(this.headers, strip, head);
    const values = identityHeaderValues(identity);
    head.push(names.organizationId, identity.organizationId);
    head.push(names.name, values.name);
    head.push(names.roles, values.roles);
    head.push(names.certificateFingerprint, identity.fingerprint);
    head.push(names.psuPresent, this.psuPresent ? "true" : "false");
    const extra = this.ingress.backendPairs;
    for (let i = 0; i < extra.length; i += 2) head.push(extra[i]!, extra[i + 1]!);
    this.ingress.forwarded.write(head, this.headers, this.req.socket);
    pushTraceContext(head, this.trace);
    const headers = head.list();
    if (!hasBody(this.headers)) {
      this.forwardWith(headers, null);
    } else if (verifiedBeforeSending(this.dialect) || smallBody(this.headers)) {
      // A signature over the body only: not a byte leaves before the whole body is verified. A
      // small body of declared length is read whole too, and goes as one buffer, as a verifying
      // proxy sends it: streamed, it cost about 2 KB more per request in iterators (issue 42).
      this.sendWholeBody(headers);
    } else {
      // When forwarding stops early (a refusal mid-body, the backend gone), the request must not be
      // destroyed with it: that would destroy the socket and its RST would drop the answers before
      // this one. Node reads and drops the rest of the body, then closes lingering.
      this.forwardWith(headers, new StreamedBody(this.req, options.chain.inspectsBody ? [this] : []));
    }
  }

  private forwardWith(headers: string[], body: UpstreamRequest["body"]): void {
    this.upstream = { method: this.method, target: this.target, headers, body };
    forward(this.backend, this);
  }

  /**
   * Reads the whole body (the body-size step bounds it) past the chain's body phases, and forwards
   * it only once every step passed at its end. A refusal is answered with nothing sent; a body that
   * stopped arriving was answered by refuseIncomplete; a client gone is reported as such. Read on
   * the request's events, not its async iterator (an iterator and its end-of-stream watch per request).
   */
  private sendWholeBody(headers: string[]): void {
    const req = this.req;
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("close", onGone);
    };
    const onData = (chunk: Buffer): void => {
      if (this.stalled) {
        stop();
        return;
      }
      const refusal = this.update(chunk);
      if (refusal) {
        stop();
        this.refuseBody(refusal);
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    };
    const onEnd = (): void => {
      stop();
      if (this.stalled) return;
      const refusal = this.finish();
      if (refusal) {
        this.refuseBody(refusal);
        return;
      }
      this.readWhole = true;
      try {
        this.forwardWith(headers, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
      } catch (error) {
        this.failed(error);
      }
    };
    // An error, or closed before its end: the client went away mid-body.
    const onGone = (): void => {
      stop();
      if (!this.stalled) this.done(499, 0);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onGone);
    req.on("close", onGone);
  }

  /** A body refused part-way or at its end: its rest is not waited for, and the connection closes. */
  private refuseBody(refusal: Rejection): void {
    this.res.shouldKeepAlive = false;
    this.refuse(refusal);
  }

  /** ForwardCall: the answer is out (or the exchange ended without one). */
  finished(outcome: ForwardOutcome): void {
    // The unattended-access slot counts only when the backend served the call.
    const served = outcome.rejection === undefined && outcome.status >= 200 && outcome.status < 300;
    if (this.slot && !served) {
      this.forwardedOnceReleased(outcome);
      return;
    }
    this.forwarded(outcome);
  }

  private forwardedOnceReleased(outcome: ForwardOutcome): void {
    void this.releaseSlot().then(() => this.forwarded(outcome));
  }

  private async releaseSlot(): Promise<void> {
    try {
      await this.slot!.release();
    } catch (error) {
      // The slot then expires with its window: the TPP loses one call, the gateway keeps serving.
      this.ingress.options.onStoreError?.(error);
    }
  }

  private forwarded(outcome: ForwardOutcome): void {
    if (outcome.step) this.failedStep = outcome.step;
    this.done(outcome.status, outcome.bytesOut, outcome.rejection, outcome.upstreamMs);
  }

  private done(status: number, bytesOut: number, rejection?: Rejection, upstreamMs?: number): void {
    if (this.holdsBackend) {
      this.holdsBackend = false;
      this.backend.release();
    }
    const observer = this.ingress.options.onRequest;
    // One access line per request, even if a failure after forwarding began also ends it.
    if (!observer || this.reported) return;
    this.reported = true;
    const code = rejection?.code;
    // One object of one shape per request (optional fields undefined rather than spread in).
    const event: RequestEvent = {
      mode: "ingress",
      requestId: this.requestId,
      traceId: this.trace.traceId,
      method: this.method,
      routeClass: routeClass(this.route.role),
      route: this.route.pattern,
      status,
      totalMs: performance.now() - this.started,
      bytesOut,
      code,
      step: code !== undefined ? this.failedStep : undefined,
      text: rejection?.text,
      organizationId: this.organizationId,
      trustReport: this.trustReport,
      unattendedLimit: this.unattendedLimit?.limit,
      limitSource: this.unattendedLimit?.source,
      upstreamMs,
      psuId: headerValue(this.headers, "psu-id"),
    };
    observer(event);
  }
}

/** The ingress mode's exchanges for the listener, and its refusals of what Node could not parse. */
export function createIngressHandler(options: HandlerOptions): ExchangeFactory {
  const ingress = new Ingress(options);
  return {
    create: (req, res) => new IngressExchange(ingress, req, res),
    rawRefusal: (message, step) => {
      const answer = rawRejection(reject("FORMAT_ERROR", message), options.statusProfile);
      options.onRequest?.(
        unparsedRequestEvent(
          "ingress",
          statusFor("FORMAT_ERROR", options.statusProfile),
          step ?? MALFORMED_REQUEST,
          Buffer.byteLength(answer),
          message,
        ),
      );
      return answer;
    },
    connectRefused: "the CONNECT method is not served; this is an API, not a proxy",
  };
}
