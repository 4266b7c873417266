/**
 * The signing dialects' names and what a dialect's signature can authenticate: the words the rest
 * of the house uses (config, the context, the chooser) without reaching into a dialect's folder.
 */

/** A dialect's name: one of the registry's units (index.ts `dialectUnit`), open to new ones. */
export type Dialect = string;

/**
 * What a dialect's signature authenticates, which decides when the request's bytes may leave for
 * the backend (nothing unauthenticated reaches the bank):
 * - `head`: the method, the target and the headers the signature covers, and the body through a
 *   covered digest (Digest, Content-Digest). The head is verified before anything is sent; the body
 *   streams, its last chunk held back until the digest matches, so the backend never has a whole
 *   body that was not signed.
 * - `body`: the body alone. Nothing is sent until the whole body (within maxBodyBytes) is read and
 *   its signature verified; the head the backend acts on (method, path, PSU-ID, X-Request-ID) is
 *   bound to the signer by the mutual-TLS QWAC of the same organisation, which such a request must
 *   come over.
 */
export type Authenticates = "head" | "body";
