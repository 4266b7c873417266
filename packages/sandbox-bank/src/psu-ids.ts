/**
 * The PSU-ID a TPP receives after SCA (SPEC 2.6): a UUID that is stable per TPP and bank, so the
 * TPP can store it, and that tells one TPP nothing about what another TPP was given. Name-based
 * (RFC 4122 version 5 layout over SHA-1), so it survives restarts and resets without being stored.
 */

import { createHash } from "node:crypto";

/** A namespace of this sandbox's own (random, fixed): it keeps these ids apart from other v5 ids. */
const NAMESPACE = "psd2-gateway sandbox PSU 6d1f0c1e-5d0e-4b3a-9f43-2a9f1f1c7b20";

export function stablePsuUuid(organizationId: string, ...parts: readonly string[]): string {
  const hash = createHash("sha1").update(NAMESPACE);
  for (const part of [organizationId, ...parts]) hash.update("\n").update(part);
  const bytes = hash.digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50; // version 5
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
