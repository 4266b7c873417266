/**
 * `psd2-gateway verify --response`: explains a bank's signed response with the checks egress mode
 * applies to it in its dialect (the unit's `responseChecks`, src/checks/dialects/, named steps),
 * step by step. Checks that need what the file does not hold (the request it answers, the body, a
 * trust folder) are named under "not checked" instead of failing for the wrong reason.
 */

import {
  type Dialect,
  dialectsPresent,
  dialectUnit,
  type RequestOfResponse,
  ResponseCheck,
  runSteps,
  type Step,
} from "../checks/index.js";
import type { RevocationConfig } from "../config/schema.js";
import type { QcTypeName } from "../eidas/index.js";
import { type AlgorithmName, headerValue } from "../signature/index.js";
import { parseOnlyCertificates, ReportOfCertificate, trustedCertificates } from "./explain-request.js";
import {
  describeCertificateValue,
  describeKeyId,
  describeProtectedHeader,
  type Explanation,
  Outcomes,
} from "./explanation.js";
import type { DumpedRequest, DumpedResponse } from "./http-dump.js";

export interface ResponseExplainOptions {
  readonly now: number;
  /** Default: the one whose headers the response carries (draft-cavage when none). */
  readonly dialect?: Dialect;
  /** draft-cavage's algorithms. */
  readonly algorithms: readonly AlgorithmName[];
  /**
   * The bank profile's `responses` keys (`--profile`), each dialect's read by its unit (without them,
   * the other dialects accept every algorithm the gateway knows, so a refusal names the real problem).
   */
  readonly responses?: Readonly<Record<string, unknown>>;
  /** The bank profile's `signing` rules (`--profile`), which a unit may read (JAdES its payload style). */
  readonly signing?: Readonly<Record<string, unknown>>;
  /** The scheme the request was sent with: RFC 9421's `"@target-uri";req` (default https). */
  readonly scheme?: "https" | "http";
  /** The header the bank sends its QSealC in, as the user wrote it (draft-cavage and RFC 9421). */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  /** CA certificates and CRLs the bank's QSealC is checked against. */
  readonly trustDir?: string;
  /** CRLs, when not in trustDir. */
  readonly crlDir?: string;
  /** The bank profile's `responses.revocation`; default ingress's defaults. */
  readonly revocation?: RevocationConfig;
}

/** The outline's step that needs the request: left out, and said why, when the files lack it. */
const NEEDS_REQUEST = new Set(["request-id"]);

export async function explainResponse(
  response: DumpedResponse,
  request: DumpedRequest | undefined,
  options: ResponseExplainOptions,
): Promise<Explanation> {
  const notChecked: string[] = [];
  const reports = new ReportOfCertificate();
  let certificates = parseOnlyCertificates();
  if (options.trustDir)
    certificates = trustedCertificates(
      options.trustDir,
      options.now,
      undefined,
      options.crlDir,
      options.revocation,
      reports.take,
      // Undefined (no --profile): trustedCertificates' default, a QSealC.
      options.responses?.certificateKinds as readonly QcTypeName[] | undefined,
    );
  else
    notChecked.push(
      "the bank certificate's chain and revocation (give --trust <dir>, or --profile with responses.caDir)",
    );
  const dialect = options.dialect ?? dialectsPresent(response.headers)[0] ?? "cavage";
  const unit = dialectUnit(dialect);
  if (!unit?.responseChecks)
    throw new Error(`the signing dialect '${dialect}' has no response checks in this build`);
  // The options' names are the bank profile's `responses` keys; each unit reads its own.
  let steps: Step<ResponseCheck>[] = unit.responseChecks({
    certificates,
    certificateHeader: options.certificateHeader.toLowerCase(),
    dateToleranceMs: options.dateToleranceMs,
    now: () => options.now,
    responses: { ...options.responses, algorithms: options.algorithms },
    signing: options.signing,
  });
  const explaining = unit.responseExplaining;
  if (!request) {
    steps = steps.filter((s) => !NEEDS_REQUEST.has(s.name));
    notChecked.push(
      "that it answers your request, by its X-Request-ID (give --request <file>, or a curl -v dump holding both)",
      ...(explaining?.withoutRequest?.(response.headers) ?? []),
    );
  }
  if (response.body === undefined) {
    const bodyless = new Set(explaining?.needsBody ?? []);
    steps = steps.filter((s) => !bodyless.has(s.name));
    notChecked.push(
      `the body against ${explaining?.bodyCheckedAgainst ?? "its signature"} (the dump holds no body: give --body <file>)`,
    );
  }
  const outcomes = new Outcomes();
  const method = request?.method ?? "";
  const target = request?.target ?? "";
  const check = new ResponseCheck({
    headers: response.headers,
    body: response.body ?? Buffer.alloc(0),
    status: response.status,
    request: requestOf(request, options.scheme ?? "https"),
  });
  await runSteps(steps, check, outcomes.observer);
  const list = outcomes.finish(steps);
  // What the unit shows of the answer (its signature's state is in the check's dialect slot).
  const { certificate, keyId, protectedHeader, ...shown } = explaining?.explain(check, {
    method,
    target,
    body: response.body,
    certificateHeader: options.certificateHeader,
  }) ?? {
    certificateHeader: options.certificateHeader,
    certificate: headerValue(response.headers, options.certificateHeader.toLowerCase()),
  };
  return reports.with({
    passed: list.every((o) => o.outcome === "passed"),
    dialect,
    ...(request ? { request: { method, target } } : {}),
    response: { status: response.status },
    steps: list,
    notChecked,
    ...shown,
    ...describeCertificateValue(certificate),
    ...(keyId === undefined ? {} : { keyId: describeKeyId(keyId) }),
    ...describeProtectedHeader(protectedHeader),
  });
}

/** The request the answer is bound to, as egress knows it: its X-Request-ID, and its URI for RFC 9421. */
function requestOf(request: DumpedRequest | undefined, scheme: "https" | "http"): RequestOfResponse {
  if (!request) return { method: "", target: "", requestId: "" };
  const host = headerValue(request.headers, "host");
  return {
    method: request.method,
    target: request.target,
    requestId: headerValue(request.headers, "x-request-id") ?? "",
    ...(host === undefined ? {} : { targetUri: `${scheme}://${host}${request.target}` }),
    headers: request.headers,
  };
}
