/**
 * The steps of a request signed per RFC 9421 as FAPI 2.0 HTTP Signatures profile it, with the
 * Berlin Group's certificate and keyId: `Signature-Input`/`Signature` (tag `fapi-2-request`),
 * `Content-Digest` (RFC 9530) for the body, `created` for the time, the QSealC in
 * TPP-Signature-Certificate and keyid `SN=…,CA=…`. The certificate, role, replay and limits are
 * the chain's shared steps.
 */

import { z } from "zod";
import { isRejection, type Rejection, reject } from "../../errors.js";
import {
  buildKeyId,
  headerValue,
  type KeyIdTarget,
  keyIdTargetFromDer,
  lowerCasedHeaders,
  matchKeyId,
} from "../../signature/index.js";
import {
  algorithmForKey,
  ContentDigestVerifier,
  checkSignatureTime,
  computeContentDigest,
  FAPI_REQUEST_TAG,
  FAPI_RESPONSE_PROFILES,
  FAPI_RESPONSE_TAG,
  type FapiResponseProfile,
  fapiRequestComponents,
  fapiResponseSigning,
  type ParsedSignature,
  parseContentDigest,
  parseSignatures,
  type RequestMessage,
  RFC9421_ALGORITHMS,
  type Rfc9421Algorithm,
  selectSignature,
  signAsync,
  signatureAcceptedUntil,
  signatureBase,
  verify,
} from "../../signature/rfc9421/index.js";
import { Rfc9421RequestSigner } from "../../signature/rfc9421/request-signer.js";
import { parseAuthority } from "../authority.js";
import type { CheckContext } from "../context.js";
import { certificateHeaderMissing, hasBody } from "../required-headers.js";
import type { Step } from "../runner.js";
import { headerName } from "./config-names.js";
import { BODY_DIGEST_PHASES } from "./digest-header.js";
import { responseSignatureOf, rfc9421ResponseChecks } from "./rfc9421-response.js";
import type { DialectExplanation, DialectUnit, SignedResponseInput, SignedResponseParts } from "./unit.js";

export const RFC9421 = ["rfc9421"] as const;

export interface Rfc9421Options {
  readonly now: () => number;
  readonly algorithms: readonly Rfc9421Algorithm[];
  /** Clock skew tolerated either way for `created` (the Date tolerance). */
  readonly toleranceSeconds: number;
  /** How old `created` may be. */
  readonly maxAgeSeconds: number;
  /** The scheme of `@target-uri`: what the TPP called, whatever terminates TLS before the gateway. */
  readonly scheme: "https" | "http";
  readonly keyIdPolicy: "strict" | "relaxed";
  readonly allowDecimalSerial: boolean;
}

/**
 * Berlin Group headers a signature must cover when sent (SPEC 5.5's eligible headers, less Date
 * and Digest, whose places `created` and Content-Digest take), and those it must always cover.
 */
const COVER_WHEN_PRESENT = ["psu-id", "psu-corporate-id", "tpp-redirect-uri"];
const COVER_ALWAYS = ["tpp-signature-certificate", "x-request-id"];

const EMPTY_SHA256 = computeContentDigest(Buffer.alloc(0), "sha-256");

/** The FAPI request signature checked, in the context's dialect slot. */
const signatureOf = (c: CheckContext): ParsedSignature => c.dialectState as ParsedSignature;

/** The RFC 9421 request signature the chain verified, if the request was signed so (a response binds it). */
export const verifiedRequestSignature = (c: CheckContext): ParsedSignature | undefined =>
  c.dialect === "rfc9421" ? (c.dialectState as ParsedSignature | undefined) : undefined;

