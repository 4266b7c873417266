/**
 * What every trust source (CRL, OCSP responder, register, trusted list) reports about itself, in
 * one shape: for metrics, /readyz and `psd2-gateway trust status`.
 */

export type TrustSourceKind = "crl" | "ocsp" | "register" | "trusted-list";

export interface TrustSourceStatus {
  readonly kind: TrustSourceKind;
  /**
   * The URL or file it is read from; a metric label, so bounded: configured files and URLs, and
   * the distribution points and responders named by certificates of trusted CAs (at most
   * revocation.crl.maxLists and 256), never a request's own text.
   */
  readonly source: string;
  /** Epoch ms of the last successful refresh (or answer); undefined before the first. */
  readonly lastSuccess: number | undefined;
  /** Failed refreshes since start. */
  readonly failures: number;
  readonly lastError?: string;
  /** Epoch ms of the first failure in the current run of failures. */
  readonly failingSince?: number;
  /** Entries held: revoked serials, TPPs, trusted CAs, cached answers. */
  readonly size: number;
  /** Epoch ms after which the copy held proves nothing (nextUpdate); undefined when it has none. */
  readonly nextUpdate?: number;
  /** Past its nextUpdate (+ grace) or allowed age, or never loaded. */
  readonly stale: boolean;
  /** A stale source fails every request (register, trusted lists), not only some certificates. */
  readonly failsReadiness: boolean;
  /**
   * The copy held, where `source` alone does not say it: the file an EBA metadata URL named, and
   * when it was made. Not a metric label (it changes with each file).
   */
  readonly held?: string;
  /** CRLs only: where the list comes from and, once one is held, what it says of itself. */
  readonly crl?: CrlDetails;
}

export interface CrlDetails {
  /** A file in trust.crlDir, a URL in revocation.crl.urls, or a certificate's distribution point. */
  readonly origin: "file" | "configured-url" | "distribution-point";
  /** The issuer's name (RFC 2253), a trusted CA's: only lists a trusted CA signed are kept. */
  readonly issuer?: string;
  /** Epoch ms of the list's thisUpdate and nextUpdate as published (no grace added). */
  readonly thisUpdate?: number;
  readonly nextUpdate?: number;
}

/** The OCSP answers held in memory (per certificate), summed over every responder. */
export interface OcspCacheStatus {
  readonly entries: number;
  readonly maxEntries: number;
  /** Checks answered from memory, and checks that had to ask a responder. */
  readonly hits: number;
  readonly misses: number;
  /** Answers pushed out by maxEntries before they expired. */
  readonly evictions: number;
}

/** What the admin listener's /trust serves (with the time it answered). */
export interface TrustReport {
  readonly sources: readonly TrustSourceStatus[];
  /** Absent where nothing asks OCSP (egress). */
  readonly ocspCache?: OcspCacheStatus;
}

/** One document the primary of `workers > 1` fetches for its workers (app/fetch-relay.ts). */
export interface RelayedFetchStatus {
  /** Credentials removed; POST asks (OCSP) with the same URL are one row each. */
  readonly url: string;
  readonly method: "GET" | "POST";
  /** Epoch ms the copy held was fetched (or confirmed by a 304); absent when none is held. */
  readonly fetchedAt?: number;
  readonly bytes: number;
  /** Workers' asks answered, and how many of them took an upstream fetch. */
  readonly asks: number;
  readonly upstreamFetches: number;
  readonly lastError?: string;
}

/** A worker's own view, or why it gave none. */
export type WorkerTrustReport =
  | ({ readonly pid: number | undefined } & TrustReport)
  | { readonly pid: number | undefined; readonly error: string };

/** /trust on the primary of `workers > 1`: what it fetched for the workers, and each worker's view. */
export interface ClusterTrustReport {
  readonly primary: { readonly fetches: readonly RelayedFetchStatus[] };
  readonly workers: readonly WorkerTrustReport[];
}
