/**
 * The Digest header (RFC 3230): how draft-cavage and JAdES bind the body to their signature, which
 * covers the header. One step both units place in their `digest` slot; the chain places it once.
 * The header is parsed in the head; the body is hashed as it streams, its last chunk held back
 * until the digest matches.
 */

import { isRejection, type Rejection, reject } from "../../errors.js";
import { type DigestValue, DigestVerifier, headerValue, parseDigestHeader } from "../../signature/index.js";
import type { CheckContext } from "../context.js";
import { hasBody } from "../required-headers.js";
import type { Step } from "../runner.js";

const EMPTY_SHA256 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
const EMPTY_SHA512 =
  "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==";

const EMPTY_DIGEST_HEADER = `SHA-256=${EMPTY_SHA256}`;

/** A body-less request that carries a Digest must carry the digest of zero bytes. */
function checkEmptyBodyDigest(values: readonly DigestValue[]): Rejection | undefined {
  for (const v of values) {
    const empty = v.algorithm === "sha-256" ? EMPTY_SHA256 : EMPTY_SHA512;
    if (v.base64 !== empty) {
      const label = v.algorithm.toUpperCase();
      return reject(
        "SIGNATURE_INVALID",
        `Digest header is ${label}=${v.base64}, but the request has no body, whose digest is ${label}=${empty}`,
      );
    }
  }
  return undefined;
}

/**
 * The body phases of a digest step (Digest, Content-Digest): the body hashed as it streams into the
 * verifier its head phase put in the context's slot, its last chunk held back until it matches.
 */
export const BODY_DIGEST_PHASES: Pick<Step<CheckContext>, "body" | "bodyEnd"> = {
  body: (c, chunk) => {
    c.digestVerifier?.update(chunk);
    return undefined;
  },
  bodyEnd: (c) => {
    const verdict = c.digestVerifier?.finish();
    return verdict === undefined || verdict === true ? undefined : verdict;
  },
};

export const DIGEST_STEP: Step<CheckContext> = {
  // Parsed here (cheap); the body itself is hashed as it streams to the backend.
  name: "digest",
  dialects: ["cavage", "jades"],
  run: (c) => {
    const header = headerValue(c.headers, "digest");
    if (header === undefined) return undefined;
    // What nearly every body-less request sends: the digest of zero bytes, exactly so written.
    if (header === EMPTY_DIGEST_HEADER && !hasBody(c.headers)) return undefined;
    const parsed = parseDigestHeader(header);
    if (isRejection(parsed)) return parsed;
    if (!hasBody(c.headers)) return checkEmptyBodyDigest(parsed);
    c.digest = parsed;
    // The body digest's slot, which only the request's own dialect's digest step fills.
    c.digestVerifier = new DigestVerifier(parsed);
    return undefined;
  },
  ...BODY_DIGEST_PHASES,
};
