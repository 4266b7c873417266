/**
 * `psd2-gateway verify --response` explains a bank's signed response with the checks egress mode
 * applies (each dialect unit's responseChecks, src/checks/dialects/): each failure class is named at the step that refuses
 * it, with its code. Responses are signed by the ingress gateway's own response signer.
 */

import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki, type IssuedCertificate } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { responseSignerFrom } from "../../../src/app/request-path.js";
import { CheckContext, type Dialect } from "../../../src/checks/index.js";
import { explainResponse, parseDump, render } from "../../../src/cli/verify.js";
import { validateConfig } from "../../../src/config/load.js";

let pki: DevPki;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "psd2-verify-response-"));
  pki = await generateDevPki(join(dir, "pki"));
});

const REQUEST_ID = "6f0d2c58-8a7e-4b0e-9d43-2f3c5b8a1e77";
const BODY = JSON.stringify({ accounts: [{ iban: "NO9386011117947", currency: "NOK" }] });
const REQUEST = `GET /v1/accounts HTTP/1.1\r\nHost: bank.example\r\nX-Request-ID: ${REQUEST_ID}\r\n\r\n`;

interface Made {
  /** The QSealC the response is signed with (default: the demo bank's). */
  signer?: (p: DevPki) => IssuedCertificate;
  /** `responseSigning.headers` (default: the config's). */
  headers?: string[];
  requestId?: string;
  /** Changes the raw response text after signing. */
  tamper?: (raw: string) => string;
  /** The dialect of the request answered, which the response is signed in (default draft-cavage). */
  dialect?: Dialect;
}

async function rawResponse(made: Made = {}): Promise<string> {
  const cert = (made.signer ?? ((p) => p.bankQseal))(pki);
  const config = validateConfig({
    trust: { caDir: "unused" },
    register: { file: "unused.json" },
    responseSigning: {
      qseal: { cert: "unused.pem", key: "unused.pem" },
      ...(made.headers ? { headers: made.headers } : {}),
    },
  });
  const signer = responseSignerFrom(config.responseSigning!, {
    privateKey: cert.privateKey,
    certificateDer: Buffer.from(cert.der),
  } as Parameters<typeof responseSignerFrom>[1]);
  const headers = {
    "content-type": "application/json",
    "x-request-id": made.requestId ?? REQUEST_ID,
  };
  const request = new CheckContext(
    "GET",
    "/v1/accounts",
    { host: "bank.example", "x-request-id": REQUEST_ID },
    { path: "/v1/accounts", role: undefined },
    undefined,
  );
  request.dialect = made.dialect ?? "cavage";
  const signed = await signer.sign(Buffer.from(BODY), headers, 200, request);
  // The signer answers in Berlin Group spelling (X-Request-ID): one entry per header, whatever the case.
  const all: Record<string, string> = { ...headers, "content-length": String(Buffer.byteLength(BODY)) };
  for (const [name, value] of Object.entries(signed)) {
    delete all[name.toLowerCase()];
    all[name] = value;
  }
  const raw = `HTTP/1.1 200 OK\r\n${Object.entries(all)
    .map(([n, v]) => `${n}: ${v}`)
    .join("\r\n")}\r\n\r\n${BODY}`;
  return made.tamper ? made.tamper(raw) : raw;
}

async function run(
  raw: string,
  options: {
    now?: number;
    trust?: boolean;
    request?: string | null;
    certificateHeader?: string;
    dialect?: Dialect;
  } = {},
) {
  const response = parseDump(Buffer.from(raw, "latin1"));
  if (typeof response === "string" || !response.response) throw new Error(String(response));
  const request =
    options.request === null ? undefined : parseDump(Buffer.from(options.request ?? REQUEST, "latin1"));
  if (typeof request === "string") throw new Error(request);
  return explainResponse(response.response, request?.request, {
    now: options.now ?? Date.now(),
    algorithms: ["rsa-sha256"],
    certificateHeader: options.certificateHeader ?? "ASPSP-Signature-Certificate",
    dateToleranceMs: 60_000,
    ...(options.trust === false ? {} : { trustDir: pki.paths.trustDir }),
    ...(options.dialect ? { dialect: options.dialect } : {}),
  });
}

