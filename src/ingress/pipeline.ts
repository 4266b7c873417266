/**
 * The ordered checks of ingress mode (DESIGN.md): cheap first, cached work before fresh work,
 * crypto last. Each step returns a value for the next or a Rejection; nothing throws.
 */

import type { KeyObject } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Psd2Role } from "../config/schema.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import type { ReplayStore } from "../limits/replay.js";
import { checkReplay } from "../limits/replay.js";
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
import { pathOf, type RoleTable, underPrefix } from "./routes.js";

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
  readonly certificates: CertificateVerifier;
  readonly clientCertificate: ClientCertificatePolicy;
}

export interface RequestToCheck {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
  /** The TLS client certificate (QWAC) as base64 DER, from the socket or a trusted proxy's header. */
  readonly clientCertificate?: string;
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

export async function runChecks(
  request: RequestToCheck,
  options: PipelineOptions,
): Promise<VerifiedRequest | Rejection> {
  const { headers } = request;
  const path = pathOf(request.target);

  // 1. Required headers and content type.
  const requireRedirectUri = !options.redirectUriOptionalPrefixes.some((p) => underPrefix(path, p));
  const missing = checkRequiredHeaders(headers, { requireRedirectUri });
  if (missing) return missing;
  const badCharacters = checkHeaderCharacters(headers, options.characterPolicy);
  if (badCharacters) return badCharacters;

  // 2. Date within the skew.
  const now = options.now();
  const date = checkDate(headers.date, now, { toleranceMs: options.dateToleranceMs });
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

  // 4. The certificate verdict (cached per certificate).
  const certificate = await options.certificates.verify(headerValue(headers, "tpp-signature-certificate")!);
  if (isRejection(certificate)) return certificate;

  // 4b. The QWAC of an mTLS connection: trusted, and the same organisation as the QSealC.
  const qwacRefusal = await checkClientCertificate(request.clientCertificate, certificate, options);
  if (qwacRefusal) return qwacRefusal;

  // 5. keyId names this certificate.
  if (options.keyIdPolicy === "strict") {
    const keyId = matchKeyId(signature.keyId, certificate.keyIdTarget, {
      allowDecimalSerial: options.allowDecimalSerial,
    });
    if (isRejection(keyId)) return keyId;
  }

  // 6. Every eligible header present is signed.
  const coverage = checkCoverage(signature.headers, headers);
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
  const role = options.roles.roleFor(path);
  if (role !== undefined && !certificate.identity.roles.has(role)) {
    const held = [...certificate.identity.roles].join(", ") || "none";
    return reject(
      "ROLE_INVALID",
      `${path} needs the PSD2 role ${role}; the certificate and register grant ${certificate.identity.organizationId} only: ${held}`,
    );
  }

  // 9. Replay: the same signature again inside the window.
  const fresh = await checkReplay(options.replay, signature.signature, options.replayWindowMs);
  if (isRejection(fresh)) return fresh;

  return { certificate, signature, digest, role, psuPresent: headers["psu-ip-address"] !== undefined };
}

async function checkClientCertificate(
  clientCertificate: string | undefined,
  sealCertificate: TrustedCertificate,
  options: PipelineOptions,
): Promise<Rejection | undefined> {
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
  const qwac = await options.certificates.verify(clientCertificate);
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
}
