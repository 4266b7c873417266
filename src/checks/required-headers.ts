/** Step 1: the headers every TPP request must carry (SPEC 4 General, 5.2, 5.9) and JSON bodies only (SPEC 1.3). */

import type { IncomingHttpHeaders } from "node:http";
import { isIP } from "node:net";
import { type Rejection, reject } from "../errors.js";
import { Kept } from "../kept.js";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** What a dialect's unit adds to the headers every request carries (unit.ts `requiredHeaders`). */
export interface DialectHeaders {
  requiredHeaders?(headers: IncomingHttpHeaders, withBody: boolean): Rejection | undefined;
}

export interface RequiredHeaderOptions {
  readonly requireRedirectUri: boolean;
}

/** Whether the request carries a body, judged from the framing headers as HTTP/1.1 does. */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = headers["content-length"];
  return length !== undefined && length !== "0";
}

/**
 * The headers every request carries, and those its signing dialect's unit requires (its signature
 * header itself was found by the `dialect` step).
 */
export function checkRequiredHeaders(
  headers: IncomingHttpHeaders,
  dialect: DialectHeaders | undefined,
  options: RequiredHeaderOptions,
): Rejection | undefined {
  const requestId = single(headers["x-request-id"]);
  if (requestId === undefined)
    return reject("FORMAT_ERROR", "X-Request-ID header is missing; send a fresh UUID with every request");
  if (!UUID.test(requestId)) {
    return reject(
      "FORMAT_ERROR",
      `X-Request-ID '${requestId.slice(0, 64)}' is not a UUID; send e.g. 99391c7e-ad88-49ec-a2ad-99ddcb1f7721`,
    );
  }
  if (options.requireRedirectUri) {
    const redirect = single(headers["tpp-redirect-uri"]);
    if (redirect === undefined) {
      return reject(
        "FORMAT_ERROR",
        "TPP-Redirect-URI header is missing; it is required on every request (SPEC 4, 5.11)",
      );
    }
    if (!isAbsoluteUri(redirect)) {
      return reject("FORMAT_ERROR", `TPP-Redirect-URI '${redirect.slice(0, 100)}' is not an absolute URI`);
    }
  }
  // Its presence marks the PSU as present, lifting the unattended limit (SPEC 8): an empty or
  // made-up value must not do that.
  const psuIp = single(headers["psu-ip-address"]);
  if (psuIp !== undefined && isIP(psuIp) === 0) {
    return reject(
      "FORMAT_ERROR",
      `PSU-IP-Address '${psuIp.slice(0, 64)}' is not an IP address; send the PSU's IPv4 or IPv6 address, or no PSU-IP-Address when the PSU is not present (SPEC 8)`,
    );
  }
  const withBody = hasBody(headers);
  const ofDialect = dialect?.requiredHeaders?.(headers, withBody);
  if (ofDialect) return ofDialect;
  if (withBody) {
    const type = headers["content-type"];
    if (type === undefined || !JSON_TYPE.test(type)) {
      return reject(
        "FORMAT_ERROR",
        `Content-Type '${type ?? "(none)"}' is not accepted; all payloads are JSON (SPEC 1.3): send Content-Type: application/json`,
      );
    }
  }
  return undefined;
}

/** SPEC 5.2: the QSealC in TPP-Signature-Certificate (draft-cavage, RFC 9421; a JWS carries it in x5c). */
export function certificateHeaderMissing(headers: IncomingHttpHeaders): Rejection | undefined {
  if (headers["tpp-signature-certificate"] !== undefined) return undefined;
  return reject(
    "CERTIFICATE_MISSING",
    "TPP-Signature-Certificate header is missing; send the signing certificate as base64 DER (SPEC 5.2)",
  );
}

/** SPEC 5.9: a body bound by the Digest header (RFC 3230), as draft-cavage and JAdES bind it. */
export function digestHeaderMissing(headers: IncomingHttpHeaders): Rejection | undefined {
  if (headers.digest !== undefined) return undefined;
  return reject(
    "FORMAT_ERROR",
    "Digest header is missing; a request with a body must carry SHA-256=<base64 of the body's SHA-256> (SPEC 5.9)",
  );
}

/**
 * URL.canParse, with the URIs that passed kept (a TPP sends one per session, on every call of it):
 * at most 1,024 of at most MAX_URI_KEPT characters.
 */
function isAbsoluteUri(value: string): boolean {
  if (urisPassed.get(value)) return true;
  if (!URL.canParse(value)) return false;
  if (value.length <= MAX_URI_KEPT) urisPassed.keep(value, true);
  return true;
}

const urisPassed = new Kept<string, true>(1024);
const MAX_URI_KEPT = 1024;

/** Node joins repeated custom headers with ", "; a list only appears for set-cookie-like names. */
function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}
