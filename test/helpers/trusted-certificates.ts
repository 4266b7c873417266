/**
 * A certificate verifier over a trust folder's CAs and CRLs: how the tests judge the QSealC a signed
 * answer names, as a TPP's client would.
 */

import { TppVerifier } from "../../src/eidas/index.js";
import { loadTrustMaterial } from "../../src/trust/trust-material.js";

export function trustedCertificatesIn(trustDir: string): TppVerifier {
  const trust = loadTrustMaterial(trustDir);
  return new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    cacheTtlMs: 60_000,
    failureTtlMs: 1_000,
    maxEntries: 10,
  });
}
