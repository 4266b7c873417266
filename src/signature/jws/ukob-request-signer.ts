/**
 * A TPP's request signer for UK Open Banking: what egress uses for a bank profile whose
 * `signing.dialect` is `uk-ob`. The body is signed (a body-less request signs the empty payload),
 * with iat, iss and tan as critical claims and the QSealC in x5c; the private-key operation off the
 * event loop. X-Request-ID is added when absent, as for every dialect.
 */

import { type KeyObject, randomUUID } from "node:crypto";
import type { RequestToSign } from "../sign.js";
import type { JwsAlgorithm } from "./compact.js";
import { JWS_SIGNATURE_HEADER } from "./jades.js";
import { signUkObAsync } from "./ukob.js";

export interface UkObSignerOptions {
  readonly privateKey: KeyObject;
  /** The QSealC, DER, sent first in x5c. */
  readonly certificate: Uint8Array;
  readonly kid: string;
  readonly iss: string;
  readonly tan: string;
  /** Default PS256. */
  readonly algorithm?: JwsAlgorithm;
  /** Sign as Read/Write API 3.1.3 and earlier: `b64: false`, the raw body. */
  readonly b64False?: boolean;
  readonly clock?: () => number;
}

export class UkObRequestSigner {
  constructor(private readonly options: UkObSignerOptions) {}

  get keyId(): string {
    return this.options.kid;
  }

  async sign(request: RequestToSign): Promise<Record<string, string>> {
    let requestId: string | undefined;
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      if (name.toLowerCase() === "x-request-id") requestId = value;
    }
    const value = await signUkObAsync({
      key: this.options.privateKey,
      kid: this.options.kid,
      iss: this.options.iss,
      tan: this.options.tan,
      iat: Math.floor((this.options.clock ?? Date.now)() / 1000),
      body: request.body ?? "",
      alg: this.options.algorithm ?? "PS256",
      certificateChain: [this.options.certificate],
      ...(this.options.b64False ? { b64False: true } : {}),
    });
    return { "X-Request-ID": requestId ?? randomUUID(), [JWS_SIGNATURE_HEADER]: value };
  }
}
