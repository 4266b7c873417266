/** The in-process benches' certificate verifier: the development PKI's trust and register, as the gateway builds it. */

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { TppRegister, TppVerifier } from "../src/eidas/index.js";
import { parseRegisterDocument } from "../src/trust/formats/register-document.js";
import { loadTrustMaterial } from "../src/trust/trust-material.js";

export interface DevVerifiers {
  readonly pki: DevPki;
  readonly pkiDir: string;
  /** A verifier whose verdicts live `cacheTtlMs` (0 stores nothing: every call does the whole check). */
  verifierWith(cacheTtlMs: number): TppVerifier;
}

export async function devVerifiers(prefix: string): Promise<DevVerifiers> {
  const pkiDir = mkdtempSync(join(tmpdir(), prefix));
  const pki = await generateDevPki(pkiDir);
  const trust = loadTrustMaterial(pki.paths.trustDir);
  const register = new TppRegister(3_600_000);
  register.replace(parseRegisterDocument(readFileSync(pki.paths.register, "utf8")), "bench");
  return {
    pki,
    pkiDir,
    verifierWith: (cacheTtlMs) =>
      new TppVerifier({
        trustStore: () => trust.store,
        revocation: () => trust.revocation,
        register,
        cacheTtlMs,
        failureTtlMs: 0,
        maxEntries: 1000,
      }),
  };
}
