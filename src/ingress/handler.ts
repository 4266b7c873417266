/**
 * The ingress request handler: run the checks, then stream the request to the backend with the
 * verified TPP identity attached. I/O lives here; the decisions live in pipeline.ts.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { characterInspector, digestInspector, sizeInspector } from "../checks/body-inspectors.js";
import { type PipelineOptions, runChecks, type VerifiedRequest } from "../checks/pipeline.js";
import { hasBody } from "../checks/required-headers.js";
import { routeClass, routingPath } from "../checks/routes.js";
import type { StatusProfile } from "../errors.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import type { Backend } from "../forward/backend.js";
import { type BodyInspector, inspectedBody } from "../forward/body.js";
import { forward } from "../forward/forwarder.js";
import { upstreamRequestHeaders } from "../forward/headers.js";
import type { HeldSlot } from "../limits/index.js";
import { hashPsuId } from "../observability/logger.js";
import { headerValue } from "../signature/index.js";
import { writeRejection } from "./respond.js";

export interface IdentityHeaderNames {
  readonly organizationId: string;
  readonly name: string;
  readonly roles: string;
  readonly certificateFingerprint: string;
  readonly psuPresent: string;
}

export interface HandlerOptions {
  readonly pipeline: PipelineOptions;
  readonly backend: Backend;
  readonly identityHeaders: IdentityHeaderNames;
  readonly statusProfile: StatusProfile;
  readonly maxBodyBytes: number;
  /** Peers allowed to hand the client certificate over in `clientCertificateHeader`. */
  readonly trustedProxies: ReadonlySet<string>;
  readonly clientCertificateHeader: string;
  /** True once the gateway is shutting down: answers then close their connection. */
  readonly draining?: () => boolean;
  /** Called once per request with what happened, for logs and metrics. */
  readonly onDone?: (event: RequestEvent) => void;
}

export interface RequestEvent {
  readonly requestId: string | undefined;
  readonly method: string;
  readonly routeClass: string;
  readonly status: number;
  readonly code?: string;
  readonly organizationId?: string;
  readonly totalMs: number;
  readonly upstreamMs?: number;
  readonly bytesOut: number;
  /** PSU-ID as a salted hash (logs never see the identifier itself). */
  readonly psuHash?: string;
}

/** The client certificate as base64 DER: from the TLS socket, or from a trusted proxy's header. */
function clientCertificateOf(req: IncomingMessage, options: HandlerOptions): string | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate === "function") {
    const peer = socket.getPeerCertificate(false);
    if (peer?.raw) return peer.raw.toString("base64");
  }
  const fromHeader = headerValue(req.headers, options.clientCertificateHeader);
  if (fromHeader !== undefined && options.trustedProxies.has(req.socket.remoteAddress ?? "")) {
    // URL-encoded PEM (nginx $ssl_client_escaped_cert, RFC 9440 uses base64 DER in colons).
    return fromHeader;
  }
  return undefined;
}

