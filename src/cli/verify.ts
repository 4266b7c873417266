/**
 * `psd2-gateway verify`: explains why a bank would accept or refuse a signed request. It runs the
 * gateway's own list of checks (src/checks/steps.ts) in explain mode and prints every step's
 * outcome, the signing string rebuilt, the certificate's identity and roles, and the keyId next to
 * the certificate's serial and issuer. No second copy of the rules: a check added to the gateway
 * shows up here.
 */

import { readFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import {
  type CertificateVerifier,
  CheckContext,
  type CheckOptions,
  PERMISSIVE_POLICY,
  RoleTable,
  requestChecks,
  routingPath,
  runSteps,
  type StepObserver,
  type TrustedCertificate,
} from "../checks/index.js";
import { DEFAULT_ROLE_ROUTES } from "../config/schema.js";
import {
  decodeCertificateHeader,
  type ParsedCertificate,
  parseCertificate,
  parseRegisterDocument,
  requirePsd2,
  TppRegister,
  TppVerifier,
} from "../eidas/index.js";
import { isRejection, type Rejection, statusFor } from "../errors.js";
import {
  buildSigningString,
  computeDigestHeader,
  DEFAULT_DATE_TOLERANCE_MS,
  DigestVerifier,
  headerValue,
  parseDigestHeader,
  parseKeyId,
  parseSignatureHeader,
} from "../signature/index.js";
import { crlCheckerFromFolder, trustStoreFromFolder } from "../trust/folders.js";
import { defineCommand, USAGE_ERROR } from "./command.js";

export const verifyCommand = defineCommand({
  name: "verify",
  summary: "explain, check by check, why a bank accepts or refuses a signed request",
  usage: `psd2-gateway verify [<file>] [options]

  <file>              the request as raw HTTP (request line, headers, blank line, body) or a
                      \`curl -v\` dump (the "> " lines); default: standard input
  --body <file>       the body, when the dump does not hold it (curl -v shows no body)
  --trust <dir>       also check the certificate chain against these CA certificates (and the
                      CRLs in the same folder)
  --register <file>   also check the TPP register (the gateway's JSON register; needs --trust)
  --now <date>        judge Date against this time (ISO 8601 or an HTTP date) instead of now,
                      for a request captured earlier
  --algorithm <a>     accept this signature algorithm too (repeatable; default: every algorithm
                      the gateway knows, so that a refusal names the real problem)
  --json              print the outcome as JSON

Runs the gateway's checks in its order and prints each: what passed, the first that failed and
why, and the checks not reached. Without --trust the certificate is parsed and its PSD2 roles
read, but its chain, revocation and registration are not checked (the output says so).
Exits 0 when every check passed, 1 when one failed, 2 on a bad command line.`,
  allowPositionals: true,
  options: {
    body: { type: "string" },
    trust: { type: "string" },
    register: { type: "string" },
    now: { type: "string" },
    algorithm: { type: "string", multiple: true },
    json: { type: "boolean", default: false },
  },
  async run(values, positionals) {
    if (positionals.length > 1) {
      console.error("psd2-gateway verify: give one request file (or none for standard input)");
      return USAGE_ERROR;
    }
    if (values.register && !values.trust) {
      console.error(
        "psd2-gateway verify: --register needs --trust (the register is checked after the chain)",
      );
      return USAGE_ERROR;
    }
    const now = values.now === undefined ? Date.now() : Date.parse(values.now);
    if (Number.isNaN(now)) {
      console.error(`psd2-gateway verify: --now '${values.now}' is not a date`);
      return USAGE_ERROR;
    }
    const text = readFileSync(positionals[0] ?? 0);
    const request = parseRequestDump(text);
    if (typeof request === "string") {
      console.error(`psd2-gateway verify: ${request}`);
      return 1;
    }
    if (values.body !== undefined) request.body = readFileSync(values.body);
    withFraming(request);
    const explanation = explain(request, {
      now,
      algorithms: (values.algorithm as CheckOptions["algorithms"] | undefined) ?? [
        "rsa-sha256",
        "rsa-sha512",
        "ecdsa-sha256",
        "hs2019",
      ],
      ...(values.trust ? { trustDir: values.trust } : {}),
      ...(values.register ? { registerFile: values.register } : {}),
    });
    console.log(values.json ? JSON.stringify(explanation, null, 2) : render(explanation));
    return explanation.passed ? 0 : 1;
  },
});

/** A request read from a file: the request line, headers as Node would hand them over, the body. */
export interface DumpedRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
  body: Buffer | undefined;
}

/**
 * Reads raw HTTP or a `curl -v` dump. Header values are kept as the bytes sent (Latin-1 strings,
 * as Node gives them to the gateway), names lower-cased, repeated headers joined as Node joins them.
 */
