/**
 * Issue 38: the dialect plug-in point is real. A fifth dialect, defined in this folder alone
 * (unit.ts) and registered with one line, is verified by a real gateway on loopback in front of a
 * real backend, refused when tampered with (the backend sees nothing), explained by `verify`'s
 * explain function, and signed by the registry's signer (the one `sign`, the library and egress
 * use), whose output is what the gateway verifies; a bank's answer signed in it is checked by its
 * unit's response checks (the outline's slots) and explained by `verify --response`; ingress signs
 * its answers in it; config takes its options from its fragment (`verification.dialects.testSig`,
 * `banks[].signing.testSig`). Nothing in src/ names it. A copy without a response side shows a
 * config asking to verify or sign answers in such a dialect is refused when it loads.
 */

import { randomUUID, verify, X509Certificate } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import { describe, expect, it } from "vitest";
import { profileSigner, responseVerifierForProfile } from "../../../../../src/app/bank-profile.js";
import { responseSignerFrom } from "../../../../../src/app/request-path.js";
import {
  CheckContext,
  dialectNames,
  dialectUnit,
  registerDialect,
  StepsResponseVerifier,
} from "../../../../../src/checks/index.js";
import { type ExplainOptions, explain } from "../../../../../src/cli/explain-request.js";
import { explainResponse } from "../../../../../src/cli/explain-response.js";
import { render } from "../../../../../src/cli/explanation.js";
import { validateConfig, validateEgressConfig } from "../../../../../src/config/load.js";
import { parseSigningRules } from "../../../../../src/config/schema.js";
import { reject } from "../../../../../src/errors.js";
import { evidenceLines } from "../../../../helpers/evidence-folder.js";
import { useGatewayAndBackend } from "../../../../helpers/gateway-and-backend.js";
import { expectRejected, send } from "../../../../helpers/gateway-fixture.js";
import { trustedCertificatesIn } from "../../../../helpers/trusted-certificates.js";
import { TEST_DIALECT, testDialect } from "./unit.js";

registerDialect(testDialect);
// The same dialect without a response side (checks, signer), to show a config cannot ask for one.
// (Its config fragment stays the test dialect's: a key is taken once.)
const { responseChecks: _, responseSigner: _signer, config: _config, ...withoutResponseSide } = testDialect;
const NO_RESPONSES = "test-sig-unanswered";
registerDialect({
  ...withoutResponseSide,
  name: NO_RESPONSES,
  signatureStep: "unanswered-signature",
  detect: () => false,
  steps: () => ({
    parse: [],
    verify: [
      {
        name: "unanswered-signature",
        dialects: [NO_RESPONSES],
        run: () => reject("SIGNATURE_INVALID", "never"),
      },
    ],
    longestAcceptanceMs: 0,
  }),
});

const env = useGatewayAndBackend({
  config: { verification: { dialects: { accept: ["cavage", TEST_DIALECT] } } },
});

const PAYMENT = "/v1/payments/sepa-credit-transfers";
const BODY = '{"instructedAmount":{"currency":"EUR","amount":"123.50"},"creditorName":"Laura"}';

interface Call {
  readonly method: string;
  readonly target: string;
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
}

/** A request signed by the registry's signer for the dialect, as `sign --dialect test-sig` makes it. */
async function signed(seal: IssuedCertificate, body?: string): Promise<Call> {
  const signer = profileSigner(
    { signing: parseSigningRules({ dialect: TEST_DIALECT }), url: env.gw.url },
    { privateKey: seal.privateKey, certificateDer: Buffer.from(seal.der) },
  );
  const method = body === undefined ? "GET" : "POST";
  const target = body === undefined ? "/v1/accounts" : PAYMENT;
  const headers: Record<string, string> = {
    "x-request-id": randomUUID(),
    "psu-ip-address": "192.0.2.10",
    "tpp-redirect-uri": "https://tpp.example/cb",
    ...(body === undefined ? {} : { "content-type": "application/json" }),
  };
  const added = await signer.sign({ method, target, headers, ...(body === undefined ? {} : { body }) });
  return { method, target, headers: { ...headers, ...added }, body };
}

const sent = (call: Call) => send(env.gw, call.method, call.target, call.headers, call.body);

