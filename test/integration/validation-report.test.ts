/**
 * The certificate validation report (ETSI TS 119 102-2 terms), end to end over a real QTSP on
 * loopback: a gateway's access line names the report its verdict rests on, the admin listener
 * serves it (/trust/reports/<id>) and judges an uploaded certificate (/trust/certificate, `trust
 * status --certificate`), and `verify --json` carries it; the refusal a TPP gets is the report's.
 * Cases: passed (OCSP for the TPP, the root's CRL for its CA), an intermediate revoked by its root
 * (REVOKED_CA_NO_POE), a TPP its responder revoked (REVOKED), a CA the bank does not trust
 * (NO_CERTIFICATE_CHAIN_FOUND), the QTSP down (TRY_LATER).
 */

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { CertificateStatus, IssuedCertificate, QtspServer } from "@psd2-gateway/dev-pki";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ValidationReport } from "../../src/eidas/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { runCli } from "../helpers/cli.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall } from "../helpers/gateway-fixture.js";
import { issuingCaCrl, type QtspPki, qtspPki, startTestQtsp } from "../helpers/test-qtsp.js";

let q: QtspPki;
let qtsp: QtspServer;
/** Upper-case serial → the OCSP responder's answer; "good" for any other. */
const answers = new Map<string, CertificateStatus>();
const lines: Record<string, unknown>[] = [];
const dir = mkdtempSync(join(tmpdir(), "psd2-report-"));

beforeAll(async () => {
  q = await qtspPki();
  const crl = await issuingCaCrl(q.pki, {});
  qtsp = await startTestQtsp(q, {
    crl: () => crl,
    status: (serial) => answers.get(serial) ?? { status: "good" },
  });
}, 60_000);
// The last test takes the QTSP down itself.
afterAll(() => qtsp?.close().catch(() => {}));

const serialOf = (c: IssuedCertificate) => c.certificate.serialNumber.toUpperCase();

const env = useGatewayAndBackend(() => ({
  pki: q.pki,
  // No CRL files: only what the QTSP serves speaks.
  config: { trust: { crlDir: mkdtempSync(join(tmpdir(), "psd2-no-crls-")) }, log: { level: "info" } },
  logger: createLogger("info", {
    destination: new Writable({
      write(chunk, _encoding, done) {
        for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
        done();
      },
    }),
  }),
}));

const admin = () => env.gw.gateway.adminUrl!;

async function reportById(id: string): Promise<ValidationReport> {
  const response = await request(`${admin()}/trust/reports/${id}`);
  expect(response.statusCode).toBe(200);
  return (await response.body.json()) as ValidationReport;
}

