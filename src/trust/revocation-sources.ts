/**
 * Where a certificate says its revocation status and its issuer can be fetched (RFC 5280 4.2.2.1
 * Authority Information Access, 4.2.1.13 CRL Distribution Points): OCSP responders, CRLs and the
 * issuer certificate. The certificate is attacker input and the URLs are where the gateway will
 * connect, so only short http(s) URLs come out, a few of each, and a malformed extension yields
 * nothing rather than a throw. Pure: no I/O; live-revocation.ts decides what to call. Here, not in
 * eidas/, because only the live revocation client asks where to fetch (and @peculiar/asn1-x509,
 * which reads the extensions, stays out of what the eIDAS layer loads).
 */

import { AsnConvert } from "@peculiar/asn1-schema";
import {
  AuthorityInfoAccessSyntax,
  CRLDistributionPoints,
  type GeneralName,
  id_ad_caIssuers,
  id_ad_ocsp,
  id_ce_cRLDistributionPoints,
  id_pe_authorityInfoAccess,
} from "@peculiar/asn1-x509";
import type { ParsedCertificate } from "../eidas/index.js";

export interface RevocationSources {
  /** OCSP responder URLs (AIA id-ad-ocsp), in certificate order. */
  readonly ocsp: string[];
  /** CRL URLs (the fullName URIs of each distribution point). */
  readonly crl: string[];
  /** Where the issuer certificate can be fetched (AIA id-ad-caIssuers). */
  readonly caIssuers: string[];
}

/** At most this many URLs of each kind: a certificate must not make the gateway call a long list. */
export const MAX_URLS_PER_KIND = 4;
export const MAX_URL_LENGTH = 2048;

// The extension is read with asn1js's own resource limits tightened: it is a few hundred bytes.
const PARSE_OPTIONS = { berOptions: { maxDepth: 16, maxNodes: 512 } };

/** The http(s) URLs in the AIA and CDP extensions; empty lists for an absent or malformed extension. Never throws. */
export function revocationSourcesOf(certificate: ParsedCertificate): RevocationSources {
  const ocsp: string[] = [];
  const crl: string[] = [];
  const caIssuers: string[] = [];
  for (const extension of certificate.extensions) {
    if (extension.oid === id_pe_authorityInfoAccess) {
      const descriptions = parseOrUndefined(extension.value, AuthorityInfoAccessSyntax);
      if (!descriptions) continue;
      for (const description of descriptions) {
        if (description.accessMethod === id_ad_ocsp) addUrl(ocsp, description.accessLocation);
        else if (description.accessMethod === id_ad_caIssuers) addUrl(caIssuers, description.accessLocation);
      }
    } else if (extension.oid === id_ce_cRLDistributionPoints) {
      const points = parseOrUndefined(extension.value, CRLDistributionPoints);
      if (!points) continue;
      for (const point of points) {
        // nameRelativeToCRLIssuer names a directory entry, not a URL: nothing to fetch over HTTP.
        for (const name of point.distributionPoint?.fullName ?? []) addUrl(crl, name);
      }
    }
  }
  return { ocsp, crl, caIssuers };
}

function parseOrUndefined<T>(value: Uint8Array, type: new () => T): T | undefined {
  try {
    return AsnConvert.parse(value, type, PARSE_OPTIONS);
  } catch {
    // The library throws whatever it meets on the way (TypeError, RangeError, its own errors).
    return undefined;
  }
}

// Printable ASCII without space: an IA5String may hold control characters, and a URL with them
// would reach logs and the HTTP client as written.
const PRINTABLE_URL = /^[\x21-\x7e]+$/;

function addUrl(into: string[], name: GeneralName | undefined): void {
  const uri = name?.uniformResourceIdentifier;
  if (typeof uri !== "string" || into.length >= MAX_URLS_PER_KIND) return;
  if (uri.length > MAX_URL_LENGTH || !PRINTABLE_URL.test(uri)) return;
  if (!/^https?:\/\//i.test(uri) || !URL.canParse(uri)) return;
  // ldap:, file: and the rest are ignored above: the gateway fetches over HTTP only.
  if (!into.includes(uri)) into.push(uri);
}
