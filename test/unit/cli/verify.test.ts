/**
 * `psd2-gateway verify` explains a request with the gateway's own checks: each failure class is
 * named at the step that refuses it, with the code the gateway would answer.
 */

import { spawnSync } from "node:child_process";
import { createPrivateKey } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki, type IssuedCertificate } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { explain, parseRequestDump, render, withFraming } from "../../../src/cli/verify.js";
import { formatHttpDate, RequestSigner } from "../../../src/signature/index.js";

let pki: DevPki;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "psd2-verify-"));
  pki = await generateDevPki(join(dir, "pki"));
});

const PAYMENT = "/v1/payments/norwegian-domestic-credit-transfers";
const BODY = JSON.stringify({ instructedAmount: { amount: "10.00", currency: "NOK" } });

interface Made {
  method?: string;
  target?: string;
  body?: string;
  signer?: (p: DevPki) => IssuedCertificate;
  headers?: Record<string, string>;
  /** Default headers to leave out before signing. */
  omit?: string[];
  /** Changes the raw request text after signing. */
  tamper?: (raw: string) => string;
}

async function rawRequest(made: Made): Promise<string> {
  const cert = (made.signer ?? ((p) => p.tppA.qseal))(pki);
  const signer = new RequestSigner({ privateKey: createPrivateKey(cert.keyPem), certificate: cert.der });
  const method = made.method ?? "GET";
  const target = made.target ?? "/v1/accounts";
  const headers: Record<string, string> = {
    "TPP-Redirect-URI": "https://tpp.example/cb",
    "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
    "PSU-IP-Address": "192.0.2.10",
    ...(made.body
      ? { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(made.body)) }
      : {}),
    ...made.headers,
  };
  for (const name of made.omit ?? []) delete headers[name];
  const signed = await signer.sign({ method, target, headers, ...(made.body ? { body: made.body } : {}) });
  const all = { Host: "bank.example", ...headers, ...signed };
  const raw = `${method} ${target} HTTP/1.1\r\n${Object.entries(all)
    .map(([n, v]) => `${n}: ${v}`)
    .join("\r\n")}\r\n\r\n${made.body ?? ""}`;
  return made.tamper ? made.tamper(raw) : raw;
}

function run(raw: string, options: { now?: number; trust?: boolean } = {}) {
  const request = parseRequestDump(Buffer.from(raw, "latin1"));
  if (typeof request === "string") throw new Error(request);
  return explain(withFraming(request), {
    now: options.now ?? Date.now(),
    algorithms: ["rsa-sha256"],
    ...(options.trust ? { trustDir: pki.paths.trustDir, registerFile: pki.paths.register } : {}),
  });
}