/** An egress config with one bank profile, "demo", trusting the dev PKI for its answers. */
function demoProfile(file: string, signing?: Record<string, unknown>): string {
  const profile = join(dir, file);
  const bank = {
    name: "demo",
    prefix: "/demo",
    url: "https://127.0.0.1:8443",
    qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey },
    ...(signing ? { signing } : {}),
    responses: { mode: "enforce", caDir: pki.paths.trustDir },
  };
  writeFileSync(profile, toYaml({ mode: "egress", banks: [bank] }));
  return profile;
}

/** The verify command as a user runs it. */
const cli = (...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "src/main.ts", "verify", ...args], { encoding: "utf8" });

describe("psd2-gateway verify --response names the step that refuses and why", () => {
  it.each<[string, Made, Parameters<typeof run>[1], string, string, RegExp]>([
    [
      "no Signature header",
      { tamper: (r) => r.replace(/\r\nSignature: [^\r]*/, "") },
      {},
      "signature-header",
      "SIGNATURE_MISSING",
      /no Signature header/,
    ],
    [
      "no certificate header",
      { tamper: (r) => r.replace(/\r\nASPSP-Signature-Certificate: [^\r]*/, "") },
      {},
      "certificate",
      "CERTIFICATE_MISSING",
      /ASPSP-Signature-Certificate|aspsp-signature-certificate/,
    ],
    [
      "the certificate in another header than the one configured",
      {},
      { certificateHeader: "X-Bank-Certificate" },
      "certificate",
      "CERTIFICATE_MISSING",
      /x-bank-certificate/,
    ],
    [
      "a bank certificate from a CA not trusted",
      { signer: (p) => p.untrusted },
      {},
      "certificate",
      "CERTIFICATE_INVALID",
      /.+/,
    ],
    [
      "a revoked bank certificate",
      { signer: (p) => p.revoked },
      {},
      "certificate",
      "CERTIFICATE_REVOKED",
      /revoked/,
    ],
    [
      "a body changed after signing",
      { tamper: (r) => r.replace("NO9386011117947", "NO9386011117948") },
      {},
      "digest",
      "SIGNATURE_INVALID",
      /.+/,
    ],
    [
      "a keyId naming another serial",
      { tamper: (r) => r.replace(/keyId="SN=[0-9A-F]+/, 'keyId="SN=0BADC0DE') },
      {},
      "key-id",
      "SIGNATURE_INVALID",
      /0BADC0DE/,
    ],
    [
      "a signature that leaves Digest out",
      { headers: ["date", "x-request-id"] },
      {},
      "coverage",
      "SIGNATURE_INVALID",
      /[Dd]igest/,
    ],
    [
      "a signed header changed after signing",
      { tamper: (r) => r.replace(/\r\nDate: [^\r]*/, "\r\nDate: Mon, 23 Nov 2026 10:00:00 GMT") },
      {},
      "signature",
      "SIGNATURE_INVALID",
      /does not verify/,
    ],
    ["a Date ten minutes old", {}, { now: Date.now() + 600_000 }, "date", "TIMESTAMP_INVALID", /.+/],
    [
      "the answer to another request",
      { requestId: "0e7a9b52-3c1d-4f6e-8a2b-9d4c5e6f7a8b" },
      {},
      "request-id",
      "SIGNATURE_INVALID",
      /answers another request/,
    ],
  ])("%s", async (_what, made, options, step, code, text) => {
    const e = await run(await rawResponse(made), options);
    expect(e.passed).toBe(false);
    const failed = e.steps.find((s) => s.outcome === "failed");
    expect(failed?.step).toBe(step);
    expect(failed?.code).toBe(code);
    expect(failed?.text).toMatch(text);
    const at = e.steps.indexOf(failed!);
    expect(e.steps.slice(0, at).every((s) => s.outcome === "passed")).toBe(true);
    expect(e.steps.slice(at + 1).every((s) => s.outcome === "not run")).toBe(true);
  });

  it("passes a good response, with and without the chain, and shows what it compared", async () => {
    const raw = await rawResponse();
    for (const trust of [true, false]) {
      const e = await run(raw, { trust });
      expect(e.steps.filter((s) => s.outcome !== "passed")).toEqual([]);
      expect(e.steps.map((s) => s.step)).toEqual([
        "signature-header",
        "certificate",
        "digest",
        "signature-parameters",
        "key-id",
        "coverage",
        "signature",
        "date",
        "request-id",
      ]);
      expect(e.certificate?.psd2Roles).toContain("PSP_AS");
      expect(e.keyId?.serial).toBe(e.certificate?.serial);
      expect(e.signingString).toContain(`x-request-id: ${REQUEST_ID}`);
      expect(e.notChecked.some((n) => n.includes("chain"))).toBe(!trust);
    }
    const text = render(await run(raw));
    expect(text).toMatch(/^HTTP 200, the answer to GET \/v1\/accounts\n/);
    expect(text).toContain("Every check passed.");
    const refused = render(await run(await rawResponse({ requestId: "x-1" })));
    expect(refused).toContain("✗ request-id            SIGNATURE_INVALID: the response's X-Request-ID x-1");
    expect(refused).toContain("withholds it");
    expect(text).toContain("Certificate (ASPSP-Signature-Certificate):");
  });

  it("without the request, says the X-Request-ID match was not checked rather than failing it", async () => {
    const e = await run(await rawResponse({ requestId: "another-id" }), { request: null });
    expect(e.passed).toBe(true);
    expect(e.steps.map((s) => s.step)).not.toContain("request-id");
    expect(e.notChecked.some((n) => n.includes("--request"))).toBe(true);
  });

  it("reads a curl -v dump: request from the '> ' lines, response from the '< ' lines, body not in it", async () => {
    const raw = await rawResponse();
    const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
    const dump = [
      "*   Trying 127.0.0.1:8443...",
      ...REQUEST.trimEnd()
        .split("\r\n")
        .map((l) => `> ${l}`),
      "> ",
      "< HTTP/1.1 100 Continue",
      "< ",
      ...head.split("\r\n").map((l) => `< ${l}`),
      "< ",
      "{ [120 bytes data]",
    ].join("\n");
    const parsed = parseDump(Buffer.from(dump, "latin1"));
    if (typeof parsed === "string") throw new Error(parsed);
    expect(parsed.request?.target).toBe("/v1/accounts");
    expect(parsed.response?.status).toBe(200);
    const e = await explainResponse(parsed.response!, parsed.request, {
      now: Date.now(),
      algorithms: ["rsa-sha256"],
      certificateHeader: "ASPSP-Signature-Certificate",
      dateToleranceMs: 60_000,
      trustDir: pki.paths.trustDir,
    });
    expect(e.passed).toBe(true);
    expect(e.steps.map((s) => s.step)).toContain("request-id");
    expect(e.steps.map((s) => s.step)).not.toContain("digest");
    expect(e.notChecked.some((n) => n.includes("--body"))).toBe(true);
  });

  it("runs as a command: --profile takes trust and header from the bank profile; exit codes; --json", async () => {
    const good = join(dir, "good-response.http");
    const bad = join(dir, "bad-response.http");
    const request = join(dir, "request.http");
    writeFileSync(good, await rawResponse());
    writeFileSync(bad, (await rawResponse()).replace("NO9386011117947", "NO0000000000000"));
    writeFileSync(request, REQUEST);
    const profile = demoProfile("egress.yaml");
    const passed = cli("--response", good, "--request", request, "--profile", profile);
    expect(passed.stderr).toBe("");
    expect(passed.status).toBe(0);
    expect(passed.stdout).not.toContain("chain and revocation");
    const refused = cli("--response", bad, "--request", request, "--profile", profile, "--json");
    expect(refused.status).toBe(1);
    const json = JSON.parse(refused.stdout) as {
      passed: boolean;
      steps: { step: string; outcome: string }[];
    };
    expect(json.steps.find((s) => s.outcome === "failed")?.step).toBe("digest");
    // Usage errors: exit 2 and one line.
    for (const args of [
      [good, "--request", request],
      ["--response", good, "--bank", "demo"],
      ["--response", good, "--register", "x.json", "--trust", "y"],
    ]) {
      const wrong = cli(...args);
      expect(wrong.status, args.join(" ")).toBe(2);
      expect(wrong.stderr.trim().split("\n")).toHaveLength(1);
    }
    const missing = cli("--response", good, "--profile", profile, "--bank", "nope");
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("no bank profile 'nope'; its profiles are demo");
    expect(cli(good).stderr).toContain("add --response");
  });
});

describe("psd2-gateway verify --response speaks every dialect the gateway answers in", () => {
  const tamperBody = (r: string) => r.replace("NO9386011117947", "NO9386011117948");
  const otherRequest = REQUEST.replace(REQUEST_ID, "0e7a9b52-3c1d-4f6e-8a2b-9d4c5e6f7a8b");
  it.each<[Dialect, string[]]>([
    [
      "rfc9421",
      ["signature-input", "coverage", "request-id", "content-digest", "certificate", "key-id", "signature"],
    ],
    ["jades", ["jws-header", "request-id", "digest", "certificate", "signature"]],
    ["uk-ob", ["jws-header", "certificate", "signature", "claims"]],
  ])(
    "%s: a good answer passes each named step, the dialect found from its headers",
    async (dialect, steps) => {
      const e = await run(await rawResponse({ dialect }));
      expect(e.dialect).toBe(dialect);
      expect(e.steps.map((s) => [s.step, s.outcome])).toEqual(steps.map((s) => [s, "passed"]));
      expect(e.certificate?.organizationIdentifier).toBe(e.certificate?.organizationIdentifier ?? "x");
      expect(e.certificate?.sha256).toMatch(/^[0-9A-F:]+$/i);
      const text = render(e);
      expect(text).toContain("Every check passed.");
      expect(text).toMatch(/^HTTP 200, the answer to GET \/v1\/accounts\nsigned in /);
      if (dialect !== "rfc9421") {
        expect(text).toContain("Certificate (x5c of x-jws-signature):");
        expect(text).toContain("JWS protected header (x-jws-signature):");
        expect(text).toMatch(/x5c\s+"\(1 certificate\)"/);
      }
    },
  );

  it.each<[string, Dialect, Made, Parameters<typeof run>[1], string, string]>([
    [
      "RFC 9421: the body changed",
      "rfc9421",
      { tamper: tamperBody },
      {},
      "content-digest",
      "SIGNATURE_INVALID",
    ],
    [
      "RFC 9421: another request's answer",
      "rfc9421",
      {},
      { request: otherRequest },
      "request-id",
      "SIGNATURE_INVALID",
    ],
    [
      "RFC 9421: created an hour off",
      "rfc9421",
      {},
      { now: Date.now() + 3_600_000 },
      "coverage",
      "TIMESTAMP_INVALID",
    ],
    [
      "RFC 9421: a revoked bank certificate",
      "rfc9421",
      { signer: (p) => p.revoked },
      {},
      "certificate",
      "CERTIFICATE_REVOKED",
    ],
    [
      "RFC 9421: the request's target differs (;req)",
      "rfc9421",
      {},
      { request: REQUEST.replace("/v1/accounts", "/v1/accounts?withBalance=true") },
      "signature",
      "SIGNATURE_INVALID",
    ],
    ["JAdES: the body changed", "jades", { tamper: tamperBody }, {}, "digest", "SIGNATURE_INVALID"],
    [
      "JAdES: another request's answer",
      "jades",
      {},
      { request: otherRequest },
      "request-id",
      "SIGNATURE_INVALID",
    ],
    [
      "JAdES: sigT an hour off",
      "jades",
      {},
      { now: Date.now() + 3_600_000 },
      "jws-header",
      "TIMESTAMP_INVALID",
    ],
    [
      "JAdES: an untrusted bank certificate",
      "jades",
      { signer: (p) => p.untrusted },
      {},
      "certificate",
      "CERTIFICATE_INVALID",
    ],
    [
      "JAdES: the signature's bytes changed",
      "jades",
      {
        tamper: (r) =>
          r.replace(
            /(x-jws-signature: [^.\r]*\.\.)(.)/i,
            (_m, head: string, c: string) => head + (c === "A" ? "B" : "A"),
          ),
      },
      {},
      "signature",
      "SIGNATURE_INVALID",
    ],
    ["UK OB: the body changed", "uk-ob", { tamper: tamperBody }, {}, "signature", "SIGNATURE_INVALID"],
    [
      "UK OB: iat an hour off",
      "uk-ob",
      {},
      { now: Date.now() + 3_600_000 },
      "jws-header",
      "TIMESTAMP_INVALID",
    ],
    [
      "UK OB: a revoked bank certificate",
      "uk-ob",
      { signer: (p) => p.revoked },
      {},
      "certificate",
      "CERTIFICATE_REVOKED",
    ],
    [
      "a JAdES answer judged as draft-cavage (--dialect cavage)",
      "jades",
      {},
      { dialect: "cavage" },
      "signature-header",
      "SIGNATURE_MISSING",
    ],
  ])("%s", async (_what, dialect, made, options, step, code) => {
    const e = await run(await rawResponse({ ...made, dialect }), options);
    expect(e.passed).toBe(false);
    const failed = e.steps.find((s) => s.outcome === "failed");
    expect([failed?.step, failed?.code]).toEqual([step, code]);
    expect(failed?.text).toBeTruthy();
  });

  it("UK OB without the body: says the signature was not checked rather than failing it", async () => {
    const raw = await rawResponse({ dialect: "uk-ob" });
    const e = await run(raw.slice(0, raw.indexOf("\r\n\r\n") + 4).replace(/content-length: \d+\r\n/i, ""));
    expect(e.steps.map((s) => s.step)).toEqual(["jws-header", "certificate"]);
    expect(e.passed).toBe(true);
    expect(e.notChecked.some((n) => n.includes("--body"))).toBe(true);
  });

  it("runs as a command with a JAdES bank profile, and with --dialect", async () => {
    const good = join(dir, "jades-response.http");
    const request = join(dir, "jades-request.http");
    writeFileSync(good, await rawResponse({ dialect: "jades" }));
    writeFileSync(request, REQUEST);
    const profile = demoProfile("egress-jades.yaml", { dialect: "jades" });
    const passed = cli("--response", good, "--request", request, "--profile", profile);
    expect(passed.stderr).toBe("");
    expect(passed.stdout).toContain("signed in JAdES");
    expect(passed.status).toBe(0);
    const asRfc9421 = cli(
      "--response",
      good,
      "--request",
      request,
      "--dialect",
      "rfc9421",
      "--trust",
      pki.paths.trustDir,
    );
    expect(asRfc9421.status).toBe(1);
    expect(asRfc9421.stdout).toMatch(/✗ signature-input/);
    const wrong = cli("--response", good, "--dialect", "jws");
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain("not one of cavage, rfc9421, jades, uk-ob");
    expect(cli(good, "--dialect", "jades").status).toBe(2);
  });
});
