/**
 * A bank profile's rules (config `banks[]`) turned into the objects that apply them: the
 * RequestSigner for `signing` and the ResponseVerifier for `responses`. One place, so that egress
 * mode and `psd2-gateway sign --profile` / `verify --response` sign and check byte for byte alike.
 */

import type { BankProfileConfig } from "../config/schema.js";
import type { RequestSigning } from "../egress/handler.js";
import { JadesResponseVerifier } from "../egress/jades-response-verifier.js";
import { ResponseVerifier, type ResponseVerifying } from "../egress/response-verifier.js";
import { Rfc9421ResponseVerifier } from "../egress/rfc9421-response-verifier.js";
import { UkObResponseVerifier } from "../egress/ukob-response-verifier.js";
import { parseCertificate, TppVerifier } from "../eidas/index.js";
import { isRejection } from "../errors.js";
import { buildKeyId, keyIdTargetFromDer, RequestSigner } from "../signature/index.js";
import { JadesRequestSigner } from "../signature/jws/request-signer.js";
import { UkObRequestSigner } from "../signature/jws/ukob-request-signer.js";
import { Rfc9421RequestSigner } from "../signature/rfc9421/request-signer.js";
import type { DocumentFetcher } from "../trust/http-fetch.js";
import { loadTrustMaterial } from "../trust/trust-material.js";
import type { Credentials } from "./credentials.js";
import { liveRevocationOf } from "./trust.js";

/**
 * The profile's request signer in its dialect (`signing.dialect`): draft-cavage's RequestSigner, or
 * RFC 9421's. `headerEncoding` applies to draft-cavage (RFC 9421 signs ASCII values only).
 */
export function profileSigner(
  bank: Pick<BankProfileConfig, "signing" | "url">,
  qseal: Pick<Credentials, "privateKey" | "certificateDer">,
  headerEncoding: "latin1" | "utf-8" = "latin1",
): RequestSigning {
  const rules = bank.signing;
  if (rules.dialect === "rfc9421") {
    return new Rfc9421RequestSigner({
      privateKey: qseal.privateKey,
      certificate: qseal.certificateDer,
      ...(rules.rfc9421.algorithm ? { algorithm: rules.rfc9421.algorithm } : {}),
      ...(rules.keyId.value ? { keyid: rules.keyId.value } : {}),
      scheme: bank.url.toLowerCase().startsWith("http:") ? "http" : "https",
      coverWhenPresent: rules.rfc9421.headers,
    });
  }
  if (rules.dialect === "jades") {
    return new JadesRequestSigner({
      privateKey: qseal.privateKey,
      certificateChain: [qseal.certificateDer],
      ...(rules.jades.algorithm ? { algorithm: rules.jades.algorithm } : {}),
      ...(rules.jades.kid ? { kid: rules.jades.kid } : {}),
      payloadStyle: rules.jades.payloadStyle,
      signedWhenPresent: rules.jades.headers,
    });
  }
  if (rules.dialect === "uk-ob") {
    const parsed = parseCertificate(qseal.certificateDer);
    const organization = isRejection(parsed) ? undefined : parsed.organizationIdentifier;
    const iss = rules.ukOb.iss ?? organization;
    if (iss === undefined)
      throw new Error("the QSealC names no organizationIdentifier: set signing.ukOb.iss");
    return new UkObRequestSigner({
      privateKey: qseal.privateKey,
      certificate: qseal.certificateDer,
      kid: rules.ukOb.kid ?? buildKeyId(keyIdTargetFromDer(qseal.certificateDer)),
      iss,
      tan: rules.ukOb.tan,
      algorithm: rules.ukOb.algorithm,
      b64False: rules.ukOb.b64False,
    });
  }
  return signerForProfile(bank, qseal, headerEncoding);
}

