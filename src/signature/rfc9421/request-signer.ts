/**
 * A TPP's request signer for RFC 9421 as FAPI 2.0 profiles it, with the Berlin Group's certificate
 * and keyId: what egress uses for a bank profile whose `signing.dialect` is `rfc9421`, with the same
 * `sign` as draft-cavage's RequestSigner (the headers to add), the private-key operation off the
 * event loop.
 */

import { type KeyObject, randomUUID } from "node:crypto";
import { isRejection } from "../../errors.js";
import { buildKeyId, keyIdTargetFromDer } from "../keyid.js";
import type { RequestToSign } from "../sign.js";
import { lowerCasedHeaders } from "../signing-string.js";
import { algorithmForKey, type Rfc9421Algorithm } from "./algorithms.js";
import { computeContentDigest } from "./content-digest.js";
import { fapiRequestSigning } from "./fapi.js";
import { signAsync } from "./sign-async.js";

export interface Rfc9421SignerOptions {
  readonly privateKey: KeyObject;
  /** The QSealC, DER: sent in TPP-Signature-Certificate and named by keyid. */
  readonly certificate: Uint8Array;
  /** Default: the key's own (RSA: rsa-pss-sha512, EC P-256: ecdsa-p256-sha256, Ed25519: ed25519). */
  readonly algorithm?: Rfc9421Algorithm;
  /** Default `SN=<serial>,CA=<issuer>` of the certificate (SPEC 5.3). */
  readonly keyid?: string;
  /** The scheme of `@target-uri`, as the bank is called. */
  readonly scheme: "https" | "http";
  /** Lower-case headers covered when the request carries them (default PSU-ID, PSU-Corporate-ID, TPP-Redirect-URI). */
  readonly coverWhenPresent?: readonly string[];
  readonly clock?: () => number;
}

/** Berlin Group headers covered besides FAPI 2.0's own components, as the gateway's ingress requires. */
const COVER_WHEN_PRESENT = ["psu-id", "psu-corporate-id", "tpp-redirect-uri"];
const COVER_ALWAYS = ["tpp-signature-certificate", "x-request-id"];

export class Rfc9421RequestSigner {
  readonly keyId: string;
  private readonly certificate: string;
  private readonly algorithm: Rfc9421Algorithm;

  constructor(private readonly options: Rfc9421SignerOptions) {
    this.keyId = options.keyid ?? buildKeyId(keyIdTargetFromDer(options.certificate));
    this.certificate = Buffer.from(options.certificate).toString("base64");
    const algorithm = options.algorithm ?? algorithmForKey(options.privateKey);
    if (algorithm === undefined) throw new Error("the QSealC's key fits no RFC 9421 algorithm");
    this.algorithm = algorithm;
  }

  /**
   * The headers to add: X-Request-ID (when absent), TPP-Signature-Certificate, Content-Digest (with
   * a body), Signature-Input and Signature. Throws when the request cannot be signed.
   */
  async sign(request: RequestToSign): Promise<Record<string, string>> {
    const headers = lowerCasedHeaders(request.headers ?? {});
    const added: Record<string, string> = {};
    if (headers["x-request-id"] === undefined) added["X-Request-ID"] = randomUUID();
    added["TPP-Signature-Certificate"] = this.certificate;
    const body = request.body === undefined ? undefined : Buffer.from(request.body);
    const hasBody = body !== undefined && body.length > 0;
    if (hasBody) added["Content-Digest"] = computeContentDigest(body, "sha-256");
    Object.assign(headers, lowerCasedHeaders(added));
    const host = headers.host;
    if (host === undefined) throw new Error("RFC 9421 signs @target-uri: the request needs its Host");
    const signed = await signAsync(
      fapiRequestSigning(
        { method: request.method, targetUri: `${this.options.scheme}://${host}${request.target}`, headers },
        {
          privateKey: this.options.privateKey,
          keyid: this.keyId,
          now: (this.options.clock ?? Date.now)(),
          alg: this.algorithm,
          coverAlways: COVER_ALWAYS,
          coverWhenPresent: this.options.coverWhenPresent ?? COVER_WHEN_PRESENT,
          hasBody,
        },
      ),
    );
    if (isRejection(signed)) throw new Error(signed.text);
    return {
      ...added,
      "X-Request-ID": headers["x-request-id"]!,
      "Signature-Input": signed.signatureInput,
      Signature: signed.signature,
    };
  }
}