/** A signed call, its access line and the report that line names. */
async function callAndReport(signer: IssuedCertificate) {
  const r = await signedCall(env.gw, { signer, target: "/v1/accounts" });
  const requestId = r.headers["x-request-id"];
  let access: Record<string, unknown> | undefined;
  for (let i = 0; i < 50 && !access; i++) {
    access = lines.find((l) => l.msg === "request" && l.requestId === requestId);
    if (!access) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(access?.trustReport, JSON.stringify(access)).toEqual(expect.any(String));
  return { r, access: access!, report: await reportById(access!.trustReport as string) };
}

describe("a gateway's validation reports", () => {
  it("a TPP that passes: its access line names a TOTAL_PASSED report with the OCSP and CRL evidence", async () => {
    const { r, report } = await callAndReport(q.pki.tppA.qseal);
    expect(r.status, r.text).toBe(200);
    expect(report).toMatchObject({ indication: "TOTAL_PASSED", policy: "QSealC", warnings: [] });
    expect(report.path.map((p) => p.role)).toEqual(["signer", "ca", "trust-anchor"]);
    expect(report.path[0]!.revocation).toMatchObject({
      status: "good",
      source: "OCSP",
      location: `${q.url}/ocsp`,
      producedAt: expect.stringMatching(/^\d{4}-/),
      thisUpdate: expect.stringMatching(/^\d{4}-/),
    });
    expect(report.path[1]!.revocation).toMatchObject({
      status: "good",
      source: "CRL",
      location: expect.stringContaining(q.url),
      nextUpdate: expect.stringMatching(/^\d{4}-/),
    });
    expect(report.trustAnchor).toMatchObject({
      kind: "trust-store",
      subject: expect.stringContaining("CN=Demo Root CA"),
    });
    expect(report.register).toMatchObject({
      organizationIdentifier: q.pki.tppA.organizationId,
      entry: { status: "authorised", source: "register" },
    });
    // The log holds it too: one `validation report` line per judgement.
    expect(
      lines.filter((l) => l.msg === "validation report" && (l.report as ValidationReport).id === report.id),
    ).toHaveLength(1);
  });

  it("a TPP under an intermediate its root revoked: REVOKED_CA_NO_POE, and the TPP's text is the report's", async () => {
    const { r, report } = await callAndReport(q.pki.underRevokedCa);
    expect(r.status).toBe(400);
    expect(report).toMatchObject({
      indication: "INDETERMINATE",
      subIndication: "REVOKED_CA_NO_POE",
      check: "revocation",
    });
    expect(report.refusal).toEqual({ code: "CERTIFICATE_REVOKED", text: r.json.tppMessages?.[0]?.text });
    expect(report.path[1]!.revocation).toMatchObject({
      status: "revoked",
      source: "CRL",
      revokedAt: expect.any(String),
    });
    const metrics = await (await request(`${admin()}/metrics`)).body.text();
    expect(metrics).toMatch(
      /psd2_gateway_certificate_validations_total\{indication="INDETERMINATE",sub_indication="REVOKED_CA_NO_POE",check="revocation"\} [1-9]/,
    );
  });

  it("a TPP its OCSP responder says is revoked: TOTAL_FAILED / REVOKED with the responder's answer", async () => {
    answers.set(serialOf(q.pki.tppB.qseal), { status: "revoked", revokedAt: new Date(Date.now() - 60_000) });
    try {
      const { r, report } = await callAndReport(q.pki.tppB.qseal);
      expect(r.status).toBe(400);
      expect(report).toMatchObject({ indication: "TOTAL_FAILED", subIndication: "REVOKED" });
      expect(report.path[0]!.revocation).toMatchObject({
        status: "revoked",
        source: "OCSP",
        location: `${q.url}/ocsp`,
      });
      expect(report.refusal?.text).toBe(r.json.tppMessages?.[0]?.text);
    } finally {
      answers.clear();
    }
  });

  it("POST /trust/certificate judges an uploaded certificate now; bounded, POST only", async () => {
    const post = (body: string | Buffer, query = "") =>
      request(`${admin()}/trust/certificate${query}`, { method: "POST", body });
    const passed = await post(q.pki.tppA.qseal.pem);
    expect(passed.statusCode).toBe(200);
    expect(await passed.body.json()).toMatchObject({ indication: "TOTAL_PASSED", policy: "QSealC" });
    const der = await post(Buffer.from(q.pki.tppA.qwac.der), "?purpose=qwac");
    expect(await der.body.json()).toMatchObject({ indication: "TOTAL_PASSED", policy: "QWAC" });
    const untrusted = await post(q.pki.untrusted.pem);
    expect(await untrusted.body.json()).toMatchObject({
      indication: "INDETERMINATE",
      subIndication: "NO_CERTIFICATE_CHAIN_FOUND",
      path: [{ role: "signer" }],
    });
    const large = await post(Buffer.alloc(70 * 1024, 0x41));
    expect(large.statusCode).toBe(413);
    await large.body.dump();
    const get = await request(`${admin()}/trust/certificate`);
    expect(get.statusCode).toBe(405);
    await get.body.dump();
    const unknown = await request(`${admin()}/trust/reports/no-such-report`);
    expect(unknown.statusCode).toBe(404);
    expect(((await unknown.body.json()) as { error: string }).error).toContain("validation report");
  });

  it("`trust status --certificate` prints the report and exits 0 when it passes, 1 when not", async () => {
    const port = new URL(admin()).port;
    const config = join(dir, "admin.yaml");
    writeFileSync(
      config,
      [
        `trust: { caDir: ${q.pki.paths.trustDir} }`,
        `register: { file: ${q.pki.paths.register} }`,
        `admin: { host: 127.0.0.1, port: ${port} }`,
      ].join("\n"),
    );
    const file = (c: IssuedCertificate, name: string) => {
      writeFileSync(join(dir, name), c.pem);
      return join(dir, name);
    };
    const good = await runCli([
      "trust",
      "status",
      "--config",
      config,
      "--certificate",
      file(q.pki.tppA.qseal, "a.pem"),
    ]);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toMatch(/^Validation report [0-9a-f-]{36} \(ETSI TS 119 102-2 terms\)/);
    expect(good.stdout).toContain("indication    TOTAL_PASSED");
    expect(good.stdout).toContain(`revocation: good by OCSP ${q.url}/ocsp; produced `);
    expect(good.stdout).toContain(
      `register      ${q.pki.tppA.organizationId}: ${q.pki.tppA.name}, authorised`,
    );
    const bad = await runCli([
      "trust",
      "status",
      "--config",
      config,
      "--json",
      "--certificate",
      file(q.pki.underRevokedCa, "under-revoked.pem"),
    ]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ subIndication: "REVOKED_CA_NO_POE" });
  });
});