export function parseRequestDump(bytes: Buffer): DumpedRequest | string {
  const text = bytes.toString("latin1");
  let lines = text.split(/\r?\n/);
  let body: Buffer | undefined;
  const curl = lines.some((l) => l.startsWith("> "));
  if (curl) {
    lines = lines.filter((l) => l.startsWith("> ")).map((l) => l.slice(2));
  } else {
    const end = text.search(/\r?\n\r?\n/);
    if (end >= 0) {
      const separator = text.slice(end).match(/^\r?\n\r?\n/)![0].length;
      const rest = bytes.subarray(end + separator);
      if (rest.length > 0) body = rest;
      lines = text.slice(0, end).split(/\r?\n/);
    }
  }
  const requestLine = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0]?.trim() ?? "");
  if (!requestLine) {
    return `the first line '${(lines[0] ?? "").slice(0, 80)}' is not an HTTP request line (GET /v1/accounts HTTP/1.1)`;
  }
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    if (line.trim() === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return `'${line.slice(0, 80)}' is not a header line (Name: value)`;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return { method: requestLine[1]!, target: requestLine[2]!, headers, body };
}

/** A hand-written dump may leave Content-Length out; the checks judge "has a body" by framing, as HTTP does. */
export function withFraming(request: DumpedRequest): DumpedRequest {
  const h = request.headers;
  if (
    request.body !== undefined &&
    h["content-length"] === undefined &&
    h["transfer-encoding"] === undefined
  ) {
    h["content-length"] = String(request.body.length);
  }
  return request;
}

interface ExplainOptions {
  readonly now: number;
  readonly algorithms: CheckOptions["algorithms"];
  readonly trustDir?: string;
  readonly registerFile?: string;
}

interface StepOutcome {
  readonly step: string;
  readonly outcome: "passed" | "failed" | "not run";
  readonly code?: string;
  readonly status?: number;
  readonly text?: string;
}

interface Explanation {
  readonly passed: boolean;
  readonly request: { method: string; target: string };
  readonly steps: readonly StepOutcome[];
  readonly notChecked: readonly string[];
  readonly certificate?: {
    subject: string;
    issuer: string;
    serial: string;
    organizationIdentifier: string | undefined;
    psd2Roles: readonly string[];
    notBefore: string;
    notAfter: string;
    sha256: string;
  };
  readonly keyId?: { sent: string; serial?: string; issuer?: string };
  readonly signedHeaders?: readonly string[];
  readonly signingString?: string;
  readonly digest?: string;
}

/** Runs the gateway's checks over one request and collects what a developer needs to see. */
export function explain(request: DumpedRequest, options: ExplainOptions): Explanation {
  const notChecked: string[] = [];
  const certificates = explainCertificates(options, notChecked);
  const checkOptions: CheckOptions = {
    now: () => options.now,
    dateToleranceMs: DEFAULT_DATE_TOLERANCE_MS,
    algorithms: options.algorithms,
    allowDecimalSerial: false,
    keyIdPolicy: "strict",
    redirectUriOptionalPrefixes: [],
    characterPolicy: PERMISSIVE_POLICY,
    certificates,
    clientCertificate: { mode: "none", requireSameOrganization: true },
    replayWindowMs: 0,
    storeFailOpen: false,
  };
  notChecked.push(
    "replay and the unattended-access limit (they depend on what the bank saw before)",
    "mutual TLS (the QWAC is part of the connection, not of the request)",
  );
  const steps = requestChecks(checkOptions);
  const path = routingPath(request.target);
  const context = new CheckContext(
    request.method,
    request.target,
    request.headers,
    { path, role: new RoleTable(DEFAULT_ROLE_ROUTES).roleFor(path) },
    undefined,
  );
  const outcomes: StepOutcome[] = [];
  const observer: StepObserver = (step, outcome) =>
    outcomes.push(
      outcome === "passed"
        ? { step, outcome: "passed" }
        : {
            step,
            outcome: "failed",
            code: outcome.code,
            status: statusFor(outcome.code),
            text: outcome.text,
          },
    );
  // Explain mode has no promise-returning step (no store, the certificate checked synchronously).
  const result = runSteps(steps, context, observer) as Rejection | undefined;
  for (const step of steps.slice(outcomes.length)) outcomes.push({ step: step.name, outcome: "not run" });

  const bodyOutcome = result === undefined ? checkBody(request, context) : undefined;
  if (bodyOutcome) outcomes.push(bodyOutcome);
  else if (result === undefined && request.body === undefined && context.digest) {
    notChecked.push("the body against Digest (the dump holds no body: give --body <file>)");
  }
  const passed = outcomes.every((o) => o.outcome === "passed");
  return {
    passed,
    request: { method: request.method, target: request.target },
    steps: outcomes,
    notChecked,
    ...describeCertificate(request.headers),
    ...describeSignature(request),
  };
}

/** The body against Digest, as the gateway checks it while the body streams. */
function checkBody(request: DumpedRequest, context: CheckContext): StepOutcome | undefined {
  if (!context.digest || request.body === undefined) return undefined;
  const verifier = new DigestVerifier(context.digest);
  verifier.update(request.body);
  const result = verifier.finish();
  return result === true
    ? { step: "body-digest", outcome: "passed" }
    : {
        step: "body-digest",
        outcome: "failed",
        code: result.code,
        status: statusFor(result.code),
        text: result.text,
      };
}

