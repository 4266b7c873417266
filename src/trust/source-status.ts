/**
 * What every trust source (CRL, OCSP responder, register, trusted list) reports about itself, in
 * one shape: for metrics, /readyz and `psd2-gateway trust status`.
 */

export type TrustSourceKind = "crl" | "ocsp" | "register" | "trusted-list";

export interface TrustSourceStatus {
  readonly kind: TrustSourceKind;
  /** The URL or file it is read from. */
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
}
