/**
 * A bank profile's rules (config `banks[]`) turned into the objects that apply them: the
 * RequestSigner for `signing` and the response verifier for `responses`, both asked of its dialect unit. One place, so that egress
 * mode and `psd2-gateway sign --profile` / `verify --response` sign and check byte for byte alike.
 */

import {
  type CertificateVerifier,
  dialectUnit,
  type RequestSigning,
  type ResponseVerifying,
  StepsResponseVerifier,
} from "../checks/index.js";
import type { BankProfileConfig } from "../config/schema.js";
import { TppVerifier, type TrustStore, type ValidationReport } from "../eidas/index.js";
import type { DocumentFetcher } from "../trust/http-fetch.js";
import { loadTrustMaterial } from "../trust/trust-material.js";
import type { Credentials } from "./credentials.js";
import { liveRevocationOf } from "./trust.js";

/**
 * The profile's request signer in its dialect (`signing.dialect`), made by the dialect's unit
 * (src/checks/dialects/). `headerEncoding` applies to draft-cavage (RFC 9421 signs ASCII values only).
 */
export function profileSigner(
  bank: Pick<BankProfileConfig, "signing" | "url">,
  qseal: Pick<Credentials, "privateKey" | "certificateDer">,
  headerEncoding: "latin1" | "utf-8" = "latin1",
): RequestSigning {
  const unit = dialectUnit(bank.signing.dialect);
  if (!unit) throw new Error(`'${bank.signing.dialect}' is not a signing dialect of this build`);
  return unit.signer({
    privateKey: qseal.privateKey,
    certificateDer: qseal.certificateDer,
    url: bank.url,
    rules: bank.signing,
    headerEncoding,
  });
}

/**
 * A profile's response verifier, with the CRL refreshes of its revocation checks to stop, and the
 * trust store it checks the bank's certificate against (egress's evidence keeps the path's CAs).
 */
export type ProfileResponseVerifier = ResponseVerifying & { stop(): void; readonly trustStore: TrustStore };

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
  /** Each validation report of a bank's certificate (egress's evidence keeps the one a record names). */
  onReport?: (report: ValidationReport) => void,
): ProfileResponseVerifier | undefined {
  const responses = bank.responses;
  if (responses.mode === "off" || !responses.caDir) return undefined;
  // Config refuses such a profile when it loads (schema.ts); this guards a profile built by hand.
  if (!dialectUnit(bank.signing.dialect)?.responseChecks)
    throw new Error(`the signing dialect '${bank.signing.dialect}' has no response checks in this build`);
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
    // The bank's answers are judged as signatures (qseal); a QWAC is for its TLS, not its seal.
    kinds: { qseal: responses.certificateKinds, qwac: ["web"] },
    now,
    cacheTtlMs: 300_000,
    failureTtlMs: 10_000,
    maxEntries: 100,
    ...(onReport ? { onReport } : {}),
  });
  return Object.assign(verifierOfDialect(bank, certificates, now), {
    stop: () => live.crls.stop(),
    trustStore: trust.store,
  });
}

/**
 * The profile's response checks, asked of its dialect's unit and built once: one long-lived chain
 * per profile, whose step counts egress reports (`psd2_gateway_egress_response_steps_total`).
 */
export function verifierOfDialect(
  bank: Pick<BankProfileConfig, "responses" | "signing">,
  certificates: CertificateVerifier,
  now: () => number,
): ResponseVerifying {
  const responses = bank.responses;
  const unit = dialectUnit(bank.signing.dialect);
  if (!unit?.responseChecks)
    throw new Error(`the signing dialect '${bank.signing.dialect}' has no response checks in this build`);
  return new StepsResponseVerifier(
    unit.responseChecks({
      certificates,
      certificateHeader: responses.certificateHeader,
      dateToleranceMs: responses.dateToleranceSeconds * 1000,
      now,
      responses,
      signing: bank.signing,
    }),
  );
}
