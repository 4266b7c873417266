/**
 * `psd2-gateway verify` for a request: runs the gateway's own chain of named steps
 * (src/checks/steps.ts) in explain mode, the request's head and then its body, as the gateway
 * checks it while it streams. No second copy of the rules: a step added to the gateway shows up here.
 */

import { readFileSync } from "node:fs";
import { startChainOfConfig } from "../app/request-path.js";
import { liveRevocationOf } from "../app/trust.js";
import {
  type CertificateVerifier,
  Chain,
  CheckContext,
  type CheckOptions,
  dialectNames,
  dialectUnit,
  hasBody,
  type MaybePromise,
  PERMISSIVE_POLICY,
  RoleTable,
  requestChecks,
  routingPath,
  type TrustedCertificate,
} from "../checks/index.js";
import {
  DEFAULT_REDIRECT_URI_OPTIONAL_PREFIXES,
  DEFAULT_ROLE_ROUTES,
  type GatewayConfig,
  type RevocationConfig,
  revocation,
} from "../config/schema.js";
import {
  type QcTypeName,
  requirePsd2,
  TppRegister,
  TppVerifier,
  type ValidationReport,
} from "../eidas/index.js";
import { isRejection, type Rejection } from "../errors.js";
import { createLogger } from "../observability/logger.js";
import { DEFAULT_DATE_TOLERANCE_MS } from "../signature/index.js";
import { crlCheckerFromFolder, trustStoreFromFolder } from "../trust/folders.js";
import { parseRegisterDocument } from "../trust/formats/register-document.js";
import {
  describeCertificateValue,
  describeKeyId,
  describeProtectedHeader,
  type Explanation,
  failed,
  Outcomes,
  parsedCertificate,
  type StepOutcome,
} from "./explanation.js";
import type { DumpedRequest } from "./http-dump.js";

export interface ExplainOptions {
  readonly now: number;
  readonly algorithms: CheckOptions["algorithms"];
  readonly trustDir?: string;
  readonly registerFile?: string;
}

/** Runs the gateway's checks over one request and collects what a developer needs to see. */
export async function explain(request: DumpedRequest, options: ExplainOptions): Promise<Explanation> {
  const notChecked: string[] = [];
  const reports = new ReportOfCertificate();
  const certificates = explainCertificates(options, notChecked, reports.take);
  const checkOptions: CheckOptions = {
    now: () => options.now,
    dateToleranceMs: DEFAULT_DATE_TOLERANCE_MS,
    algorithms: options.algorithms,
    allowDecimalSerial: false,
    keyIdPolicy: "strict",
    redirectUriOptionalPrefixes: DEFAULT_REDIRECT_URI_OPTIONAL_PREFIXES,
    characterPolicy: PERMISSIVE_POLICY,
    certificates,
    clientCertificate: { mode: "not-checked", requireSameOrganization: true },
    replayWindowMs: 0,
    storeFailOpen: false,
    // Whatever dialect the request is signed in: explained by its own steps.
    dialects: { accept: dialectNames() },
  };
  notChecked.push(
    "replay and the unattended-access limit (they depend on what the bank saw before)",
    "mutual TLS (the QWAC is part of the connection, not of the request)",
  );
  const chain = new Chain(requestChecks(checkOptions));
  // The certificate step may wait on an OCSP responder or a CRL distribution point.
  return reports.with(await explainWith(request, chain, new RoleTable(DEFAULT_ROLE_ROUTES), notChecked));
}

/** The validation report of the certificate the request was judged by, for the explanation. */
export class ReportOfCertificate {
  private report: ValidationReport | undefined;
  readonly take = (report: ValidationReport): void => {
    this.report = report;
  };
  with(explanation: Explanation): Explanation {
    return this.report ? { ...explanation, validationReport: this.report } : explanation;
  }
}

/**
 * Runs the chain a gateway started with `configFile` runs (the one builder, app/request-path.ts):
 * its checks, trust sources, register and limits, so the verdict is the gateway's own for a request
 * it sees the first time (a fresh store: no replay, the unattended slot free).
 */
export async function explainWithConfig(
  request: DumpedRequest,
  config: GatewayConfig,
  now: number,
): Promise<Explanation> {
  const reports = new ReportOfCertificate();
  const parts = await startChainOfConfig(config, createLogger("silent"), () => now, reports.take);
  try {
    return reports.with(
      await explainWith(request, parts.chain, parts.roles, [
        "replay and the unattended-access limit as for the first request of its kind (a fresh store)",
        "mutual TLS (the QWAC is part of the connection, not of the request)",
      ]),
    );
  } finally {
    await parts.close();
  }
}

/** The chain over one request: its head, then its body, as the gateway runs them. */
function explainWith(
  request: DumpedRequest,
  chain: Chain<CheckContext>,
  roles: RoleTable,
  notChecked: string[],
): MaybePromise<Explanation> {
  const path = routingPath(request.target);
  const context = new CheckContext(
    request.method,
    request.target,
    request.headers,
    { path, role: roles.roleFor(path) },
    undefined,
  );
  const outcomes = new Outcomes();
  const head = chain.runHead(context, outcomes.observer);
  const withBody = (headResult: Rejection | undefined): Explanation => {
    let result = headResult;
    // Then the body, past the same steps' body phases, as the gateway checks it while it streams.
    const ranBody = result === undefined && request.body !== undefined && hasBody(request.headers);
    if (ranBody) result = chain.runBody(context, request.body!) ?? chain.runBodyEnd(context);
    else if (result === undefined && context.digest)
      notChecked.push("the body against Digest (the dump holds no body: give --body <file>)");
    // A request without a body passes the body's steps as it passes the digest of zero bytes.
    const noBody = result === undefined && !hasBody(request.headers);
    const list = inChainOrder(
      chain,
      context.dialect,
      outcomes.list,
      ranBody ? context.failedStep : undefined,
      result,
      ranBody || noBody,
    );
    const passed =
      list.every((o) => o.outcome === "passed" || o.outcome === "not run") && result === undefined;
    return {
      passed,
      request: { method: request.method, target: request.target },
      steps: list,
      notChecked,
      dialect: context.dialect,
      ...explainDialect(context, request.body),
    };
  };
  return head instanceof Promise ? head.then(withBody) : withBody(head);
}