describe("verify --json carries the report", () => {
  /** `psd2-gateway sign` for TPP B, then `verify --trust --json` on what it printed. */
  async function signThenVerify() {
    const signed = await runCli([
      "sign",
      "--key",
      join(q.pki.dir, "tpp", "tpp-b-qseal.key.pem"),
      "--cert",
      join(q.pki.dir, "tpp", "tpp-b-qseal.pem"),
      "--target",
      "/v1/accounts",
      "--header",
      "PSU-ID: PSU-1001",
      "--header",
      "TPP-Redirect-URI: https://tpp.example/cb",
    ]);
    expect(signed.code, signed.stderr).toBe(0);
    const file = join(dir, "tpp-b.http");
    writeFileSync(
      file,
      `GET /v1/accounts HTTP/1.1\r\nHost: bank.example\r\n${signed.stdout.trimEnd().split("\n").join("\r\n")}\r\n\r\n`,
    );
    // The CAs without the CRL files beside them: only the QTSP can say.
    const cas = join(dir, "cas");
    mkdirSync(cas, { recursive: true });
    for (const c of [q.pki.root, q.pki.issuingCa, q.pki.revokedCa])
      writeFileSync(join(cas, `${serialOf(c)}.pem`), c.pem);
    const run = await runCli(["verify", file, "--trust", cas, "--json"], { timeoutMs: 30_000 });
    return { run, explained: JSON.parse(run.stdout) as { validationReport?: ValidationReport } };
  }

  it("passed, with the responder's evidence; then, the QTSP down, TRY_LATER naming the responder", async () => {
    const up = await signThenVerify();
    expect(up.run.code, up.run.stderr).toBe(0);
    expect(up.explained.validationReport).toMatchObject({
      indication: "TOTAL_PASSED",
      path: [
        { role: "signer", revocation: { status: "good", source: "OCSP" } },
        { role: "ca" },
        { role: "trust-anchor" },
      ],
    });
    await qtsp.close();
    const down = await signThenVerify();
    expect(down.run.code, JSON.stringify(down.explained.validationReport, null, 1)).toBe(1);
    expect(down.explained.validationReport).toMatchObject({
      indication: "INDETERMINATE",
      subIndication: "TRY_LATER",
      check: "revocation",
      refusal: { code: "SERVICE_UNAVAILABLE" },
      path: [
        {
          role: "signer",
          revocation: { status: "unknown", reason: expect.stringContaining(`${q.url}/ocsp`) },
        },
        {},
        {},
      ],
    });
  });
});
