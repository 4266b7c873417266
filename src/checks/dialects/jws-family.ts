/**
 * JAdES and UK Open Banking both send a detached JWS in `x-jws-signature`: which of the two a
 * request's is, guessed from the protected header's text (UK OB's `crit` names are URIs under
 * openbanking.org.uk). Only a guess at the family: the dialect's own parse step reads the header
 * strictly and refuses what does not belong to it, so a header disguised here fails there. When a
 * path accepts both, its configured preference decides among the dialects the guess allows.
 */

import type { IncomingHttpHeaders } from "node:http";

const UK_OB_CLAIM = "http://openbanking.org.uk/";

/** Long enough for a header with an x5c chain of a few certificates; the parse step bounds it too. */
const MAX_PROTECTED_HEADER_CHARS = 32 * 1024;

// The last value guessed: both units ask about the same header of one request, decoded once.
let lastValue: string | undefined;
let lastIsUkOb = false;

/** Whether `x-jws-signature` holds a JWS of UK Open Banking's (true) or JAdES's (false); undefined without one. */
export function jwsIsUkOb(headers: IncomingHttpHeaders): boolean | undefined {
  const value = headers["x-jws-signature"];
  if (typeof value !== "string") return undefined;
  if (value === lastValue) return lastIsUkOb;
  const dot = value.indexOf(".");
  const encoded = dot < 0 ? value : value.slice(0, dot);
  const isUkOb =
    encoded.length <= MAX_PROTECTED_HEADER_CHARS &&
    Buffer.from(encoded, "base64url").toString("latin1").replaceAll("\\/", "/").includes(UK_OB_CLAIM);
  lastValue = value;
  lastIsUkOb = isUkOb;
  return isUkOb;
}