/** What RFC 9421 calls the request: its method, absolute target URI and fields. */
export function requestMessage(c: CheckContext, scheme: "https" | "http"): RequestMessage {
  // From the parsed authority, never the raw header: a Host carrying a path could not move the
  // path the signature covers (the host step refused it).
  // The host step parsed it; a context it never ran on (a request read by `verify --response`) parses it here.
  const parsed = c.authority ?? (c.headers.host === undefined ? undefined : parseAuthority(c.headers.host));
  const authority = parsed === undefined || isRejection(parsed) ? undefined : parsed;
  const origin = authority
    ? `${scheme}://${authority.host}${authority.port === undefined ? "" : `:${authority.port}`}`
    : `${scheme}://`;
  return { method: c.method, targetUri: `${origin}${c.target}`, headers: c.headers };
}

/** `content-digest`: with a body the digest is checked as it streams (as `digest` does for Digest). */
export function contentDigestStep(): Step<CheckContext> {
  return {
    name: "content-digest",
    dialects: RFC9421,
    run: (c) => {
      const header = c.headers["content-digest"];
      if (header === undefined) return undefined;
      if (!hasBody(c.headers)) {
        if (header === EMPTY_SHA256) return undefined;
        const parsed = parseContentDigest(header);
        if (isRejection(parsed)) return parsed;
        const verifier = new ContentDigestVerifier(parsed);
        const verdict = verifier.finish();
        return verdict === true ? undefined : verdict;
      }
      const parsed = parseContentDigest(header);
      if (isRejection(parsed)) return parsed;
      // The body digest's slot, which only the request's own dialect's digest step fills.
      c.digestVerifier = new ContentDigestVerifier(parsed);
      return undefined;
    },
    ...BODY_DIGEST_PHASES,
  };
}

/** The steps of the head, by their place in the chain. */
export function rfc9421Steps(options: Rfc9421Options): {
  readonly parse: Step<CheckContext>[];
  readonly keyId: Step<CheckContext>[];
  readonly verify: Step<CheckContext>[];
} {
  const window = { maxAgeSeconds: options.maxAgeSeconds, toleranceSeconds: options.toleranceSeconds };
  const parse: Step<CheckContext>[] = [
    {
      // Signature-Input and Signature parse; the FAPI request signature is the one checked.
      name: "rfc9421-signature-input",
      dialects: RFC9421,
      run: (c) => {
        const all = parseSignatures(c.headers["signature-input"], c.headers.signature);
        if (isRejection(all)) return all;
        const signature = selectSignature(all, { tag: FAPI_REQUEST_TAG });
        if (isRejection(signature)) return signature;
        c.dialectState = signature;
        c.signedHeaders = signature.components.filter((s) => !s.name.startsWith("@")).map((s) => s.name);
        return undefined;
      },
    },
    {
      name: "rfc9421-created",
      dialects: RFC9421,
      run: (c) => {
        const signature = signatureOf(c);
        const fresh = checkSignatureTime(signature, { now: options.now(), ...window });
        if (fresh !== true) return fresh;
        c.acceptUntil(signatureAcceptedUntil(signature, window));
        return undefined;
      },
    },
  ];
  const keyId: Step<CheckContext>[] =
    options.keyIdPolicy === "strict"
      ? [
          {
            // keyid is the Berlin Group keyId of the certificate (SPEC 5.3), as in draft-cavage.
            name: "rfc9421-key-id",
            dialects: RFC9421,
            run: (c) => checkKeyId(signatureOf(c), c.certificate!.keyIdTarget, options.allowDecimalSerial),
          },
        ]
      : [];
  const verifySteps: Step<CheckContext>[] = [
    {
      // FAPI 2.0's components, the certificate and X-Request-ID, and every Berlin Group header sent.
      name: "rfc9421-coverage",
      dialects: RFC9421,
      run: (c) => {
        const signature = signatureOf(c);
        const needed = fapiRequestComponents(requestMessage(c, options.scheme), {
          coverAlways: COVER_ALWAYS,
          coverWhenPresent: COVER_WHEN_PRESENT,
          hasBody: hasBody(c.headers),
        });
        const absent = needed.filter(
          (name) => !signature.components.some((s) => s.name === name && s.params.size === 0),
        );
        if (absent.length === 0) return undefined;
        return reject(
          "SIGNATURE_INVALID",
          `Signature ${signature.label} does not cover ${absent.map((n) => `"${n}"`).join(", ")}; a request signed per RFC 9421 must cover "@method", "@target-uri", "content-digest" with a body, "tpp-signature-certificate", "x-request-id" and every PSU-ID, PSU-Corporate-ID, TPP-Redirect-URI, Authorization and DPoP header it carries`,
        );
      },
    },
    {
      name: "rfc9421-signature",
      dialects: RFC9421,
      run: (c) => {
        const signature = signatureOf(c);
        const base = signatureBase(
          signature.components,
          signature.serializedParams,
          requestMessage(c, options.scheme),
        );
        if (isRejection(base)) return base;
        const key = c.certificate!.publicKey;
        const verified = verify(signature, base, key, options.algorithms);
        if (isRejection(verified)) return verified;
        // The base holds `created` and the signature parameters: what was signed, keyed on for replay.
        c.signingString = Buffer.from(base, "latin1");
        c.signedWith = `rfc9421:${signature.params.alg ?? algorithmForKey(key) ?? "?"}`;
        return undefined;
      },
    },
  ];
  return { parse, keyId, verify: verifySteps };
}