export function createIngressHandler(options: HandlerOptions) {
  const { identityHeaders: names } = options;
  // Every identity header is removed from the incoming request before ours are added.
  const strip = new Set<string>([
    names.organizationId,
    names.name,
    names.roles,
    names.certificateFingerprint,
    names.psuPresent,
    options.clientCertificateHeader,
  ]);

  return function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const requestId = headerValue(req.headers, "x-request-id");
    const method = req.method ?? "GET";
    const target = req.url ?? "/";
    // The route class of the path, for metrics and logs of refusals too (a bounded label).
    // The route is worked out once: the checks reuse it, refusals are labelled with it.
    const path = routingPath(target);
    const route = { path, role: options.pipeline.roles.roleFor(path) };
    const klass = routeClass(route.role);
    // Filled in by the checks once the certificate is trusted, so refusals after that name the TPP.
    const observed: { organizationId?: string } = {};
    // While draining every answer closes its connection, so no new request arrives on it.
    const closeIfDraining = () => {
      if (options.draining?.()) res.shouldKeepAlive = false;
    };

    const psuId = headerValue(req.headers, "psu-id");
    const done = (status: number, extra: Partial<RequestEvent> = {}) =>
      options.onDone?.({
        requestId,
        method,
        routeClass: klass,
        status,
        totalMs: performance.now() - started,
        bytesOut: 0,
        ...(psuId !== undefined ? { psuHash: hashPsuId(psuId) } : {}),
        ...(observed.organizationId !== undefined ? { organizationId: observed.organizationId } : {}),
        ...extra,
      });

    const refuse = (rejection: Rejection) => {
      closeIfDraining();
      const bytesOut = writeRejection(res, rejection, options.statusProfile, requestId);
      done(res.statusCode, { code: rejection.code, bytesOut });
    };

    const length = Number(req.headers["content-length"] ?? 0);
    if (length > options.maxBodyBytes) {
      res.shouldKeepAlive = false;
      refuse(
        reject(
          "PAYLOAD_TOO_LARGE",
          `the request body is ${length} bytes; this bank accepts at most ${options.maxBodyBytes}`,
        ),
      );
      return;
    }

    const proceed = (verified: VerifiedRequest | Rejection) => {
      if (isRejection(verified)) return refuse(verified);
      void send(req, res, verified, method, target, requestId, strip, options, done, closeIfDraining);
    };
    // A bug, not the TPP's fault: still answer in the Berlin Group shape and keep serving.
    const failed = (error: unknown) =>
      refuse(
        reject(
          "INTERNAL_SERVER_ERROR",
          `the gateway failed to check this request (${(error as Error).message})`,
        ),
      );
    try {
      const result = runChecks(
        {
          method,
          target,
          headers: req.headers,
          clientCertificate: clientCertificateOf(req, options),
          observed,
          route,
        },
        options.pipeline,
      );
      if (result instanceof Promise) result.then(proceed, failed);
      else proceed(result);
    } catch (error) {
      failed(error);
    }
  };
}

async function releaseSlot(slot: HeldSlot, options: HandlerOptions): Promise<void> {
  try {
    await slot.release();
  } catch (error) {
    // The slot then expires with its window: the TPP loses one call, the gateway keeps serving.
    options.pipeline.onStoreError?.(error);
  }
}

async function send(
  req: IncomingMessage,
  res: ServerResponse,
  verified: VerifiedRequest,
  method: string,
  target: string,
  requestId: string | undefined,
  strip: ReadonlySet<string>,
  options: HandlerOptions,
  done: (status: number, extra?: Partial<RequestEvent>) => void,
  beforeHead: () => void,
): Promise<void> {
  const names = options.identityHeaders;
  const identity = verified.certificate.identity;
  const headers = upstreamRequestHeaders(req.headers, strip);
  headers[names.organizationId] = identity.organizationId;
  headers[names.name] = encodeURIComponent(identity.name);
  headers[names.roles] = [...identity.roles].join(",");
  headers[names.certificateFingerprint] = identity.fingerprint;
  headers[names.psuPresent] = verified.psuPresent ? "true" : "false";
  headers["x-forwarded-for"] = req.socket.remoteAddress ?? "";
  headers["x-forwarded-proto"] = (req.socket as Partial<TLSSocket>).encrypted ? "https" : "http";

  let body: AsyncIterable<Buffer> | null = null;
  if (hasBody(req.headers)) {
    const inspectors: BodyInspector[] = [
      sizeInspector(options.maxBodyBytes),
      characterInspector(options.pipeline.characterPolicy),
    ];
    if (verified.digest) inspectors.unshift(digestInspector(verified.digest));
    body = inspectedBody(req, inspectors);
  }

  const outcome = await forward(
    options.backend,
    req,
    res,
    { method, target, headers, body },
    (r, rejection) => writeRejection(r, rejection, options.statusProfile, requestId),
    requestId !== undefined ? { "x-request-id": requestId } : undefined,
    beforeHead,
  );
  // The unattended-access slot counts only when the backend served the call.
  const served = outcome.rejection === undefined && outcome.status >= 200 && outcome.status < 300;
  if (verified.slot && !served) await releaseSlot(verified.slot, options);
  done(outcome.status, {
    organizationId: identity.organizationId,
    bytesOut: outcome.bytesOut,
    ...(outcome.upstreamMs !== undefined ? { upstreamMs: outcome.upstreamMs } : {}),
    ...(outcome.rejection ? { code: outcome.rejection.code } : {}),
  });
}
