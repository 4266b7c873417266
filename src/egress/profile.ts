/**
 * A bank profile as the egress handler and its response-signature check read it: the lower module
 * both import, so that neither imports the other for it.
 */

import type { Dialect, RequestSigning, ResponseVerifying } from "../checks/index.js";
import type { Backend } from "../forward/backend.js";

/** A bank profile's request signer, whatever its dialect: the headers to add to a request. */
export type { RequestSigning } from "../checks/index.js";

export type ResponseVerificationMode = "off" | "advisory" | "enforce";

export interface BankProfile {
  readonly name: string;
  readonly prefix?: string | undefined;
  readonly host?: string | undefined;
  readonly backend: Backend;
  readonly signer: RequestSigning;
  /** The signing dialect of its requests, and of the responses it checks. */
  readonly dialect: Dialect;
  /** The dialect's responses bind the request (`responsesBindRequest`): keep what was sent. */
  readonly responsesBindRequest: boolean;
  /** Lower-case names → values added when the application's request does not carry them. */
  readonly defaultHeaders: Readonly<Record<string, string>>;
  /** Lower-case names the application may not set: the gateway writes them. */
  readonly gatewayHeaders: ReadonlySet<string>;
  readonly responseMode: ResponseVerificationMode;
  readonly responseVerifier?: ResponseVerifying;
  readonly maxResponseBytes: number;
}
