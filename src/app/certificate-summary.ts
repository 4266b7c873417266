/** The gateway's own certificates as logs and the expiry metric name them (both modes). */

import type { X509Certificate } from "node:crypto";

export interface CertificateSummary {
  readonly name: string;
  readonly notAfter: Date;
  readonly fingerprint: string;
}

export function summaryOf(cert: X509Certificate): CertificateSummary {
  return {
    name: commonName(cert.subject.split("\n").reverse().join(",")),
    notAfter: new Date(cert.validTo),
    fingerprint: cert.fingerprint256,
  };
}

/** The CN of a comma-joined DN, or its start when it has none. */
export function commonName(dn: string): string {
  return /(?:^|,)CN=([^,]+)/.exec(dn)?.[1] ?? dn.slice(0, 60);
}
