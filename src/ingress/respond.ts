/** Writing the gateway's own answers: a Berlin Group tppMessages body, status from the one table. Returns the body's size. */

import type { ServerResponse } from "node:http";
import { type Rejection, type StatusProfile, statusFor, tppMessagesBody } from "../errors.js";

export function writeRejection(
  res: ServerResponse,
  rejection: Rejection,
  profile: StatusProfile,
  requestId?: string,
): number {
  const body = JSON.stringify(tppMessagesBody(rejection));
  const headers: Record<string, string | number> = {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
  };
  if (requestId !== undefined) headers["x-request-id"] = requestId;
  if (rejection.retryAfterSeconds !== undefined) headers["retry-after"] = rejection.retryAfterSeconds;
  res.writeHead(statusFor(rejection.code, profile), headers);
  res.end(body);
  return Buffer.byteLength(body);
}
