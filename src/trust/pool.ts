/**
 * What the trust sources contribute to the eIDAS layer, put together: the CA certificates of the
 * folders and the anchors of the trusted lists make one TrustStore, and CRLs from files are looked
 * up by issuer. A source puts its contribution under its name whenever it loads a new copy; the
 * store is rebuilt then, not when it is read (the verifier reads it per verdict, and verdicts are
 * cached), and `onChange` drops the verdicts that rested on the old one.
 */

import {
  type CrlRevocationChecker,
  type ParsedCertificate,
  type QualifiedAnchor,
  type RevocationList,
  TrustStore,
} from "../eidas/index.js";

export interface TrustContribution {
  /** CA certificates, as the store they were loaded into. */
  readonly cas?: TrustStore;
  /** CAs a trusted list names as qualified. */
  readonly anchors?: readonly QualifiedAnchor[];
  /** Verified CRLs from files. */
  readonly crls?: CrlRevocationChecker;
}

export class TrustPool {
  private readonly contributions = new Map<string, TrustContribution>();
  private store = new TrustStore([]);

  constructor(private readonly onChange: () => void = () => {}) {}

  /** Replaces what `source` contributed before. */
  put(source: string, contribution: TrustContribution): void {
    this.contributions.set(source, contribution);
    this.store = storeOf([...this.contributions.values()]);
    this.onChange();
  }

  get trustStore(): TrustStore {
    return this.store;
  }

  /** Every CA a CRL may be signed by: the folders' and the trusted lists'. */
  cas(): ParsedCertificate[] {
    return [...this.store.all, ...this.store.anchors.map((a) => a.certificate)];
  }

  /** The newest CRL of `issuer` among the files. */
  localList(issuer: ParsedCertificate): RevocationList | undefined {
    let newest: RevocationList | undefined;
    for (const { crls } of this.contributions.values()) {
      const list = crls?.listOf(issuer);
      if (list && (!newest || list.thisUpdate > newest.thisUpdate)) newest = list;
    }
    return newest;
  }
}

function storeOf(contributions: readonly TrustContribution[]): TrustStore {
  const stores = contributions.flatMap((c) => (c.cas ? [c.cas] : []));
  const anchors = contributions.flatMap((c) => c.anchors ?? []);
  // A folder's store alone is used as it is: it keeps the CA links it has verified already.
  if (stores.length === 1 && anchors.length === 0) return stores[0]!;
  return new TrustStore(
    stores.flatMap((s) => s.all),
    anchors,
  );
}
