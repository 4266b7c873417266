/**
 * The proof that a call to the bank's API came through the gateway: a secret the composition root
 * generates at each start and gives to both, which the gateway adds to every request it forwards
 * (and removes from its clients'). The identity headers are believed only on calls that carry it.
 */

import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { errorReply, headerValue, type Reply } from "./http.js";

export const GATEWAY_SECRET_HEADER = "x-sandbox-gateway-secret";

/** Shorter secrets are refused at start: the proof is only as strong as the secret. */
export const MIN_GATEWAY_SECRET_LENGTH = 32;

export function checkGatewaySecret(secret: string): string {
  if (secret.length < MIN_GATEWAY_SECRET_LENGTH) {
    throw new RangeError(
      `the sandbox's gateway secret must be at least ${MIN_GATEWAY_SECRET_LENGTH} characters; got ${secret.length}`,
    );
  }
  return secret;
}

/** Undefined when the request carries the secret; otherwise the refusal (it never reaches a route). */
export function refuseWithoutProof(req: IncomingMessage, expected: Buffer): Reply | undefined {
  const given = headerValue(req, GATEWAY_SECRET_HEADER);
  if (given === undefined) {
    return errorReply(
      401,
      "SIGNATURE_MISSING",
      "This is the sandbox bank's internal API, which only its gateway calls: send the signed request to the gateway's URL instead",
    );
  }
  // Compared as digests: equal lengths for timingSafeEqual, and nothing learnt from timing.
  if (!timingSafeEqual(digest(given), expected)) {
    return errorReply(
      403,
      "SERVICE_BLOCKED",
      `${GATEWAY_SECRET_HEADER} is not this start's gateway secret: send the signed request to the gateway's URL instead`,
    );
  }
  return undefined;
}

export function digest(secret: string): Buffer {
  return createHash("sha256").update(secret, "utf8").digest();
}
