import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { TppRegister } from "../../../src/eidas/register.js";
import { TppVerifier } from "../../../src/eidas/tpp-verifier.js";
import { VerdictCache } from "../../../src/eidas/verdict-cache.js";
import { isRejection, reject } from "../../../src/errors.js";
import { parseRegisterDocument } from "../../../src/trust/formats/register-document.js";
import { loadTrustMaterial } from "../../../src/trust/trust-material.js";

let pki: DevPki;
beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-verifier-")));
});

function setup(options: { ttlMs?: number; failureTtlMs?: number } = {}) {
  let t = Date.now();
  const now = () => t;
  const trust = loadTrustMaterial(pki.paths.trustDir);
  const register = new TppRegister(3_600_000, now);
  const entries = (statusA: string) => [
    {
      organizationIdentifier: pki.tppA.organizationId,
      name: pki.tppA.name,
      roles: ["PSP_AI", "PSP_PI"] as const,
      status: statusA,
    },
    // The register grants TPP B more than its certificate: effective roles are the intersection.
    {
      organizationIdentifier: pki.tppB.organizationId,
      name: pki.tppB.name,
      roles: ["PSP_AI", "PSP_PI"] as const,
      status: "authorised",
    },
  ];
  register.replace(entries("authorised"), "test");
  const verifier = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    register,
    now,
    cacheTtlMs: options.ttlMs ?? 60_000,
    failureTtlMs: options.failureTtlMs ?? 5_000,
    maxEntries: 100,
  });
  return {
    verifier,
    register,
    advance: (ms: number) => (t += ms),
    withdrawA: () => register.replace(entries("withdrawn"), "test"),
  };
}

async function verdict(verifier: TppVerifier, header: string) {
  return await verifier.verify(header);
}

describe("TPP verifier: certificate → trusted TPP", () => {
  it("trusts an authorised TPP and gives its identity, with effective roles = certificate ∩ register", async () => {
    const { verifier } = setup();
    const a = await verdict(verifier, pki.tppA.qseal.headerValue);
    if (isRejection(a)) throw new Error(a.text);
    expect(a.identity.organizationId).toBe("PSDNO-FSA-DEMO0001");
    expect(a.identity.name).toBe("Demo Payments AS");
    expect([...a.identity.roles].sort()).toEqual(["PSP_AI", "PSP_PI"]);
    const b = await verdict(verifier, pki.tppB.qseal.headerValue);
    expect(isRejection(b) ? b.text : [...b.identity.roles]).toEqual(["PSP_AI"]);
  });

  it.each([
    ["expired", "CERTIFICATE_EXPIRED"],
    ["revoked", "CERTIFICATE_REVOKED"],
    ["unregistered", "CERTIFICATE_BLOCKED"],
    ["untrusted", "CERTIFICATE_INVALID"],
  ] as const)("refuses the %s certificate with %s", async (which, code) => {
    const { verifier } = setup();
    const r = await verdict(verifier, pki[which].headerValue);
    expect(isRejection(r) && r.code).toBe(code);
  });

  it("refuses garbage and a certificate that is not a PSD2 certificate", async () => {
    const { verifier } = setup();
    const garbage = await verdict(verifier, "bm90IGEgY2VydGlmaWNhdGU=");
    expect(isRejection(garbage) && garbage.code).toBe("CERTIFICATE_INVALID");
    const tls = await verdict(verifier, pki.gatewayTls.headerValue);
    expect(isRejection(tls) && tls.text).toContain("is not a PSD2 certificate");
    expect(isRejection(tls) && tls.text).toMatch(/^TPP-Signature-Certificate .*sign with your PSD2 QSealC$/);
    // The same certificate as a TLS client certificate: the text names the QWAC, not the header.
    const qwac = await verifier.verify(pki.gatewayTls.headerValue, "qwac");
    expect(isRejection(qwac) && qwac.text).toMatch(
      /^the TLS client certificate .*connect with your PSD2 QWAC$/,
    );
  });

  it("accepts the header in PEM and URL-encoded PEM form as well as base64 DER", async () => {
    const { verifier } = setup();
    for (const form of [pki.tppA.qseal.pem, encodeURIComponent(pki.tppA.qseal.pem)]) {
      const r = await verdict(verifier, form);
      expect(isRejection(r) ? r.text : r.identity.organizationId).toBe("PSDNO-FSA-DEMO0001");
    }
  });
});

