/**
 * `psd2-gateway verify --response`: explains a bank's signed response with the checks egress mode
 * applies to it (src/egress/response-verifier.ts, `responseChecks`), step by step. Checks that
 * need what the file does not hold (the request it answers, the body, a trust folder) are named
 * under "not checked" instead of failing for the wrong reason.
 */

import { runSteps } from "../checks/index.js";
import type { RevocationConfig } from "../config/schema.js";
import { ResponseCheck, responseChecks } from "../egress/index.js";
import { isRejection } from "../errors.js";
import { type AlgorithmName, parseSignatureHeader } from "../signature/index.js";
import { parseOnlyCertificates, trustedCertificates } from "./explain-request.js";
import { describeCertificate, describeSignature, type Explanation, Outcomes } from "./explanation.js";
import type { DumpedRequest, DumpedResponse } from "./http-dump.js";

export interface ResponseExplainOptions {
  readonly now: number;
  readonly algorithms: readonly AlgorithmName[];
  /** The header the bank sends its QSealC in, as the user wrote it. */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  /** CA certificates and CRLs the bank's QSealC is checked against. */
  readonly trustDir?: string;
  /** CRLs, when not in trustDir. */
  readonly crlDir?: string;
  /** The bank profile's `responses.revocation`; default ingress's defaults. */
  readonly revocation?: RevocationConfig;
}

export async function explainResponse(
  response: DumpedResponse,
  request: DumpedRequest | undefined,
  options: ResponseExplainOptions,
): Promise<Explanation> {
  const notChecked: string[] = [];
  let certificates = parseOnlyCertificates();
  if (options.trustDir)
    certificates = trustedCertificates(
      options.trustDir,
      options.now,
      undefined,
      options.crlDir,
      ...(options.revocation ? [options.revocation] : []),
    );
  else
    notChecked.push(
      "the bank certificate's chain and revocation (give --trust <dir>, or --profile with responses.caDir)",
    );
  let steps = responseChecks({
    certificates,
    certificateHeader: options.certificateHeader.toLowerCase(),
    dateToleranceMs: options.dateToleranceMs,
    algorithms: options.algorithms,
    now: () => options.now,
  });
  if (!request) {
    steps = steps.filter((s) => s.name !== "request-id");
    notChecked.push(
      "that it answers your request, by its X-Request-ID (give --request <file>, or a curl -v dump holding both)",
    );
    const signed = parseSignatureHeader(response.headers["signature"]);
    if (!isRejection(signed) && signed.headers.includes("(request-target)"))
      notChecked.push(
        "the signature covers (request-target), which is the request's: without --request it is rebuilt from an empty target and fails",
      );
  }
  if (response.body === undefined) {
    steps = steps.filter((s) => s.name !== "digest");
    notChecked.push("the body against Digest (the dump holds no body: give --body <file>)");
  }
  const outcomes = new Outcomes();
  const method = request?.method ?? "";
  const target = request?.target ?? "";
  await runSteps(
    steps,
    new ResponseCheck({
      headers: response.headers,
      body: response.body ?? Buffer.alloc(0),
      request: { method, target, requestId: String(request?.headers["x-request-id"] ?? "") },
    }),
    outcomes.observer,
  );
  const list = outcomes.finish(steps);
  return {
    passed: list.every((o) => o.outcome === "passed"),
    ...(request ? { request: { method, target } } : {}),
    response: { status: response.status },
    steps: list,
    notChecked,
    certificateHeader: options.certificateHeader,
    ...describeCertificate(response.headers, options.certificateHeader.toLowerCase()),
    ...describeSignature({ method, target, headers: response.headers, body: response.body }),
  };
}