describe("a fifth dialect registered from the test folder alone", () => {
  it("is in the registry, and config names it beside the built-in four (an unknown name is refused)", () => {
    expect(dialectNames()).toEqual(["cavage", "rfc9421", "jades", "uk-ob", TEST_DIALECT, NO_RESPONSES]);
    expect(dialectUnit(TEST_DIALECT)).toBe(testDialect);
    expect(() => registerDialect(testDialect)).toThrow(/already registered/);
    const config = (accept: string[]) =>
      validateConfig({
        trust: { caDir: "/trust" },
        register: { file: "/register.json" },
        verification: { dialects: { accept } },
      });
    expect(config([TEST_DIALECT]).verification.dialects.accept).toEqual([TEST_DIALECT]);
    expect(() => config(["test-sig-2"])).toThrow(
      `'test-sig-2' is not a signing dialect of this build; it verifies cavage, rfc9421, jades, uk-ob, ${TEST_DIALECT}, ${NO_RESPONSES}`,
    );
  });

  it("brings its config fragment: verification.dialects.testSig takes its option, refuses a wrong value with its message", () => {
    const config = (dialects: Record<string, unknown>) =>
      validateConfig({
        trust: { caDir: "/trust" },
        register: { file: "/register.json" },
        verification: { dialects: { accept: [TEST_DIALECT], ...dialects } },
      });
    const own = (c: ReturnType<typeof config>) =>
      (c.verification.dialects as Record<string, unknown>)["testSig"];
    expect(own(config({ testSig: { replaySeconds: 30 } }))).toEqual({ replaySeconds: 30 });
    // Its default, as for the built-ins' fragments beside it.
    expect(own(config({}))).toEqual({ replaySeconds: 120 });
    expect((config({}).verification.dialects as Record<string, unknown>)["rfc9421"]).toMatchObject({
      maxAgeSeconds: 300,
    });
    expect(() => config({ testSig: { replaySeconds: "soon" } })).toThrow(
      "verification.dialects.testSig.replaySeconds: Invalid input: expected number, received string",
    );
    expect(() => config({ testSig: { replaySeconds: 30, window: 1 } })).toThrow(
      'verification.dialects.testSig: Unrecognized key: "window"',
    );
    // A key no unit brings is refused as before.
    expect(() => config({ testSig2: {} })).toThrow('Unrecognized key: "testSig2"');
    // Its signing rules under banks[].signing.testSig, read by its signer; a wrong value refused.
    const seal = env.gw.pki.tppA.qseal;
    const keys = { privateKey: seal.privateKey, certificateDer: Buffer.from(seal.der) };
    const rules = parseSigningRules({ dialect: TEST_DIALECT, testSig: { keyId: "bank-given" } });
    expect(profileSigner({ signing: rules, url: env.gw.url }, keys).keyId).toBe("bank-given");
    const egress = (testSig: unknown) =>
      validateEgressConfig({
        mode: "egress",
        banks: [
          {
            name: "b",
            prefix: "/b",
            url: "https://bank.example",
            qseal: { cert: "/c.pem", key: "/k.pem" },
            signing: { dialect: TEST_DIALECT, testSig },
          },
        ],
      });
    expect(egress({ keyId: "k-1" }).banks[0]?.signing).toMatchObject({ testSig: { keyId: "k-1" } });
    expect(() => egress({ keyId: "" })).toThrow("banks.0.signing.testSig.keyId: Too small");
    // A second unit cannot take the key.
    expect(() => registerDialect({ ...testDialect, name: "test-sig-again" })).toThrow(
      "the config key 'testSig' of 'test-sig-again' is taken by 'test-sig'",
    );
  });

  it.each([
    ["a GET", undefined],
    ["a POST with a body", BODY],
  ])("verifies %s signed by the registry's signer and forwards it to the bank", async (_what, body) => {
    const call = await signed(env.gw.pki.tppA.qseal, body);
    expect(call.headers["X-Test-Signature"]).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const r = await sent(call);
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests).toHaveLength(1);
    const received = env.backend.requests[0]!;
    expect(received.headers["x-test-signature"]).toBe(call.headers["X-Test-Signature"]);
    expect(received.body.toString()).toBe(body ?? "");
  });

  it.each([
    {
      name: "a body changed after signing → test-digest",
      tamper: (c: Call): Call => ({ ...c, body: c.body!.replace("123.50", "999.00") }),
      code: "SIGNATURE_INVALID",
      text: "hashes to",
    },
    {
      name: "another target than signed → test-signature",
      tamper: (c: Call): Call => ({ ...c, target: "/v1/payments/instant-sepa-credit-transfers" }),
      code: "SIGNATURE_INVALID",
      text: "x-test-signature does not verify",
    },
    {
      name: "a signature that is not base64 → test-signature-header",
      tamper: (c: Call): Call => ({ ...c, headers: { ...c.headers, "X-Test-Signature": "not base64!" } }),
      code: "FORMAT_ERROR",
      text: "is not base64",
    },
    {
      name: "no certificate → required-headers (the unit's own requirement)",
      tamper: (c: Call): Call => {
        const { "TPP-Signature-Certificate": _dropped, ...headers } = c.headers;
        return { ...c, headers };
      },
      code: "CERTIFICATE_MISSING",
      text: "TPP-Signature-Certificate header is missing",
    },
  ])("refuses $name; the bank never sees it", async ({ tamper, code, text }) => {
    const call = tamper(await signed(env.gw.pki.tppA.qseal, BODY));
    const r = await sent(call);
    expectRejected(r, { status: 400, code, text: [text] });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("is explained by verify: each of its steps named, what was signed shown, a tampered one failed at its step", async () => {
    const call = await signed(env.gw.pki.tppA.qseal, BODY);
    const dump = (c: Call) => ({
      method: c.method,
      target: c.target,
      headers: Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k.toLowerCase(), v])),
      body: c.body === undefined ? undefined : Buffer.from(c.body),
    });
    const withLength = (c: Call) => {
      const d = dump(c);
      return {
        ...d,
        headers: { ...d.headers, host: "bank.example", "content-length": String(d.body?.length ?? 0) },
      };
    };
    const options: ExplainOptions = { now: Date.now(), algorithms: ["rsa-sha256", "ecdsa-sha256"] };
    const good = await explain(withLength(call), options);
    expect(good.passed, render(good)).toBe(true);
    expect(good.dialect).toBe(TEST_DIALECT);
    const outcome = (e: typeof good, step: string) => e.steps.find((s) => s.step === step)?.outcome;
    expect(outcome(good, "test-signature")).toBe("passed");
    expect(outcome(good, "test-digest")).toBe("passed");
    expect(good.certificate?.organizationIdentifier).toBe(env.gw.pki.tppA.organizationId);
    expect(good.signingString).toContain(`post ${PAYMENT}\nx-request-id: ${call.headers["x-request-id"]}`);
    expect(render(good)).toContain("signed in the test dialect (x-test-signature)");

    const bad = await explain(
      withLength({ ...call, target: "/v1/payments/instant-sepa-credit-transfers" }),
      options,
    );
    expect(bad.passed).toBe(false);
    expect(bad.steps.find((s) => s.outcome === "failed")).toMatchObject({
      step: "test-signature",
      code: "SIGNATURE_INVALID",
    });
  });

  it("checks a bank's answer signed in it with its unit's response checks, step by step", async () => {
    const certificates = trustedCertificatesIn(env.gw.pki.paths.trustDir);
    const checks = testDialect.responseChecks!({
      certificates,
      certificateHeader: "tpp-signature-certificate",
      dateToleranceMs: 60_000,
      now: Date.now,
      responses: {},
    });
    expect(checks.map((s) => s.name)).toEqual([
      "test-signature-header",
      "digest",
      "request-id",
      "certificate",
      "test-signature",
    ]);
    const verifier = new StepsResponseVerifier(checks);
    // The bank signs its answer with the dialect's signer, over the request's method and target.
    const request = { method: "POST", target: PAYMENT, requestId: randomUUID() };
    const answer = '{"transactionStatus":"RCVD"}';
    const signer = profileSigner(
      { signing: parseSigningRules({ dialect: TEST_DIALECT }), url: env.gw.url },
      {
        privateKey: env.gw.pki.tppA.qseal.privateKey,
        certificateDer: Buffer.from(env.gw.pki.tppA.qseal.der),
      },
    );
    const added = await signer.sign({
      ...request,
      headers: { "x-request-id": request.requestId },
      body: answer,
    });
    const headers = Object.fromEntries(
      Object.entries({ "x-request-id": request.requestId, ...added }).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const response = (body: string, requestId = request.requestId) => ({
      status: 201,
      headers,
      body: Buffer.from(body),
      request: { ...request, requestId },
    });
    const judged = async (r: ReturnType<typeof response>) => {
      let failed = "";
      const verdict = await verifier.verify(r, (name, outcome) => {
        if (outcome !== "passed") failed = name;
      });
      return verdict === true ? "passed" : `${failed}: ${verdict.code}`;
    };
    expect(await judged(response(answer))).toBe("passed");
    expect(await judged(response(answer.replace("RCVD", "ACCP")))).toBe("digest: SIGNATURE_INVALID");
    expect(await judged(response(answer, randomUUID()))).toBe("request-id: SIGNATURE_INVALID");
    // One long-lived chain: its counts cover every answer judged (the signature passed once).
    const counts = verifier.counts();
    expect(counts.passed[counts.names.indexOf("test-signature")]).toBe(1);
  });

  it("a registered dialect without response checks: a bank profile verifying responses in it is refused when config loads", () => {
    const dialect = NO_RESPONSES;
    expect(dialectUnit(dialect)?.responseChecks).toBeUndefined();
    const bank = (mode: string) => ({
      name: "b",
      prefix: "/b",
      url: "https://bank.example",
      qseal: { cert: "/c.pem", key: "/k.pem" },
      signing: { dialect },
      responses: { mode, caDir: "/bank-cas" },
    });
    const egress = (mode: string) => validateEgressConfig({ mode: "egress", banks: [bank(mode)] });
    expect(() => egress("enforce")).toThrow(
      `the signing dialect '${dialect}' has no response checks in this build: set responses.mode: off for this bank`,
    );
    expect(() => egress("advisory")).toThrow(/has no response checks in this build/);
    // Off: the bank is signed for in the dialect, its responses pass unchecked.
    expect(egress("off").banks[0]?.signing.dialect).toBe(dialect);
    // A profile built past config is refused too, not checked as draft-cavage.
    const { banks } = egress("off");
    const profile = { ...banks[0]!, responses: { ...banks[0]!.responses, mode: "enforce" as const } };
    expect(() => responseVerifierForProfile(profile, Date.now)).toThrow(
      `the signing dialect '${dialect}' has no response checks in this build`,
    );
  });
});

