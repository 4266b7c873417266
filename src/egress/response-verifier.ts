/**
 * Checking a bank's signed response (SPEC 5.10: "it may sign response bodies and the TPP should
 * verify them") with the same functions ingress uses on requests: the certificate through a
 * CertificateVerifier (egress: a verdict-cached TppVerifier without a register), Digest over the
 * exact body bytes, keyId, coverage, the signature over the signing string, Date, and the
 * X-Request-ID tying it to our request. A flat list of named steps, run by the checks' runner, so
 * that `psd2-gateway verify --response` prints the very checks egress mode applies.
 */

import {
  type CertificateVerifier,
  Chain,
  type Step,
  type StepCounts,
  type StepObserver,
  type StepTrace,
  type TrustedCertificate,
} from "../checks/index.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import {
  type AlgorithmName,
  checkCoverage,
  checkDate,
  type HeaderMap,
  headerValue,
  matchSignatureKeyId,
  parseSignatureHeader,
  type SignatureParams,
  verifyDigest,
  verifySignatureOver,
} from "../signature/index.js";
import type { DetachedJws, JadesHeader, UkObHeader } from "../signature/jws/index.js";
import type { ParsedSignature } from "../signature/rfc9421/index.js";

export interface ResponseVerifierOptions {
  readonly certificates: CertificateVerifier;
  /** Lower-case name of the header the bank sends its certificate in. */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly AlgorithmName[];
  readonly now?: () => number;
}

/** The request a response answers: its signature must bind to it (X-Request-ID). */
export interface RequestOfResponse {
  readonly method: string;
  readonly target: string;
  readonly requestId: string;
  /** The absolute URI it was sent to, and its headers as sent: RFC 9421's `;req` components. */
  readonly targetUri?: string;
  readonly headers?: HeaderMap;
}

export interface ResponseToVerify {
  /** Lower-case names; values as received (Latin-1 strings, one char per byte). */
  readonly headers: HeaderMap;
  readonly body: Uint8Array;
  /** The bank's status (RFC 9421 signs `@status`). */
  readonly status?: number;
  /** The request it answers: its X-Request-ID must come back, and (request-target) is the request's. */
  readonly request: RequestOfResponse;
}

/** The headers a response signature must cover when the response carries them. */
const RESPONSE_SIGNED_HEADERS = ["digest", "x-request-id", "date"];

/** One response under check: what the steps found so far (each dialect's own signature, read). */
export class ResponseCheck implements StepTrace {
  failedStep: string | undefined;
  bank: TrustedCertificate | undefined;
  params: SignatureParams | undefined;
  httpSignature: ParsedSignature | undefined;
  jades: { readonly jws: DetachedJws; readonly header: JadesHeader } | undefined;
  ukOb: { readonly jws: DetachedJws; readonly header: UkObHeader } | undefined;

  constructor(readonly response: ResponseToVerify) {}

  header(name: string): string | undefined {
    return headerValue(this.response.headers, name);
  }
}

