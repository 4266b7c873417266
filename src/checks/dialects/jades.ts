/**
 * The steps of a request signed per the Berlin Group openFinance API Framework 2.x: a JAdES detached
 * JWS (ETSI TS 119 182-1) in `x-jws-signature` over the HTTP headers its `sigD.pars` lists, the
 * QSealC in `x5c` (or named by `x5t#S256`, resolved by the KeyResolver), `sigT` for the time, `Digest` for the body (the shared `digest` step). The
 * certificate, role, replay and limits are the chain's shared steps.
 */

import { z } from "zod";
import { type KeyResolver, noKeyResolver, onResolved } from "../../eidas/index.js";
import { isRejection, reject } from "../../errors.js";
import { computeDigestHeader, headerValue, lowerCasedHeaders } from "../../signature/index.js";
import {
  algorithmFitsKey,
  buildHttpHeadersPayload,
  type CertificateChain,
  checkTime,
  type HttpHeadersPayloadStyle,
  type JadesSignature,
  JWS_ALGORITHMS,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  readDetachedJws,
  readJadesHeaderParts,
  signatureMismatch,
  signingInput,
  signJadesAsync,
  verifyJwsSignature,
} from "../../signature/jws/index.js";
import { JadesRequestSigner } from "../../signature/jws/request-signer.js";
import type { CheckContext } from "../context.js";
import { digestHeaderMissing } from "../required-headers.js";
import type { Step } from "../runner.js";
import { headerName } from "./config-names.js";
import { DIGEST_STEP } from "./digest-header.js";
import { jadesResponseChecks, jadesResponseOf } from "./jades-response.js";
import { jwsIsUkOb } from "./jws-family.js";
import type { DialectUnit, SignedResponseInput, SignedResponseParts } from "./unit.js";

export const JADES = ["jades"] as const;

export interface JadesOptions {
  readonly now: () => number;
  readonly algorithms: readonly JwsAlgorithm[];
  /** sigT's allowed deviation either way (the Date tolerance). */
  readonly toleranceMs: number;
  readonly payloadStyle: HttpHeadersPayloadStyle;
  /** Finds a certificate named by `x5t#S256` instead of sent in x5c (config `keys`); none: x5c only. */
  readonly keys?: KeyResolver;
}

/** Where `verify` says a JWS's certificate travels. */
export const JWS_CERTIFICATE = "x5c of x-jws-signature";

/** What a JAdES request's sigD.pars must list whenever the request carries it (SPEC 5.5's eligible headers). */
const COVER_WHEN_PRESENT = ["digest", "psu-id", "psu-corporate-id", "tpp-redirect-uri"];
/** …and always: the request line and X-Request-ID. */
const COVER_ALWAYS = ["(request-target)", "x-request-id"];

/** The detached JWS of x-jws-signature, its protected header read, in the context's dialect slot. */
const jadesOf = (c: CheckContext): JadesSignature => c.dialectState as JadesSignature;

