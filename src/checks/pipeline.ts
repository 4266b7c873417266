/**
 * The ordered checks of ingress mode (DESIGN.md): cheap first, cached work before fresh work,
 * crypto last. Each step returns a value for the next or a Rejection; nothing throws.
 */

import type { KeyObject } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Psd2Role } from "../config/schema.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import type { HeldSlot, UnattendedAccessPolicy } from "../limits/index.js";
import { checkReplay, type ReplayStore } from "../limits/index.js";
import type { DigestValue } from "../signature/digest.js";
import {
  type AlgorithmName,
  buildSigningString,
  checkCoverage,
  checkDate,
  headerValue,
  type KeyIdTarget,
  matchKeyId,
  parseDigestHeader,
  parseSignatureHeader,
  resolveAlgorithm,
  type SignatureParams,
  verifySigningString,
} from "../signature/index.js";
import { type CharacterPolicy, checkHeaderCharacters } from "./characters.js";
import { checkRequiredHeaders, hasBody } from "./required-headers.js";
import { type RoleTable, routingPath, underPrefix } from "./routes.js";

/** Who the TPP is, once its certificate has been checked against the trust store and the register. */
export interface TppIdentity {
  readonly organizationId: string;
  readonly name: string;
  /** The certificate's roles intersected with the register's. */
  readonly roles: ReadonlySet<Psd2Role>;
  readonly fingerprint: string;
}

/** A certificate that passed every check, with what the hot path needs from it. */
export interface TrustedCertificate {
  readonly publicKey: KeyObject;
  readonly keyIdTarget: KeyIdTarget;
  readonly identity: TppIdentity;
}

/** Implemented by the eIDAS layer's verdict cache: a value at once on a hit, a promise on a miss. */
export interface CertificateVerifier {
  verify(headerValue: string): TrustedCertificate | Rejection | Promise<TrustedCertificate | Rejection>;
}

export interface PipelineOptions {
  readonly now: () => number;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly AlgorithmName[];
  readonly allowDecimalSerial: boolean;
  readonly keyIdPolicy: "strict" | "relaxed";
  readonly redirectUriOptionalPrefixes: readonly string[];
  readonly characterPolicy: CharacterPolicy;
  readonly roles: RoleTable;
  readonly replay: ReplayStore;
  readonly replayWindowMs: number;
  /** Fail open instead of 503 when the shared store cannot be reached (replay and limits). */
  readonly storeFailOpen: boolean;
  readonly onStoreError?: (error: unknown) => void;
  /** A request refused as a replay, for metrics. */
  readonly onReplayRefused?: () => void;
  /** Step 10: the unattended-access limit (SPEC 8); none when switched off. */
  readonly unattended?: UnattendedAccessPolicy;
  readonly certificates: CertificateVerifier;
  readonly clientCertificate: ClientCertificatePolicy;
}

export interface RequestToCheck {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
  /** The TLS client certificate (QWAC) as base64 DER, from the socket or a trusted proxy's header. */
  readonly clientCertificate?: string;
  /** The normalised path and the role it needs, when the caller has already worked them out. */
  readonly route?: { readonly path: string; readonly role: Psd2Role | undefined };
  /** Told the TPP's organizationIdentifier as soon as its certificate is trusted (for logs of later refusals). */
  readonly observed?: { organizationId?: string };
}

export interface ClientCertificatePolicy {
  readonly mode: "none" | "request" | "require";
  /** The QWAC's organizationIdentifier must equal the QSealC's. */
  readonly requireSameOrganization: boolean;
}

export interface VerifiedRequest {
  readonly certificate: TrustedCertificate;
  readonly signature: SignatureParams;
  /** Parsed Digest values to check the body against while it streams; undefined without a body. */
  readonly digest: readonly DigestValue[] | undefined;
  readonly role: Psd2Role | undefined;
  readonly psuPresent: boolean;
  /** A reserved unattended-access slot: release it when the backend does not answer 2xx. */
  readonly slot?: HeldSlot;
}