function checkKeyId(
  signature: ParsedSignature,
  target: KeyIdTarget,
  allowDecimalSerial: boolean,
): Rejection | undefined {
  const keyid = signature.params.keyid;
  if (keyid === undefined) {
    return reject(
      "SIGNATURE_INVALID",
      `Signature ${signature.label} has no keyid; send ;keyid="SN=<serial hex>,CA=<issuer DN>" naming the certificate in TPP-Signature-Certificate (SPEC 5.3)`,
    );
  }
  const matched = matchKeyId(keyid, target, { allowDecimalSerial });
  return matched === true ? undefined : matched;
}

/** RFC 9421's own options (config `verification.dialects.rfc9421`). */
export type Rfc9421DialectOptions = Pick<Rfc9421Options, "algorithms" | "maxAgeSeconds" | "scheme">;

/** RFC 9421 HTTP Message Signatures as FAPI 2.0 profiles them: `verification.dialects.rfc9421`. */
const rfc9421Config = z
  .object({
    // FAPI 2.0's algorithms.
    algorithms: z
      .array(z.enum(RFC9421_ALGORITHMS))
      .min(1)
      .default(["rsa-pss-sha512", "ecdsa-p256-sha256", "ed25519", "rsa-v1_5-sha256"]),
    /** How old a signature's `created` may be (besides dateToleranceSeconds of clock skew). */
    maxAgeSeconds: z.number().positive().default(300),
    /**
     * The scheme of `@target-uri` as the TPP signs it: the URL it called. `https` even when TLS
     * ends before the gateway; `http` only for a plain-HTTP test setup.
     */
    scheme: z.enum(["https", "http"]).default("https"),
  })
  .strict();

/** A bank profile's RFC 9421 signing rules (config `banks[].signing`: `rfc9421` and `keyId.value`). */
export interface Rfc9421SigningRules {
  readonly keyId: { readonly value?: string | undefined };
  readonly rfc9421: {
    readonly algorithm?: Rfc9421Algorithm | undefined;
    readonly headers?: readonly string[] | undefined;
  };
}