/** The steps of the head, by their place in the chain. */
export function jadesSteps(options: JadesOptions): {
  readonly parse: Step<CheckContext>[];
  readonly verify: Step<CheckContext>[];
} {
  const parse: Step<CheckContext>[] = [
    {
      // The compact form, alg, b64: false, crit, sigD, x5c and x5t#S256.
      name: "jades-header",
      dialects: JADES,
      run: (c) => {
        const read = readJadesHeaderParts(c.headers[JWS_SIGNATURE_HEADER] as string | undefined, {
          now: options.now(),
          algorithms: options.algorithms,
          // sigT is judged by jades-sig-t, so that its refusal names its own step.
          toleranceMs: Number.POSITIVE_INFINITY,
        });
        if (isRejection(read)) return read;
        const { x5c, x5tS256, ...header } = read.header;
        const accept = (chain: CertificateChain): undefined => {
          c.dialectState = { jws: read.jws, header: { ...header, x5c: chain } };
          c.signingCertificate = chain.base64[0];
          c.signedHeaders = header.pars.filter((name) => !name.startsWith("("));
          return undefined;
        };
        if (x5c !== undefined) return accept(x5c);
        if (x5tS256 === undefined) {
          return reject(
            "CERTIFICATE_MISSING",
            "the JWS protected header has no 'x5c'; send the QSealC (base64 DER) first in x5c, or name a certificate this bank knows by 'x5t#S256'",
          );
        }
        // Named by its thumbprint (ING's recipe): the certificate seen before or kept in a file.
        const reference = {
          dialect: "jades",
          x5tS256,
          ...(header.kid !== undefined ? { kid: header.kid } : {}),
        };
        return onResolved(options.keys?.resolve(reference) ?? noKeyResolver(reference), (key) =>
          accept({ base64: [key.base64], der: [key.der], thumbprint: key.sha256 }),
        );
      },
    },
    {
      name: "jades-sig-t",
      dialects: JADES,
      run: (c) => {
        const { header } = jadesOf(c);
        const fresh = checkTime(`sigT '${header.sigT}'`, header.signedAt, options.now(), options.toleranceMs);
        if (fresh !== true) return fresh;
        c.acceptUntil(header.signedAt + options.toleranceMs);
        return undefined;
      },
    },
  ];
  const verify: Step<CheckContext>[] = [
    {
      name: "jades-coverage",
      dialects: JADES,
      run: (c) => {
        const pars = jadesOf(c).header.pars;
        const needed = [
          ...COVER_ALWAYS,
          ...COVER_WHEN_PRESENT.filter((name) => c.headers[name] !== undefined),
        ];
        const absent = needed.filter((name) => !pars.includes(name));
        if (absent.length === 0) return undefined;
        return reject(
          "SIGNATURE_INVALID",
          `the JWS's sigD.pars does not list ${absent.map((n) => `'${n}'`).join(", ")}; a JAdES request must sign (request-target), x-request-id and every Digest, PSU-ID, PSU-Corporate-ID and TPP-Redirect-URI header it carries`,
        );
      },
    },
    {
      name: "jades-signature",
      dialects: JADES,
      run: (c) => {
        const { jws, header } = jadesOf(c);
        // The key of the certificate the `certificate` step trusted: x5c[0].
        const key = c.certificate!.publicKey;
        const fits = algorithmFitsKey(header.alg, key);
        if (isRejection(fits)) return fits;
        const payload = buildHttpHeadersPayload(
          header.pars,
          { method: c.method, target: c.target, headers: c.headers },
          options.payloadStyle,
        );
        if (isRejection(payload)) return payload;
        const input = signingInput(jws.protectedB64, payload);
        if (!verifyJwsSignature(header.alg, key, input, jws.signature)) {
          return signatureMismatch(
            header.alg,
            `the lines of sigD.pars '${header.pars.join(" ")}'; send '<name>: <value>' ${options.payloadStyle === "etsi" ? "joined by LF" : "each ending in LF"}, '(request-target)' as '<method lower-case> <path?query>', with the values sent`,
          );
        }
        // The protected header (with sigT) and the headers' lines: what was signed, keyed on for replay.
        c.signingString = input;
        c.signedWith = `jades:${header.alg}`;
        return undefined;
      },
    },
  ];
  return { parse, verify };
}

/** JAdES's own options (config `verification.dialects.jades`). */
export type JadesDialectOptions = Pick<JadesOptions, "algorithms" | "payloadStyle" | "keys">;

/** JAdES detached JWS in x-jws-signature (Berlin Group openFinance API Framework 2.x): `verification.dialects.jades`. */
const jadesConfig = z
  .object({
    algorithms: z.array(z.enum(JWS_ALGORITHMS)).min(1).default(["PS256", "RS256", "ES256"]),
    /**
     * The HttpHeaders payload's layout: `obp-api` (every line ends in LF, values as sent: OBP-API)
     * or `etsi` (lines joined by LF, values trimmed: the European Commission's DSS library).
     */
    payloadStyle: z.enum(["obp-api", "etsi"]).default("obp-api"),
  })
  .strict();

/** A bank profile's JAdES signing rules (config `banks[].signing.jades`). */
export interface JadesSigningRules {
  readonly jades: {
    readonly algorithm?: JwsAlgorithm | undefined;
    readonly kid?: string | undefined;
    readonly byReference?: boolean | undefined;
    readonly payloadStyle: HttpHeadersPayloadStyle;
    readonly headers?: readonly string[] | undefined;
  };
}

