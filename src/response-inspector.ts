/**
 * A response's headers as the backend sent them: what the chain's response phases, egress's
 * response-signature check and the forwarder share. Neutral ground (like events.ts), so that
 * checks/, egress/ and forward/ use it without importing one another.
 */

/** A response's headers as the backend sent them (lower-case names). */
export type ReceivedHeaders = Readonly<Record<string, string | string[] | undefined>>;
