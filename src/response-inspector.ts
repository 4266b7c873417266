/**
 * A rule judged on the bank's answer before it goes out: set by an ingress check on the request,
 * or by egress for the bank's response signature, and run by the forwarder. Neutral ground (like
 * events.ts), so that checks/, egress/ and forward/ share it without importing one another.
 */

import type { Rejection } from "./errors.js";

/** A response's headers as the backend sent them (lower-case names). */
export type ReceivedHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Looks at a response before it goes out, for a rule that can only be judged on the bank's answer
 * (an ingress check sets one on the request; egress checks the bank's response signature): a
 * response it `wants` is held, up to `maxBodyBytes`, and withheld when `inspect` refuses it. A
 * larger one is withheld too, never sent unchecked, unless `tooLarge` lets it pass.
 */
export interface ResponseInspector {
  /** The named check whose rule this is: its refusals carry this step name. */
  readonly step: string;
  readonly maxBodyBytes: number;
  wants(status: number, received: ReceivedHeaders): boolean;
  /**
   * Undefined sends the response on; a rejection withholds it and is answered instead. `send` is
   * the head about to go out, which the inspector may add to (egress marks what it found).
   */
  inspect(
    body: Buffer,
    received: ReceivedHeaders,
    send: Record<string, string | string[]>,
  ): Rejection | undefined | Promise<Rejection | undefined>;
  /**
   * A response over `maxBodyBytes`: a rejection withholds it; undefined sends it on unchecked
   * (the inspector may mark `send`). Without this method it is withheld.
   */
  tooLarge?(
    status: number,
    received: ReceivedHeaders,
    send: Record<string, string | string[]>,
  ): Rejection | undefined;
}