/** The checks of a signed response, in order; each step's name is what `verify --response` prints. */
export function responseChecks(options: ResponseVerifierOptions): Step<ResponseCheck>[] {
  const now = options.now ?? Date.now;
  return [
    {
      name: "signature-header",
      run: (c) =>
        c.header("signature") === undefined
          ? reject("SIGNATURE_MISSING", "the response carries no Signature header")
          : undefined,
    },
    {
      name: "certificate",
      run: (c) => {
        const value = c.header(options.certificateHeader);
        if (value === undefined)
          return reject(
            "CERTIFICATE_MISSING",
            `the response carries no ${options.certificateHeader} header with the bank's signing certificate`,
          );
        return keepBank(c, options.certificates.verify(value));
      },
    },
    {
      name: "digest",
      run: (c) => {
        const digest = c.header("digest");
        if (digest === undefined)
          return reject(
            "SIGNATURE_INVALID",
            "the response carries no Digest header, so its body is not signed",
          );
        const verified = verifyDigest(digest, c.response.body);
        return isRejection(verified) ? verified : undefined;
      },
    },
    {
      name: "signature-parameters",
      run: (c) => {
        const params = parseSignatureHeader(c.header("signature"));
        if (isRejection(params)) return params;
        c.params = params;
        return undefined;
      },
    },
    {
      name: "key-id",
      run: (c) => {
        const matched = matchSignatureKeyId(c.params!, c.bank!.keyIdTarget);
        return matched === true ? undefined : matched;
      },
    },
    {
      name: "coverage",
      run: (c) => {
        const coverage = checkCoverage(c.params!.headers, c.response.headers, RESPONSE_SIGNED_HEADERS);
        if (coverage !== true) return coverage;
        return c.params!.headers.includes("digest")
          ? undefined
          : reject("SIGNATURE_INVALID", "the response's signature does not cover its Digest header");
      },
    },
    {
      name: "signature",
      run: (c) => {
        const { request, headers } = c.response;
        const verified = verifySignatureOver(
          { method: request.method, target: request.target, headers },
          c.params!,
          c.bank!.publicKey,
          options.algorithms,
        );
        return isRejection(verified) ? verified : undefined;
      },
    },
    {
      name: "date",
      run: (c) => {
        const date = c.header("date");
        if (date === undefined) return undefined;
        const checked = checkDate(date, now(), { toleranceMs: options.dateToleranceMs });
        return isRejection(checked) ? checked : undefined;
      },
    },
    {
      name: "request-id",
      run: (c) => {
        const requestId = c.header("x-request-id");
        const ours = c.response.request.requestId;
        return requestId === undefined || requestId === ours
          ? undefined
          : reject(
              "SIGNATURE_INVALID",
              `the response's X-Request-ID ${requestId.slice(0, 80)} is not the request's ${ours}: it answers another request`,
            );
      },
    },
  ];
}

/** What checks a bank's response signature, in the profile's dialect. */
export interface ResponseVerifying {
  verify(response: ResponseToVerify, observer?: StepObserver): Promise<true | Rejection>;
  /** Each check's passes and refusals over every answer judged so far. */
  counts(): StepCounts;
}

/** A dialect's response checks run in order by the checks' runner. */
export class StepsResponseVerifier implements ResponseVerifying {
  /** Built once: its per-step counts then cover every response the profile checked. */
  private readonly chain: Chain<ResponseCheck>;

  constructor(readonly steps: readonly Step<ResponseCheck>[]) {
    this.chain = new Chain(steps);
  }

  /** `true`, or a Rejection whose text says what failed. Never throws. */
  async verify(response: ResponseToVerify, observer?: StepObserver): Promise<true | Rejection> {
    return (await this.chain.runHead(new ResponseCheck(response), observer)) ?? true;
  }

  /** Each step's passes and refusals since the profile was loaded. */
  counts(): StepCounts {
    return this.chain.counts();
  }
}

/** draft-cavage (SPEC 5.10). */
export class ResponseVerifier extends StepsResponseVerifier {
  constructor(options: ResponseVerifierOptions) {
    super(responseChecks(options));
  }
}

/** The certificate step's end, in every dialect: the bank's trusted certificate kept for the steps after it. */
export function keepBank(
  c: ResponseCheck,
  verdict: TrustedCertificate | Rejection | Promise<TrustedCertificate | Rejection>,
): Rejection | undefined | Promise<Rejection | undefined> {
  const keep = (bank: TrustedCertificate | Rejection) => {
    if (isRejection(bank)) return bank;
    c.bank = bank;
    return undefined;
  };
  return verdict instanceof Promise ? verdict.then(keep) : keep(verdict);
}

/** A dialect's signed X-Request-ID that is not the request's: the answer belongs to another request. */
export function otherRequestId(
  requestId: string | undefined,
  request: RequestOfResponse,
): Rejection | undefined {
  if (requestId === request.requestId) return undefined;
  return reject(
    "SIGNATURE_INVALID",
    `the response's X-Request-ID '${requestId ?? "(none)"}' is not the request's '${request.requestId}'`,
  );
}
