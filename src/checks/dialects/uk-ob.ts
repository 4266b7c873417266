/**
 * The steps of a request signed per UK Open Banking: a detached JWS over the body (RFC 7515
 * appendix F) in `x-jws-signature`, with the critical claims `iat`, `iss` and `tan` under
 * http://openbanking.org.uk/, the QSealC in `x5c` or named by `kid` (resolved by the
 * KeyResolver). The body is the payload, and the only thing the
 * signature authenticates (its unit's `authenticates`): the exchange reads the body whole and runs
 * these body phases before a byte is sent, and the head is bound to the TPP by the client-certificate
 * step (the same organisation's QWAC, required for this dialect). A body-less request is verified in
 * the head. The certificate, role, replay and limits are the chain's shared steps.
 */

import { createHash } from "node:crypto";
import { z } from "zod";
import { type KeyResolver, noKeyResolver, onResolved, parseCertificate } from "../../eidas/index.js";
import { isRejection } from "../../errors.js";
import { buildKeyId, keyIdTargetFromDer } from "../../signature/index.js";
import {
  algorithmFitsKey,
  checkTime,
  checkUkObClaims,
  type DetachedJws,
  JWS_ALGORITHMS,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  readDetachedJws,
  readUkObHeader,
  signatureMismatch,
  signingInput,
  signUkObAsync,
  UkObSignature,
} from "../../signature/jws/index.js";
import { UkObRequestSigner } from "../../signature/jws/ukob-request-signer.js";
import type { CheckContext } from "../context.js";
import { hasBody } from "../required-headers.js";
import type { Step, StepResult } from "../runner.js";
import { JWS_CERTIFICATE } from "./jades.js";
import { jwsIsUkOb } from "./jws-family.js";
import { ukObResponseChecks, ukObResponseOf } from "./uk-ob-response.js";
import type { DialectUnit, SignedResponseInput, SignedResponseParts } from "./unit.js";

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
  /** Finds the certificate a `kid` (and `x5t#S256`) names when x5c is not sent (config `keys`). */
  readonly keys?: KeyResolver;
}

/** The detached JWS over the body and its check as the body streams, in the context's dialect slot. */
const ukObOf = (c: CheckContext): UkObSignature => c.dialectState as UkObSignature;

/** The request's UK OB JWS, once its header step read it (response signing names its `tan`). */
export const ukObSignatureOf = (c: CheckContext): UkObSignature | undefined =>
  c.dialect === "uk-ob" ? (c.dialectState as UkObSignature | undefined) : undefined;

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
        const accept = (signingCertificate: string): undefined => {
          c.dialectState = new UkObSignature(read.jws, read.header);
          c.signingCertificate = signingCertificate;
          c.signedHeaders = [];
          // What was signed is the protected header and the body, which is still on its way: the
          // replay key is the protected header and the signature, which no one can make anew without
          // the key (PS256 and RS256 are not malleable; an ES256 signature's s is taken as the lower
          // of s and n − s, the two forms that both verify).
          c.signingString = replayMaterial(read.jws, read.header.alg);
          c.signedWith = `uk-ob:${read.header.alg}`;
          return undefined;
        };
        const { x5c, kid, x5tS256, iss } = read.header;
        if (x5c !== undefined) return accept(x5c.base64[0]!);
        // kid only, as UK OB TPPs sign: the key is the directory's (its iss names the TPP's JWKS).
        const reference = { dialect: "uk-ob", kid, iss, ...(x5tS256 !== undefined ? { x5tS256 } : {}) };
        return onResolved(options.keys?.resolve(reference) ?? noKeyResolver(reference), (key) =>
          accept(key.base64),
        );
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

/** UK Open Banking's own options (config `verification.dialects.ukOb`). */
export type UkObDialectOptions = Pick<UkObOptions, "algorithms" | "tan" | "allowB64False" | "keys">;

/** UK Open Banking's detached JWS over the body in x-jws-signature: `verification.dialects.ukOb`. */
const ukObConfig = z
  .object({
    algorithms: z.array(z.enum(JWS_ALGORITHMS)).min(1).default(["PS256"]),
    /** The trust anchors the `tan` claim may name. */
    tan: z.array(z.string().min(1)).min(1).default(["openbanking.org.uk"]),
    /** Accept `b64: false` with the raw body signed (Read/Write API 3.1.3 and earlier). */
    allowB64False: z.boolean().default(false),
  })
  .strict();

/** A bank profile's UK OB signing rules (config `banks[].signing.ukOb`). */
export interface UkObSigningRules {
  readonly ukOb: {
    readonly iss?: string | undefined;
    readonly kid?: string | undefined;
    readonly tan: string;
    readonly algorithm?: JwsAlgorithm | undefined;
    readonly b64False?: boolean | undefined;
  };
}

