/** Verifying a signature over a signing string with Node's native crypto. */

import { type KeyObject, verify } from "node:crypto";
import { type Rejection, reject } from "../errors.js";
import type { ResolvedAlgorithm } from "./algorithms.js";

/** P-256 r||s is 64 bytes, P-384 96, P-521 132: those lengths are IEEE P1363, anything else DER. */
const P1363_LENGTHS = new Set([64, 96, 132]);

/**
 * `signingString` as bytes, or as the string built from Node's header values, whose chars are the
 * wire bytes (Latin-1): either way the bytes that were sent, never re-encoded.
 */
export function verifySigningString(
  algorithm: ResolvedAlgorithm,
  signingString: string | Buffer,
  signature: Buffer,
  publicKey: KeyObject,
): true | Rejection {
  if (typeof signingString === "string" && /[^\x00-\xff]/.test(signingString)) {
    // Latin-1 would drop the high byte of such a char: refuse rather than verify other bytes.
    return reject(
      "SIGNATURE_INVALID",
      "the signing string holds a char above U+00FF, which is not a byte; build it from header values as received",
    );
  }
  const data = typeof signingString === "string" ? Buffer.from(signingString, "latin1") : signingString;
  let ok: boolean;
  try {
    if (publicKey.asymmetricKeyType === "ec" && P1363_LENGTHS.has(signature.length)) {
      ok = verify(algorithm.hash, data, { key: publicKey, dsaEncoding: "ieee-p1363" }, signature);
    } else if (algorithm.padding !== undefined) {
      ok = verify(
        algorithm.hash,
        data,
        { key: publicKey, padding: algorithm.padding, saltLength: algorithm.saltLength ?? 0 },
        signature,
      );
    } else {
      ok = verify(algorithm.hash, data, publicKey, signature);
    }
  } catch {
    ok = false;
  }
  if (!ok) {
    return reject(
      "SIGNATURE_INVALID",
      `Signature does not verify with the certificate's public key over the signing string built from '${data
        .toString("latin1")
        .split("\n")
        .map((l) => l.slice(0, l.indexOf(":")))
        .join(
          " ",
        )}'; check that the listed headers are signed in that order, lower-cased, with the exact values sent`,
    );
  }
  return true;
}
