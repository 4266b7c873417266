/**
 * What becomes of a bank's response signature in egress mode, decided and marked in this one
 * place: not checked (the profile says `off`), an unsigned error (banks, and this gateway's
 * ingress, sign no refusal: that would hand attackers an RSA signature per garbage request, and
 * withholding them would hide the bank's reason), too large to check, verified or invalid. A
 * signature that is there and fails is never passed under `enforce`.
 */

import type { RequestOfResponse, TrustedCertificate } from "../checks/index.js";
import { type Rejection, reject } from "../errors.js";
import type { ResponseSignatureStatus } from "../events.js";
import type { Headers } from "../forward/forwarder.js";
import type { ReceivedHeaders } from "../response-inspector.js";
import type { BankProfile } from "./profile.js";

export const RESPONSE_SIGNATURE_HEADER = "psd2-gateway-response-signature";
/** The step a withheld bank answer is logged under. */
export const RESPONSE_SIGNATURE_STEP = "response-signature";

/** A bank's answer whose signature was checked: what its evidence record is made of (app/egress.ts). */
export interface CheckedResponse {
  readonly bank: string;
  readonly dialect: BankProfile["dialect"];
  readonly request: RequestOfResponse;
  /** The trace id sent to the bank in traceparent (the application's, or the one egress started). */
  readonly traceId: string;
  readonly status: number;
  readonly headers: ReceivedHeaders;
  readonly body: Buffer;
  readonly verdict: "verified" | "invalid";
  /** The bank's certificate, when it passed (an invalid answer may fail before or after it), and its base64 DER. */
  readonly signer: TrustedCertificate | undefined;
  readonly signerCertificate: string | undefined;
}

export class ResponseSignatureCheck {
  /** The mark sent with the answer and logged: undefined until the bank answers. */
  status: ResponseSignatureStatus | undefined = undefined;
  /** Why the signature failed, when it did. */
  problem: string | undefined = undefined;
  private bankStatus = 0;

  constructor(
    private readonly profile: BankProfile,
    private readonly request: RequestOfResponse,
    /** Each answer whose signature was checked (evidence), whatever the verdict. */
    private readonly keep?: (checked: CheckedResponse) => void,
    /** The exchange's trace id, for the evidence record. */
    private readonly traceId = "",
  ) {}

  /** The largest body held to be checked (the profile's responses.maxBodyBytes). */
  get maxBodyBytes(): number {
    return this.profile.maxResponseBytes;
  }

  private mark(status: ResponseSignatureStatus, send: Headers): void {
    this.status = status;
    send[RESPONSE_SIGNATURE_HEADER] = status;
  }

  /** The bank's response head: true when its body must be held to check the signature. */
  head(status: number, received: ReceivedHeaders, send: Headers): boolean {
    this.bankStatus = status;
    const { responseMode, responseVerifier } = this.profile;
    if (responseMode === "off" || !responseVerifier) {
      this.mark("not-checked", send);
      return false;
    }
    if (status >= 400 && received.signature === undefined && received["x-jws-signature"] === undefined) {
      this.mark("unsigned-error", send);
      return false;
    }
    return true;
  }

  /** A body over the bound: withheld under `enforce`, passed on marked otherwise. */
  tooLarge(send: Headers): Rejection | undefined {
    this.mark("unchecked-too-large", send);
    if (this.profile.responseMode !== "enforce") return undefined;
    return reject(
      "BAD_GATEWAY",
      `bank '${this.profile.name}' answered ${this.bankStatus} with a body over ${this.maxBodyBytes} bytes (responses.maxBodyBytes), too large to verify; the response was withheld`,
    );
  }

  /** The whole body: verified, or invalid (withheld under `enforce`). */
  async body(body: Buffer, received: ReceivedHeaders, send: Headers): Promise<Rejection | undefined> {
    let signer: TrustedCertificate | undefined;
    let signerCertificate: string | undefined;
    const verdict = await this.profile.responseVerifier!.verify({
      headers: received,
      body,
      status: this.bankStatus,
      request: this.request,
      ...(this.keep
        ? {
            onBank: (bank: TrustedCertificate, der: string | undefined) => {
              signer = bank;
              signerCertificate = der;
            },
          }
        : {}),
    });
    this.keep?.({
      bank: this.profile.name,
      dialect: this.profile.dialect,
      request: this.request,
      traceId: this.traceId,
      status: this.bankStatus,
      headers: received,
      body,
      verdict: verdict === true ? "verified" : "invalid",
      signer,
      signerCertificate,
    });
    if (verdict === true) {
      this.mark("verified", send);
      return undefined;
    }
    this.problem = `${verdict.code}: ${verdict.text}`;
    if (this.profile.responseMode !== "enforce") {
      this.mark("invalid", send);
      return undefined;
    }
    this.status = "invalid";
    return reject(
      "BAD_GATEWAY",
      `bank '${this.profile.name}' answered ${this.bankStatus}, but its response signature failed (${this.problem}); the response was withheld`,
    );
  }
}
