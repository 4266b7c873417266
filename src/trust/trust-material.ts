/**
 * The trust store and CRLs loaded together from the configured folders, replaceable as a whole
 * on reload: a reload that fails keeps the previous material. As a trust source, the folders
 * contribute their CAs and CRLs to the TrustPool and report each CRL file.
 */

import { CrlRevocationChecker, TrustStore } from "../eidas/index.js";
import { CrlFileSources } from "./crl-files.js";
import { type CrlRejection, crlCheckerFromFolder, trustStoreFromFolder } from "./folders.js";
import type { TrustPool } from "./pool.js";
import type { TrustLogger, TrustSource } from "./source.js";
import type { TrustSourceStatus } from "./source-status.js";

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

export interface TrustFolderSourceOptions {
  readonly caDir: string | undefined;
  /** caDir unless set. */
  readonly crlDir: string | undefined;
  /** The EU trusted lists are configured too: the CA folder may be empty or absent. */
  readonly listsToo: boolean;
  /** Past nextUpdate by more than this, a CRL file proves nothing. */
  readonly graceMs: number;
  readonly pool: TrustPool;
  readonly log: TrustLogger;
  readonly now?: () => number;
}

/** The CA and CRL folders (trust.caDir, trust.crlDir): read at start and again on reload, with the TLS certificate. */
export class TrustFolderSource implements TrustSource {
  readonly name: string;
  private readonly crlFiles: CrlFileSources;

  constructor(private readonly options: TrustFolderSourceOptions) {
    this.name = options.caDir ?? "trust folders";
    this.crlFiles = new CrlFileSources({
      graceMs: options.graceMs,
      ...(options.now ? { now: options.now } : {}),
    });
  }

  async start(): Promise<void> {
    this.prepareReload()();
  }

  prepareReload(): () => void {
    const { caDir, crlDir, listsToo } = this.options;
    const material = loadTrustMaterial(caDir, crlDir, listsToo);
    return () => {
      this.options.pool.put(this.name, { cas: material.store, crls: material.revocation });
      this.crlFiles.loaded(material.revocation.lists, material.rejectedCrls);
      logLoaded(this.options.log, material);
    };
  }

  status(): TrustSourceStatus[] {
    return this.crlFiles.statuses;
  }

  stop(): void {}
}

function logLoaded(log: TrustLogger, material: TrustMaterial): void {
  log.info(
    {
      cas: material.store.all.map((c) => ({
        subject: c.subjectRfc2253,
        sha256: c.sha256Fingerprint,
        notAfter: c.notAfter.toISOString(),
      })),
      crls: material.revocation.lists.map((l) => ({
        source: l.source,
        revoked: l.revoked.size,
        nextUpdate: l.nextUpdate?.toISOString(),
      })),
    },
    "trust store loaded",
  );
  for (const problem of material.problems) log.warn(problem);
}
