/**
 * Signing per RFC 9421 off the event loop: the base is built here, the private-key operation runs
 * on libuv's thread pool in the process's signing slots (signature/signing-slots.ts), as
 * draft-cavage's RequestSigner does, so a gateway signing every request or response keeps its
 * event loop for the rest.
 */

import { sign as cryptoSign } from "node:crypto";
import { isRejection, type Rejection } from "../../errors.js";
import { PROCESS_SIGNING_SLOTS } from "../signing-slots.js";
import { keyOptions, prepareSignature, type SignedHeaders, type SignOptions, signedHeaders } from "./sign.js";

export async function signAsync(options: SignOptions): Promise<SignedHeaders | Rejection> {
  const prepared = prepareSignature(options);
  if (isRejection(prepared)) return prepared;
  const data = Buffer.from(prepared.base, "latin1");
  const bytes = await PROCESS_SIGNING_SLOTS.run(
    () =>
      new Promise<Buffer>((resolve, reject) =>
        cryptoSign(
          prepared.spec.hash,
          data,
          keyOptions(prepared.spec, options.privateKey),
          (error, signature) => (error ? reject(error) : resolve(signature)),
        ),
      ),
  );
  return signedHeaders(prepared, bytes);
}
