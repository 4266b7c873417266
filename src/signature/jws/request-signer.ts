/**
 * A TPP's request signer for JAdES (Berlin Group openFinance API Framework 2.x): what egress uses
 * for a bank profile whose `signing.dialect` is `jades`, with the same `sign` as draft-cavage's
 * RequestSigner (the headers to add), the private-key operation off the event loop.
 */

import { type KeyObject, randomUUID } from "node:crypto";
import { computeDigestHeader } from "../digest.js";
import { buildKeyId, keyIdTargetFromDer } from "../keyid.js";
import type { RequestToSign } from "../sign.js";
import { lowerCasedHeaders } from "../signing-string.js";
import type { JwsAlgorithm } from "./compact.js";
import { type HttpHeadersPayloadStyle, JWS_SIGNATURE_HEADER, signJadesAsync } from "./jades.js";

export interface JadesSignerOptions {
  readonly privateKey: KeyObject;
  /** The QSealC, DER, first in x5c; its issuers may follow. */
  readonly certificateChain: readonly Uint8Array[];
  /** Default PS256 for an RSA key, ES256 for an EC key. */
  readonly algorithm?: JwsAlgorithm;
  /** Sent as `kid` when given. */
  readonly kid?: string;
  /** Name the QSealC by `x5t#S256` alone, without x5c (a bank that knows it already). */
  readonly byReference?: boolean;
  readonly payloadStyle?: HttpHeadersPayloadStyle;
  /** Lower-case names signed when the request carries them, after (request-target), Digest and X-Request-ID. */
  readonly signedWhenPresent?: readonly string[];
  readonly clock?: () => number;
}

/** The Berlin Group headers signed by default whenever the request carries them. */
const SIGNED_WHEN_PRESENT = ["psu-id", "psu-corporate-id", "tpp-redirect-uri"];

const ALWAYS = new Set(["(request-target)", "digest", "x-request-id"]);

export class JadesRequestSigner {
  /** The certificate's Berlin Group keyId, for logs (JAdES names the key by x5c). */
  readonly keyId: string;
  private readonly algorithm: JwsAlgorithm;

  constructor(private readonly options: JadesSignerOptions) {
    const first = options.certificateChain[0];
    if (first === undefined) throw new Error("JAdES signing needs the QSealC first in certificateChain");
    this.keyId = buildKeyId(keyIdTargetFromDer(first));
    this.algorithm = options.algorithm ?? (options.privateKey.asymmetricKeyType === "ec" ? "ES256" : "PS256");
  }

  /** The headers to add: X-Request-ID (when absent), Digest and x-jws-signature. */
  async sign(request: RequestToSign): Promise<Record<string, string>> {
    const headers = lowerCasedHeaders(request.headers ?? {});
    const added: Record<string, string> = {};
    if (headers["x-request-id"] === undefined) added["X-Request-ID"] = randomUUID();
    // openFinance keeps Digest: the body is bound through it (the digest of zero bytes without one).
    added.Digest = computeDigestHeader(request.body ?? "");
    Object.assign(headers, lowerCasedHeaders(added));
    const pars = [
      "(request-target)",
      "digest",
      "x-request-id",
      ...(this.options.signedWhenPresent ?? SIGNED_WHEN_PRESENT).filter(
        (name) => headers[name] !== undefined && !ALWAYS.has(name),
      ),
    ];
    const value = await signJadesAsync({
      key: this.options.privateKey,
      certificateChain: this.options.certificateChain,
      alg: this.algorithm,
      pars,
      sigT: (this.options.clock ?? Date.now)(),
      ...(this.options.kid ? { kid: this.options.kid } : {}),
      ...(this.options.byReference ? { byReference: true } : {}),
      message: { method: request.method, target: request.target, headers },
      ...(this.options.payloadStyle ? { payloadStyle: this.options.payloadStyle } : {}),
    });
    return { ...added, "X-Request-ID": headers["x-request-id"]!, [JWS_SIGNATURE_HEADER]: value };
  }
}
