/**
 * Egress's check of a bank's certificate and the `verify` command take the same live revocation
 * path as ingress (OCSP, CRL distribution points, the whole path, fail closed, the same options),
 * over a real QTSP on loopback: a bank QSealC its responder says is revoked fails the response,
 * an unknown status refuses unless softFail; `verify` refuses a TPP whose OCSP responder says
 * revoked although the CRL files in its folder do not list it.
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CertificateStatus, IssuedCertificate, QtspServer } from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { responseVerifierForProfile } from "../../src/app/bank-profile.js";
import { responseSignerFrom } from "../../src/app/request-path.js";
import { CheckContext } from "../../src/checks/index.js";
import { validateConfig } from "../../src/config/load.js";
import { parseEgressConfig, type RevocationConfig } from "../../src/config/schema.js";
import { runCli } from "../helpers/cli.js";
import { issuingCaCrl, type QtspPki, qtspPki, startTestQtsp } from "../helpers/test-qtsp.js";

let q: QtspPki;
let qtsp: QtspServer;
/** Upper-case serial → the OCSP responder's answer; "good" for any other. */
const answers = new Map<string, CertificateStatus>();
let noCrls: string;
let dir: string;

beforeAll(async () => {
  q = await qtspPki();
  const crl = await issuingCaCrl(q.pki, {});
  qtsp = await startTestQtsp(q, {
    crl: () => crl,
    status: (serial) => answers.get(serial) ?? { status: "good" },
  });
  noCrls = mkdtempSync(join(tmpdir(), "psd2-no-crls-"));
  dir = mkdtempSync(join(tmpdir(), "psd2-live-cli-"));
}, 60_000);
afterAll(() => qtsp?.close());

const serialOf = (c: IssuedCertificate) => c.certificate.serialNumber.toUpperCase();
const REQUEST_ID = "5b1f3a2c-9d4e-4f6a-8b7c-0e1d2f3a4b5c";
const BODY = Buffer.from(JSON.stringify({ accounts: [] }));

/** A response signed with the demo bank's QSealC, as ingress's response signer signs it. */
async function signedResponse() {
  const config = validateConfig({
    trust: { caDir: "unused" },
    register: { file: "unused.json" },
    responseSigning: { qseal: { cert: "unused.pem", key: "unused.pem" } },
  });
  const signer = responseSignerFrom(config.responseSigning!, {
    privateKey: q.pki.bankQseal.privateKey,
    certificateDer: Buffer.from(q.pki.bankQseal.der),
  } as Parameters<typeof responseSignerFrom>[1]);
  const headers = { "content-type": "application/json", "x-request-id": REQUEST_ID };
  const request = new CheckContext(
    "GET",
    "/v1/accounts",
    {},
    { path: "/v1/accounts", role: undefined },
    undefined,
  );
  const signed = await signer.sign(BODY, headers, 200, request);
  const all: Record<string, string> = { ...headers };
  for (const [name, value] of Object.entries(signed)) all[name.toLowerCase()] = value;
  return {
    headers: all,
    body: BODY,
    status: 200,
    request: { method: "GET", target: "/v1/accounts", requestId: REQUEST_ID },
  };
}

/** A bank profile checking responses against the dev PKI's CAs, without CRL files: only the QTSP speaks. */
function profile(revocation: Partial<RevocationConfig> = {}) {
  const parsed = parseEgressConfig({
    mode: "egress",
    banks: [
      {
        name: "bank",
        prefix: "/bank",
        url: "http://127.0.0.1:9",
        qseal: { cert: "unused.pem", key: "unused.pem" },
        responses: { mode: "enforce", caDir: q.pki.paths.trustDir, crlDir: noCrls, revocation },
      },
    ],
  });
  if (!parsed.success) throw new Error(parsed.error.message);
  return parsed.data.banks[0]!;
}

