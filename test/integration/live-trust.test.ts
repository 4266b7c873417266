/**
 * Live trust end to end, through a real gateway over TLS with a real QTSP on loopback: a TPP
 * revoked while the gateway runs (CRL and OCSP) is refused within one refresh interval; the EBA
 * register's withdrawn and AIS-only TPPs; the EU trusted lists (granted, website-only, withdrawn
 * before or after issuance, a broken signature keeping the last good copy).
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki, QtspServer } from "@psd2-gateway/dev-pki";
import {
  buildTrustedLists,
  ebaRegisterDocument,
  ebaRegisterZip,
  generateTrustedListSigner,
} from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { type CallResult, signedCall, type TestGateway } from "../helpers/gateway-fixture.js";
import { callUntil, PAYMENT } from "../helpers/live-trust-calls.js";
import { issuingCaCrl, type QtspPki, qtspPki, startTestQtsp } from "../helpers/test-qtsp.js";

const DAY = 24 * 3600 * 1000;
const code = (r: CallResult) => r.json.tppMessages?.[0]?.code;

let q: QtspPki;
let qtsp: QtspServer;
let revokedSerials = new Set<string>();
let crl: Uint8Array;
/** The root's CRL at the intermediates' distribution point. */
let rootCrl: Uint8Array;

beforeAll(async () => {
  q = await qtspPki();
  crl = await issuingCaCrl(q.pki, {});
  rootCrl = await rootCrlListing([q.pki.revokedCa]);
  qtsp = await startTestQtsp(q, {
    crl: () => crl,
    rootCrl: () => rootCrl,
    status: (serial) =>
      revokedSerials.has(serial)
        ? { status: "revoked", revokedAt: new Date(Date.now() - 1000) }
        : { status: "good" },
  });
}, 60_000);
afterAll(() => qtsp?.close());

const rootCrlListing = (revoked: readonly { certificate: DevPki["root"]["certificate"] }[]) =>
  issuingCaCrl(q.pki, { issuer: q.pki.root, revoked: revoked.map((c) => c.certificate) });

describe.each([{ order: "ocsp-crl" as const }, { order: "crl" as const }])(
  "the whole path is checked: an intermediate CA its root revoked ($order)",
  ({ order }) => {
    const env = useGatewayAndBackend(() => ({
      pki: q.pki,
      // No CRL files: only what the QTSP serves at the distribution points speaks.
      config: {
        trust: { crlDir: mkdtempSync(join(tmpdir(), "psd2-no-crls-")) },
        revocation: { order, crl: { refreshSeconds: 1 } },
      },
    }));
    const underRevoked = () => signedCall(env.gw, { signer: q.pki.underRevokedCa, target: "/v1/accounts" });

    it("refuses a TPP under the revoked CA with CERTIFICATE_REVOKED naming the CA; a TPP under the good CA passes", async () => {
      rootCrl = await rootCrlListing([q.pki.revokedCa]);
      const r = await callUntil(underRevoked, (x) => x.status !== 200, 5_000);
      expect(r.status).toBe(400);
      expect(code(r), r.text).toBe("CERTIFICATE_REVOKED");
      const text = r.json.tppMessages?.[0]?.text ?? "";
      expect(text).toContain("CN=Demo Revoked Issuing CA");
      expect(text).toContain(`SN=${q.pki.revokedCa.certificate.serialNumber.toUpperCase()}`);
      expect(text).toContain("CN=Demo Root CA");
      const good = await signedCall(env.gw, { signer: q.pki.tppA.qseal, target: "/v1/accounts" });
      expect(good.status, good.text).toBe(200);
    });

    it("follows the root's CRL: the CA's TPP passes once the list no longer names it, and is refused again when it does", async () => {
      rootCrl = await rootCrlListing([]);
      expect((await callUntil(underRevoked, (x) => x.status === 200, 5_000)).status).toBe(200);
      rootCrl = await rootCrlListing([q.pki.revokedCa]);
      expect(code(await callUntil(underRevoked, (x) => x.status !== 200, 5_000))).toBe("CERTIFICATE_REVOKED");
    });
  },
);

