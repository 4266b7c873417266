/**
 * A bank's response signed in JAdES (what this gateway's ingress sends for a JAdES request): an
 * x-jws-signature over the response headers its sigD.pars lists, which must include Digest (checked
 * against the body) and X-Request-ID (the request's); the bank's QSealC in x5c, trusted as for
 * draft-cavage responses. Named steps, as for draft-cavage, so that `verify --response` prints the
 * checks egress applies.
 */

import { isRejection } from "../../errors.js";
import { verifyDigest } from "../../signature/index.js";
import {
  algorithmFitsKey,
  buildHttpHeadersPayload,
  type DetachedJws,
  type HttpHeadersPayloadStyle,
  type JadesHeader,
  JWS_SIGNATURE_HEADER,
  type JwsAlgorithm,
  readJadesHeader,
  signatureMismatch,
  signingInput,
  verifyJwsSignature,
} from "../../signature/jws/index.js";
import type { CertificateVerifier } from "../context.js";
import type { Step } from "../runner.js";
import { type ResponseCheck, requestIdStep, responseOutline } from "./response-outline.js";

/** The response's JWS and its protected header, read by `jws-header`, in the check's dialect slot. */
export const jadesResponseOf = (c: ResponseCheck): JadesResponseSignature | undefined =>
  c.dialectState as JadesResponseSignature | undefined;

interface JadesResponseSignature {
  readonly jws: DetachedJws;
  readonly header: JadesHeader;
}

export interface JadesResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly JwsAlgorithm[];
  readonly payloadStyle?: HttpHeadersPayloadStyle;
  readonly now?: () => number;
}

/** The checks of a JAdES response, in order; `digest` needs the body, `request-id` the request. */
export function jadesResponseChecks(options: JadesResponseVerifierOptions): Step<ResponseCheck>[] {
  const now = options.now ?? Date.now;
  return responseOutline(options.certificates, {
    read: [
      {
        name: "jws-header",
        run: (c) => {
          const read = readJadesHeader(c.header(JWS_SIGNATURE_HEADER), {
            now: now(),
            algorithms: options.algorithms,
            toleranceMs: options.dateToleranceMs,
            requiredPars: ["digest", "x-request-id"],
          });
          if (isRejection(read)) return read;
          c.dialectState = read;
          return undefined;
        },
      },
    ],
    beforeCertificate: [
      requestIdStep,
      {
        name: "digest",
        run: (c) => {
          const digest = verifyDigest(c.header("digest"), c.response.body);
          return isRejection(digest) ? digest : undefined;
        },
      },
    ],
    certificate: (c) => jadesResponseOf(c)!.header.x5c.base64[0]!,
    verify: [
      {
        name: "signature",
        run: (c) => {
          const { header, jws } = jadesResponseOf(c)!;
          const key = c.bank!.publicKey;
          const fits = algorithmFitsKey(header.alg, key);
          if (isRejection(fits)) return fits;
          const payload = buildHttpHeadersPayload(
            header.pars,
            { headers: c.response.headers },
            options.payloadStyle,
          );
          if (isRejection(payload)) return payload;
          return verifyJwsSignature(header.alg, key, signingInput(jws.protectedB64, payload), jws.signature)
            ? undefined
            : signatureMismatch(header.alg, `the response headers of sigD.pars '${header.pars.join(" ")}'`);
        },
      },
    ],
  });
}
