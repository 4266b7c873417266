/**
 * The one outline of a dialect's checks of a bank's signed response (SPEC 5.10: "it may sign
 * response bodies and the TPP should verify them"): read the dialect's signature (its header, its
 * times), the slots before the certificate (digest, X-Request-ID), the bank's certificate judged by
 * the profile's CertificateVerifier (egress: a verdict-cached TppVerifier without a register), then
 * the dialect's signature and what it binds. Each unit fills the slots (`responseChecks`); the steps
 * are a flat list of named steps run by the checks' runner, so that `psd2-gateway verify --response`
 * prints the very checks egress mode applies, and egress counts each on one long-lived chain.
 */

import { isRejection, type Rejection, reject } from "../../errors.js";
import { type HeaderMap, headerValue } from "../../signature/index.js";
import type { CertificateVerifier, TrustedCertificate } from "../context.js";
import { Chain, type Step, type StepCounts, type StepObserver, type StepTrace } from "../runner.js";

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
  /** Told the bank's certificate (and its base64 DER, as it travelled) once it passed: egress's evidence. */
  readonly onBank?: (bank: TrustedCertificate, certificate: string | undefined) => void;
}

/** One response under check: what the steps found so far. */
export class ResponseCheck implements StepTrace {
  failedStep: string | undefined;
  bank: TrustedCertificate | undefined;
  /**
   * The dialect's own state (its signature header read): one slot whatever the dialect, written and
   * read only by its unit's response checks through the unit's accessor, as for a request's.
   */
  dialectState: unknown = undefined;

  constructor(readonly response: ResponseToVerify) {}

  header(name: string): string | undefined {
    return headerValue(this.response.headers, name);
  }
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

/** The certificate step's end, in every dialect: the bank's trusted certificate kept for the steps after it. */
export function keepBank(
  c: ResponseCheck,
  verdict: TrustedCertificate | Rejection | Promise<TrustedCertificate | Rejection>,
  certificate?: string,
): Rejection | undefined | Promise<Rejection | undefined> {
  const keep = (bank: TrustedCertificate | Rejection) => {
    if (isRejection(bank)) return bank;
    c.bank = bank;
    c.response.onBank?.(bank, certificate);
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

/** A dialect's slots in the outline. */
export interface ResponseSlots {
  /** Its signature's header read, its times against the clock. */
  readonly read: readonly Step<ResponseCheck>[];
  /** What needs no key: the body's digest, the X-Request-ID echoed. */
  readonly beforeCertificate?: readonly Step<ResponseCheck>[];
  /** Where the bank's certificate travels (base64 DER), or why it is missing. */
  certificate(c: ResponseCheck): string | Rejection;
  /** The signature with the bank's key, and what it must bind. */
  readonly verify: readonly Step<ResponseCheck>[];
}

/** The response checks of a dialect, in the outline's order, the certificate step shared. */
export function responseOutline(
  certificates: CertificateVerifier,
  slots: ResponseSlots,
): Step<ResponseCheck>[] {
  return [
    ...slots.read,
    ...(slots.beforeCertificate ?? []),
    {
      name: "certificate",
      run: (c) => {
        const value = slots.certificate(c);
        return isRejection(value) ? value : keepBank(c, certificates.verify(value), value);
      },
    },
    ...slots.verify,
  ];
}

/** The X-Request-ID the dialect signed must be the request's (a shared slot step). */
export const requestIdStep: Step<ResponseCheck> = {
  name: "request-id",
  run: (c) => otherRequestId(c.header("x-request-id"), c.response.request),
};

/** The certificate header a header-carried certificate is read from, or the refusal naming it. */
export function certificateIn(c: ResponseCheck, header: string, what = ""): string | Rejection {
  return c.header(header) ?? reject("CERTIFICATE_MISSING", `the response carries no ${header} header${what}`);
}
