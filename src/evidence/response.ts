/**
 * Response records (ingress): every response the gateway signs with the bank's QSealC is kept in
 * the same chain as the request it answers, linked by X-Request-ID. The response signer is wrapped:
 * once it has made its headers, the record is queued, and the response goes on whether or not it
 * could be (a gap line counts one not kept). Nothing here waits for the disk.
 */

import { createHash, type KeyObject, X509Certificate } from "node:crypto";
import type { CheckContext, ResponseSigner } from "../checks/index.js";
import { headerValue } from "../signature/index.js";
import type { HttpHeadersPayloadStyle } from "../signature/jws/index.js";
import type { RequestMessage } from "../signature/rfc9421/index.js";
import { type BodyPolicy, type ResponseEvidence, traceIdOf } from "./record.js";
import { type ResponseSigning, responseSigned } from "./response-signed.js";
import { keepsBody } from "./step.js";

/** Where response records go: the store's bounded queue. */
export interface ResponseEvidenceSink {
  /** Queues the record; false (counted as dropped) when it cannot. */
  offerResponse(evidence: ResponseEvidence): boolean;
  hasCertificate(fingerprint: string): boolean;
  putCertificate(fingerprint: string, der: Uint8Array): void;
}

export interface ResponseEvidenceOptions {
  readonly sink: ResponseEvidenceSink;
  readonly bodies: BodyPolicy;
  /** The signing QSealC (DER) and its organizationIdentifier. */
  readonly certificate: Uint8Array;
  readonly organizationId?: string;
  readonly now?: () => number;
  /**
   * The request as RFC 9421's `;req` components read it (its scheme is the config's): what the
   * answer's signature base binds, rebuilt for the record.
   */
  readonly requestMessage?: (request: CheckContext) => RequestMessage;
}

/** The response signer, each response it signs recorded. */
export function withResponseEvidence(
  signer: ResponseSigner,
  options: ResponseEvidenceOptions,
): ResponseSigner {
  const fingerprint = createHash("sha256").update(options.certificate).digest("hex");
  // The signer's key: the algorithm of an RFC 9421 signature that names none, as its verifier takes it.
  const key = new X509Certificate(options.certificate).publicKey;
  const now = options.now ?? Date.now;
  return {
    maxBodyBytes: signer.maxBodyBytes,
    sign: async (body, headers, status, request) => {
      const added = await signer.sign(body, headers, status, request);
      if (!options.sink.hasCertificate(fingerprint))
        options.sink.putCertificate(fingerprint, options.certificate);
      options.sink.offerResponse(
        signedResponseEvidence({
          at: now(),
          request,
          status,
          body,
          sent: headers,
          added,
          certificate: fingerprint,
          bodies: options.bodies,
          key,
          ...(options.requestMessage ? { requestMessage: options.requestMessage } : {}),
          ...(options.organizationId !== undefined ? { organizationId: options.organizationId } : {}),
        }),
      );
      return added;
    },
  };
}

/** Headers that carry or bind a response signature (the certificate header is named by its fingerprint). */
const SIGNATURE_HEADERS = new Set([
  "signature",
  "signature-input",
  "x-jws-signature",
  "digest",
  "content-digest",
  "date",
  "x-request-id",
]);

/** The record of a response the gateway signed: pure, from the signer's headers. */
export function signedResponseEvidence(parts: {
  readonly at: number;
  readonly request: CheckContext;
  readonly status: number;
  readonly body: Buffer;
  /** The response's headers before signing, and those the signer added. */
  readonly sent: Readonly<Record<string, string | string[]>>;
  readonly added: Readonly<Record<string, string>>;
  readonly certificate: string;
  readonly organizationId?: string;
  readonly bodies: BodyPolicy;
  readonly key?: KeyObject;
  readonly requestMessage?: (request: CheckContext) => RequestMessage;
}): ResponseEvidence {
  const { request, added } = parts;
  const all: Record<string, string> = {};
  for (const [name, value] of Object.entries(parts.sent))
    all[name.toLowerCase()] = typeof value === "string" ? value : value.join(", ");
  for (const [name, value] of Object.entries(added)) all[name.toLowerCase()] = value;
  return responseRecord(all, {
    at: parts.at,
    requestId: headerValue(request.headers, "x-request-id"),
    traceId: traceIdOf(headerValue(request.headers, "traceparent")),
    method: request.method,
    target: request.target,
    status: parts.status,
    verdict: "signed",
    dialect: request.dialect,
    organizationId: parts.organizationId,
    certificate: parts.certificate,
    // What the gateway signed, rebuilt from what it sent (RFC 9421 also from the request it answers).
    signing: {
      dialect: request.dialect,
      status: parts.status,
      ...(parts.requestMessage ? { request: parts.requestMessage(request) } : {}),
      ...(parts.key ? { key: parts.key } : {}),
    },
    body: parts.body,
    keepBody: keepsBody(parts.bodies, request),
  });
}

