import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki, type IssuedCertificate } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { TppRegister } from "../../../src/eidas/register.js";
import { TppVerifier } from "../../../src/eidas/tpp-verifier.js";
import type { ValidationReport } from "../../../src/eidas/validation-report.js";
import { isRejection } from "../../../src/errors.js";
import { loadTrustMaterial } from "../../../src/trust/trust-material.js";

let pki: DevPki;
beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-report-")));
});

/** A verifier over the dev PKI's trust folder and CRL files, TPP A and B registered; every report kept. */
function setup() {
  const trust = loadTrustMaterial(pki.paths.trustDir);
  const register = new TppRegister(3_600_000);
  register.replace(
    [pki.tppA, pki.tppB].map((tpp) => ({
      organizationIdentifier: tpp.organizationId,
      name: tpp.name,
      roles: ["PSP_AI"] as const,
      status: "authorised",
    })),
    "test",
  );
  const reports: ValidationReport[] = [];
  const verifier = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    register,
    cacheTtlMs: 60_000,
    failureTtlMs: 60_000,
    maxEntries: 100,
    onReport: (r) => reports.push(r),
  });
  return { verifier, reports };
}

const header = (c: IssuedCertificate) => c.headerValue;

describe("a validation report per judgement (ETSI TS 119 102-2 terms)", () => {
  it.each([
    {
      name: "a registered TPP's QSealC passes",
      value: () => header(pki.tppA.qseal),
      indication: "TOTAL_PASSED",
      roles: ["signer", "ca", "trust-anchor"],
      revocation: ["good", "good"],
    },
    {
      name: "a revoked QSealC fails: REVOKED, the CRL's entry as evidence",
      value: () => header(pki.revoked),
      indication: "TOTAL_FAILED",
      subIndication: "REVOKED",
      check: "revocation",
      code: "CERTIFICATE_REVOKED",
      roles: ["signer", "ca", "trust-anchor"],
      revocation: ["revoked", "good"],
    },
    {
      name: "a QSealC under a revoked CA: REVOKED_CA_NO_POE, the root's CRL as evidence",
      value: () => header(pki.underRevokedCa),
      indication: "INDETERMINATE",
      subIndication: "REVOKED_CA_NO_POE",
      check: "revocation",
      code: "CERTIFICATE_REVOKED",
      roles: ["signer", "ca", "trust-anchor"],
      revocation: ["good", "revoked"],
    },
    {
      name: "an expired QSealC: OUT_OF_BOUNDS_NO_POE",
      value: () => header(pki.expired),
      indication: "INDETERMINATE",
      subIndication: "OUT_OF_BOUNDS_NO_POE",
      check: "path",
      code: "CERTIFICATE_EXPIRED",
      roles: ["signer"],
    },
    {
      name: "a QSealC of a CA the bank does not trust: NO_CERTIFICATE_CHAIN_FOUND",
      value: () => header(pki.untrusted),
      indication: "INDETERMINATE",
      subIndication: "NO_CERTIFICATE_CHAIN_FOUND",
      check: "path",
      code: "CERTIFICATE_INVALID",
      roles: ["signer"],
    },
    {
      name: "a TPP the register does not hold: CHAIN_CONSTRAINTS_FAILURE by the register",
      value: () => header(pki.unregistered),
      indication: "INDETERMINATE",
      subIndication: "CHAIN_CONSTRAINTS_FAILURE",
      check: "register",
      code: "CERTIFICATE_BLOCKED",
      roles: ["signer", "ca", "trust-anchor"],
      revocation: ["good", "good"],
    },
    {
      name: "a certificate without the PSD2 statement: CHAIN_CONSTRAINTS_FAILURE by the PSD2 profile",
      value: () => header(pki.gatewayTls),
      indication: "INDETERMINATE",
      subIndication: "CHAIN_CONSTRAINTS_FAILURE",
      check: "psd2-profile",
      code: "CERTIFICATE_INVALID",
      roles: ["signer"],
    },
    {
      name: "bytes that are no certificate: FORMAT_FAILURE",
      value: () => "not a certificate at all",
      indication: "TOTAL_FAILED",
      subIndication: "FORMAT_FAILURE",
      check: "format",
      code: "CERTIFICATE_INVALID",
      roles: [],
    },
  ])("$name", async (c) => {
    const { verifier, reports } = setup();
    const verdict = await verifier.verify(c.value());
    expect(reports).toHaveLength(1);
    const report = reports[0]!;
    expect(report).toMatchObject({ policy: "QSealC", indication: c.indication });
    expect(report.subIndication).toBe(c.subIndication);
    expect(report.check).toBe(c.check);
    expect(report.path.map((p) => p.role)).toEqual(c.roles);
    if (c.revocation) expect(report.path.slice(0, -1).map((p) => p.revocation?.status)).toEqual(c.revocation);
    // The refusal the TPP gets is the report's, and names it.
    if (c.code) {
      expect(isRejection(verdict)).toBe(true);
      if (!isRejection(verdict)) return;
      expect(report.refusal).toEqual({ code: c.code, text: verdict.text });
      expect(verdict.code).toBe(c.code);
      expect(verdict.reportId).toBe(report.id);
    } else {
      expect(isRejection(verdict)).toBe(false);
      if (isRejection(verdict)) return;
      expect(verdict.reportId).toBe(report.id);
      expect(report.refusal).toBeUndefined();
    }
  });

  it("the evidence names its source and dates; the anchor and the register entry are in", async () => {
    const { verifier, reports } = setup();
    await verifier.verify(header(pki.revoked));
    await verifier.verify(header(pki.tppA.qseal));
    const [revoked, passed] = reports;
    expect(revoked!.path[0]!.revocation).toMatchObject({
      status: "revoked",
      source: "CRL",
      location: expect.stringContaining(".crl"),
      thisUpdate: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      nextUpdate: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      revokedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(passed!.trustAnchor).toEqual({
      kind: "trust-store",
      subject: "CN=Demo Root CA,O=psd2-gateway Demo QTSP,C=NO",
    });
    expect(passed!.register).toEqual({
      organizationIdentifier: pki.tppA.organizationId,
      entry: { name: pki.tppA.name, status: "authorised", roles: ["PSP_AI"], source: "register" },
      effectiveRoles: ["PSP_AI"],
    });
    expect(passed!.certificate).toMatchObject({
      organizationIdentifier: pki.tppA.organizationId,
      qcTypes: ["eseal"],
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it("one report per judgement: a cached verdict reuses it, `assess` makes a fresh one", async () => {
    const { verifier, reports } = setup();
    const first = await verifier.verify(header(pki.tppA.qseal));
    const again = await verifier.verify(header(pki.tppA.qseal));
    expect(reports).toHaveLength(1);
    expect(!isRejection(first) && !isRejection(again) && again.reportId === first.reportId).toBe(true);
    const fresh = await verifier.assess(header(pki.tppA.qseal));
    expect(reports).toHaveLength(2);
    expect(fresh.id).not.toBe(reports[0]!.id);
    expect(fresh.indication).toBe("TOTAL_PASSED");
  });

  it("a QWAC is judged as a QWAC", async () => {
    const { verifier } = setup();
    const report = await verifier.assess(header(pki.tppA.qwac), "qwac");
    expect(report).toMatchObject({ policy: "QWAC", indication: "TOTAL_PASSED" });
  });
});

describe("certificate kinds (verification.certificateKinds)", () => {
  const kinds = (signature: ("eseal" | "web" | "esign")[]) => {
    const trust = loadTrustMaterial(pki.paths.trustDir);
    const reports: ValidationReport[] = [];
    const verifier = new TppVerifier({
      trustStore: () => trust.store,
      revocation: () => trust.revocation,
      cacheTtlMs: 60_000,
      failureTtlMs: 60_000,
      maxEntries: 100,
      kinds: { qseal: signature, qwac: ["web"] },
      onReport: (r) => reports.push(r),
    });
    return { verifier, reports };
  };

  it("refuses a QWAC as the signing certificate by default, the report naming the check", async () => {
    const { verifier, reports } = kinds(["eseal"]);
    const verdict = await verifier.verify(pki.tppA.qwac.headerValue, "qseal");
    expect(isRejection(verdict) && verdict.text).toContain("is a QWAC (QcType web)");
    expect(reports.at(-1)).toMatchObject({
      check: "certificate-kind",
      subIndication: "CHAIN_CONSTRAINTS_FAILURE",
    });
    expect(isRejection(await verifier.verify(pki.tppA.qseal.headerValue, "qseal"))).toBe(false);
  });

  it("takes it once the config widens the signature's kinds; the TLS use stays a QWAC", async () => {
    const { verifier } = kinds(["eseal", "web"]);
    expect(isRejection(await verifier.verify(pki.tppA.qwac.headerValue, "qseal"))).toBe(false);
    const qsealAsTls = await verifier.verify(pki.tppA.qseal.headerValue, "qwac");
    expect(isRejection(qsealAsTls) && qsealAsTls.text).toContain("a QWAC (QcType web) is wanted");
  });
});