describe.each([
  { order: "crl" as const, how: "its CRL distribution point publishes a new list", refreshSeconds: 1 },
  { order: "ocsp-crl" as const, how: "its OCSP responder says revoked", refreshSeconds: 3600 },
])("a TPP revoked while the gateway runs ($order)", ({ order, how, refreshSeconds }) => {
  const env = useGatewayAndBackend(() => ({
    pki: q.pki,
    config: { revocation: { order, ocsp: { maxAgeSeconds: 1 }, crl: { refreshSeconds } } },
  }));

  it(`is refused within one refresh interval once ${how}`, async () => {
    revokedSerials = new Set();
    crl = await issuingCaCrl(q.pki, {});
    const call = () => signedCall(env.gw, { signer: q.pki.tppB.qseal, target: "/v1/accounts" });
    expect((await call()).status).toBe(200);
    const revokedAt = Date.now();
    revokedSerials = new Set([q.pki.tppB.qseal.certificate.serialNumber.toUpperCase()]);
    crl = await issuingCaCrl(q.pki, { revoked: [q.pki.tppB.qseal.certificate] });
    const after = await callUntil(call, (r) => r.status !== 200, 8_000);
    expect(code(after), after.text).toBe("CERTIFICATE_REVOKED");
    // One refresh interval (1 s) plus jitter and a request's time.
    expect(Date.now() - revokedAt).toBeLessThan(4_000);
    expect((await signedCall(env.gw, { signer: q.pki.tppA.qseal, target: "/v1/accounts" })).status).toBe(200);
  });
});

describe("the EBA register as a source", () => {
  const env = useGatewayAndBackend((pki: DevPki) => {
    const dir = mkdtempSync(join(tmpdir(), "psd2-eba-"));
    const file = join(dir, "eba.zip");
    writeFileSync(
      file,
      ebaRegisterZip(
        ebaRegisterDocument([
          {
            organizationId: pki.tppA.organizationId,
            name: pki.tppA.name,
            roles: ["PSP_PI", "PSP_AI"],
            withdrawnOn: "2026-03-01",
          },
          // Authorised at home for AIS only, passported nowhere else.
          { organizationId: pki.tppB.organizationId, name: pki.tppB.name, roles: ["PSP_AI"] },
        ]),
      ),
    );
    writeFileSync(join(dir, "overrides.json"), JSON.stringify({ tpps: [] }));
    return {
      config: {
        register: {
          file: undefined,
          bankCountry: "NO",
          sources: [
            { name: "overrides", file: join(dir, "overrides.json") },
            { name: "eba", file, format: "eba-zip" as const },
          ],
        },
      },
    };
  });

  it("refuses a withdrawn TPP with CERTIFICATE_BLOCKED naming the withdrawal date", async () => {
    const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status).toBe(400);
    expect(code(r)).toBe("CERTIFICATE_BLOCKED");
    expect(r.json.tppMessages?.[0]?.text).toContain("withdrawn");
    expect(r.json.tppMessages?.[0]?.text).toContain("2026-03-01");
    expect(env.backend.requests).toHaveLength(0);
  });

  it("lets an AIS-only TPP read accounts and refuses its payment with ROLE_INVALID", async () => {
    const read = await signedCall(env.gw, { signer: env.gw.pki.tppB.qseal, target: "/v1/accounts" });
    expect(read.status, read.text).toBe(200);
    const pay = await signedCall(env.gw, { signer: env.gw.pki.tppB.qseal, ...PAYMENT });
    expect(code(pay)).toBe("ROLE_INVALID");
  });

  it("names each register source in /trust", async () => {
    const sources = await trustSources(env.gw);
    expect(sources.filter((s) => s.kind === "register").map((s) => s.source.split(":")[0])).toEqual([
      "overrides",
      "eba",
    ]);
  });
});

