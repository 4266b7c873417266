/**
 * What a mode tells the outside about each request it handled: a plain record handed to the
 * `onRequest` callback the composition root wires to logs and metrics. Neutral ground, so that
 * ingress/ and egress/ never import observability/ and observability/ never imports a mode.
 */

export interface RequestEvent {
  readonly mode: "ingress" | "egress";
  readonly requestId: string | undefined;
  /** The W3C trace id the request was forwarded under (the caller's, or a new trace). */
  readonly traceId?: string | undefined;
  readonly method: string;
  /** A bounded label: the route class (ingress) or the bank profile (egress). */
  readonly routeClass: string;
  /** The configured route (its path prefix) that claimed the request, when one did (ingress). */
  readonly route?: string | undefined;
  readonly status: number;
  /** The Berlin Group code when the gateway answered itself. */
  readonly code?: string;
  /** The check that refused the request (`date`, `signature`, …), when one did. */
  readonly step?: string;
  /** The refusal's text, as the client got it (the access line carries it, the PSU-ID hashed). */
  readonly text?: string | undefined;
  readonly organizationId?: string;
  /** The id of the certificate validation report the request was judged by (ingress). */
  readonly trustReport?: string;
  /** An unattended call's limit (SPEC 8, or agreed) and where it came from (limits/agreements.ts). */
  readonly unattendedLimit?: number | undefined;
  readonly limitSource?: string | undefined;
  readonly totalMs: number;
  readonly upstreamMs?: number;
  readonly bytesOut: number;
  /** The PSU-ID as received. Observers hash it before it goes anywhere (never logged as is). */
  readonly psuId?: string;
}

export type RequestObserver = (event: RequestEvent) => void;

/** The route class of bytes refused before they were a request (no path was read). */
export const UNPARSED_ROUTE_CLASS = "unparsed";

/**
 * The event of a refusal of what Node could not parse (bad framing, a head that did not arrive in
 * time, CONNECT): no request object exists, but it is a refusal like any other, so it is logged
 * and counted under its step.
 */
export function unparsedRequestEvent(
  mode: RequestEvent["mode"],
  status: number,
  step: string,
  bytesOut: number,
  text?: string,
): RequestEvent {
  return {
    mode,
    requestId: undefined,
    traceId: undefined,
    method: "-",
    routeClass: UNPARSED_ROUTE_CLASS,
    route: undefined,
    status,
    code: "FORMAT_ERROR",
    step,
    text,
    organizationId: undefined,
    trustReport: undefined,
    unattendedLimit: undefined,
    limitSource: undefined,
    totalMs: 0,
    upstreamMs: undefined,
    bytesOut,
    psuId: undefined,
  };
}

/** What the egress response-signature header says about the bank's answer. */
export type ResponseSignatureStatus =
  | "verified"
  | "invalid"
  | "unsigned-error"
  | "unchecked-too-large"
  | "not-checked";

/** An egress request: the request event plus signing time and the response signature's fate. */
export interface EgressEvent extends RequestEvent {
  readonly signingMs?: number;
  readonly responseSignature?: ResponseSignatureStatus;
  /** Why the response signature failed, when it did. */
  readonly responseProblem?: string;
}
