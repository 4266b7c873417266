/**
 * The trust store and CRLs loaded together from the configured folders, replaceable as a whole
 * on reload: a reload that fails keeps the previous material.
 */

import type { CrlRevocationChecker, TrustStore } from "../eidas/index.js";
import { crlCheckerFromFolder, trustStoreFromFolder } from "./folders.js";

export interface TrustMaterial {
  readonly store: TrustStore;
  readonly revocation: CrlRevocationChecker;
  readonly problems: readonly string[];
}

export function loadTrustMaterial(caDir: string, crlDir: string = caDir): TrustMaterial {
  const { store, problems } = trustStoreFromFolder(caDir);
  if (store.size === 0)
    throw new Error(
      `no CA certificates found in ${caDir}; put the PEM files of the QTSP CAs you accept there`,
    );
  const crl = crlCheckerFromFolder(crlDir, store.all);
  return { store, revocation: crl.checker, problems: [...problems, ...crl.problems] };
}
