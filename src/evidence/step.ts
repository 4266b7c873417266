/**
 * The `evidence` step: the chain's last, so it runs only once every other step has passed. It
 * builds the request's evidence record from the CheckContext and hands it to the store's bounded
 * queue, before the request is forwarded:
 *
 * - without a body, in the head phase, before anything is sent;
 * - with one, at the body's end, while its last chunk is still held back (a UK OB body, verified
 *   before sending, is not sent at all until then). The body is hashed as it streams, and kept when
 *   `evidence.bodies` says so.
 *
 * When the record cannot be queued (the queue is full, the store is failing), `onFailure` decides:
 * `refuse` answers 503 SERVICE_UNAVAILABLE and the request is never forwarded whole; `continue`
 * lets it through, and the store writes a gap line saying how many records it did not keep.
 * Nothing here waits for the disk.
 */

import { createHash } from "node:crypto";
import { type CheckContext, dialectUnit, hasBody, type Step } from "../checks/index.js";
import { decodeCertificateHeader } from "../eidas/index.js";
import { type Rejection, reject } from "../errors.js";
import { headerValue } from "../signature/index.js";
import { type BodyPolicy, type RequestEvidence, SIGNED_BYTES_INLINE } from "./record.js";

export type FailurePolicy = "refuse" | "continue";

/** Where records go: the store's bounded queue. */
export interface EvidenceSink {
  /**
   * Queues the record; false when it cannot (queue full, store failing). `mustKeep` false: the
   * request goes on without it, and the store counts it as dropped (a gap line).
   */
  offer(evidence: RequestEvidence, mustKeep: boolean): boolean;
  /** Whether a record offered now would be taken (a body's request is refused before it streams otherwise). */
  accepting(): boolean;
  /** Whether certificates/<fingerprint>.pem is written or on its way. */
  hasCertificate(fingerprint: string): boolean;
  /** Writes the certificate once (DER). */
  putCertificate(fingerprint: string, der: Uint8Array): void;
}

export interface EvidenceStepOptions {
  readonly sink: EvidenceSink;
  readonly bodies: BodyPolicy;
  /** Payment routes (PSP_PI) and all others. */
  readonly onFailure: { readonly payments: FailurePolicy; readonly others: FailurePolicy };
  readonly now?: () => number;
}

export const EVIDENCE_STEP = "evidence";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function isPaymentRoute(c: CheckContext): boolean {
  return c.route.role === "PSP_PI";
}

/** Whether `evidence.bodies` keeps this request's body. */
export function keepsBody(policy: BodyPolicy, c: CheckContext): boolean {
  if (policy === "all") return true;
  if (policy === "none") return false;
  return isPaymentRoute(c) && WRITES.has(c.method);
}

const EMPTY_DIGEST = `sha-256=:${createHash("sha256").digest("base64")}:`;