export const rfc9421Dialect: DialectUnit<Rfc9421DialectOptions, Rfc9421SigningRules> = {
  name: "rfc9421",
  title: "RFC 9421 (Signature-Input and Signature, FAPI 2.0)",
  responsesBindRequest: true,
  detect: (headers) => headers["signature-input"] !== undefined,
  requiredHeaders: (headers, withBody) => {
    const certificate = certificateHeaderMissing(headers);
    if (certificate || !withBody || headers["content-digest"] !== undefined) return certificate;
    return reject(
      "FORMAT_ERROR",
      "Content-Digest header is missing; a request with a body signed per RFC 9421 must carry sha-256=:<base64 of the body's SHA-256>: (RFC 9530), covered by the signature",
    );
  },
  signatureBytes: (c) => (c.dialectState as ParsedSignature | undefined)?.signature ?? Buffer.alloc(0),
  explain: (c) => ({
    certificateHeader: "TPP-Signature-Certificate",
    certificate: headerValue(c.headers, "tpp-signature-certificate"),
    ...describeHttpSignature(c),
  }),
  responseSigned: rfc9421ResponseSigned,
  responseChecks: ({ responses, ...common }) =>
    rfc9421ResponseChecks({
      ...common,
      algorithms:
        (responses["rfc9421Algorithms"] as readonly Rfc9421Algorithm[] | undefined) ?? RFC9421_ALGORITHMS,
      profile: (responses["rfc9421Profile"] as FapiResponseProfile | undefined) ?? "full",
    }),
  responseExplaining: {
    needsBody: ["content-digest"],
    bodyCheckedAgainst: "Content-Digest",
    withoutRequest: () => [
      'the signature binds the answer to the request ("@method";req, "@target-uri";req): without --request the signature step fails',
    ],
    explain: (check, { certificateHeader }) => {
      const signature = responseSignatureOf(check);
      return {
        certificateHeader,
        certificate: check.header(certificateHeader.toLowerCase()),
        ...(signature ? { signedHeaders: signature.components.map((c) => c.serialized) } : {}),
      };
    },
  },
  /**
   * An answer: a FAPI 2.0 response signature (`fapi-2-response`) over its status, Content-Digest,
   * the certificate header and X-Request-ID, bound to the request the rfc9421 steps verified.
   */
  responseSigner: ({ privateKey, certificateDer, certificateHeader, rules, own }) => {
    const certificate = Buffer.from(certificateDer).toString("base64");
    const keyid = buildKeyId(keyIdTargetFromDer(certificateDer));
    const profile = (rules["rfc9421Profile"] as FapiResponseProfile | undefined) ?? "full";
    return async (body, headers, status, request) => {
      const added: Record<string, string> = {
        "Content-Digest": computeContentDigest(body, "sha-256"),
        [certificateHeader]: certificate,
      };
      const requestId = headers["x-request-id"] ?? headerValue(request.headers, "x-request-id");
      if (requestId !== undefined) added["X-Request-ID"] = requestId;
      const response = { status, headers: { ...headers, ...lowerCasedHeaders(added) } };
      const requestSignature = verifiedRequestSignature(request);
      const signingOptions = fapiResponseSigning(response, requestMessage(request, own.scheme), {
        privateKey,
        keyid,
        now: Date.now(),
        coverAlways: [
          certificateHeader.toLowerCase(),
          ...(requestId === undefined ? [] : ["x-request-id"]),
          // Always sent, so always covered: an empty body's digest too.
          ...(profile === "full" ? ["content-digest"] : []),
        ],
        hasBody: body.length > 0,
        profile,
        // The signature the rfc9421 steps verified is the one bound.
        ...(requestSignature ? { requestSignatureLabel: requestSignature.label } : {}),
      });
      if (isRejection(signingOptions)) throw new Error(signingOptions.text);
      const signed = await signAsync(signingOptions);
      if (isRejection(signed)) throw new Error(signed.text);
      return { ...added, "Signature-Input": signed.signatureInput, Signature: signed.signature };
    };
  },
  signer: ({ privateKey, certificateDer, url, rules }) =>
    new Rfc9421RequestSigner({
      privateKey,
      certificate: certificateDer,
      ...(rules.rfc9421.algorithm ? { algorithm: rules.rfc9421.algorithm } : {}),
      ...(rules.keyId.value ? { keyid: rules.keyId.value } : {}),
      scheme: url.toLowerCase().startsWith("http:") ? "http" : "https",
      ...(rules.rfc9421.headers ? { coverWhenPresent: rules.rfc9421.headers } : {}),
    }),
  authenticates: "head",
  howToSign: "Signature-Input and Signature headers (RFC 9421, FAPI 2.0) with TPP-Signature-Certificate",
  signatureStep: "rfc9421-signature",
  // FAPI 2.0's algorithms, `created` at most 5 minutes old, HTTPS.
  defaults: rfc9421Config.parse({}),
  config: {
    key: "rfc9421",
    verification: rfc9421Config,
    responses: {
      /**
       * What an RFC 9421 answer must bind of the request: `full` (FAPI 2.0 HTTP Signatures draft -01:
       * `@method`, `@target-uri`, the request's content-digest, signature and signature-input, all
       * `;req`) or `method-target` (`"@method";req` and `"@target-uri";req` only: a bank that signs
       * as this gateway did before).
       */
      rfc9421Profile: z.enum(FAPI_RESPONSE_PROFILES).default("full"),
      /** The algorithms of a bank answering in RFC 9421 (`signing.dialect: rfc9421`). */
      rfc9421Algorithms: z
        .array(z.enum(RFC9421_ALGORITHMS))
        .min(1)
        .default(["rsa-pss-sha512", "ecdsa-p256-sha256", "ed25519", "rsa-v1_5-sha256"]),
    },
    // `banks[].signing.rfc9421` (with `signing.keyId.value`).
    signing: z
      .object({
        /** Default the key's own: rsa-pss-sha512 for RSA, ecdsa-p256-sha256, ed25519. */
        algorithm: z.enum(RFC9421_ALGORITHMS).optional(),
        /**
         * Headers covered when the request carries them, after FAPI 2.0's own components,
         * TPP-Signature-Certificate and X-Request-ID (a bank that wants more covered names them here).
         */
        headers: z.array(headerName).default(["psu-id", "psu-corporate-id", "tpp-redirect-uri"]),
      })
      .strict(),
  },
  steps(shared, own) {
    const steps = rfc9421Steps({
      ...own,
      now: shared.now,
      toleranceSeconds: shared.dateToleranceMs / 1000,
      keyIdPolicy: shared.keyIdPolicy,
      allowDecimalSerial: shared.allowDecimalSerial,
    });
    return {
      digest: [contentDigestStep()],
      ...steps,
      // `created` up to the tolerance ahead, and its maximum age plus the tolerance behind.
      longestAcceptanceMs: own.maxAgeSeconds * 1000 + 2 * shared.dateToleranceMs + 1000,
    };
  },
};

