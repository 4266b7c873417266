/**
 * The steps of a request signed per UK Open Banking: a detached JWS over the body (RFC 7515
 * appendix F) in `x-jws-signature`, with the critical claims `iat`, `iss` and `tan` under
 * http://openbanking.org.uk/, the QSealC in `x5c`. The body is the payload, and the only thing the
 * signature authenticates (dialects.ts AUTHENTICATES): the exchange reads the body whole and runs
 * these body phases before a byte is sent, and the head is bound to the TPP by the client-certificate
 * step (the same organisation's QWAC, required for this dialect). A body-less request is verified in
 * the head. The certificate, role, replay and limits are the chain's shared steps.
 */

import { createHash, createVerify, type Verify } from "node:crypto";
import { isRejection, reject } from "../errors.js";
import {
  algorithmFitsKey,
  checkTime,
  checkUkObClaims,
  type DetachedJws,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  keyOptions,
  readUkObHeader,
  signatureMismatch,
  type UkObHeader,
} from "../signature/jws/index.js";
import type { CheckContext } from "./context.js";
import { hasBody } from "./required-headers.js";
import type { Step, StepResult } from "./runner.js";

export const UK_OB = ["uk-ob"] as const;

export interface UkObOptions {
  readonly now: () => number;
  readonly algorithms: readonly JwsAlgorithm[];
  /** iat's allowed deviation either way (the Date tolerance). */
  readonly toleranceMs: number;
  /** The trust anchors `tan` may name. */
  readonly tan: readonly string[];
  /** Accept `b64: false` (Read/Write API 3.1.3 and earlier: the raw body signed). */
  readonly allowB64False: boolean;
}

/** The JWS read, and the body's signature check as it streams. */
export class UkObSignature {
  private verifier: Verify | undefined;
  /** Bytes of the body not yet base64url-encoded (fewer than 3). */
  private pending = Buffer.alloc(0);

  constructor(
    readonly jws: DetachedJws,
    readonly header: UkObHeader,
  ) {}

  /** The signing input's start: ASCII(BASE64URL(protected)) || '.'. */
  private started(): Verify {
    if (!this.verifier) {
      this.verifier = createVerify("sha256");
      this.verifier.update(`${this.jws.protectedB64}.`, "latin1");
    }
    return this.verifier;
  }

  /** One chunk of the body into the signing input: raw with b64 false, base64url otherwise. */
  update(chunk: Buffer): void {
    const verifier = this.started();
    if (!this.header.b64) {
      verifier.update(chunk);
      return;
    }
    const bytes = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const whole = bytes.length - (bytes.length % 3);
    if (whole > 0) verifier.update(bytes.subarray(0, whole).toString("base64url"), "latin1");
    this.pending = Buffer.from(bytes.subarray(whole));
  }

  /** The body has ended: whether the signature holds over all of it. */
  finish(key: Parameters<typeof keyOptions>[1]): boolean {
    const verifier = this.started();
    if (this.header.b64 && this.pending.length > 0)
      verifier.update(this.pending.toString("base64url"), "latin1");
    try {
      return verifier.verify(keyOptions(this.header.alg, key), this.jws.signature);
    } catch {
      return false;
    }
  }
}

const ukObOf = (c: CheckContext): UkObSignature => c.ukOb!;