export const jadesDialect: DialectUnit<JadesDialectOptions, JadesSigningRules> = {
  name: "jades",
  title: "JAdES (x-jws-signature, Berlin Group openFinance)",
  detect: (headers) => jwsIsUkOb(headers) === false,
  // The certificate travels in x5c; the body is bound by Digest.
  requiredHeaders: (headers, withBody) => (withBody ? digestHeaderMissing(headers) : undefined),
  signatureBytes: (c) => (c.dialectState as JadesSignature | undefined)?.jws.signature ?? Buffer.alloc(0),
  explain: (c) => {
    const jades = c.dialectState as JadesSignature | undefined;
    if (!jades) return { certificateHeader: JWS_CERTIFICATE, certificate: c.signingCertificate };
    const payload = buildHttpHeadersPayload(jades.header.pars, {
      method: c.method,
      target: c.target,
      headers: c.headers,
    });
    return {
      certificateHeader: JWS_CERTIFICATE,
      certificate: c.signingCertificate,
      protectedHeader: jades.jws.header,
      signedHeaders: [...jades.header.pars],
      ...(Buffer.isBuffer(payload) ? { signingString: payload.toString("latin1") } : {}),
    };
  },
  responseSigned: jadesResponseSigned,
  responseChecks: ({ responses, signing, ...common }) =>
    jadesResponseChecks({
      ...common,
      algorithms: (responses["jadesAlgorithms"] as readonly JwsAlgorithm[] | undefined) ?? JWS_ALGORITHMS,
      ...(signing?.jades?.payloadStyle ? { payloadStyle: signing.jades.payloadStyle } : {}),
    }),
  responseExplaining: {
    needsBody: ["digest"],
    bodyCheckedAgainst: "Digest",
    explain: (check) => {
      const jades = jadesResponseOf(check);
      return {
        certificateHeader: JWS_CERTIFICATE,
        certificate: jades?.header.x5c.base64[0],
        ...(jades ? { signedHeaders: [...jades.header.pars], protectedHeader: jades.jws.header } : {}),
      };
    },
  },
  /**
   * An answer: Digest and X-Request-ID, and x-jws-signature over them with the bank's QSealC in x5c
   * (openFinance signs responses as requests, their headers in sigD.pars).
   */
  responseSigner: ({ privateKey, certificateDer }) => {
    const alg = privateKey.asymmetricKeyType === "ec" ? "ES256" : "PS256";
    return async (body, headers, _status, request) => {
      const added: Record<string, string> = { Digest: computeDigestHeader(body) };
      const requestId = headers["x-request-id"] ?? headerValue(request.headers, "x-request-id");
      if (requestId !== undefined) added["X-Request-ID"] = requestId;
      const value = await signJadesAsync({
        key: privateKey,
        certificateChain: [certificateDer],
        alg,
        pars: requestId === undefined ? ["digest"] : ["digest", "x-request-id"],
        sigT: Date.now(),
        message: { headers: { ...headers, ...lowerCasedHeaders(added) } },
      });
      return { ...added, "x-jws-signature": value };
    };
  },
  signer: ({ privateKey, certificateDer, rules }) =>
    new JadesRequestSigner({
      privateKey,
      certificateChain: [certificateDer],
      ...(rules.jades.algorithm ? { algorithm: rules.jades.algorithm } : {}),
      ...(rules.jades.kid ? { kid: rules.jades.kid } : {}),
      ...(rules.jades.byReference ? { byReference: true } : {}),
      payloadStyle: rules.jades.payloadStyle,
      ...(rules.jades.headers ? { signedWhenPresent: rules.jades.headers } : {}),
    }),
  authenticates: "head",
  howToSign: "an x-jws-signature header holding a JAdES detached JWS (Berlin Group openFinance)",
  signatureStep: "jades-signature",
  // Every algorithm the openFinance guidelines name, OBP-API's payload layout.
  defaults: jadesConfig.parse({}),
  config: {
    key: "jades",
    verification: jadesConfig,
    responses: {
      /** The algorithms of a bank answering in JAdES (`signing.dialect: jades`). */
      jadesAlgorithms: z.array(z.enum(JWS_ALGORITHMS)).min(1).default(["PS256", "RS256", "ES256"]),
    },
    // `banks[].signing.jades`.
    signing: z
      .object({
        /** Default PS256 for an RSA key, ES256 for an EC key. */
        algorithm: z.enum(JWS_ALGORITHMS).optional(),
        /** Sent as the JWS `kid` when the bank wants one. */
        kid: z.string().min(1).optional(),
        /**
         * Name the QSealC by `x5t#S256` alone, without x5c (ING's recipe), for a bank that knows the
         * certificate already; default false: x5c carries it.
         */
        byReference: z.boolean().default(false),
        payloadStyle: z.enum(["obp-api", "etsi"]).default("obp-api"),
        /**
         * sigD.pars when the request carries them, after `(request-target)`, `digest` and
         * `x-request-id` (always signed), in this order.
         */
        headers: z.array(headerName).default(["psu-id", "psu-corporate-id", "tpp-redirect-uri"]),
      })
      .strict(),
  },
  steps(shared, own) {
    return {
      ...jadesSteps({ ...own, now: shared.now, toleranceMs: shared.dateToleranceMs }),
      // openFinance keeps Digest: the body is bound through it (sigD.pars must list it).
      digest: [DIGEST_STEP],
      longestAcceptanceMs: 2 * shared.dateToleranceMs,
    };
  },
};

/** A signed answer's JWS signing input: the lines of the headers its sigD.pars lists (b64: false). */
function jadesResponseSigned({
  headers,
  payloadStyle,
}: SignedResponseInput): SignedResponseParts | undefined {
  const jws = readDetachedJws(headers[JWS_SIGNATURE_HEADER], JWS_SIGNATURE_HEADER);
  if (isRejection(jws)) return undefined;
  const pars = (jws.header.sigD as { pars?: unknown } | undefined)?.pars;
  if (!Array.isArray(pars) || !pars.every((p) => typeof p === "string")) return undefined;
  const payload = buildHttpHeadersPayload(pars, { headers }, payloadStyle);
  if (isRejection(payload)) return undefined;
  const alg = typeof jws.header.alg === "string" ? jws.header.alg : "";
  return {
    bytes: signingInput(jws.protectedB64, payload),
    signature: jws.signature,
    signedWith: `jades:${alg}`,
  };
}
