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
import type { BodyPolicy, RequestCapture } from "./record.js";

export type FailurePolicy = "refuse" | "continue";

/** Where records go: the store's bounded queue. */
export interface EvidenceSink {
  /**
   * Queues the record; false when it cannot (queue full, store failing). `mustKeep` false: the
   * request goes on without it, and the store counts it as dropped (a gap line).
   */
  offer(evidence: RequestCapture, mustKeep: boolean): boolean;
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

  const keep = (
    c: CheckContext,
    body: Buffer | undefined,
    bodySha256: Uint8Array | undefined,
  ): Rejection | undefined => {
    const evidence = captureOf(c, now(), body, bodySha256, options);
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
      if (!hasBody(c.headers)) return keep(c, undefined, undefined);
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
      return keep(c, chunks && (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)), sha256);
    },
  };
}

/**
 * The record's content from what the steps learnt: references to what they hold, nothing encoded
 * (the writer does that, record.ts requestLine). A kept body is the body as received; the chunks
 * are the request's own (Node reads each into a buffer of its own), never written to again.
 */
function captureOf(
  c: CheckContext,
  at: number,
  body: Buffer | undefined,
  bodySha256: Uint8Array | undefined,
  options: Pick<EvidenceStepOptions, "bodies">,
): RequestCapture {
  const certificate = c.certificate!;
  // One object of one shape (optional fields undefined, left out when serialised).
  return {
    at,
    requestId: headerValue(c.headers, "x-request-id"),
    traceparent: headerValue(c.headers, "traceparent"),
    method: c.method,
    target: c.target,
    role: c.route.role,
    organizationId: certificate.identity.organizationId,
    certificate: certificate.identity.fingerprint,
    dialect: c.dialect,
    signedWith: c.signedWith,
    signedBytes: signedBytesOf(c, body),
    signature: signatureOf(c),
    bodySha256,
    body: body !== undefined && keepsBody(options.bodies, c) ? body : undefined,
    validationReport: certificate.reportId,
  };
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