/** An RFC 9421 signature: its keyid, covered components and signature base (rebuilt over https). */
function describeHttpSignature(
  c: CheckContext,
): Pick<DialectExplanation, "keyId" | "signedHeaders" | "signingString"> {
  const signature = c.dialectState as ParsedSignature | undefined;
  if (!signature) return {};
  const keyid = signature.params.keyid;
  const base =
    c.signingString?.toString("latin1") ??
    signatureBase(signature.components, signature.serializedParams, requestMessage(c, "https"));
  return {
    ...(keyid === undefined ? {} : { keyId: keyid }),
    signedHeaders: signature.components.map((s) => s.serialized),
    ...(typeof base === "string" ? { signingString: base } : {}),
  };
}

/** A signed answer's signature base, with the `;req` components of the request it answers. */
function rfc9421ResponseSigned(input: SignedResponseInput): SignedResponseParts | undefined {
  const { headers } = input;
  if (!input.request) return undefined;
  const all = parseSignatures(headers["signature-input"], headers.signature);
  if (isRejection(all)) return undefined;
  const signature = selectSignature(all, { tag: FAPI_RESPONSE_TAG });
  if (isRejection(signature)) return undefined;
  const base = signatureBase(
    signature.components,
    signature.serializedParams,
    { status: input.status, headers },
    input.request,
  );
  if (isRejection(base)) return undefined;
  return {
    bytes: Buffer.from(base, "latin1"),
    signature: signature.signature,
    signedWith: `rfc9421:${signature.params.alg ?? (input.key && algorithmForKey(input.key)) ?? ""}`,
  };
}
