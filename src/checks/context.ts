/**
 * What the checks read and what they learn, for one request. One object per request: the steps
 * fill it in as they go (the parsed Signature header, the trusted certificate, the role…), and
 * the ingress handler extends it with its own per-request state, so a request costs one
 * allocation here instead of a closure per step.
 */

import type { Hash, KeyObject } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Psd2Role, UnattendedLimitColumn } from "../eidas/index.js";
import type { Rejection } from "../errors.js";
import type { AgreedLimit, HeldSlot } from "../limits/index.js";
import type { DigestValue, KeyIdTarget } from "../signature/index.js";
import type { Authority } from "./authority.js";
import type { Utf8Scanner } from "./characters.js";
import type { Dialect } from "./dialect-names.js";
import type { StepTrace } from "./runner.js";

/** Who the TPP is, once its certificate has been checked against the trust store and the register. */
export interface TppIdentity {
  readonly organizationId: string;
  readonly name: string;
  /** The certificate's roles intersected with the register's. */
  readonly roles: ReadonlySet<Psd2Role>;
  readonly fingerprint: string;
  /** The register's agreed unattended limit for the TPP (its entry's `unattendedLimit`). */
  readonly agreedLimits?: UnattendedLimitColumn | undefined;
}

/** A certificate that passed every check, with what the hot path needs from it. */
export interface TrustedCertificate {
  readonly publicKey: KeyObject;
  readonly keyIdTarget: KeyIdTarget;
  readonly identity: TppIdentity;
  /** The validation report the verdict rests on. */
  readonly reportId?: string;
}

/** The normalised path (see routingPath) and the PSD2 role it needs. */
export interface Route {
  readonly path: string;
  readonly role: Psd2Role | undefined;
  /** The configured route prefix that claims the path (a bounded label for the access line). */
  readonly pattern?: string;
}

/** A body hashed as it streams and judged against its digest header at the end. */
export interface BodyDigest {
  update(chunk: Uint8Array): void;
  finish(): true | Rejection;
  /** The SHA-256 the header states, if it states one: the body's, once `finish()` passed. */
  readonly sha256: Uint8Array | undefined;
}

export class CheckContext implements StepTrace {
  // Filled in by the steps, in this order.
  /** The signing dialect the request is verified by (the `dialect` step chooses it). */
  dialect: Dialect = "cavage";
  /** Parsed Digest values to check the body against while it streams; undefined without a body. */
  digest: readonly DigestValue[] | undefined = undefined;
  /**
   * The request's dialect's own state (its signature header parsed, a check as the body streams):
   * one slot whatever the dialect, written and read only by its unit's steps through the unit's
   * accessor, as only the chosen dialect's steps run.
   */
  dialectState: unknown = undefined;
  /** The header names the signature covers, lower-case (whatever the dialect). */
  signedHeaders: readonly string[] = [];
  /**
   * The signing certificate as base64 DER when the dialect carries it elsewhere than in
   * TPP-Signature-Certificate (a JWS's `x5c`).
   */
  signingCertificate: string | undefined = undefined;
  certificate: TrustedCertificate | undefined = undefined;
  /**
   * The id of the validation report of the certificate judged last (the QSealC, or a refused
   * QWAC): the access line's `trustReport`.
   */
  trustReport: string | undefined = undefined;
  /** The dialect and algorithm the signature verified with, as one name (part of the replay key). */
  signedWith = "";
  /** The exact bytes the signature covers (keyed on for replay protection). */
  signingString: Buffer | undefined = undefined;
  /**
   * The last moment (epoch ms) at which this request's times (Date, created, expires, sigT, iat)
   * would still pass: its replay record must outlive it. Each dialect's time step narrows it.
   */
  acceptedUntil = Number.POSITIVE_INFINITY;
  /** The unattended limit the call was held to and where it came from (the access line's). */
  unattendedLimit: AgreedLimit | undefined = undefined;
  /** A reserved unattended-access slot: release it when the backend does not answer 2xx. */
  slot: HeldSlot | undefined = undefined;
  /** When an unattended transaction's details are judged by the bank's answer: the time it was asked. */
  periodCheckedAt: number | undefined = undefined;
  // The body phases' state, while the body streams.
  /** Bytes of the body seen so far. */
  bodyBytes = 0;
  /** The body against the dialect's digest header (Digest, Content-Digest) as it streams. */
  digestVerifier: BodyDigest | undefined = undefined;
  bodyCharacters: Utf8Scanner | undefined = undefined;
  /**
   * The evidence step's view of the body (evidence/step.ts), on the context rather than in a
   * WeakMap (an ephemeron per request for the collector): whether the step awaits the body's end,
   * the body's SHA-256 as it streams (when no verified digest header states it), and its chunks
   * when the record keeps them.
   */
  evidenceAwaitsBody = false;
  evidenceBodyHash: Hash | undefined = undefined;
  evidenceBodyChunks: Buffer[] | undefined = undefined;
  /** The backend's response status, for the steps of the held response body (response signing). */
  responseStatus = 0;
  /** The Host header parsed as an authority (the host step); undefined without a Host. */
  authority: Authority | undefined = undefined;
  /**
   * The head's name/value lines as received (Node's `rawHeaders`, no copy): what the parsed
   * headers merge away, such as a second Host line. Undefined where no connection delivered it.
   */
  rawHeaders: readonly string[] | undefined = undefined;
  /** The HTTP version of the request line (`1.1`, `1.0`). */
  httpVersion = "1.1";
  /** The refusal must also close the connection (no Host; a body over the limit, unread). */
  closeConnection = false;
  /** The step that refused the request, for the access line and the rejection metric. */
  failedStep: string | undefined = undefined;

  constructor(
    readonly method: string,
    /** Path and query exactly as received. */
    readonly target: string,
    readonly headers: IncomingHttpHeaders,
    readonly route: Route,
    /** The TLS client certificate (QWAC) as base64 DER, from the socket or a trusted proxy's header. */
    readonly clientCertificate: string | undefined,
  ) {}

  /** The TPP's organizationIdentifier once its certificate is trusted (logs of later refusals name it). */
  get organizationId(): string | undefined {
    return this.certificate?.identity.organizationId;
  }

  /** A time check passed: the request could be accepted again until `ms` at the latest. */
  acceptUntil(ms: number): void {
    if (ms < this.acceptedUntil) this.acceptedUntil = ms;
  }

  get psuPresent(): boolean {
    return this.headers["psu-ip-address"] !== undefined;
  }
}

/** Implemented by the eIDAS layer's verdict cache: a value at once on a hit, a promise on a miss. */
export interface CertificateVerifier {
  /**
   * `qseal` for the signing certificate (the default), `qwac` for the TLS client certificate: a
   * CA on a trusted list may be granted for one kind and not the other.
   */
  verify(
    headerValue: string,
    purpose?: "qseal" | "qwac",
  ): TrustedCertificate | Rejection | Promise<TrustedCertificate | Rejection>;
}
