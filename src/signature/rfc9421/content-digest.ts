/**
 * The Content-Digest header (RFC 9530 section 2): an RFC 8941 Dictionary of byte sequences keyed by
 * algorithm, e.g. `sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:`. Computed incrementally
 * over the raw body bytes as they stream in, like digest.ts's Digest header.
 */

import { hash } from "node:crypto";
import { type Rejection, reject } from "../../errors.js";
import { BodyDigestVerifier } from "../digest.js";
import { isInnerList, parseDictionary } from "./structured-fields.js";

export type ContentDigestAlgorithm = "sha-256" | "sha-512";

const NODE_HASH: Record<ContentDigestAlgorithm, string> = { "sha-256": "sha256", "sha-512": "sha512" };
const LENGTH: Record<ContentDigestAlgorithm, number> = { "sha-256": 32, "sha-512": 64 };

/** A Content-Digest carries one value per algorithm; a few members are plenty for agility. */
export const CONTENT_DIGEST_MAX_LENGTH = 1024;
const BOUNDS = { members: 8, innerItems: 0, params: 4, refuseDuplicates: true };

export interface ContentDigestValue {
  readonly algorithm: ContentDigestAlgorithm;
  readonly bytes: Buffer;
}

const EXAMPLE = "send sha-256=:<base64 of the SHA-256 of the body>:";

/**
 * Parses a Content-Digest header. Algorithms we do not implement (md5, sha, unixsum, …: RFC 9530
 * registers them as deprecated or insecure) are skipped, as RFC 9530 lets a recipient ignore any
 * digest, but at least one sha-256 or sha-512 value must be present. Keys are case-sensitive in
 * RFC 8941, so `SHA-256` is not a key at all and the header is refused as malformed.
 */
export function parseContentDigest(
  raw: string | readonly string[] | undefined,
): ContentDigestValue[] | Rejection {
  const text = typeof raw === "object" ? raw.join(", ") : raw;
  if (text === undefined || text.trim().length === 0)
    return reject("FORMAT_ERROR", `Content-Digest header is missing; ${EXAMPLE}`);
  if (text.length > CONTENT_DIGEST_MAX_LENGTH)
    return reject(
      "FORMAT_ERROR",
      `Content-Digest header is ${text.length} characters long; at most ${CONTENT_DIGEST_MAX_LENGTH} are accepted`,
    );
  const dict = parseDictionary(text, "Content-Digest header", BOUNDS);
  if (!(dict instanceof Map)) return dict;
  const values: ContentDigestValue[] = [];
  for (const [key, member] of dict) {
    if (key !== "sha-256" && key !== "sha-512") continue;
    if (isInnerList(member) || !Buffer.isBuffer(member.value))
      return reject("FORMAT_ERROR", `Content-Digest header ${key} value is not a byte sequence; ${EXAMPLE}`);
    if (member.value.length !== LENGTH[key])
      return reject(
        "FORMAT_ERROR",
        `Content-Digest header ${key} value decodes to ${member.value.length} bytes; a ${key} hash is ${LENGTH[key]} bytes`,
      );
    values.push({ algorithm: key, bytes: member.value });
  }
  if (values.length === 0)
    return reject(
      "FORMAT_ERROR",
      `Content-Digest header '${text.slice(0, 64)}' has no sha-256 or sha-512 value; ${EXAMPLE}`,
    );
  return values;
}

/** Hashes a body chunk by chunk and checks it against every value of its Content-Digest at the end. */
export class ContentDigestVerifier extends BodyDigestVerifier<ContentDigestValue> {
  protected mismatch(want: ContentDigestValue, got: Buffer, received: number): Rejection {
    return reject(
      "SIGNATURE_INVALID",
      `Content-Digest header is ${want.algorithm}=:${want.bytes.toString("base64")}:, but the ${received}-byte body hashes to ${want.algorithm}=:${got.toString("base64")}:; compute the digest over the exact content bytes sent (after any Content-Encoding)`,
    );
  }
}

/** Verifies a complete body in one call. */
export function verifyContentDigest(
  raw: string | readonly string[] | undefined,
  body: Uint8Array,
): true | Rejection {
  const values = parseContentDigest(raw);
  if (!Array.isArray(values)) return values;
  const verifier = new ContentDigestVerifier(values);
  verifier.update(body);
  return verifier.finish();
}

/** The Content-Digest header value for a body, e.g. `sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:`. */
export function computeContentDigest(
  body: Uint8Array | string,
  algorithm: ContentDigestAlgorithm = "sha-256",
): string {
  return `${algorithm}=:${hash(NODE_HASH[algorithm], body, "base64")}:`;
}