describe("verdict cache", () => {
  it("pays for a certificate once: the second request is a hit answered synchronously", () => {
    const { verifier } = setup();
    const first = verifier.verify(pki.tppA.qseal.headerValue);
    const second = verifier.verify(pki.tppA.qseal.headerValue);
    expect(second).toBe(first);
    expect(second instanceof Promise).toBe(false);
    expect(verifier.stats).toMatchObject({ hits: 1, misses: 1, size: 1 });
  });

  it("judges again at once when the register takes a new copy: a cached verdict never outlives it", async () => {
    const { verifier, advance, withdrawA, register } = setup({ ttlMs: 60_000 });
    expect(isRejection(await verdict(verifier, pki.tppA.qseal.headerValue))).toBe(false);
    const generation = register.generation;
    withdrawA();
    expect(register.generation).toBeGreaterThan(generation);
    advance(1_000);
    const r = await verdict(verifier, pki.tppA.qseal.headerValue);
    expect(isRejection(r) && r.code).toBe("CERTIFICATE_BLOCKED");
  });

  it("a verdict computed across a clear() answers its callers but is not kept", async () => {
    const cache = new VerdictCache<{ n: number }>({ maxEntries: 10 });
    let finish: (n: number) => void = () => {};
    const computing = cache.get(
      "header",
      () =>
        new Promise((resolve) => {
          finish = (n) => resolve({ value: { n }, expiresAt: Date.now() + 60_000, cacheable: true });
        }),
    );
    cache.clear();
    finish(1);
    expect(await computing).toEqual({ n: 1 });
    expect(cache.stats.size).toBe(0);
    // The next ask computes afresh (under what replaced the old trust), and that one is kept.
    expect(
      cache.get("header", () => ({ value: { n: 2 }, expiresAt: Date.now() + 60_000, cacheable: true })),
    ).toEqual({ n: 2 });
    expect(cache.stats.size).toBe(1);
  });

  it("keeps its verdicts while the register only confirms its copy (304, same file)", () => {
    const { verifier, register } = setup();
    verifier.verify(pki.tppA.qseal.headerValue);
    register.confirm();
    verifier.verify(pki.tppA.qseal.headerValue);
    expect(verifier.stats).toMatchObject({ hits: 1, misses: 1 });
  });

  it("caches a refusal briefly, so a flood of one bad certificate costs one parse", async () => {
    const { verifier, advance } = setup({ failureTtlMs: 5_000 });
    for (let i = 0; i < 100; i++) await verdict(verifier, pki.untrusted.headerValue);
    expect(verifier.stats.misses).toBe(1);
    advance(5_001);
    await verdict(verifier, pki.untrusted.headerValue);
    expect(verifier.stats.misses).toBe(2);
  });

  it("never keeps a verdict past the certificate's notAfter", async () => {
    const { verifier, advance, register } = setup({ ttlMs: 10 * 365 * 24 * 3600 * 1000 });
    expect(isRejection(await verdict(verifier, pki.tppA.qseal.headerValue))).toBe(false);
    advance(pki.tppA.qseal.certificate.notAfter.getTime() - Date.now() + 1000);
    register.confirm(); // the register stays fresh: only the certificate's own expiry is at stake
    const r = await verdict(verifier, pki.tppA.qseal.headerValue);
    expect(isRejection(r) && r.code).toBe("CERTIFICATE_EXPIRED");
  });

  it("lets concurrent misses for one key share one computation, and bounds its size", async () => {
    const cache = new VerdictCache<{ n: number }>({ maxEntries: 2 });
    let computed = 0;
    const compute = async () => {
      computed++;
      await new Promise((r) => setTimeout(r, 10));
      return { value: { n: computed }, expiresAt: Date.now() + 60_000, cacheable: true };
    };
    const results = await Promise.all(Array.from({ length: 20 }, () => cache.get("same", compute)));
    expect(computed).toBe(1);
    expect(new Set(results).size).toBe(1);
    await cache.get("b", compute);
    await cache.get("c", compute);
    expect(cache.stats.size).toBe(2);
    expect(cache.stats.evictions).toBe(1);
  });

  // A trusted header's key is kept with the header (no SHA-256 per hit), per kind, a bounded number.
  it("finds each header's own verdict, for each kind, however many headers came and went", () => {
    const cache = new VerdictCache<{ raw: string; kind: string }>({ maxEntries: 2000 });
    const computeFor = (raw: string, kind: string) => () => ({
      value: { raw, kind },
      expiresAt: Date.now() + 60_000,
      cacheable: true,
    });
    const headers = Array.from({ length: 600 }, (_, i) => `MII${i}`);
    for (let pass = 0; pass < 3; pass++)
      for (const raw of headers)
        for (const kind of ["", "qwac"])
          expect(cache.get(raw, computeFor(raw, kind), kind)).toEqual({ raw, kind });
    expect(cache.stats.misses).toBe(1200);
    expect(cache.stats.hits).toBe(2400);
    cache.clear();
    expect(cache.get(headers[0]!, computeFor("again", ""))).toEqual({ raw: "again", kind: "" });
  });

  it("does not cache refusals marked as passing (a stale register)", () => {
    const cache = new VerdictCache<{ n: number }>({ maxEntries: 10 });
    let computed = 0;
    const compute = () => {
      computed++;
      return {
        value: reject("SERVICE_UNAVAILABLE", "stale"),
        expiresAt: Date.now() + 60_000,
        cacheable: false,
      };
    };
    cache.get("k", compute);
    cache.get("k", compute);
    expect(computed).toBe(2);
  });
});

describe("register reloads reach the verifier", () => {
  it("a TPP added to the register file is accepted after reload and TTL", async () => {
    const dir = mkdtempSync(join(tmpdir(), "psd2-reg2-"));
    writeFileSync(join(dir, "r.json"), JSON.stringify({ tpps: [] }));
    const register = new TppRegister(60_000);
    register.replace(parseRegisterDocument(JSON.stringify({ tpps: [] })), "x");
    const trust = loadTrustMaterial(pki.paths.trustDir);
    const verifier = new TppVerifier({
      trustStore: () => trust.store,
      revocation: () => trust.revocation,
      register,
      cacheTtlMs: 60_000,
      failureTtlMs: 0,
      maxEntries: 10,
    });
    expect(isRejection(await verdict(verifier, pki.unregistered.headerValue))).toBe(true);
    register.replace(
      [
        {
          organizationIdentifier: "PSDNO-FSA-NOTREG01",
          name: "Now registered",
          roles: ["PSP_AI"],
          status: "authorised",
        },
      ],
      "x",
    );
    const r = await verdict(verifier, pki.unregistered.headerValue);
    expect(isRejection(r) ? r.text : r.identity.name).toBe("Now registered");
  });
});