/** The draft-cavage signer of a profile's `signing` rules. */
export function signerForProfile(
  bank: Pick<BankProfileConfig, "signing">,
  qseal: Pick<Credentials, "privateKey" | "certificateDer">,
  /**
   * `latin1` when the header values come from Node's HTTP server (one char per byte, the bytes the
   * application sent); `utf-8` when they are text, as on a command line.
   */
  headerEncoding: "latin1" | "utf-8" = "latin1",
): RequestSigner {
  const rules = bank.signing;
  return new RequestSigner({
    privateKey: qseal.privateKey,
    certificate: qseal.certificateDer,
    ...(rules.algorithm ? { algorithm: rules.algorithm } : {}),
    ...(rules.algorithmToken ? { algorithmToken: rules.algorithmToken } : {}),
    ...(rules.keyId.value ? { keyId: rules.keyId.value } : {}),
    keyIdSpelling: rules.keyId,
    headers: rules.headers,
    digestAlgorithms: rules.digest.algorithms,
    digestToken: rules.digest.token,
    digestOnEmptyBody: rules.digest.emptyBody,
    certificateHeader: rules.certificateHeader,
    headerEncoding,
  });
}

/** A profile's response verifier, with the CRL refreshes of its revocation checks to stop. */
export type ProfileResponseVerifier = ResponseVerifying & { stop(): void };

/**
 * `undefined` when the profile does not check responses (`mode: off`). The bank's certificate and
 * its CAs are checked for revocation as ingress checks a TPP's (`responses.revocation`: OCSP, CRL
 * distribution points, `crl.urls`, the CRL files of `crlDir`; fail closed unless `softFail`).
 */
export function responseVerifierForProfile(
  bank: Pick<BankProfileConfig, "responses" | "signing">,
  now: () => number,
  log?: (message: string, error?: boolean) => void,
  /** What CRLs and OCSP are fetched with: fetchDocument by default, the primary's relay in a cluster worker. */
  fetch?: DocumentFetcher,
): ProfileResponseVerifier | undefined {
  const responses = bank.responses;
  if (responses.mode === "off" || !responses.caDir) return undefined;
  const trust = loadTrustMaterial(responses.caDir, responses.crlDir);
  const live = liveRevocationOf(responses.revocation, {
    cas: () => trust.store.all,
    localList: (issuer) => trust.revocation.listOf(issuer),
    now,
    onChange: () => certificates.invalidate(),
    ...(log ? { log } : {}),
    ...(fetch ? { fetch } : {}),
  });
  // The disk cache now (an unreadable folder fails the profile's load); configured CRLs in the background.
  live.crls.loadFromDisk();
  void live.crls.pin(responses.revocation.crl.urls);
  const certificates = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => live.revocation,
    now,
    cacheTtlMs: 300_000,
    failureTtlMs: 10_000,
    maxEntries: 100,
  });
  return Object.assign(verifierOfDialect(bank, certificates, now), { stop: () => live.crls.stop() });
}

function verifierOfDialect(
  bank: Pick<BankProfileConfig, "responses" | "signing">,
  certificates: TppVerifier,
  now: () => number,
): ResponseVerifying {
  const responses = bank.responses;
  if (bank.signing.dialect === "rfc9421") {
    return new Rfc9421ResponseVerifier({
      certificates,
      certificateHeader: responses.certificateHeader,
      dateToleranceMs: responses.dateToleranceSeconds * 1000,
      algorithms: responses.rfc9421Algorithms,
      profile: responses.rfc9421Profile,
      now,
    });
  }
  if (bank.signing.dialect === "uk-ob") {
    return new UkObResponseVerifier({
      certificates,
      dateToleranceMs: responses.dateToleranceSeconds * 1000,
      algorithms: responses.ukObAlgorithms,
      tan: responses.ukObTan,
      allowB64False: responses.ukObAllowB64False,
      now,
    });
  }
  if (bank.signing.dialect === "jades") {
    return new JadesResponseVerifier({
      certificates,
      dateToleranceMs: responses.dateToleranceSeconds * 1000,
      algorithms: responses.jadesAlgorithms,
      payloadStyle: bank.signing.jades.payloadStyle,
      now,
    });
  }
  return new ResponseVerifier({
    certificates,
    certificateHeader: responses.certificateHeader,
    dateToleranceMs: responses.dateToleranceSeconds * 1000,
    algorithms: responses.algorithms,
    now,
  });
}