function explainCertificates(options: ExplainOptions, notChecked: string[]): CertificateVerifier {
  if (options.trustDir) {
    const { store } = trustStoreFromFolder(options.trustDir);
    const { checker } = crlCheckerFromFolder(options.trustDir, store.all);
    const register = new TppRegister(Number.MAX_SAFE_INTEGER, () => options.now);
    if (options.registerFile) {
      register.replace(
        parseRegisterDocument(readFileSync(options.registerFile, "utf8")),
        options.registerFile,
      );
    }
    const verifier = new TppVerifier({
      trustStore: () => store,
      revocation: () => checker,
      register,
      now: () => options.now,
      cacheTtlMs: 0,
      failureTtlMs: 0,
      maxEntries: 1,
    });
    if (!options.registerFile) {
      notChecked.push("the TPP register (give --register <file>); the certificate's own roles are used");
      return {
        verify: (header) => {
          // The register is this certificate's claims: every other check is the gateway's own.
          const claimed = parsedCertificate(header);
          if (!isRejection(claimed) && claimed.organizationIdentifier !== undefined) {
            register.replace(
              [
                {
                  organizationIdentifier: claimed.organizationIdentifier,
                  name: claimed.subjectRfc2253,
                  roles: claimed.psd2Roles,
                  status: "authorised",
                },
              ],
              "the certificate itself",
            );
          }
          return verifier.verify(header) as TrustedCertificate | Rejection;
        },
      };
    }
    return { verify: (header) => verifier.verify(header) as TrustedCertificate | Rejection };
  }
  notChecked.push(
    "the certificate chain, revocation and the TPP register (give --trust <dir> and --register <file>)",
  );
  return {
    verify: (header) => {
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

function parsedCertificate(header: string): ParsedCertificate | Rejection {
  const der = decodeCertificateHeader(header);
  return isRejection(der) ? der : parseCertificate(der);
}

function describeCertificate(headers: IncomingHttpHeaders): Pick<Explanation, "certificate"> {
  const header = headerValue(headers, "tpp-signature-certificate");
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

function describeSignature(
  request: DumpedRequest,
): Pick<Explanation, "keyId" | "signedHeaders" | "signingString" | "digest"> {
  const out: {
    keyId?: Explanation["keyId"];
    signedHeaders?: string[];
    signingString?: string;
    digest?: string;
  } = {};
  const digestHeader = headerValue(request.headers, "digest");
  if (
    digestHeader !== undefined &&
    request.body !== undefined &&
    !isRejection(parseDigestHeader(digestHeader))
  ) {
    out.digest = `${computeDigestHeader(request.body)} (${request.body.length} bytes)`;
  }
  const signature = parseSignatureHeader(headerValue(request.headers, "signature"));
  if (isRejection(signature)) return out;
  const parsed = parseKeyId(signature.keyId);
  out.keyId = { sent: signature.keyId, ...(parsed ? { serial: parsed.sn, issuer: parsed.ca } : {}) };
  out.signedHeaders = [...signature.headers];
  const signingString = buildSigningString(signature.headers, request, signature);
  if (!isRejection(signingString)) out.signingString = readable(signingString);
  return out;
}

const MARK = { passed: "✓", failed: "✗", "not run": "·" } as const;

/** The text a developer reads: the checks in order, then what they compared. */
export function render(e: Explanation): string {
  const lines: string[] = [`${e.request.method} ${e.request.target}`, ""];
  const width = Math.max(...e.steps.map((s) => s.step.length));
  for (const s of e.steps) {
    const head = `${MARK[s.outcome]} ${s.step.padEnd(width)}`;
    if (s.outcome === "failed") lines.push(`${head}  ${s.status} ${s.code}: ${s.text}`);
    else lines.push(`${head}  ${s.outcome}`);
  }
  lines.push("");
  lines.push(
    e.passed ? "Every check passed." : "Refused at the first ✗ above; the checks after it did not run.",
  );
  if (e.notChecked.length > 0) {
    lines.push("", "Not checked here:");
    for (const n of e.notChecked) lines.push(`  - ${n}`);
  }
  if (e.certificate) {
    const c = e.certificate;
    lines.push(
      "",
      "Certificate (TPP-Signature-Certificate):",
      `  subject       ${c.subject}`,
      `  issuer        ${c.issuer}`,
      `  serial        ${c.serial}`,
      `  organization  ${c.organizationIdentifier ?? "(no organizationIdentifier)"}`,
      `  PSD2 roles    ${c.psd2Roles.join(", ") || "(none)"}`,
      `  valid         ${c.notBefore} – ${c.notAfter}`,
      `  sha256        ${c.sha256}`,
    );
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
  return lines.join("\n");
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The signing string's bytes shown as UTF-8 when they are UTF-8; other bytes as \xNN. */
function readable(latin1: string): string {
  const bytes = Buffer.from(latin1, "latin1");
  try {
    return UTF8.decode(bytes);
  } catch {
    return latin1.replace(/[\x80-\xff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  }
}
