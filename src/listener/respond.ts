/** Writing the gateway's own answers (ingress refusals, egress failures): a Berlin Group tppMessages body, status from the one table. Returns the body's size. */

import { type ServerResponse, STATUS_CODES } from "node:http";
import { type Rejection, type StatusProfile, statusFor, tppMessagesBody } from "../errors.js";

/** Status, headers and body of the gateway's own answer: the one shape every refusal takes. */
function rejectionAnswer(
  rejection: Rejection,
  profile: StatusProfile,
  requestId?: string,
  extra?: Readonly<Record<string, string>>,
) {
  const body = JSON.stringify(tppMessagesBody(rejection));
  const headers: Record<string, string | number> = {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
  };
  if (requestId !== undefined) headers["x-request-id"] = requestId;
  if (extra) Object.assign(headers, extra);
  if (rejection.retryAfterSeconds !== undefined) headers["retry-after"] = rejection.retryAfterSeconds;
  return { status: statusFor(rejection.code, profile), headers, body };
}

export function writeRejection(
  res: ServerResponse,
  rejection: Rejection,
  profile: StatusProfile,
  requestId?: string,
  extraHeaders?: Readonly<Record<string, string>>,
): number {
  const { status, headers, body } = rejectionAnswer(rejection, profile, requestId, extraHeaders);
  res.writeHead(status, headers);
  res.end(body);
  return headers["content-length"] as number;
}

/** The same answer as raw HTTP/1.1, for a socket Node's parser gave up on (no ServerResponse exists). */
export function rawRejection(
  rejection: Rejection,
  profile: StatusProfile,
  extraHeaders?: Readonly<Record<string, string>>,
): string {
  const { status, headers, body } = rejectionAnswer(rejection, profile, undefined, extraHeaders);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join("")}connection: close\r\n\r\n${body}`;
}
