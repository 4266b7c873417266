/**
 * The Digest header (RFC 3230, algorithms from RFC 5843): `SHA-256=<base64>`, possibly several
 * comma-separated values. Computed incrementally over the raw body bytes as they stream in.
 */

import { createHash, type Hash, hash, timingSafeEqual } from "node:crypto";
import { type Rejection, reject } from "../errors.js";
import { isBase64 } from "./base64.js";

export type DigestAlgorithm = "sha-256" | "sha-512";

const NODE_HASH: Record<DigestAlgorithm, string> = { "sha-256": "sha256", "sha-512": "sha512" };
const LABEL: Record<DigestAlgorithm, string> = { "sha-256": "SHA-256", "sha-512": "SHA-512" };
const LENGTH: Record<DigestAlgorithm, number> = { "sha-256": 32, "sha-512": 64 };

export interface DigestValue {
  readonly algorithm: DigestAlgorithm;
  /** The base64 text as sent. */
  readonly base64: string;
  readonly bytes: Buffer;
}

/**
 * Parses a Digest header. Algorithm tokens are case-insensitive; values of algorithms we do not
 * implement (MD5, UNIXsum, …) are skipped, as RFC 3230 allows, but at least one SHA-256 or
 * SHA-512 value must be present.
 */
export function parseDigestHeader(raw: string | undefined): DigestValue[] | Rejection {
  if (raw === undefined || raw.trim().length === 0) {
    return reject(
      "FORMAT_ERROR",
      "Digest header is missing; send SHA-256=<base64 of the SHA-256 of the body>",
    );
  }
  if (raw.length > 1024)
    return reject(
      "FORMAT_ERROR",
      `Digest header is ${raw.length} characters long; at most 1024 are accepted`,
    );
  const values: DigestValue[] = [];
  const seen = new Set<string>();
  for (const part of raw.split(",")) {
    const item = part.trim();
    if (item.length === 0) continue;
    const eq = item.indexOf("=");
    if (eq <= 0)
      return reject(
        "FORMAT_ERROR",
        `Digest header item '${item.slice(0, 40)}' is not of the form <algorithm>=<base64>`,
      );
    const token = item.slice(0, eq).trim().toLowerCase();
    const value = item.slice(eq + 1).trim();
    if (seen.has(token)) return reject("FORMAT_ERROR", `Digest header carries ${token.toUpperCase()} twice`);
    seen.add(token);
    if (token !== "sha-256" && token !== "sha-512") continue;
    if (!isBase64(value))
      return reject("FORMAT_ERROR", `Digest header ${LABEL[token]} value is not valid base64`);
    const bytes = Buffer.from(value, "base64");
    if (bytes.length !== LENGTH[token]) {
      return reject(
        "FORMAT_ERROR",
        `Digest header ${LABEL[token]} value decodes to ${bytes.length} bytes; a ${LABEL[token]} hash is ${LENGTH[token]} bytes`,
      );
    }
    values.push({ algorithm: token, base64: value, bytes });
  }
  if (values.length === 0) {
    return reject(
      "FORMAT_ERROR",
      `Digest header '${raw.slice(0, 64)}' has no SHA-256 or SHA-512 value; send SHA-256=<base64>`,
    );
  }
  return values;
}

/**
 * Hashes a body chunk by chunk and checks it against every expected value at the end: the one
 * verifier behind Digest (RFC 3230) and Content-Digest (RFC 9530), which differ only in how they
 * name a mismatch.
 */
export abstract class BodyDigestVerifier<
  V extends { readonly algorithm: DigestAlgorithm; readonly bytes: Uint8Array },
> {
  private readonly hashes: Hash[];
  private received = 0;

  constructor(private readonly expected: readonly V[]) {
    this.hashes = expected.map((v) => createHash(NODE_HASH[v.algorithm]));
  }

  update(chunk: Uint8Array): void {
    this.received += chunk.length;
    for (const h of this.hashes) h.update(chunk);
  }

  get bytesReceived(): number {
    return this.received;
  }

  /**
   * The body's SHA-256 as the header states it, when it states one: once `finish()` has passed, the
   * body's own (the evidence record takes it instead of hashing the body a second time).
   */
  get sha256(): Uint8Array | undefined {
    for (const v of this.expected) if (v.algorithm === "sha-256") return v.bytes;
    return undefined;
  }

  /** True when every value matches; otherwise a rejection naming the sent and the computed value. */
  finish(): true | Rejection {
    for (let i = 0; i < this.expected.length; i++) {
      const want = this.expected[i]!;
      const got = this.hashes[i]!.digest();
      if (got.length !== want.bytes.length || !timingSafeEqual(got, want.bytes)) {
        return this.mismatch(want, got, this.received);
      }
    }
    return true;
  }

  protected abstract mismatch(want: V, got: Buffer, received: number): Rejection;
}

/** Hashes a body chunk by chunk and checks it against every value of its Digest header at the end. */
export class DigestVerifier extends BodyDigestVerifier<DigestValue> {
  protected mismatch(want: DigestValue, got: Buffer, received: number): Rejection {
    const label = LABEL[want.algorithm];
    return reject(
      "SIGNATURE_INVALID",
      `Digest header is ${label}=${want.base64}, but the ${received}-byte body hashes to ${label}=${got.toString("base64")}; compute the digest over the exact bytes sent`,
    );
  }
}

/** Verifies a complete body in one call. */
export function verifyDigest(raw: string | undefined, body: Uint8Array): true | Rejection {
  const values = parseDigestHeader(raw);
  if (!Array.isArray(values)) return values;
  const verifier = new DigestVerifier(values);
  verifier.update(body);
  return verifier.finish();
}

/** The Digest header value for a body, e.g. `SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=`. */
export function computeDigestHeader(
  body: Uint8Array | string,
  algorithm: DigestAlgorithm = "sha-256",
): string {
  // One-shot: no Hash object per signed request.
  return `${LABEL[algorithm]}=${hash(NODE_HASH[algorithm], body, "base64")}`;
}