describe("ingress answers a request in the fifth dialect signed in it (responseSigning)", () => {
  const evidenceFolder = mkdtempSync(join(tmpdir(), "psd2-fifth-evidence-"));
  const signing = useGatewayAndBackend((pki) => ({
    config: {
      verification: { dialects: { accept: [TEST_DIALECT] } },
      responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
      evidence: { folder: evidenceFolder },
    },
  }));

  it("keeps the signed answer's evidence: what was signed, rebuilt by its unit, verifies with the bank's key", async () => {
    const seal = signing.gw.pki.tppA.qseal;
    const signer = profileSigner(
      { signing: parseSigningRules({ dialect: TEST_DIALECT }), url: signing.gw.url },
      { privateKey: seal.privateKey, certificateDer: Buffer.from(seal.der) },
    );
    const headers = {
      "x-request-id": randomUUID(),
      "psu-ip-address": "192.0.2.10",
      "tpp-redirect-uri": "https://tpp.example/cb",
      "content-type": "application/json",
    };
    const added = await signer.sign({ method: "POST", target: PAYMENT, headers, body: BODY });
    const answer = await send(signing.gw, "POST", PAYMENT, { ...headers, ...added }, BODY);
    expect(answer.status, answer.text).toBe(200);
    let record: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !record; i++) {
      record = evidenceLines(evidenceFolder).find(
        (l) => l.type === "response" && l.requestId === headers["x-request-id"],
      );
      if (!record) await new Promise((r) => setTimeout(r, 50));
    }
    expect(record).toMatchObject({
      verdict: "signed",
      dialect: TEST_DIALECT,
      signedWith: `${TEST_DIALECT}:sha256`,
    });
    const bankKey = new X509Certificate(Buffer.from(signing.gw.pki.bankQseal.der)).publicKey;
    const signed = Buffer.from(record!.signedBytes as string, "base64");
    const signature = Buffer.from(record!.signature as string, "base64");
    expect(signed.toString("latin1")).toContain(`post ${PAYMENT}\n`);
    expect(verify("sha256", signed, bankKey, signature)).toBe(true);
  });

  it("signs the bank's answer with its unit's response signer: its own response checks pass it, a changed body fails", async () => {
    const seal = signing.gw.pki.tppA.qseal;
    const signer = profileSigner(
      { signing: parseSigningRules({ dialect: TEST_DIALECT }), url: signing.gw.url },
      { privateKey: seal.privateKey, certificateDer: Buffer.from(seal.der) },
    );
    const headers: Record<string, string> = {
      "x-request-id": randomUUID(),
      "psu-ip-address": "192.0.2.10",
      "tpp-redirect-uri": "https://tpp.example/cb",
      "content-type": "application/json",
    };
    const added = await signer.sign({ method: "POST", target: PAYMENT, headers, body: BODY });
    const answer = await send(signing.gw, "POST", PAYMENT, { ...headers, ...added }, BODY);
    expect(answer.status, answer.text).toBe(200);
    const received = Object.fromEntries(
      Object.entries(answer.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : [])),
    );
    expect(received["x-test-signature"]).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(received["aspsp-signature-certificate"]).toBe(signing.gw.pki.bankQseal.headerValue);

    const verifier = new StepsResponseVerifier(
      testDialect.responseChecks!({
        certificates: trustedCertificatesIn(signing.gw.pki.paths.trustDir),
        certificateHeader: "aspsp-signature-certificate",
        dateToleranceMs: 60_000,
        now: Date.now,
        responses: {},
      }),
    );
    const request = { method: "POST", target: PAYMENT, requestId: headers["x-request-id"]! };
    const judged = async (body: string) => {
      const verdict = await verifier.verify({
        status: 200,
        headers: received,
        body: Buffer.from(body),
        request,
      });
      return verdict === true ? "passed" : verdict.code;
    };
    expect(await judged(answer.text)).toBe("passed");
    expect(await judged(`${answer.text} `)).toBe("SIGNATURE_INVALID");

    // `verify --response` finds the dialect from the answer's headers and explains it by its unit.
    const explained = (body: Buffer | undefined) =>
      explainResponse(
        { status: 200, headers: received, body },
        { method: "POST", target: PAYMENT, headers: { "x-request-id": request.requestId }, body: undefined },
        {
          now: Date.now(),
          algorithms: ["rsa-sha256"],
          certificateHeader: "ASPSP-Signature-Certificate",
          dateToleranceMs: 60_000,
          trustDir: signing.gw.pki.paths.trustDir,
        },
      );
    const whole = await explained(Buffer.from(answer.text));
    expect(whole.passed, render(whole)).toBe(true);
    expect(whole.dialect).toBe(TEST_DIALECT);
    expect(whole.steps.map((s) => s.step)).toEqual([
      "test-signature-header",
      "digest",
      "request-id",
      "certificate",
      "test-signature",
    ]);
    expect(whole.certificate?.serial).toBe(signing.gw.pki.bankQseal.certificate.serialNumber.toUpperCase());
    expect(whole.signingString).toBe(
      `post ${PAYMENT}\nx-request-id: ${request.requestId}\ndigest: ${received.digest}`,
    );
    expect(render(whole)).toContain("signed in the test dialect (x-test-signature)");
    // Without the body: its digest step is left out and named, not failed.
    const bodiless = await explained(undefined);
    expect(bodiless.steps.map((s) => s.step)).not.toContain("digest");
    expect(bodiless.notChecked).toContain(
      "the body against Digest (the dump holds no body: give --body <file>)",
    );
  });

  it("a dialect without a response signer: accepting it beside responseSigning is refused when config loads, and an answer to it is never sent unsigned", async () => {
    const config = (accept: string[]) =>
      validateConfig({
        trust: { caDir: "/trust" },
        register: { file: "/register.json" },
        verification: { dialects: { accept } },
        responseSigning: { qseal: { cert: "/bank.pem", key: "/bank.key" } },
      });
    expect(config([TEST_DIALECT]).responseSigning?.certificateHeader).toBe("ASPSP-Signature-Certificate");
    expect(() => config(["cavage", NO_RESPONSES])).toThrow(
      `the signing dialect '${NO_RESPONSES}' cannot sign responses in this build, and responseSigning signs every answer in its request's dialect: stop accepting '${NO_RESPONSES}' (verification.dialects) or remove responseSigning`,
    );
    // Past config (a signer built by hand): the answer is refused, not signed in another dialect.
    const { responseSigning } = config([TEST_DIALECT]);
    const bank = signing.gw.pki.bankQseal;
    const responseSigner = responseSignerFrom(responseSigning!, {
      privateKey: bank.privateKey,
      certificateDer: Buffer.from(bank.der),
    } as Parameters<typeof responseSignerFrom>[1]);
    const context = new CheckContext(
      "GET",
      "/v1/accounts",
      { "x-request-id": randomUUID() },
      { path: "/v1/accounts", role: undefined },
      undefined,
    );
    context.dialect = NO_RESPONSES;
    await expect(responseSigner.sign(Buffer.from("{}"), {}, 200, context)).rejects.toThrow(
      `the signing dialect '${NO_RESPONSES}' cannot sign responses in this build`,
    );
  });
});
