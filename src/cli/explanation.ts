/**
 * What `psd2-gateway verify` prints, for a request or a signed response alike: each named check's
 * outcome in order, what was not checked and why, and what the checks compared (the certificate's
 * identity, the keyId beside the certificate's serial and issuer, the signing string rebuilt, the
 * body's digest).
 */

import type { IncomingHttpHeaders } from "node:http";
import { describeCavage, dialectUnit, type SignedParts, type StepObserver } from "../checks/index.js";
import {
  decodeCertificateHeader,
  type ParsedCertificate,
  parseCertificate,
  type ValidationReport,
} from "../eidas/index.js";
import { isRejection, type Rejection, statusFor } from "../errors.js";
import { headerValue, parseKeyId } from "../signature/index.js";
import { renderValidationReport } from "./validation-report.js";

export interface StepOutcome {
  readonly step: string;
  readonly outcome: "passed" | "failed" | "not run";
  readonly code?: string;
  readonly status?: number;
  readonly text?: string;
}

export interface CertificateDescription {
  readonly subject: string;
  readonly issuer: string;
  readonly serial: string;
  readonly organizationIdentifier: string | undefined;
  readonly psd2Roles: readonly string[];
  readonly notBefore: string;
  readonly notAfter: string;
  readonly sha256: string;
}

export interface Explanation {
  readonly passed: boolean;
  /** The signing dialect it was judged by (draft-cavage, RFC 9421, JAdES or UK Open Banking). */
  readonly dialect?: string;
  /** Request mode: the request explained. Response mode: the request the response answers, when known. */
  readonly request?: { method: string; target: string };
  /** Response mode only. */
  readonly response?: { status: number };
  readonly steps: readonly StepOutcome[];
  readonly notChecked: readonly string[];
  /** The header the signer's certificate came in. */
  readonly certificateHeader: string;
  readonly certificate?: CertificateDescription;
  readonly keyId?: { sent: string; serial?: string; issuer?: string };
  readonly signedHeaders?: readonly string[];
  readonly signingString?: string;
  readonly digest?: string;
  /** A JWS's protected header as sent (JAdES, UK OB), its x5c shortened to a count. */
  readonly protectedHeader?: Readonly<Record<string, unknown>>;
  /** The certificate's validation report, when its chain was checked (--trust, --config, --profile). */
  readonly validationReport?: ValidationReport;
}

/** Collects each step's outcome as the runner reports it; `finish` marks the steps never reached. */
export class Outcomes {
  readonly list: StepOutcome[] = [];

  readonly observer: StepObserver = (step, outcome) =>
    this.list.push(outcome === "passed" ? { step, outcome: "passed" } : failed(step, outcome));

  finish(steps: readonly { readonly name: string }[]): StepOutcome[] {
    const ran = new Set(this.list.map((o) => o.step));
    for (const step of steps)
      if (!ran.has(step.name)) this.list.push({ step: step.name, outcome: "not run" });
    return this.list;
  }
}

export function failed(step: string, rejection: Rejection): StepOutcome {
  return {
    step,
    outcome: "failed",
    code: rejection.code,
    status: statusFor(rejection.code),
    text: rejection.text,
  };
}

export function parsedCertificate(header: string): ParsedCertificate | Rejection {
  const der = decodeCertificateHeader(header);
  return isRejection(der) ? der : parseCertificate(der);
}

export function describeCertificate(
  headers: IncomingHttpHeaders,
  certificateHeader: string,
): Pick<Explanation, "certificate"> {
  return describeCertificateValue(headerValue(headers, certificateHeader));
}

/** A certificate sent as base64 DER (a header's value, or a JWS's x5c entry). */
export function describeCertificateValue(header: string | undefined): Pick<Explanation, "certificate"> {
  if (header === undefined) return {};
  const c = parsedCertificate(header);
  if (isRejection(c)) return {};
  return {
    certificate: {
      subject: c.subjectRfc2253,
      issuer: c.issuerRfc2253,
      serial: c.serialHex,
      organizationIdentifier: c.organizationIdentifier,
      psd2Roles: c.psd2Roles,
      notBefore: c.notBefore.toISOString(),
      notAfter: c.notAfter.toISOString(),
      sha256: c.sha256Fingerprint,
    },
  };
}

