/**
 * Checkpoints: every `evidence.checkpointSeconds`, at each rotation and at close, a line holding the
 * chain's last hash and record count, signed by the gateway. A checkpoint fixes everything before
 * it: a record removed from the end, or a chain cut short, no longer matches the last one signed.
 *
 * The key is the response-signing QSealC when the gateway has one, otherwise a P-256 key of the
 * evidence folder's own (file-store.ts keeps it). Signatures are what `openssl dgst -sha256 -sign`
 * makes: PKCS#1 v1.5 for RSA, DER-encoded ECDSA, plain Ed25519, so openssl alone can check them.
 * Pure: no I/O.
 */

import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from "node:crypto";
import { type CheckpointLine, checkpointStatement, type EvidenceChain } from "./record.js";

export interface CheckpointKey {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** SHA-256 of the public key's SPKI DER, lower-case hex: the checkpoint's `key`. */
  readonly id: string;
  readonly alg: CheckpointAlgorithm;
  /** The QSealC (PEM) when the key is the response-signing one. */
  readonly certificatePem?: string;
}

export type CheckpointAlgorithm = "rsa-sha256" | "ecdsa-sha256" | "ed25519";

export function checkpointKeyOf(privateKey: KeyObject, certificatePem?: string): CheckpointKey {
  const publicKey = createPublicKey(privateKey);
  return {
    privateKey,
    publicKey,
    id: publicKeyId(publicKey),
    alg: algorithmOf(publicKey),
    ...(certificatePem !== undefined ? { certificatePem } : {}),
  };
}

/** A new key for a folder without one: P-256, small and quick to check. */
export function newCheckpointKey(): CheckpointKey {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return checkpointKeyOf(privateKey);
}

export function publicKeyId(publicKey: KeyObject): string {
  return createHash("sha256")
    .update(publicKey.export({ type: "spki", format: "der" }))
    .digest("hex");
}

export function algorithmOf(key: KeyObject): CheckpointAlgorithm {
  switch (key.asymmetricKeyType) {
    case "rsa":
      return "rsa-sha256";
    case "ec":
      return "ecdsa-sha256";
    case "ed25519":
      return "ed25519";
    default:
      throw new Error(
        `a ${key.asymmetricKeyType ?? "secret"} key cannot sign evidence checkpoints; use RSA, EC or Ed25519`,
      );
  }
}

const HASH: Record<CheckpointAlgorithm, "sha256" | null> = {
  "rsa-sha256": "sha256",
  "ecdsa-sha256": "sha256",
  ed25519: null,
};

/** The chain's next line: a checkpoint over everything before it, signed. */
export function signedCheckpoint(
  chain: EvidenceChain,
  key: CheckpointKey,
  time: string,
): Omit<CheckpointLine, "chain" | "seq" | "prev"> {
  const fields = chain.checkpointFields(time, key.id);
  const signature = sign(HASH[key.alg], Buffer.from(checkpointStatement(fields)), key.privateKey);
  const { chain: _c, seq: _s, prev: _p, ...content } = fields;
  return { ...content, alg: key.alg, signature: signature.toString("base64") };
}

/** Whether the checkpoint's signature holds under `publicKey`. */
export function checkpointSignatureHolds(line: CheckpointLine, publicKey: KeyObject): boolean {
  const alg = HASH[line.alg as CheckpointAlgorithm];
  if (alg === undefined) return false;
  try {
    return verify(
      alg,
      Buffer.from(checkpointStatement(line)),
      publicKey,
      Buffer.from(line.signature, "base64"),
    );
  } catch {
    return false;
  }
}
