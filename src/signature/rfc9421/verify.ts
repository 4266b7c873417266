/** Verifying one parsed RFC 9421 signature over its base with node:crypto. */

import { constants, verify as cryptoVerify, type KeyObject } from "node:crypto";
import { isRejection, type Rejection, reject } from "../../errors.js";
import { DEFAULT_RFC9421_ALGORITHMS, type Rfc9421Algorithm, resolveRfc9421Algorithm } from "./algorithms.js";
import type { ParsedSignature } from "./signature-input.js";

/**
 * True when `signature` verifies over `base` with `publicKey` under its `alg` (or the algorithm the
 * key implies when `alg` is absent), which must be among `algorithms`.
 */
export function verify(
  signature: ParsedSignature,
  base: string,
  publicKey: KeyObject,
  algorithms: readonly Rfc9421Algorithm[] = DEFAULT_RFC9421_ALGORITHMS,
): true | Rejection {
  const spec = resolveRfc9421Algorithm(signature.params.alg, publicKey, algorithms);
  if (isRejection(spec)) return spec;
  const bytes = signature.signature;
  if (spec.signatureLength !== undefined && bytes.length !== spec.signatureLength)
    return reject(
      "SIGNATURE_INVALID",
      `Signature ${signature.label} is ${bytes.length} bytes; ${spec.name} signatures are ${spec.signatureLength}${spec.dsaEncoding ? " (r||s, not DER)" : ""}`,
    );
  let ok: boolean;
  try {
    // The base is printable ASCII (signatureBase refuses anything else), so latin1 is its bytes.
    // PKCS#1 v1.5 and Ed25519 need no options: the KeyObject itself spares Node reading an object.
    const key =
      spec.padding === undefined && spec.dsaEncoding === undefined
        ? publicKey
        : {
            key: publicKey,
            padding: spec.padding,
            saltLength: spec.saltLength,
            dsaEncoding: spec.dsaEncoding,
          };
    ok = cryptoVerify(spec.hash, Buffer.from(base, "latin1"), key, bytes);
  } catch {
    ok = false;
  }
  if (ok) return true;
  if (spec.saltLength !== undefined && pssVerifiesWithOtherSalt(spec.hash!, base, publicKey, bytes))
    return reject(
      "SIGNATURE_INVALID",
      `Signature ${signature.label} is RSASSA-PSS with a salt other than 64 bytes; rsa-pss-sha512 requires a 64-byte salt (RFC 9421 3.3.1): set the signer's saltLength to 64`,
    );
  return reject(
    "SIGNATURE_INVALID",
    `Signature ${signature.label} does not verify with ${spec.name}${signature.params.keyid === undefined ? "" : ` and key '${signature.params.keyid.slice(0, 80)}'`} over the base of ${signature.components.map((c) => c.serialized).join(" ") || "no components"}; sign exactly these components with the values sent`,
  );
}

/**
 * Only on the failure path: some signers (Node's default, http-message-signatures 1.0) use the
 * largest salt. Such a signature is still refused, but the text then says what to change.
 */
function pssVerifiesWithOtherSalt(hash: string, base: string, key: KeyObject, bytes: Buffer): boolean {
  try {
    return cryptoVerify(
      hash,
      Buffer.from(base, "latin1"),
      { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO },
      bytes,
    );
  } catch {
    return false;
  }
}
