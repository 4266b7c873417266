/**
 * `psd2-gateway verify`: explains why a bank would accept or refuse a signed request
 * (explain-request.ts), or whether a bank's signed response holds (`--response`,
 * explain-response.ts). Both run the gateway's own named checks and print every step's outcome,
 * the signing string rebuilt, the certificate's identity and roles, and the keyId next to the
 * certificate's serial and issuer.
 */

import { readFileSync } from "node:fs";
import { type CheckOptions, type Dialect, dialectNames, dialectUnit } from "../checks/index.js";
import { loadConfigFile } from "../config/load.js";
import type { BankProfileConfig } from "../config/schema.js";
import { DEFAULT_DATE_TOLERANCE_MS } from "../signature/index.js";
import { bankProfileOption } from "./bank-option.js";
import { defineCommand, UsageError } from "./command.js";
import { explain, explainWithConfig } from "./explain-request.js";
import { explainResponse } from "./explain-response.js";
import { type Explanation, render } from "./explanation.js";
import { type Dump, parseDump, withFraming } from "./http-dump.js";

export { explain, explainWithConfig } from "./explain-request.js";
export { explainResponse } from "./explain-response.js";
export { render } from "./explanation.js";
export { parseDump, parseRequestDump, withFraming } from "./http-dump.js";

const EVERY_ALGORITHM: CheckOptions["algorithms"] = ["rsa-sha256", "rsa-sha512", "ecdsa-sha256", "hs2019"];

export const verifyCommand = defineCommand({
  name: "verify",
  summary: "explain, check by check, why a bank accepts or refuses a signed request (or response)",
  usage: `psd2-gateway verify [<file>] [options]
psd2-gateway verify --response [<file>] [--request <file>] [options]

  <file>              the request as raw HTTP (request line, headers, blank line, body) or a
                      \`curl -v\` dump (the "> " lines); default: standard input
  --body <file>       the body, when the dump does not hold it (curl -v shows no body)
  --config <file>     judge it as the gateway started with this (ingress) config does: the same
                      chain of steps, trust sources, register, routes and limits (a fresh store:
                      judged as the first request of its kind); instead of --trust/--register
  --trust <dir>       also check the certificate chain against these CA certificates, and its
                      revocation as the gateway does (OCSP, CRL distribution points, the CRLs
                      in the same folder; every certificate of the path; unknown refuses)
  --register <file>   also check the TPP register (the gateway's JSON register; needs --trust)
  --now <date>        judge Date against this time (ISO 8601 or an HTTP date) instead of now,
                      for a request captured earlier
  --algorithm <a>     accept this signature algorithm too (repeatable; default: every algorithm
                      the gateway knows, so that a refusal names the real problem)
  --json              print the outcome as JSON

A bank's signed response (SPEC 5.10), checked as egress mode checks it:
  --response          <file> is a response: raw HTTP (status line, headers, blank line, body),
                      or a \`curl -v\` dump, whose "< " lines are the response and "> " lines the
                      request it answers
  --request <file>    the request it answers (raw HTTP or curl -v): the response's X-Request-ID
                      must be the request's, and a signed (request-target) is the request's
  --profile <yaml>    take the trust folder (responses.caDir), the revocation options
                      (responses.revocation), the certificate header, the algorithms and the
                      Date tolerance from a bank profile of an egress config
  --bank <name>       which profile of --profile (needed when it has several)
  --certificate-header <name>
                      the header the bank's QSealC comes in (default
                      ASPSP-Signature-Certificate; JAdES and UK OB carry it in x5c)
  --dialect <d>       cavage, rfc9421, jades or uk-ob: the dialect the answer must be signed in
                      (default: the profile's signing.dialect, else the one whose headers it
                      carries: Signature-Input, x-jws-signature, Signature)

Runs the gateway's checks in its order and prints each: what passed, the first that failed and
why, and the checks not reached. Without --trust the certificate is parsed and its PSD2 roles
read, but its chain, revocation and registration are not checked (the output says so).
Exits 0 when every check passed, 1 when one failed, 2 on a bad command line.`,
  allowPositionals: true,
  positionalPath: "file",
  options: {
    config: { type: "string", path: "file" },
    body: { type: "string", path: "file" },
    trust: { type: "string", path: "folder" },
    register: { type: "string", path: "file" },
    now: { type: "string" },
    algorithm: { type: "string", multiple: true },
    json: { type: "boolean", default: false },
    response: { type: "boolean", default: false },
    request: { type: "string", path: "file" },
    profile: { type: "string", path: "file" },
    bank: { type: "string" },
    "certificate-header": { type: "string" },
    dialect: { type: "string" },
  },
  check(values, positionals) {
    if (positionals.length > 1) throw new UsageError("give one file (or none for standard input)");
    if (values.config !== undefined) {
      const instead = (["trust", "register", "algorithm"] as const).find(
        (name) => values[name] !== undefined,
      );
      if (instead)
        throw new UsageError(`--${instead} goes without --config (the config says what to trust and accept)`);
      if (values.response)
        throw new UsageError("--config applies to requests; for a response give --profile");
    }
    if (values.register && !values.trust)
      throw new UsageError("--register needs --trust (the register is checked after the chain)");
    if (values.dialect !== undefined && dialectUnit(values.dialect) === undefined)
      throw new UsageError(`--dialect '${values.dialect}' is not one of ${dialectNames().join(", ")}`);
    if (values.dialect !== undefined && values.profile !== undefined)
      throw new UsageError("--dialect goes without --profile (the profile's signing.dialect says it)");
    const responseOnly = (["request", "profile", "bank", "certificate-header", "dialect"] as const).filter(
      (name) => values[name] !== undefined,
    );
    if (!values.response && responseOnly.length > 0)
      throw new UsageError(`--${responseOnly[0]} applies to --response only`);
    if (values.response && values.register)
      throw new UsageError("--register applies to requests: a bank's certificate is not in the TPP register");
    if (values.bank !== undefined && values.profile === undefined)
      throw new UsageError("--bank goes with --profile");
    if (values.now !== undefined && Number.isNaN(Date.parse(values.now)))
      throw new UsageError(`--now '${values.now}' is not a date`);
  },
  async run(values, positionals) {
    const now = values.now === undefined ? Date.now() : Date.parse(values.now);
    const profile = values.profile === undefined ? undefined : bankProfileOption(values.profile, values.bank);
    if (typeof profile === "string") throw new UsageError(profile);

    const source = positionals[0] ?? "standard input";
    const dump = parseDump(readFileSync(positionals[0] ?? 0), values.response ? "response" : "request");
    if (typeof dump === "string") {
      console.error(`psd2-gateway verify: ${source}: ${dump}`);
      return 1;
    }
    const body = values.body === undefined ? undefined : readFileSync(values.body);
    const algorithms = (values.algorithm as CheckOptions["algorithms"] | undefined) ?? EVERY_ALGORITHM;
    let explanation: Explanation;
    if (values.response) {
      const explained = await verifyResponse(dump, source, values, profile, { now, algorithms, body });
      if (typeof explained === "string") {
        console.error(`psd2-gateway verify: ${explained}`);
        return 1;
      }
      explanation = explained;
    } else {
      const request = dump.request;
      if (!request) {
        console.error(
          `psd2-gateway verify: ${source} holds a response, not a request; add --response to check a signed response`,
        );
        return 1;
      }
      if (body !== undefined) request.body = body;
      withFraming(request);
      if (values.config !== undefined) {
        const config = loadConfigFile(values.config);
        if (config.mode !== "ingress") {
          console.error(
            `psd2-gateway verify: --config ${values.config} is an egress config; give an ingress config (the bank's side)`,
          );
          return 1;
        }
        explanation = await explainWithConfig(request, config, now);
      } else {
        explanation = await explain(request, {
          now,
          algorithms,
          ...(values.trust ? { trustDir: values.trust } : {}),
          ...(values.register ? { registerFile: values.register } : {}),
        });
      }
    }
    console.log(values.json ? JSON.stringify(explanation, null, 2) : render(explanation));
    return explanation.passed ? 0 : 1;
  },
});