/** A JWS's protected header for showing: what was signed, the certificates counted rather than printed. */
export function describeProtectedHeader(
  header: Readonly<Record<string, unknown>> | undefined,
): Pick<Explanation, "protectedHeader"> {
  if (header === undefined) return {};
  const shown: Record<string, unknown> = { ...header };
  if (Array.isArray(shown.x5c))
    shown.x5c = `(${shown.x5c.length} certificate${shown.x5c.length === 1 ? "" : "s"})`;
  return { protectedHeader: shown };
}

/** A draft-cavage signature (a request's or a response's): the cavage unit's description, shown. */
export function describeSignature(
  parts: SignedParts,
): Pick<Explanation, "keyId" | "signedHeaders" | "signingString" | "digest"> {
  const { keyId, ...rest } = describeCavage(parts);
  return { ...rest, ...(keyId === undefined ? {} : { keyId: describeKeyId(keyId) }) };
}

/** A keyId as sent, beside the serial and issuer it names when it parses. */
export function describeKeyId(sent: string): NonNullable<Explanation["keyId"]> {
  const parsed = parseKeyId(sent);
  return { sent, ...(parsed ? { serial: parsed.sn, issuer: parsed.ca } : {}) };
}

const MARK = { passed: "✓", failed: "✗", "not run": "·" } as const;

/** The text a developer reads: the checks in order, then what they compared. */
export function render(e: Explanation): string {
  const title = e.response
    ? `HTTP ${e.response.status}${e.request ? `, the answer to ${e.request.method} ${e.request.target}` : ""}`
    : `${e.request?.method} ${e.request?.target}`;
  const lines: string[] = [title, ""];
  if (e.dialect) lines.splice(1, 0, `signed in ${dialectUnit(e.dialect)?.title ?? e.dialect}`);
  const width = Math.max(...e.steps.map((s) => s.step.length));
  for (const s of e.steps) {
    const head = `${MARK[s.outcome]} ${s.step.padEnd(width)}`;
    // A response has no status of its own to answer: the code says what failed.
    if (s.outcome === "failed")
      lines.push(`${head}  ${e.response ? "" : `${s.status} `}${s.code}: ${s.text}`);
    else lines.push(`${head}  ${s.outcome}`);
  }
  lines.push("");
  if (e.passed) lines.push("Every check passed.");
  else if (e.response)
    lines.push(
      "Fails at the first ✗ above; the checks after it did not run. Egress mode with responses.mode: enforce withholds it (502); advisory passes it on, counted.",
    );
  else lines.push("Refused at the first ✗ above; the checks after it did not run.");
  if (e.notChecked.length > 0) {
    lines.push("", "Not checked here:");
    for (const n of e.notChecked) lines.push(`  - ${n}`);
  }
  if (e.certificate) {
    const c = e.certificate;
    lines.push(
      "",
      `Certificate (${e.certificateHeader}):`,
      `  subject       ${c.subject}`,
      `  issuer        ${c.issuer}`,
      `  serial        ${c.serial}`,
      `  organization  ${c.organizationIdentifier ?? "(no organizationIdentifier)"}`,
      `  PSD2 roles    ${c.psd2Roles.join(", ") || "(none)"}`,
      `  valid         ${c.notBefore} – ${c.notAfter}`,
      `  sha256        ${c.sha256}`,
    );
  }
  if (e.protectedHeader) {
    lines.push("", "JWS protected header (x-jws-signature):");
    for (const [name, value] of Object.entries(e.protectedHeader))
      lines.push(`  ${name.padEnd(32)} ${JSON.stringify(value)}`);
  }
  if (e.keyId) {
    lines.push("", "keyId:", `  sent          ${e.keyId.sent}`);
    if (e.keyId.serial !== undefined)
      lines.push(
        `  SN            ${e.keyId.serial}${e.certificate ? `   (certificate: ${e.certificate.serial})` : ""}`,
      );
    if (e.keyId.issuer !== undefined)
      lines.push(
        `  CA            ${e.keyId.issuer}${e.certificate ? `\n  certificate   ${e.certificate.issuer}` : ""}`,
      );
  }
  if (e.signingString !== undefined) {
    lines.push("", `Signing string rebuilt from the headers listed (${e.signedHeaders?.join(" ")}):`);
    for (const l of e.signingString.split("\n")) lines.push(`  ${l}`);
  }
  if (e.digest) lines.push("", `The body hashes to ${e.digest}`);
  if (e.validationReport) lines.push("", renderValidationReport(e.validationReport));
  return lines.join("\n");
}