describe("psd2-gateway verify names the step that refuses and why", () => {
  it.each<[string, Made, { trust?: boolean; later?: number }, string, string, RegExp]>([
    [
      "a PSU-ID changed after signing",
      { tamper: (r) => r.replace("PSU-ID: 9f1c", "PSU-ID: 8f1c") },
      {},
      "signature",
      "SIGNATURE_INVALID",
      /does not verify/,
    ],
    [
      "a body changed after signing",
      { method: "POST", target: PAYMENT, body: BODY, tamper: (r) => r.replace('"10.00"', '"99.00"') },
      {},
      "digest",
      "SIGNATURE_INVALID",
      /hashes to/,
    ],
    ["a Date two minutes old", {}, { later: 120_000 }, "date", "TIMESTAMP_INVALID", /.+/],
    [
      "no Signature header",
      { tamper: (r) => r.replace(/\r\nSignature: [^\r]*/, "") },
      {},
      "dialect",
      "SIGNATURE_MISSING",
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
      "PSU-ID sent but not signed",
      { tamper: (r) => r.replace(/ psu-id/, "") },
      {},
      "coverage",
      "SIGNATURE_INVALID",
      /psu-id/,
    ],
    [
      "an AIS-only TPP paying",
      { method: "POST", target: PAYMENT, body: BODY, signer: (p) => p.tppB.qseal },
      {},
      "role",
      "ROLE_INVALID",
      /PSP_PI/,
    ],
    [
      "a revoked certificate, with --trust",
      { signer: (p) => p.revoked },
      { trust: true },
      "certificate",
      "CERTIFICATE_REVOKED",
      /revoked/,
    ],
    [
      "an unregistered TPP, with --register",
      { signer: (p) => p.unregistered },
      { trust: true },
      "certificate",
      "CERTIFICATE_BLOCKED",
      /register/,
    ],
    [
      "a request signed with the TPP's QWAC, with --trust (the gateway's default kinds)",
      { signer: (p) => p.tppA.qwac },
      { trust: true },
      "certificate",
      "CERTIFICATE_INVALID",
      /QSealC/,
    ],
    [
      "an untrusted QTSP, with --trust",
      { signer: (p) => p.untrusted },
      { trust: true },
      "certificate",
      "CERTIFICATE_INVALID",
      /.+/,
    ],
  ])("%s", async (_what, made, options, step, code, text) => {
    const e = await run(await rawRequest(made), {
      ...(options.trust ? { trust: true } : {}),
      ...(options.later ? { now: Date.now() + options.later } : {}),
    });
    expect(e.passed).toBe(false);
    const failed = e.steps.find((s) => s.outcome === "failed");
    expect(failed?.step).toBe(step);
    expect(failed?.code).toBe(code);
    expect(failed?.text).toMatch(text);
    // Every step before the failed one passed (a step acting only on the body had not run yet);
    // every one after did not run — unless the body failed, after the whole head had passed.
    const at = e.steps.indexOf(failed!);
    const bodyOnly = new Set(["body-characters"]);
    expect(e.steps.slice(0, at).every((s) => s.outcome === "passed" || bodyOnly.has(s.step))).toBe(true);
    const atBody = step === "digest";
    expect(
      e.steps
        .slice(at + 1)
        .every((s) => s.outcome === "not run" || (atBody && s.outcome === "passed" && !bodyOnly.has(s.step))),
    ).toBe(true);
  });

  it("passes a good request, with and without the chain and register, and shows what it compared", async () => {
    const raw = await rawRequest({ method: "POST", target: PAYMENT, body: BODY });
    for (const trust of [false, true]) {
      const e = await run(raw, { trust });
      expect(e.steps.filter((s) => s.outcome !== "passed")).toEqual([]);
      expect(e.steps.map((s) => s.step)).toContain("digest");
      expect(e.certificate?.organizationIdentifier).toBe("PSDNO-FSA-DEMO0001");
      expect(e.keyId?.serial).toBe(e.certificate?.serial);
      expect(e.signingString).toMatch(/^\(request-target\): post \/v1\/payments/);
      expect(e.notChecked.some((n) => n.includes("chain"))).toBe(!trust);
    }
    const text = render(await run(raw));
    expect(text).toContain("Every check passed.");
    expect(text).toContain("Signing string rebuilt");
  });

  it("passes a sandbox call without TPP-Redirect-URI or PSU headers, as the gateway's default config does", async () => {
    const omit = ["TPP-Redirect-URI", "PSU-ID", "PSU-IP-Address"];
    expect(
      (await run(await rawRequest({ target: "/v1/sandbox/customers?withAccounts=true", omit }))).passed,
    ).toBe(true);
    const elsewhere = await run(await rawRequest({ target: "/v1/accounts", omit }));
    expect(elsewhere.steps.find((s) => s.outcome === "failed")?.step).toBe("required-headers");
  });

  it("reads a curl -v dump (the '> ' lines) and says the body was not in it", async () => {
    const raw = await rawRequest({ method: "POST", target: PAYMENT, body: BODY });
    const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
    const dump = [
      "*   Trying 127.0.0.1:8443...",
      ...head.split("\r\n").map((l) => `> ${l}`),
      "> ",
      "} [72 bytes data]",
      "< HTTP/1.1 201 Created",
    ].join("\n");
    const e = await run(dump);
    expect(e.passed).toBe(true);
    expect(e.notChecked.some((n) => n.includes("--body"))).toBe(true);
  });

  it("runs as a command: exit 0 on a good request, 1 on a refused one, JSON with --json", async () => {
    const good = join(dir, "good.http");
    const bad = join(dir, "bad.http");
    writeFileSync(good, await rawRequest({}));
    writeFileSync(bad, (await rawRequest({})).replace("PSU-ID: 9f1c", "PSU-ID: 8f1c"));
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, ["--import", "tsx", "src/main.ts", "verify", ...args], {
        encoding: "utf8",
      });
    expect(cli(good).status).toBe(0);
    const refused = cli(bad, "--json");
    expect(refused.status).toBe(1);
    const json = JSON.parse(refused.stdout) as {
      passed: boolean;
      steps: { step: string; outcome: string }[];
    };
    expect(json.passed).toBe(false);
    expect(json.steps.find((s) => s.outcome === "failed")?.step).toBe("signature");
    expect(cli(good, "--now", "not a date").status).toBe(2);
  });
});

it("formats a Date the checks accept (sanity of the helper above)", () => {
  expect(formatHttpDate(Date.now())).toMatch(/GMT$/);
});