describe("a register change re-judges cached verdicts at once (the EBA register served over HTTP)", () => {
  const served = (tpps: Parameters<typeof ebaRegisterDocument>[0]) =>
    qtsp.setDocument("/eba-register.zip", {
      body: ebaRegisterZip(ebaRegisterDocument(tpps)),
      contentType: "application/zip",
    });
  const tppA = () => ({ organizationId: q.pki.tppA.organizationId, name: q.pki.tppA.name });
  const env = useGatewayAndBackend(() => {
    served([{ ...tppA(), roles: ["PSP_PI", "PSP_AI"] }]);
    return {
      pki: q.pki,
      config: {
        // Verdicts would live five minutes: only the register's new copy can end them in time.
        cache: { ttlSeconds: 300 },
        register: {
          file: undefined,
          bankCountry: "NO",
          sources: [
            { name: "eba", url: `${qtsp.url}/eba-register.zip`, format: "eba-zip" as const, pollSeconds: 1 },
          ],
        },
      },
    };
  });
  const read = () => signedCall(env.gw, { signer: q.pki.tppA.qseal, target: "/v1/accounts" });
  const pay = () => signedCall(env.gw, { signer: q.pki.tppA.qseal, ...PAYMENT });

  it("a role taken away: the next payment after the poll is refused with ROLE_INVALID, reading goes on", async () => {
    expect((await pay()).status).toBe(200);
    expect((await read()).status).toBe(200);
    served([{ ...tppA(), roles: ["PSP_AI"] }]);
    const refused = await callUntil(pay, (r) => r.status !== 200, 5_000);
    expect(code(refused), refused.text).toBe("ROLE_INVALID");
    expect((await read()).status).toBe(200);
  });

  it("a TPP removed from the register: its next request after the poll is refused", async () => {
    served([{ ...tppA(), roles: ["PSP_AI"] }]);
    expect((await callUntil(read, (r) => r.status === 200, 5_000)).status).toBe(200);
    served([{ organizationId: q.pki.tppB.organizationId, name: q.pki.tppB.name, roles: ["PSP_AI"] }]);
    const refused = await callUntil(read, (r) => r.status !== 200, 5_000);
    expect(refused.status).toBe(400);
    expect(code(refused), refused.text).toMatch(/^CERTIFICATE_(BLOCKED|INVALID)$/);
    expect(refused.json.tppMessages?.[0]?.text).toContain(q.pki.tppA.organizationId);
  });
});

async function trustSources(gw: TestGateway) {
  const response = await fetch(`${gw.gateway.adminUrl}/trust`);
  return (
    (await response.json()) as {
      sources: { kind: string; source: string; stale: boolean; lastError?: string }[];
    }
  ).sources;
}