export const ukObDialect: DialectUnit<UkObDialectOptions, UkObSigningRules> = {
  name: "uk-ob",
  title: "UK Open Banking (x-jws-signature over the body)",
  detect: (headers) => jwsIsUkOb(headers) === true,
  signatureBytes: (c) => (c.dialectState as UkObSignature | undefined)?.jws.signature ?? Buffer.alloc(0),
  // Its signing input is its protected header and the body (base64url, or as is with `b64: false`).
  signedBytes: (c, body) => {
    const signature = c.dialectState as UkObSignature | undefined;
    if (!signature) return c.signingString ?? Buffer.alloc(0);
    const head = `${signature.jws.protectedB64}.`;
    const payload = body ?? Buffer.alloc(0);
    return signature.header.b64
      ? Buffer.from(head + payload.toString("base64url"), "latin1")
      : Buffer.concat([Buffer.from(head, "latin1"), payload]);
  },
  explain: (c) => {
    const signature = c.dialectState as UkObSignature | undefined;
    return {
      certificateHeader: JWS_CERTIFICATE,
      certificate: c.signingCertificate,
      ...(signature ? { protectedHeader: signature.jws.header } : {}),
    };
  },
  responseSigned: ukObResponseSigned,
  responseChecks: ({ responses, ...common }) =>
    ukObResponseChecks({
      ...common,
      algorithms: (responses["ukObAlgorithms"] as readonly JwsAlgorithm[] | undefined) ?? JWS_ALGORITHMS,
      tan: (responses["ukObTan"] as readonly string[] | undefined) ?? ["openbanking.org.uk"],
      allowB64False: responses["ukObAllowB64False"] === true,
    }),
  responseExplaining: {
    // Its signature is over the body itself: without it, neither it nor its claims can be checked.
    needsBody: ["signature", "claims"],
    bodyCheckedAgainst: "the signature",
    explain: (check) => {
      const signature = ukObResponseOf(check);
      return {
        certificateHeader: JWS_CERTIFICATE,
        certificate: signature?.header.x5c?.base64[0],
        ...(signature ? { protectedHeader: signature.jws.header } : {}),
      };
    },
  },
  // An answer: its body signed by the ASPSP; iss its organizationIdentifier, tan the request's.
  responseSigner: ({ privateKey, certificateDer }) => {
    const kid = buildKeyId(keyIdTargetFromDer(certificateDer));
    const parsed = parseCertificate(certificateDer);
    const iss = (isRejection(parsed) ? undefined : parsed.organizationIdentifier) ?? kid;
    const alg = privateKey.asymmetricKeyType === "ec" ? "ES256" : "PS256";
    return async (body, _headers, _status, request) => ({
      "x-jws-signature": await signUkObAsync({
        key: privateKey,
        kid,
        iss,
        tan: ukObSignatureOf(request)?.header.tan ?? "openbanking.org.uk",
        iat: Math.floor(Date.now() / 1000),
        body,
        alg,
        certificateChain: [certificateDer],
      }),
    });
  },
  signer: ({ privateKey, certificateDer, rules }) => {
    const parsed = parseCertificate(certificateDer);
    const iss = rules.ukOb.iss ?? (isRejection(parsed) ? undefined : parsed.organizationIdentifier);
    if (iss === undefined)
      throw new Error("the QSealC names no organizationIdentifier: set signing.ukOb.iss");
    return new UkObRequestSigner({
      privateKey,
      certificate: certificateDer,
      kid: rules.ukOb.kid ?? buildKeyId(keyIdTargetFromDer(certificateDer)),
      iss,
      tan: rules.ukOb.tan,
      ...(rules.ukOb.algorithm ? { algorithm: rules.ukOb.algorithm } : {}),
      ...(rules.ukOb.b64False !== undefined ? { b64False: rules.ukOb.b64False } : {}),
    });
  },
  // Its signature covers the body only: read whole and verified before a byte is sent, its head
  // bound by the same organisation's QWAC (the client-certificate step).
  authenticates: "body",
  howToSign: "an x-jws-signature header holding a UK Open Banking detached JWS",
  signatureStep: "uk-ob-signature",
  // PS256, tan openbanking.org.uk, Read/Write API 3.1.4 and later (no b64).
  defaults: ukObConfig.parse({}),
  config: {
    key: "ukOb",
    verification: ukObConfig,
    responses: {
      /** The algorithms and trust anchors of a bank answering in UK Open Banking (`signing.dialect: uk-ob`). */
      ukObAlgorithms: z.array(z.enum(JWS_ALGORITHMS)).min(1).default(["PS256"]),
      ukObTan: z.array(z.string().min(1)).min(1).default(["openbanking.org.uk"]),
      /** Accept a UK OB answer signed with `b64: false` (a bank on Read/Write API 3.1.3 or earlier). */
      ukObAllowB64False: z.boolean().default(false),
    },
    // `banks[].signing.ukOb`.
    signing: z
      .object({
        algorithm: z.enum(JWS_ALGORITHMS).default("PS256"),
        /** Default the QSealC's Berlin Group keyId. */
        kid: z.string().min(1).optional(),
        /** Default the QSealC's organizationIdentifier; UK OB TPPs often send `<org id>/<software id>`. */
        iss: z.string().min(1).optional(),
        tan: z.string().min(1).default("openbanking.org.uk"),
        /** Sign as Read/Write API 3.1.3 and earlier: `b64: false` among the crit claims, the raw body signed. */
        b64False: z.boolean().default(false),
      })
      .strict(),
  },
  steps(shared, own) {
    return {
      ...ukObSteps({ ...own, now: shared.now, toleranceMs: shared.dateToleranceMs }),
      longestAcceptanceMs: 2 * shared.dateToleranceMs,
    };
  },
};

/** A signed answer's JWS signing input over its body: base64url, or as it is with b64: false. */
function ukObResponseSigned({ headers, body }: SignedResponseInput): SignedResponseParts | undefined {
  const jws = readDetachedJws(headers[JWS_SIGNATURE_HEADER], JWS_SIGNATURE_HEADER);
  if (isRejection(jws)) return undefined;
  const payload = jws.header.b64 === false ? body : Buffer.from(body.toString("base64url"), "latin1");
  const alg = typeof jws.header.alg === "string" ? jws.header.alg : "";
  return {
    bytes: signingInput(jws.protectedB64, payload),
    signature: jws.signature,
    signedWith: `uk-ob:${alg}`,
  };
}