/** The steps, by their place in the chain. */
export function ukObSteps(options: UkObOptions): {
  readonly parse: Step<CheckContext>[];
  readonly verify: Step<CheckContext>[];
} {
  const parse: Step<CheckContext>[] = [
    {
      // The compact form, alg, crit with iat/iss/tan, b64, kid, typ/cty, x5c and x5t#S256.
      name: "uk-ob-header",
      dialects: UK_OB,
      run: (c) => {
        const read = readUkObHeader(c.headers[JWS_SIGNATURE_HEADER] as string | undefined, {
          now: options.now(),
          algorithms: options.algorithms,
          // iat is judged by uk-ob-iat, so that its refusal names its own step.
          toleranceMs: Number.POSITIVE_INFINITY,
          allowB64False: options.allowB64False,
        });
        if (isRejection(read)) return read;
        if (read.header.x5c === undefined) {
          return reject(
            "CERTIFICATE_MISSING",
            `the JWS names its key by kid '${read.header.kid.slice(0, 80)}' only; send the QSealC (base64 DER) first in x5c`,
          );
        }
        c.ukOb = new UkObSignature(read.jws, read.header);
        c.signingCertificate = read.header.x5c.base64[0];
        c.signedHeaders = [];
        // What was signed is the protected header and the body, which is still on its way: the
        // replay key is the protected header and the signature, which no one can make anew without
        // the key (PS256 and RS256 are not malleable; an ES256 signature's s is taken as the lower
        // of s and n − s, the two forms that both verify).
        c.signingString = replayMaterial(read.jws, read.header.alg);
        c.signedWith = `uk-ob:${read.header.alg}`;
        return undefined;
      },
    },
    {
      name: "uk-ob-iat",
      dialects: UK_OB,
      run: (c) => {
        const { iat } = ukObOf(c).header;
        const fresh = checkTime(
          `'http://openbanking.org.uk/iat' ${iat}`,
          iat * 1000,
          options.now(),
          options.toleranceMs,
        );
        if (fresh !== true) return fresh;
        c.acceptUntil(iat * 1000 + options.toleranceMs);
        return undefined;
      },
    },
  ];
  const verify: Step<CheckContext>[] = [
    {
      // iss names the TPP of the certificate (its organizationIdentifier, or `<it>/<software id>`),
      // tan a trust anchor the bank accepts.
      name: "uk-ob-claims",
      dialects: UK_OB,
      run: (c) => {
        const { header } = ukObOf(c);
        const organization = c.certificate!.identity.organizationId;
        const iss = header.iss.startsWith(`${organization}/`) ? organization : header.iss;
        const claims = checkUkObClaims({ iss, tan: header.tan }, { iss: organization, tan: options.tan });
        return claims === true ? undefined : claims;
      },
    },
    {
      name: "uk-ob-signature",
      dialects: UK_OB,
      run: (c) => {
        const signature = ukObOf(c);
        const fits = algorithmFitsKey(signature.header.alg, c.certificate!.publicKey);
        if (isRejection(fits)) return fits;
        // A body-less request signs the empty payload: verified now, as no body phase will run.
        return hasBody(c.headers) ? undefined : finished(c);
      },
      body: (c, chunk) => {
        ukObOf(c).update(chunk);
        return undefined;
      },
      bodyEnd: (c) => finished(c),
    },
  ];
  return { parse, verify };
}

function finished(c: CheckContext): StepResult {
  const signature = ukObOf(c);
  if (signature.finish(c.certificate!.publicKey)) return undefined;
  return signatureMismatch(
    signature.header.alg,
    signature.header.b64
      ? "the body as sent, base64url-encoded after the protected header and '.' (Read/Write API 3.1.4 and later)"
      : "the body as sent, after the protected header and '.' (b64 false)",
  );
}

/** P-256's group order: an ECDSA signature (r, s) also verifies as (r, n − s). */
const P256_ORDER = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

function replayMaterial(jws: DetachedJws, alg: JwsAlgorithm): Buffer {
  let signature = Buffer.from(jws.signature);
  if (alg === "ES256" && signature.length === 64) {
    const s = BigInt(`0x${signature.subarray(32).toString("hex") || "0"}`);
    const low = s > P256_ORDER / 2n ? P256_ORDER - s : s;
    signature = Buffer.concat([
      signature.subarray(0, 32),
      Buffer.from(low.toString(16).padStart(64, "0"), "hex"),
    ]);
  }
  return createHash("sha256").update(jws.protectedB64).update(".").update(signature).digest();
}