describe("egress checks the bank's certificate on the live path", () => {
  it.each([
    {
      name: "OCSP good: the response passes",
      answer: { status: "good" } as const,
      revocation: {},
      expect: (r: unknown) => expect(r).toBe(true),
    },
    {
      name: "OCSP revoked: refused with CERTIFICATE_REVOKED naming the responder",
      answer: { status: "revoked", revokedAt: new Date(Date.now() - 60_000) } as const,
      revocation: {},
      expect: (r: unknown) => {
        expect(r).toMatchObject({ code: "CERTIFICATE_REVOKED" });
        expect((r as { text: string }).text).toContain(`OCSP ${qtsp.url}/ocsp`);
      },
    },
    {
      name: "OCSP unknown and no CRL asked (order ocsp): fails closed",
      answer: { status: "unknown" } as const,
      revocation: { order: "ocsp" as const },
      expect: (r: unknown) => {
        expect(r).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
        expect((r as { text: string }).text).toContain("does not know the certificate");
      },
    },
    {
      name: "OCSP unknown with softFail: let through, as ingress does",
      answer: { status: "unknown" } as const,
      revocation: { order: "ocsp" as const, softFail: true },
      expect: (r: unknown) => expect(r).toBe(true),
    },
  ])("$name", async (row) => {
    answers.set(serialOf(q.pki.bankQseal), row.answer);
    const verifier = responseVerifierForProfile(profile(row.revocation), Date.now)!;
    try {
      row.expect(await verifier.verify(await signedResponse()));
    } finally {
      verifier.stop();
      answers.clear();
    }
  });
});

const PSU = ["--header", "PSU-ID: PSU-1001", "--header", "TPP-Redirect-URI: https://tpp.example/cb"];

/** `psd2-gateway sign` for `tpp` (files of the dev PKI), then `psd2-gateway verify --trust` on what it printed. */
async function signThenVerify(slug: string) {
  const signed = await runCli([
    "sign",
    "--key",
    join(q.pki.dir, "tpp", `${slug}-qseal.key.pem`),
    "--cert",
    join(q.pki.dir, "tpp", `${slug}-qseal.pem`),
    "--target",
    "/v1/accounts",
    ...PSU,
  ]);
  expect(signed.code, signed.stderr).toBe(0);
  const file = join(dir, `${slug}.http`);
  writeFileSync(
    file,
    `GET /v1/accounts HTTP/1.1\r\nHost: bank.example\r\n${signed.stdout.trimEnd().split("\n").join("\r\n")}\r\n\r\n`,
  );
  return runCli(["verify", file, "--trust", q.pki.paths.trustDir, "--json"], { timeoutMs: 30_000 });
}

describe("psd2-gateway verify --trust asks the live sources", () => {
  it("a TPP whose OCSP responder says revoked is refused, though the folder's CRL does not list it", async () => {
    const good = await signThenVerify("tpp-b");
    expect(good.code, good.stdout + good.stderr).toBe(0);
    answers.set(serialOf(q.pki.tppB.qseal), { status: "revoked", revokedAt: new Date(Date.now() - 60_000) });
    try {
      const refused = await signThenVerify("tpp-b");
      expect(refused.code).toBe(1);
      const explained = JSON.parse(refused.stdout) as {
        steps: { step: string; outcome: string; code?: string; text?: string }[];
      };
      const certificate = explained.steps.find((s) => s.step === "certificate");
      expect(certificate).toMatchObject({ outcome: "failed", code: "CERTIFICATE_REVOKED" });
      expect(certificate?.text).toContain(`OCSP ${qtsp.url}/ocsp`);
    } finally {
      answers.clear();
    }
  });

  it("a TPP under the intermediate CA its root revoked is refused naming the CA", async () => {
    const refused = await signThenVerify("revoked-ca");
    expect(refused.code).toBe(1);
    const explained = JSON.parse(refused.stdout) as {
      steps: { step: string; outcome: string; code?: string; text?: string }[];
    };
    const certificate = explained.steps.find((s) => s.step === "certificate");
    expect(certificate).toMatchObject({ outcome: "failed", code: "CERTIFICATE_REVOKED" });
    expect(certificate?.text).toContain("CN=Demo Revoked Issuing CA");
  });
});
