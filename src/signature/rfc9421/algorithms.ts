/**
 * RFC 9421 section 3.3 signature algorithms, as node:crypto performs them, and which key each fits.
 *
 * `hmac-sha256` is refused: the gateway holds no shared secrets, and a KeyObject of type secret here
 * would mean a configuration error. `ecdsa-p384-sha384` is not in FAPI 2.0's list nor asked for.
 *
 * When `alg` is absent, RFC 9421 3.2 leaves the algorithm to the key material: EC P-256 →
 * ecdsa-p256-sha256, Ed25519 → ed25519, an RSA-PSS key (id-RSASSA-PSS) → rsa-pss-sha512, and a
 * plain RSA key → rsa-pss-sha512 as well: FAPI 2.0's security profile allows PS256/PS512-style
 * PSS but not PKCS#1 v1.5, so deriving v1.5 from a bare RSA key would accept the weaker scheme
 * without anyone having asked for it. A v1.5 signer must say `alg="rsa-v1_5-sha256"`.
 */

import { constants, type KeyObject } from "node:crypto";
import { type Rejection, reject } from "../../errors.js";

export type Rfc9421Algorithm = "rsa-pss-sha512" | "rsa-v1_5-sha256" | "ecdsa-p256-sha256" | "ed25519";

export const RFC9421_ALGORITHMS: readonly Rfc9421Algorithm[] = [
  "rsa-pss-sha512",
  "rsa-v1_5-sha256",
  "ecdsa-p256-sha256",
  "ed25519",
];

/** FAPI 2.0 Security Profile 5.4.1: PS256, ES256, EdDSA; v1.5 is left out unless configured. */
export const DEFAULT_RFC9421_ALGORITHMS: readonly Rfc9421Algorithm[] = [
  "rsa-pss-sha512",
  "ecdsa-p256-sha256",
  "ed25519",
];

/** What crypto.sign / crypto.verify take for one algorithm. Shared objects: none is built per request. */
export interface AlgorithmSpec {
  readonly name: Rfc9421Algorithm;
  readonly hash: "sha256" | "sha512" | null;
  readonly padding?: number;
  readonly saltLength?: number;
  readonly dsaEncoding?: "ieee-p1363";
  /** The signature length when it is fixed by the algorithm (ECDSA r||s, Ed25519). */
  readonly signatureLength?: number;
}

const SPECS: Readonly<Record<Rfc9421Algorithm, AlgorithmSpec>> = {
  // RFC 9421 3.3.1: MGF1 with SHA-512 and a 64-byte salt.
  "rsa-pss-sha512": {
    name: "rsa-pss-sha512",
    hash: "sha512",
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: 64,
  },
  "rsa-v1_5-sha256": { name: "rsa-v1_5-sha256", hash: "sha256", padding: constants.RSA_PKCS1_PADDING },
  // RFC 9421 3.3.4: r and s as fixed-width 32-byte big-endian integers, concatenated.
  "ecdsa-p256-sha256": {
    name: "ecdsa-p256-sha256",
    hash: "sha256",
    dsaEncoding: "ieee-p1363",
    signatureLength: 64,
  },
  ed25519: { name: "ed25519", hash: null, signatureLength: 64 },
};

export function algorithmSpec(name: Rfc9421Algorithm): AlgorithmSpec {
  return SPECS[name];
}

function keyFits(name: Rfc9421Algorithm, key: KeyObject): boolean {
  const type = key.asymmetricKeyType;
  switch (name) {
    case "rsa-pss-sha512":
      return type === "rsa" || type === "rsa-pss";
    case "rsa-v1_5-sha256":
      return type === "rsa";
    case "ecdsa-p256-sha256":
      return type === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1";
    case "ed25519":
      return type === "ed25519";
  }
}

function describeKey(key: KeyObject): string {
  if (key.type === "secret") return "a shared secret";
  const type = key.asymmetricKeyType ?? "unknown";
  if (type === "ec") return `an EC ${key.asymmetricKeyDetails?.namedCurve ?? "unknown-curve"} key`;
  return `an ${type.toUpperCase()} key`;
}

/** The algorithm a key implies when the signature names none (see the file comment). */
export function algorithmForKey(key: KeyObject): Rfc9421Algorithm | undefined {
  for (const name of ["ecdsa-p256-sha256", "ed25519", "rsa-pss-sha512"] as const)
    if (keyFits(name, key)) return name;
  return undefined;
}

/**
 * The algorithm to verify (or sign) with: the sent `alg` when it is known, allowed and fits the
 * key, else the one the key implies; or a rejection saying what would be accepted.
 */
export function resolveRfc9421Algorithm(
  alg: string | undefined,
  key: KeyObject,
  allowed: readonly Rfc9421Algorithm[] = DEFAULT_RFC9421_ALGORITHMS,
): AlgorithmSpec | Rejection {
  const accepted = `use ${allowed.map((a) => `'${a}'`).join(", ")}`;
  if (key.type === "secret")
    return reject(
      "SIGNATURE_INVALID",
      "HMAC (shared-secret) signatures are not accepted; sign with an asymmetric key",
    );
  let name: Rfc9421Algorithm | undefined;
  if (alg === undefined) {
    name = algorithmForKey(key);
    if (name === undefined)
      return reject("SIGNATURE_INVALID", `no RFC 9421 algorithm fits ${describeKey(key)}; ${accepted}`);
  } else if (alg === "hmac-sha256") {
    return reject(
      "SIGNATURE_INVALID",
      "Signature algorithm 'hmac-sha256' is not accepted: no shared secrets are used here; sign with an asymmetric key",
    );
  } else if ((RFC9421_ALGORITHMS as readonly string[]).includes(alg)) {
    name = alg as Rfc9421Algorithm;
  } else {
    return reject("SIGNATURE_INVALID", `Signature algorithm '${alg.slice(0, 40)}' is not known; ${accepted}`);
  }
  if (!allowed.includes(name))
    return reject("SIGNATURE_INVALID", `Signature algorithm '${name}' is not accepted here; ${accepted}`);
  if (!keyFits(name, key))
    return reject("SIGNATURE_INVALID", `Signature algorithm '${name}' does not fit ${describeKey(key)}`);
  return SPECS[name];
}