/**
 * Every step of the chain once, in its order: the head's outcomes, a body phase's refusal on the
 * step it belongs to, the steps the body passed (`bodyPassed`: it ran, or there was none), and
 * "not run" for the rest (those after a refusal, and those that act only on the bank's answer).
 */
function inChainOrder(
  chain: Chain<CheckContext>,
  dialect: string,
  head: readonly StepOutcome[],
  bodyFailedAt: string | undefined,
  result: Rejection | undefined,
  bodyPassed: boolean,
): StepOutcome[] {
  const byName = new Map(head.map((o) => [o.step, o]));
  // The steps of the request's dialect only: another dialect's never run for it.
  const ofDialect = chain.steps.filter((s) => s.dialects === undefined || s.dialects.includes(dialect));
  return ofDialect.map((step): StepOutcome => {
    if (bodyFailedAt === step.name && result) return failed(step.name, result);
    const fromHead = byName.get(step.name);
    if (fromHead) return fromHead;
    if (bodyPassed && bodyFailedAt === undefined && (step.body || step.bodyEnd))
      return { step: step.name, outcome: "passed" };
    return { step: step.name, outcome: "not run" };
  });
}

function explainCertificates(
  options: ExplainOptions,
  notChecked: string[],
  onReport: (report: ValidationReport) => void,
): CertificateVerifier {
  if (!options.trustDir) {
    notChecked.push(
      "the certificate chain, revocation and the TPP register (give --trust <dir> and --register <file>)",
    );
    return parseOnlyCertificates();
  }
  let register: TppRegister | undefined;
  if (options.registerFile) {
    register = new TppRegister(Number.MAX_SAFE_INTEGER, () => options.now);
    register.replace(parseRegisterDocument(readFileSync(options.registerFile, "utf8")), options.registerFile);
  } else {
    notChecked.push("the TPP register (give --register <file>); the certificate's own roles are used");
  }
  return trustedCertificates(options.trustDir, options.now, register, options.trustDir, undefined, onReport);
}

/**
 * The gateway's certificate checks against a folder of CAs and CRLs (and a register, when given),
 * uncached. Revocation takes the gateway's live path with `options` (by default ingress's; the whole path,
 * OCSP, distribution points, the folder's CRL files; fail closed): the answer is the one a gateway
 * would give now. It is asked at the real time, whatever `now` the chain is judged at.
 */
export function trustedCertificates(
  trustDir: string,
  now: number,
  register?: TppRegister,
  crlDir = trustDir,
  options: RevocationConfig = revocation.parse({}),
  onReport?: (report: ValidationReport) => void,
  /** The kinds a signing certificate may be (QcType): the gateway's default, a QSealC. */
  signatureKinds: readonly QcTypeName[] = ["eseal"],
): CertificateVerifier {
  const { store } = trustStoreFromFolder(trustDir);
  const { checker } = crlCheckerFromFolder(crlDir, store.all);
  const live = liveRevocationOf(options, {
    cas: () => store.all,
    localList: (issuer) => checker.listOf(issuer),
    now: Date.now,
  });
  return new TppVerifier({
    trustStore: () => store,
    revocation: () => live.revocation,
    // As the gateway judges them: a QWAC does not sign (verification.certificateKinds).
    kinds: { qseal: signatureKinds, qwac: ["web"] },
    ...(register ? { register } : {}),
    ...(onReport ? { onReport } : {}),
    now: () => now,
    cacheTtlMs: 0,
    failureTtlMs: 0,
    maxEntries: 1,
  });
}

/** Without a trust folder: the certificate is parsed and its PSD2 statement read; chain and revocation are not checked. */
export function parseOnlyCertificates(): CertificateVerifier {
  return {
    verify: (header): TrustedCertificate | Rejection => {
      const certificate = parsedCertificate(header);
      if (isRejection(certificate)) return certificate;
      const psd2 = requirePsd2(certificate);
      if (isRejection(psd2)) return psd2;
      return {
        publicKey: certificate.publicKey,
        keyIdTarget: { serial: certificate.serial, issuer: certificate.issuer },
        identity: {
          organizationId: certificate.organizationIdentifier ?? "",
          name: certificate.subjectRfc2253,
          roles: new Set(certificate.psd2Roles),
          fingerprint: certificate.sha256Fingerprint,
        },
      };
    },
  };
}

/** What the request's dialect's unit explains of it, shown as `verify` shows every dialect's. */
function explainDialect(
  context: CheckContext,
  body: Buffer | undefined,
): Omit<Explanation, "passed" | "steps" | "notChecked"> {
  const unit = dialectUnit(context.dialect);
  if (!unit) return { certificateHeader: "TPP-Signature-Certificate" };
  const { certificate, keyId, protectedHeader, ...rest } = unit.explain(context, body);
  return {
    ...rest,
    ...describeCertificateValue(certificate),
    ...(keyId === undefined ? {} : { keyId: describeKeyId(keyId) }),
    ...describeProtectedHeader(protectedHeader),
  };
}
