/**
 * The trust store and CRLs loaded together from the configured folders, replaceable as a whole
 * on reload: a reload that fails keeps the previous material.
 */

import { CrlRevocationChecker, TrustStore } from "../eidas/index.js";
import { type CrlRejection, crlCheckerFromFolder, trustStoreFromFolder } from "./folders.js";

export interface TrustMaterial {
  readonly store: TrustStore;
  readonly revocation: CrlRevocationChecker;
  /** The CRLs in the folder that are not used, and why (also among `problems`). */
  readonly rejectedCrls: readonly CrlRejection[];
  readonly problems: readonly string[];
}

/**
 * The folder's CAs and CRLs. An empty (or absent) folder is refused unless `listsToo`: then the
 * EU trusted lists supply the CAs and the folder only adds to them.
 */
export function loadTrustMaterial(
  caDir: string | undefined,
  crlDir: string | undefined = caDir,
  listsToo = false,
): TrustMaterial {
  const { store, problems } = caDir
    ? trustStoreFromFolder(caDir)
    : { store: new TrustStore([]), problems: [] };
  if (store.size === 0 && !listsToo)
    throw new Error(
      `no CA certificates found in ${caDir ?? "trust.caDir"}; put the PEM files of the QTSP CAs you accept there (or configure trust.trustedLists)`,
    );
  const crl = crlDir
    ? crlCheckerFromFolder(crlDir, store.all)
    : { checker: new CrlRevocationChecker([]), problems: [], rejected: [] };
  return {
    store,
    revocation: crl.checker,
    rejectedCrls: crl.rejected,
    problems: [...problems, ...crl.problems],
  };
}
