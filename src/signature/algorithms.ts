/**
 * Signature algorithms: the names peers send, what each means for Node's crypto, and whether it
 * fits the certificate's key (SPEC 5.4: the algorithm must match the certificate).
 *
 * `hs2019` (draft-cavage-12) says "derive the algorithm from the key". It is refused unless
 * allowed; when allowed it means, as the draft recommends: RSA key → RSASSA-PSS with SHA-512,
 * EC key → ECDSA with SHA-512, Ed25519 key → Ed25519.
 */

import { constants, type KeyObject } from "node:crypto";
import { type Rejection, reject } from "../errors.js";

export type AlgorithmName = "rsa-sha256" | "rsa-sha512" | "ecdsa-sha256" | "hs2019";

/** What Node's `crypto.sign`/`crypto.verify` needs for one algorithm and key. */
export interface ResolvedAlgorithm {
  readonly name: AlgorithmName;
  /** Digest name for crypto.verify; `null` for Ed25519. */
  readonly hash: "sha256" | "sha512" | null;
  readonly padding?: number;
  readonly saltLength?: number;
}

/** Names as sent (lower-cased) → the algorithm they denote. `SHA256withRSA` is Java's name. */
const ALIASES: Readonly<Record<string, AlgorithmName>> = {
  "rsa-sha256": "rsa-sha256",
  sha256withrsa: "rsa-sha256",
  "rsa-sha512": "rsa-sha512",
  sha512withrsa: "rsa-sha512",
  "ecdsa-sha256": "ecdsa-sha256",
  sha256withecdsa: "ecdsa-sha256",
  hs2019: "hs2019",
};

export const DEFAULT_ALGORITHMS: readonly AlgorithmName[] = ["rsa-sha256"];

/**
 * The algorithm a sent name denotes (`SHA256withRSA` → `rsa-sha256`), or undefined for a name we
 * do not know. For keys that must not change when only the spelling does (the replay key).
 */
export function canonicalAlgorithm(sent: string): AlgorithmName | undefined {
  return ALIASES[sent.toLowerCase()];
}

function keyTypeOf(key: KeyObject): string {
  return key.asymmetricKeyType ?? "unknown";
}

/**
 * Maps the sent name to an algorithm that is allowed and fits the key, or a rejection saying
 * which algorithms would be accepted.
 */
export function resolveAlgorithm(
  sent: string,
  key: KeyObject,
  allowed: readonly AlgorithmName[] = DEFAULT_ALGORITHMS,
): ResolvedAlgorithm | Rejection {
  const name = ALIASES[sent.toLowerCase()];
  if (!name || !allowed.includes(name)) {
    return reject(
      "SIGNATURE_INVALID",
      `Signature algorithm '${sent}' is not accepted; use ${allowed.map((a) => `'${a}'`).join(" or ")}`,
    );
  }
  const keyType = keyTypeOf(key);
  return RESOLVED[name][keyType] ?? misfit(sent, keyType);
}

/** What each algorithm means for each key type it fits: shared objects, none built per request. */
const RESOLVED: Readonly<Record<AlgorithmName, Readonly<Record<string, ResolvedAlgorithm>>>> = {
  "rsa-sha256": { rsa: { name: "rsa-sha256", hash: "sha256" } },
  "rsa-sha512": { rsa: { name: "rsa-sha512", hash: "sha512" } },
  "ecdsa-sha256": { ec: { name: "ecdsa-sha256", hash: "sha256" } },
  hs2019: {
    rsa: hs2019RsaPss(),
    "rsa-pss": hs2019RsaPss(),
    ec: { name: "hs2019", hash: "sha512" },
    ed25519: { name: "hs2019", hash: null },
  },
};

function hs2019RsaPss(): ResolvedAlgorithm {
  return {
    name: "hs2019",
    hash: "sha512",
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: constants.RSA_PSS_SALTLEN_AUTO,
  };
}

function misfit(sent: string, keyType: string): Rejection {
  return reject(
    "SIGNATURE_INVALID",
    `Signature algorithm '${sent}' does not fit the certificate's ${keyType.toUpperCase()} key (SPEC 5.4)`,
  );
}

/** The name a signer writes for a key: `rsa-sha256` for RSA, `ecdsa-sha256` for EC. */
export function defaultAlgorithmFor(key: KeyObject): AlgorithmName {
  return keyTypeOf(key) === "ec" ? "ecdsa-sha256" : "rsa-sha256";
}
