/**
 * A bank profile's rules (config `banks[]`) turned into the objects that apply them: the
 * RequestSigner for `signing` and the ResponseVerifier for `responses`. One place, so that egress
 * mode and `psd2-gateway sign --profile` / `verify --response` sign and check byte for byte alike.
 */

import type { BankProfileConfig } from "../config/schema.js";
import { ResponseVerifier } from "../egress/response-verifier.js";
import { TppVerifier } from "../eidas/index.js";
import { RequestSigner } from "../signature/index.js";
import { loadTrustMaterial } from "../trust/trust-material.js";
import type { Credentials } from "./credentials.js";

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

/** `undefined` when the profile does not check responses (`mode: off`). */
export function responseVerifierForProfile(
  bank: Pick<BankProfileConfig, "responses">,
  now: () => number,
): ResponseVerifier | undefined {
  const responses = bank.responses;
  if (responses.mode === "off" || !responses.caDir) return undefined;
  const trust = loadTrustMaterial(responses.caDir, responses.crlDir);
  return new ResponseVerifier({
    certificates: new TppVerifier({
      trustStore: () => trust.store,
      revocation: () => trust.revocation,
      now,
      cacheTtlMs: 300_000,
      failureTtlMs: 10_000,
      maxEntries: 100,
    }),
    certificateHeader: responses.certificateHeader,
    dateToleranceMs: responses.dateToleranceSeconds * 1000,
    algorithms: responses.algorithms,
    now,
  });
}