interface ResponseValues {
  dialect?: string | undefined;
  trust?: string | undefined;
  request?: string | undefined;
  algorithm?: string[] | undefined;
  "certificate-header"?: string | undefined;
}

/** The response's explanation, or a line saying what is wrong with the files. */
async function verifyResponse(
  dump: Dump,
  source: string,
  values: ResponseValues,
  profile: BankProfileConfig | undefined,
  given: { now: number; algorithms: CheckOptions["algorithms"]; body: Buffer | undefined },
): Promise<Explanation | string> {
  const response = dump.response;
  if (!response) {
    const found = dump.request ? ` (${dump.request.method} ${dump.request.target})` : "";
    return `${source}: not an HTTP response but a request${found}: a response starts with a status line (HTTP/1.1 200 OK; in a curl -v dump, "< " lines); leave out --response to check the request`;
  }
  if (given.body !== undefined) response.body = given.body;
  let request = dump.request;
  if (values.request !== undefined) {
    const read = parseDump(readFileSync(values.request), "request");
    if (typeof read === "string") return `--request ${values.request}: ${read}`;
    if (!read.request) return `--request ${values.request}: not an HTTP request: it holds a response`;
    request = read.request;
  }
  const rules = profile?.responses;
  const trustDir = values.trust ?? rules?.caDir;
  return explainResponse(response, request, {
    now: given.now,
    ...(values.dialect !== undefined
      ? { dialect: values.dialect as Dialect }
      : profile
        ? { dialect: profile.signing.dialect }
        : {}),
    algorithms: values.algorithm === undefined && rules ? rules.algorithms : given.algorithms,
    ...(rules
      ? {
          // Each dialect's own keys of the profile's `responses`, read by its unit.
          responses: rules,
          signing: profile!.signing,
          scheme: profile!.url.toLowerCase().startsWith("http:") ? ("http" as const) : ("https" as const),
        }
      : {}),
    certificateHeader:
      values["certificate-header"] ?? rules?.certificateHeader ?? "ASPSP-Signature-Certificate",
    dateToleranceMs: rules ? rules.dateToleranceSeconds * 1000 : DEFAULT_DATE_TOLERANCE_MS,
    ...(trustDir ? { trustDir } : {}),
    ...(values.trust === undefined && rules?.crlDir ? { crlDir: rules.crlDir } : {}),
    ...(rules ? { revocation: rules.revocation } : {}),
  });
}