const EMPTY_SHA256 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
const EMPTY_SHA512 =
  "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==";

/** A body-less request that carries a Digest must carry the digest of zero bytes. */
function checkEmptyBodyDigest(values: readonly DigestValue[]): Rejection | undefined {
  for (const v of values) {
    const empty = v.algorithm === "sha-256" ? EMPTY_SHA256 : EMPTY_SHA512;
    if (v.base64 !== empty) {
      const label = v.algorithm.toUpperCase();
      return reject(
        "SIGNATURE_INVALID",
        `Digest header is ${label}=${v.base64}, but the request has no body, whose digest is ${label}=${empty}`,
      );
    }
  }
  return undefined;
}

type MaybePromise<T> = T | Promise<T>;

/** Continues with `next` at once for a plain value; only a real promise costs a microtask. */
function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

interface HeaderFacts {
  readonly path: string;
  readonly signature: SignatureParams;
  readonly digest: DigestValue[] | undefined;
}

/** Steps 1–3: everything that needs only the headers. */
function checkHeaders(request: RequestToCheck, options: PipelineOptions): HeaderFacts | Rejection {
  const { headers } = request;
  // Only origin-form targets (a path): an absolute URL would route past the role table.
  if (request.target.charCodeAt(0) !== 0x2f /* / */) {
    return reject(
      "FORMAT_ERROR",
      `request target '${request.target.slice(0, 100)}' is not a path; send the path and query only, e.g. /v1/accounts`,
    );
  }
  const path = request.route?.path ?? routingPath(request.target);

  // 1. Required headers and content type.
  const requireRedirectUri = !options.redirectUriOptionalPrefixes.some((p) => underPrefix(path, p));
  const missing = checkRequiredHeaders(headers, { requireRedirectUri });
  if (missing) return missing;
  const badCharacters = checkHeaderCharacters(headers, options.characterPolicy);
  if (badCharacters) return badCharacters;

  // 2. Date within the skew.
  const date = checkDate(headers.date, options.now(), { toleranceMs: options.dateToleranceMs });
  if (isRejection(date)) return date;

  // Digest: parsed now (cheap); the body is checked as it streams.
  let digest: DigestValue[] | undefined;
  const digestHeader = headerValue(headers, "digest");
  if (digestHeader !== undefined) {
    const parsed = parseDigestHeader(digestHeader);
    if (isRejection(parsed)) return parsed;
    if (!hasBody(headers)) {
      const refusal = checkEmptyBodyDigest(parsed);
      if (refusal) return refusal;
    } else {
      digest = parsed;
    }
  }

  // 3. The Signature header.
  const signature = parseSignatureHeader(headerValue(headers, "signature"));
  if (isRejection(signature)) return signature;
  return { path, signature, digest };
}

/** Steps 5–8: what needs the trusted certificate. */
function checkSigned(
  request: RequestToCheck,
  facts: HeaderFacts,
  certificate: TrustedCertificate,
  options: PipelineOptions,
): Psd2Role | undefined | Rejection {
  const { signature } = facts;

  // 5. keyId names this certificate.
  if (options.keyIdPolicy === "strict") {
    const keyId = matchKeyId(signature.keyId, certificate.keyIdTarget, {
      allowDecimalSerial: options.allowDecimalSerial,
    });
    if (isRejection(keyId)) return keyId;
  }

  // 6. Every eligible header present is signed.
  const coverage = checkCoverage(signature.headers, request.headers);
  if (isRejection(coverage)) return coverage;

  // 7. The signature itself.
  const signingString = buildSigningString(signature.headers, request, signature);
  if (isRejection(signingString)) return signingString;
  const algorithm = resolveAlgorithm(signature.algorithm, certificate.publicKey, options.algorithms);
  if (isRejection(algorithm)) return algorithm;
  const verified = verifySigningString(
    algorithm,
    signingString,
    signature.signatureBytes,
    certificate.publicKey,
  );
  if (isRejection(verified)) return verified;

  // 8. The role this service needs.
  const role = request.route ? request.route.role : options.roles.roleFor(facts.path);
  if (role !== undefined && !certificate.identity.roles.has(role)) {
    const held = [...certificate.identity.roles].join(", ") || "none";
    return reject(
      "ROLE_INVALID",
      `${facts.path} needs the PSD2 role ${role}; the certificate and register grant ${certificate.identity.organizationId} only: ${held}`,
    );
  }
  return role;
}