export function evidenceStep(options: EvidenceStepOptions): Step<CheckContext> {
  const now = options.now ?? Date.now;

  const refusal = (c: CheckContext): Rejection => {
    // A reserved unattended-access slot is given back: the call does not happen.
    const slot = c.slot;
    if (slot) {
      c.slot = undefined;
      void Promise.resolve()
        .then(() => slot.release())
        .catch(() => undefined);
    }
    return reject(
      "SERVICE_UNAVAILABLE",
      "the gateway could not keep the evidence of this request (its evidence store is full or failing), so it was not forwarded; try again later",
    );
  };
  const policyOf = (c: CheckContext) =>
    isPaymentRoute(c) ? options.onFailure.payments : options.onFailure.others;

  const keep = (c: CheckContext, body: Buffer | undefined, digest: string): Rejection | undefined => {
    const evidence = evidenceOf(c, now(), body, digest, options);
    const fingerprint = evidence.certificate;
    if (!options.sink.hasCertificate(fingerprint)) {
      const der = certificateDer(c);
      if (der) options.sink.putCertificate(fingerprint, der);
    }
    const policy = policyOf(c);
    if (options.sink.offer(evidence, policy === "refuse")) return undefined;
    return policy === "continue" ? undefined : refusal(c);
  };

  return {
    name: EVIDENCE_STEP,
    run: (c) => {
      if (!hasBody(c.headers)) return keep(c, undefined, EMPTY_DIGEST);
      // A store already failing refuses before a byte of the request is forwarded; one that fails
      // while the body streams refuses at its end, its last chunk withheld.
      if (policyOf(c) === "refuse" && !options.sink.accepting()) return refusal(c);
      // A dialect whose signed bytes hold the body (UK OB) needs it whole for the record.
      const kept = keepsBody(options.bodies, c) || dialectUnit(c.dialect)?.signedBytes !== undefined;
      // The body as it streams: hashed unless the dialect's digest header states its SHA-256
      // (verified by the digest step before this one, so hashed once), kept when the policy (or
      // UK OB's signing input) needs it.
      const stated = c.digestVerifier?.sha256 !== undefined;
      c.evidenceAwaitsBody = true;
      c.evidenceBodyHash = stated ? undefined : createHash("sha256");
      c.evidenceBodyChunks = kept ? [] : undefined;
      return undefined;
    },
    body: (c, chunk) => {
      c.evidenceBodyHash?.update(chunk);
      c.evidenceBodyChunks?.push(chunk);
      return undefined;
    },
    bodyEnd: (c) => {
      // The head phase did not reach this step (cannot happen: the chain stops at a refusal).
      if (!c.evidenceAwaitsBody) return undefined;
      c.evidenceAwaitsBody = false;
      const chunks = c.evidenceBodyChunks;
      c.evidenceBodyChunks = undefined;
      // The digest step (earlier in the chain) has passed: the stated SHA-256 is the body's.
      const sha256 = c.evidenceBodyHash ? c.evidenceBodyHash.digest() : c.digestVerifier!.sha256!;
      c.evidenceBodyHash = undefined;
      const digest = `sha-256=:${Buffer.from(sha256.buffer, sha256.byteOffset, sha256.length).toString("base64")}:`;
      return keep(c, chunks && (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)), digest);
    },
  };
}

/** The record's content from what the steps learnt. */
export function evidenceOf(
  c: CheckContext,
  at: number,
  body: Buffer | undefined,
  bodyDigest: string,
  options: Pick<EvidenceStepOptions, "bodies">,
): RequestEvidence {
  const certificate = c.certificate!;
  const signed = signedBytesOf(c, body);
  const inline = signed.length <= SIGNED_BYTES_INLINE;
  // One object of one shape (optional fields undefined, left out when serialised).
  return {
    time: new Date(at).toISOString(),
    requestId: headerValue(c.headers, "x-request-id"),
    traceId: traceIdOf(headerValue(c.headers, "traceparent")),
    method: c.method,
    target: c.target,
    role: c.route.role,
    organizationId: certificate.identity.organizationId,
    certificate: certificate.identity.fingerprint,
    dialect: c.dialect,
    signedWith: c.signedWith,
    signedBytes: inline ? signed.toString("base64") : undefined,
    signedBytesSha256: inline ? undefined : createHash("sha256").update(signed).digest("hex"),
    signature: signatureOf(c).toString("base64"),
    bodyDigest,
    body: body !== undefined && keepsBody(options.bodies, c) ? body.toString("base64") : undefined,
    validationReport: certificate.reportId,
    indication: "TOTAL_PASSED",
    verdict: "accepted",
  };
}

/** W3C traceparent (version-traceid-parentid-flags): the caller's trace id, when it sent a valid one. */
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}(?:-.*)?$/;
const ZERO_TRACE = "0".repeat(32);

export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match || traceparent.startsWith("ff") || match[1] === ZERO_TRACE) return undefined;
  return match[1];
}

/**
 * The exact bytes the signature covers: what the steps kept, or what the dialect's unit makes once
 * the body is whole (UK OB signs its protected header and the body).
 */
function signedBytesOf(c: CheckContext, body: Buffer | undefined): Buffer {
  const unit = dialectUnit(c.dialect);
  if (unit?.signedBytes) return unit.signedBytes(c, body);
  return c.signingString ?? Buffer.alloc(0);
}

/** The signature value the dialect's steps read. */
function signatureOf(c: CheckContext): Buffer {
  return dialectUnit(c.dialect)?.signatureBytes(c) ?? Buffer.alloc(0);
}

/** The signing certificate the `certificate` step judged, as DER. */
function certificateDer(c: CheckContext): Uint8Array | undefined {
  const sent = c.signingCertificate ?? headerValue(c.headers, "tpp-signature-certificate");
  if (sent === undefined) return undefined;
  const der = decodeCertificateHeader(sent);
  return der instanceof Uint8Array ? der : undefined;
}