describe("psd2-gateway verify explains an RFC 9421 (FAPI 2.0) request with its own steps", () => {
  async function rfc9421Raw(tamper?: (raw: string) => string): Promise<string> {
    const { computeContentDigest, signFapiRequest } = await import("../../../src/signature/rfc9421/index.js");
    const { buildKeyId, keyIdTargetFromDer } = await import("../../../src/signature/index.js");
    const cert = pki.tppA.qseal;
    const headers: Record<string, string> = {
      host: "bank.example",
      "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
      "tpp-redirect-uri": "https://tpp.example/cb",
      "psu-id": "PSU-1234",
      "tpp-signature-certificate": cert.headerValue,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(BODY)),
      "content-digest": computeContentDigest(BODY, "sha-256"),
    };
    const signed = signFapiRequest(
      { method: "POST", targetUri: `https://bank.example${PAYMENT}`, headers },
      {
        privateKey: createPrivateKey(cert.keyPem),
        keyid: buildKeyId(keyIdTargetFromDer(cert.der)),
        now: Date.now(),
        alg: "rsa-pss-sha512",
        coverAlways: ["tpp-signature-certificate", "x-request-id"],
        coverWhenPresent: ["psu-id", "tpp-redirect-uri"],
      },
    );
    if ("code" in signed) throw new Error(signed.text);
    const all = { ...headers, "signature-input": signed.signatureInput, signature: signed.signature };
    const raw = `POST ${PAYMENT} HTTP/1.1\r\n${Object.entries(all)
      .map(([n, v]) => `${n}: ${v}`)
      .join("\r\n")}\r\n\r\n${BODY}`;
    return tamper ? tamper(raw) : raw;
  }

  it("passes a good one, listing only its dialect's steps and the signature base", async () => {
    const e = await run(await rfc9421Raw());
    expect(e.steps.filter((s) => s.outcome !== "passed")).toEqual([]);
    const names = e.steps.map((s) => s.step);
    expect(names).toEqual(
      expect.arrayContaining(["dialect", "content-digest", "rfc9421-signature", "certificate"]),
    );
    expect(names).not.toContain("signature-header");
    expect(e.signingString).toMatch(/^"@method": POST\n"@target-uri": https:\/\/bank\.example\/v1\/payments/);
    expect(e.signedHeaders).toContain('"content-digest"');
  });

  it("names the step of a tampered body: content-digest", async () => {
    const e = await run(await rfc9421Raw((raw) => raw.replace('"10.00"', '"99.00"')));
    const failed = e.steps.find((s) => s.outcome === "failed");
    expect(failed).toMatchObject({ step: "content-digest", code: "SIGNATURE_INVALID" });
  });
});

describe("psd2-gateway verify explains a JWS-signed request (JAdES, UK OB): its steps, x5c's certificate, the protected header", () => {
  async function jwsRaw(dialect: "jades" | "uk-ob", tamper?: (raw: string) => string): Promise<string> {
    const { JadesRequestSigner, UkObRequestSigner } = await import("../../../src/signature/jws/index.js");
    const cert = pki.tppA.qseal;
    const privateKey = createPrivateKey(cert.keyPem);
    const headers: Record<string, string> = {
      host: "bank.example",
      "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
      "tpp-redirect-uri": "https://tpp.example/cb",
      "psu-id": "PSU-1234",
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(BODY)),
    };
    const signer =
      dialect === "jades"
        ? new JadesRequestSigner({ privateKey, certificateChain: [cert.der], payloadStyle: "obp-api" })
        : new UkObRequestSigner({
            privateKey,
            certificate: cert.der,
            kid: "tpp-a-signing-key",
            iss: pki.tppA.organizationId,
            tan: "openbanking.org.uk",
            algorithm: "PS256",
          });
    const signed = await signer.sign({ method: "POST", target: PAYMENT, headers, body: BODY });
    // The signers answer in Berlin Group spelling (X-Request-ID): one entry per header.
    const all: Record<string, string> = { ...headers };
    for (const [name, value] of Object.entries(signed)) {
      delete all[name.toLowerCase()];
      all[name] = value;
    }
    const raw = `POST ${PAYMENT} HTTP/1.1\r\n${Object.entries(all)
      .map(([n, v]) => `${n}: ${v}`)
      .join("\r\n")}\r\n\r\n${BODY}`;
    return tamper ? tamper(raw) : raw;
  }

  it.each([
    ["jades", "jades-signature", /crit\s+\["b64","sigT","sigD"\]/],
    ["uk-ob", "uk-ob-signature", /http:\/\/openbanking\.org\.uk\/tan\s+"openbanking\.org\.uk"/],
  ] as const)(
    "%s: passes, shows x5c's certificate and the protected header",
    async (dialect, step, header) => {
      const e = await run(await jwsRaw(dialect));
      expect(e.steps.filter((s) => s.outcome !== "passed")).toEqual([]);
      expect(e.dialect).toBe(dialect);
      expect(e.steps.map((s) => s.step)).toContain(step);
      expect(e.certificateHeader).toBe("x5c of x-jws-signature");
      expect(e.certificate?.organizationIdentifier).toBe(pki.tppA.organizationId);
      const text = render(e);
      expect(text).toMatch(header);
      expect(text).toMatch(/x5c\s+"\(1 certificate\)"/);
      expect(text).not.toContain(pki.tppA.qseal.headerValue.slice(0, 60));
    },
  );

  it.each([
    ["jades", "digest"],
    ["uk-ob", "uk-ob-signature"],
  ] as const)("%s: a tampered body is named at its step", async (dialect, step) => {
    const e = await run(await jwsRaw(dialect, (raw) => raw.replace('"10.00"', '"99.00"')));
    expect(e.steps.find((s) => s.outcome === "failed")).toMatchObject({ step, code: "SIGNATURE_INVALID" });
  });
});