/**
 * Runs steps 1–9. Synchronous whenever the certificate verdict is cached and the replay store
 * answers at once (the common case); a promise only when a step really waits.
 */
export function runChecks(
  request: RequestToCheck,
  options: PipelineOptions,
): MaybePromise<VerifiedRequest | Rejection> {
  const facts = checkHeaders(request, options);
  if (isRejection(facts)) return facts;

  // 4. The certificate verdict (cached per certificate).
  const verdict = options.certificates.verify(headerValue(request.headers, "tpp-signature-certificate")!);
  return andThen(verdict, (certificate) => {
    if (isRejection(certificate)) return certificate;
    if (request.observed) request.observed.organizationId = certificate.identity.organizationId;
    // 4b. The QWAC of an mTLS connection: trusted, and the same organisation as the QSealC.
    return andThen(checkClientCertificate(request.clientCertificate, certificate, options), (qwacRefusal) => {
      if (qwacRefusal) return qwacRefusal;
      const role = checkSigned(request, facts, certificate, options);
      if (isRejection(role)) return role;
      // 9. Replay: the same signature again inside the window.
      const replay = checkReplay(options.replay, facts.signature.signature, {
        windowMs: options.replayWindowMs,
        failOpen: options.storeFailOpen,
        onStoreError: options.onStoreError,
      });
      return andThen(replay, (fresh) => {
        if (isRejection(fresh)) {
          if (fresh.code === "SIGNATURE_INVALID") options.onReplayRefused?.();
          return fresh;
        }
        // 10. Unattended balance and transaction reads: reserve one slot of the window.
        const admitted = options.unattended?.admit({
          method: request.method,
          target: request.target,
          routingPath: facts.path,
          headers: request.headers,
          organizationId: certificate.identity.organizationId,
          now: options.now(),
        });
        return andThen(admitted, (slot) => {
          if (isRejection(slot)) return slot;
          return {
            certificate,
            signature: facts.signature,
            digest: facts.digest,
            role,
            psuPresent: request.headers["psu-ip-address"] !== undefined,
            ...(slot ? { slot } : {}),
          };
        });
      });
    });
  });
}

function checkClientCertificate(
  clientCertificate: string | undefined,
  sealCertificate: TrustedCertificate,
  options: PipelineOptions,
): MaybePromise<Rejection | undefined> {
  const policy = options.clientCertificate;
  if (policy.mode === "none") return undefined;
  if (clientCertificate === undefined) {
    if (policy.mode === "require") {
      return reject(
        "CERTIFICATE_MISSING",
        "no TLS client certificate was presented; connect with your eIDAS QWAC (mutual TLS)",
      );
    }
    return undefined;
  }
  return andThen(options.certificates.verify(clientCertificate), (qwac) => {
    if (isRejection(qwac)) return reject(qwac.code, `TLS client certificate (QWAC): ${qwac.text}`);
    if (
      policy.requireSameOrganization &&
      qwac.identity.organizationId !== sealCertificate.identity.organizationId
    ) {
      return reject(
        "CERTIFICATE_INVALID",
        `the TLS client certificate belongs to ${qwac.identity.organizationId} but the signing certificate to ${sealCertificate.identity.organizationId}; both must name the same TPP`,
      );
    }
    return undefined;
  });
}
