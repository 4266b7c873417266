/**
 * The one table of Berlin Group error codes: which HTTP status each answers with, and how a
 * rejection becomes a `tppMessages` body. Every module that refuses something returns a
 * `Rejection`; only the HTTP edge turns it into a status and a body, through this file.
 */

export const ERROR_CODES = [
  "FORMAT_ERROR",
  "PARAMETER_NOT_SUPPORTED",
  "SIGNATURE_MISSING",
  "SIGNATURE_INVALID",
  "CERTIFICATE_MISSING",
  "CERTIFICATE_INVALID",
  "CERTIFICATE_EXPIRED",
  "CERTIFICATE_BLOCKED",
  "CERTIFICATE_REVOKED",
  "TIMESTAMP_INVALID",
  "PERIOD_INVALID",
  "ROLE_INVALID",
  "ACCESS_EXCEEDED",
  "PAYLOAD_TOO_LARGE",
  "RESOURCE_UNKNOWN",
  "SERVICE_BLOCKED",
  "TOKEN_INVALID",
  "SERVICE_UNAVAILABLE",
  "BAD_GATEWAY",
  "GATEWAY_TIMEOUT",
  "INTERNAL_SERVER_ERROR",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * `spec` answers every verification failure with 400, as SPEC 7 says.
 * `berlin-group` answers certificate, signature and role failures with 401, as most
 * NextGenPSD2 implementations do.
 */
export type StatusProfile = "spec" | "berlin-group";

const SPEC_STATUS: Record<ErrorCode, number> = {
  FORMAT_ERROR: 400,
  PARAMETER_NOT_SUPPORTED: 400,
  SIGNATURE_MISSING: 400,
  SIGNATURE_INVALID: 400,
  CERTIFICATE_MISSING: 400,
  CERTIFICATE_INVALID: 400,
  CERTIFICATE_EXPIRED: 400,
  CERTIFICATE_BLOCKED: 400,
  CERTIFICATE_REVOKED: 400,
  TIMESTAMP_INVALID: 400,
  PERIOD_INVALID: 400,
  ROLE_INVALID: 400,
  ACCESS_EXCEEDED: 429,
  PAYLOAD_TOO_LARGE: 413,
  RESOURCE_UNKNOWN: 404,
  /** The admin listener: a request from a browser page or a Host it does not answer (observability/admin-guard.ts). */
  SERVICE_BLOCKED: 403,
  /** The admin listener: a state-changing request without the bearer token of admin.tokenFile. */
  TOKEN_INVALID: 401,
  SERVICE_UNAVAILABLE: 503,
  BAD_GATEWAY: 502,
  GATEWAY_TIMEOUT: 504,
  INTERNAL_SERVER_ERROR: 500,
};

const BERLIN_GROUP_STATUS: Record<ErrorCode, number> = {
  ...SPEC_STATUS,
  SIGNATURE_MISSING: 401,
  SIGNATURE_INVALID: 401,
  CERTIFICATE_MISSING: 401,
  CERTIFICATE_INVALID: 401,
  CERTIFICATE_EXPIRED: 401,
  CERTIFICATE_BLOCKED: 401,
  CERTIFICATE_REVOKED: 401,
  ROLE_INVALID: 401,
};

const STATUS_BY_PROFILE: Record<StatusProfile, Record<ErrorCode, number>> = {
  spec: SPEC_STATUS,
  "berlin-group": BERLIN_GROUP_STATUS,
};

/**
 * A refusal with the code to report and a text that tells the TPP what to fix.
 * Deliberately not an Error: no stack is captured, so returning one on the hot path is cheap.
 */
export class Rejection {
  constructor(
    readonly code: ErrorCode,
    readonly text: string,
    /** For ACCESS_EXCEEDED: when the next call is allowed, sent as Retry-After. */
    readonly retryAfterSeconds?: number,
    /** The certificate validation report the refusal was derived from (logged, never sent). */
    readonly reportId?: string,
  ) {}
}

export function reject(code: ErrorCode, text: string, retryAfterSeconds?: number): Rejection {
  return new Rejection(code, text, retryAfterSeconds);
}

export function isRejection(value: unknown): value is Rejection {
  return value instanceof Rejection;
}

export function statusFor(code: ErrorCode, profile: StatusProfile = "spec"): number {
  return STATUS_BY_PROFILE[profile][code];
}

export interface TppMessage {
  category: "ERROR";
  code: ErrorCode;
  text: string;
}

export interface TppMessagesBody {
  tppMessages: TppMessage[];
}

export function tppMessagesBody(rejection: Rejection): TppMessagesBody {
  return { tppMessages: [{ category: "ERROR", code: rejection.code, text: rejection.text }] };
}