/**
 * The record of a response, signed or verified, from its headers (`all`: lower-case names, as sent
 * or received): the signature headers picked out, cavage's signed bytes rebuilt, the body digested.
 * The fields stay in this order: it is the order of the JSON line in the chain.
 */
function responseRecord(
  all: Readonly<Record<string, string>>,
  r: {
    readonly at: number;
    readonly requestId: string | undefined;
    readonly traceId: string | undefined;
    readonly method: string;
    readonly target: string;
    readonly status: number;
    readonly verdict: ResponseEvidence["verdict"];
    readonly dialect: string;
    readonly organizationId: string | undefined;
    readonly certificate: string | undefined;
    readonly validationReport?: string | undefined;
    /** How to rebuild the signed bytes (`signedBytes`, `signature`, `signedWith`), when they can be. */
    readonly signing: ResponseSigning | undefined;
    readonly body: Buffer;
    readonly keepBody: boolean;
  },
): ResponseEvidence {
  const signatureHeaders: Record<string, string> = {};
  for (const name of Object.keys(all).sort())
    if (SIGNATURE_HEADERS.has(name)) signatureHeaders[name] = all[name]!;
  const signed = r.signing ? responseSigned(all, r.body, r.signing) : undefined;
  return {
    type: "response",
    time: new Date(r.at).toISOString(),
    requestId: r.requestId,
    traceId: r.traceId,
    method: r.method,
    target: r.target,
    status: r.status,
    verdict: r.verdict,
    dialect: r.dialect,
    organizationId: r.organizationId,
    certificate: r.certificate,
    signatureHeaders,
    signedBytes: signed?.signedBytes,
    signedBytesSha256: signed?.signedBytesSha256,
    signature: signed?.signature,
    signedWith: signed?.signedWith,
    bodyDigest: `sha-256=:${createHash("sha256").update(r.body).digest("base64")}:`,
    body: r.keepBody ? r.body.toString("base64") : undefined,
    validationReport: r.validationReport,
  };
}

/**
 * The record of a bank's answer egress checked (`verified` or `invalid`): pure, from the headers
 * as received. Its body is kept as a request's would be: `all`, or `payments` for a write
 * (POST/PUT/PATCH/DELETE) to a payment path (`/payments`, `/bulk-payments`, `/periodic-payments`).
 */
export function verifiedResponseEvidence(parts: {
  readonly at: number;
  readonly request: {
    readonly method: string;
    readonly target: string;
    readonly requestId: string;
    /** RFC 9421: the absolute URI and the headers as sent (its `;req` components). */
    readonly targetUri?: string;
    readonly headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
  };
  /** JAdES: the profile's sigD.pars payload style. */
  readonly payloadStyle?: HttpHeadersPayloadStyle;
  /** The bank's public key, once its certificate passed (RFC 9421's algorithm when it names none). */
  readonly key?: KeyObject;
  /** The validation report of the bank's certificate, once it passed. */
  readonly validationReport?: string;
  /** The trace id egress sent the bank (the application's traceparent's, or one it started). */
  readonly traceId?: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  readonly body: Buffer;
  readonly verdict: "verified" | "invalid";
  readonly dialect: string;
  readonly certificate?: string;
  readonly organizationId?: string;
  readonly bodies: BodyPolicy;
}): ResponseEvidence {
  const all: Record<string, string> = {};
  for (const [name, value] of Object.entries(parts.headers))
    if (value !== undefined) all[name.toLowerCase()] = typeof value === "string" ? value : value.join(", ");
  const { method, target } = parts.request;
  const keep =
    parts.bodies === "all" ||
    (parts.bodies === "payments" &&
      WRITES.has(method) &&
      /\/(bulk-|periodic-)?payments(\/|\?|$)/.test(target));
  return responseRecord(all, {
    at: parts.at,
    requestId: parts.request.requestId || undefined,
    traceId: parts.traceId || undefined,
    method,
    target,
    status: parts.status,
    verdict: parts.verdict,
    dialect: parts.dialect,
    organizationId: parts.organizationId,
    certificate: parts.certificate,
    validationReport: parts.validationReport,
    signing: {
      dialect: parts.dialect,
      status: parts.status,
      ...(parts.request.targetUri !== undefined
        ? { request: { method, targetUri: parts.request.targetUri, headers: parts.request.headers ?? {} } }
        : {}),
      ...(parts.payloadStyle ? { payloadStyle: parts.payloadStyle } : {}),
      ...(parts.key ? { key: parts.key } : {}),
    },
    body: parts.body,
    keepBody: keep,
  });
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);