describe("the EU trusted lists as trust anchors", () => {
  let lists: QtspServer;
  let sequence = 0;
  let signers: {
    lotl: Awaited<ReturnType<typeof generateTrustedListSigner>>;
    national: Awaited<ReturnType<typeof generateTrustedListSigner>>;
  };

  /** Publishes a new LOTL and national list naming the demo issuing CA as this service. */
  const publish = (
    service: { qwac: boolean; qseal: boolean; withdrawnAt?: Date },
    breakSignature?: "national",
  ) => {
    sequence++;
    const { lotlXml, nationalXml } = buildTrustedLists({
      lotlSigner: signers.lotl,
      nationalSigner: signers.national,
      nationalListUrl: `${lists.url}/tl-xx.xml`,
      nextUpdate: new Date(Date.now() + 30 * DAY),
      lotlSequenceNumber: sequence,
      nationalSequenceNumber: sequence,
      ...(breakSignature ? { breakSignature } : {}),
      services: [
        {
          serviceName: "Demo Qualified Issuing CA",
          certificate: q.pki.issuingCa.der,
          qualifiedFor: { qwac: service.qwac, qseal: service.qseal },
          grantedFrom: new Date(Date.now() - 60 * DAY),
          ...(service.withdrawnAt ? { withdrawnAt: service.withdrawnAt } : {}),
        },
      ],
    });
    lists.setDocument("/lotl.xml", { body: Buffer.from(lotlXml), contentType: "application/xml" });
    lists.setDocument("/tl-xx.xml", { body: Buffer.from(nationalXml), contentType: "application/xml" });
  };

  const env = useGatewayAndBackend(async () => {
    signers = {
      lotl: await generateTrustedListSigner("Test LOTL signer", Date.now()),
      national: await generateTrustedListSigner("Test XX signer", Date.now()),
    };
    lists = await startTestQtsp({ ...q, port: 0 } as QtspPki);
    publish({ qwac: true, qseal: true });
    const dir = mkdtempSync(join(tmpdir(), "psd2-tl-"));
    writeFileSync(join(dir, "lotl-signer.pem"), signers.lotl.pem);
    return {
      pki: q.pki,
      config: {
        // No CA folder: the issuing CA is trusted through the list or not at all.
        trust: {
          caDir: undefined,
          trustedLists: { lotl: `${lists.url}/lotl.xml`, lotlSigners: [join(dir, "lotl-signer.pem")] },
        },
        revocation: { order: "crl" as const },
      },
    };
  });
  afterAll(() => lists?.close());

  const seal = () => signedCall(env.gw, { signer: q.pki.tppA.qseal, target: "/v1/accounts" });
  const republish = async (
    service: { qwac: boolean; qseal: boolean; withdrawnAt?: Date },
    breakSignature?: "national",
  ) => {
    publish(service, breakSignature);
    await env.gw.gateway.reload();
  };

  it.each([
    {
      name: "granted for QWACs and QSealCs: a QSealC under it passes",
      service: { qwac: true, qseal: true },
      expect: (r: CallResult) => expect(r.status, r.text).toBe(200),
    },
    {
      name: "granted for website authentication only: a QSealC under it is refused",
      service: { qwac: true, qseal: false },
      expect: (r: CallResult) => {
        expect(code(r)).toBe("CERTIFICATE_INVALID");
        expect(r.json.tppMessages?.[0]?.text).toMatch(/website authentication/);
      },
    },
    {
      name: "withdrawn after the certificate was issued: it still passes (ServiceHistory)",
      service: { qwac: true, qseal: true, withdrawnAt: new Date(Date.now() - 3600_000) },
      expect: (r: CallResult) => expect(r.status, r.text).toBe(200),
    },
    {
      name: "withdrawn before the certificate was issued: refused, naming the withdrawal",
      service: { qwac: true, qseal: true, withdrawnAt: new Date(Date.now() - 10 * DAY) },
      expect: (r: CallResult) => {
        expect(code(r)).toBe("CERTIFICATE_INVALID");
        expect(r.json.tppMessages?.[0]?.text).toMatch(/withdrawn/);
      },
    },
  ])("$name", async (row) => {
    await republish(row.service);
    const r = await callUntil(
      seal,
      (x) => {
        try {
          row.expect(x);
          return true;
        } catch {
          return false;
        }
      },
      5_000,
    );
    row.expect(r);
  });

  it("a national list whose signature is broken is refused; the last good copy stays in use and /trust says why", async () => {
    await republish({ qwac: true, qseal: true });
    expect((await callUntil(seal, (r) => r.status === 200, 5_000)).status).toBe(200);
    await republish({ qwac: true, qseal: false }, "national");
    const failing = async () =>
      (await trustSources(env.gw)).find((s) => s.kind === "trusted-list" && s.source.includes("tl-xx.xml"));
    const deadline = Date.now() + 5_000;
    let national = await failing();
    while (!national?.lastError && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      national = await failing();
    }
    expect(national?.lastError).toMatch(/signature/i);
    // The broken copy said "website only"; the last good one (both) still decides.
    expect((await seal()).status).toBe(200);
  });
});
