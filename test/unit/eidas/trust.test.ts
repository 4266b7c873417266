import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki, type IssuedCertificate } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { parseCertificate } from "../../../src/eidas/certificate.js";
import { checkPath, type RevocationStatus } from "../../../src/eidas/revocation.js";
import type { TrustStore } from "../../../src/eidas/trust-store.js";
import { isRejection, reject } from "../../../src/errors.js";
import { crlCheckerFromFolder, trustStoreFromFolder } from "../../../src/trust/folders.js";
import { loadTrustMaterial } from "../../../src/trust/trust-material.js";

let pki: DevPki;
let store: TrustStore;
const NOW = new Date();

beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-trust-")));
  store = trustStoreFromFolder(pki.paths.trustDir).store;
});

function parsed(c: IssuedCertificate) {
  const p = parseCertificate(c.der);
  if (isRejection(p)) throw new Error(p.text);
  return p;
}

function chainCode(c: IssuedCertificate, now = NOW) {
  const r = store.verifyChain(parsed(c), now);
  return isRejection(r) ? r : undefined;
}

describe("trust store and chain building", () => {
  it("reads the roots and intermediates of a folder", () => {
    expect(store.size).toBe(3);
    expect(store.all.map((c) => c.subjectRfc2253).sort()).toEqual([
      "CN=Demo Qualified Issuing CA,organizationIdentifier=NTRNO-999999999,O=psd2-gateway Demo QTSP,C=NO",
      "CN=Demo Revoked Issuing CA,organizationIdentifier=NTRNO-999999999,O=psd2-gateway Demo QTSP,C=NO",
      "CN=Demo Root CA,O=psd2-gateway Demo QTSP,C=NO",
    ]);
  });

  it("builds leaf → issuing CA → root for a QSealC and a QWAC", () => {
    for (const c of [pki.tppA.qseal, pki.tppA.qwac, pki.tppB.qseal]) {
      const r = store.verifyChain(parsed(c), NOW);
      expect(isRejection(r) ? r.text : r.chain.map((x) => x.subjectRfc2253.split(",")[0])).toEqual([
        expect.stringContaining("CN="),
        "CN=Demo Qualified Issuing CA",
        "CN=Demo Root CA",
      ]);
    }
  });

  it("refuses a certificate from a CA outside the store, naming the issuer", () => {
    const r = chainCode(pki.untrusted);
    expect(r?.code).toBe("CERTIFICATE_INVALID");
    expect(r?.text).toContain("CN=Rogue Root,O=Rogue CA,C=XX, which is not in the gateway's trust store");
  });

  it("refuses a certificate whose signature was not made by its named issuer", () => {
    // Same issuer name and key identifier, but one byte of the signature changed.
    const der = Buffer.from(pki.tppA.qseal.der);
    der[der.length - 5]! ^= 0x01;
    const p = parseCertificate(der);
    if (isRejection(p)) throw new Error(p.text);
    const r = store.verifyChain(p, NOW);
    expect(isRejection(r) && r.text).toContain("signature does not verify");
  });

  it("answers CERTIFICATE_EXPIRED on both sides of the validity period, by the injected clock", () => {
    expect(chainCode(pki.expired)?.code).toBe("CERTIFICATE_EXPIRED");
    expect(chainCode(pki.expired)?.text).toContain("expired on");
    const early = new Date(pki.tppA.qseal.certificate.notBefore.getTime() - 1000);
    expect(chainCode(pki.tppA.qseal, early)?.text).toContain("is not valid before");
    // Inside the leaf's own validity the CAs above it are checked too: the issuing CA was made later.
    const inside = chainCode(pki.expired, new Date(pki.expired.certificate.notBefore.getTime() + 1000));
    expect(inside?.code).toBe("CERTIFICATE_EXPIRED");
    expect(inside?.text).toContain("its issuing CA certificate");
  });

  it("refuses a CA certificate as a leaf", () => {
    expect(chainCode(pki.issuingCa)?.text).toContain("is a CA certificate");
  });

  it("refuses a chain through a CA that may not issue certificates", async () => {
    // A folder whose 'CA' is TPP A's QSealC: not a CA, so nothing it signed may chain through it.
    const dir = mkdtempSync(join(tmpdir(), "psd2-badca-"));
    writeFileSync(join(dir, "a.pem"), pki.tppA.qseal.pem);
    writeFileSync(join(dir, "b.pem"), pki.gatewayTls.pem);
    const odd = trustStoreFromFolder(dir).store;
    const r = odd.verifyChain(parsed(pki.tppB.qseal), NOW);
    expect(isRejection(r) && r.code).toBe("CERTIFICATE_INVALID");
  });
});

describe("revocation of the whole path (checkPath)", () => {
  const pathOf = (c: IssuedCertificate) => {
    const r = store.verifyChain(parsed(c), NOW);
    if (isRejection(r)) throw new Error(r.text);
    return r.chain;
  };

  it.each([
    {
      name: "a TPP under the revoked CA: the CA is named",
      leaf: () => pki.underRevokedCa,
      refused: /issuing CA SN=[0-9A-F]+ \(CN=Demo Revoked Issuing CA.*revoked by CN=Demo Root CA/,
    },
    {
      name: "a revoked leaf under the good CA: the leaf is named",
      leaf: () => pki.revoked,
      refused: /^certificate SN=[0-9A-F]+ was revoked by CN=Demo Qualified Issuing CA/,
    },
    { name: "a good leaf under the good CA passes", leaf: () => pki.tppA.qseal, refused: undefined },
  ])("$name", ({ leaf, refused }) => {
    const { checker } = crlCheckerFromFolder(pki.paths.trustDir, store.all);
    const status = checkPath(checker, pathOf(leaf()), NOW) as RevocationStatus;
    if (refused === undefined) expect(status.refusal).toBeUndefined();
    else {
      expect(status.refusal?.code).toBe("CERTIFICATE_REVOKED");
      expect(status.refusal?.text).toMatch(refused);
    }
  });

  const revoked = { refusal: reject("CERTIFICATE_REVOKED", "CA revoked") };
  const unknown = { refusal: reject("SERVICE_UNAVAILABLE", "responder down", 30), transient: true };
  it.each([
    {
      name: "a proven revocation above outweighs an unknown leaf",
      links: [unknown, revoked],
      expect: revoked,
      decidedAt: 1,
    },
    {
      name: "the leaf's revocation is named before the CA's",
      links: [{ refusal: reject("CERTIFICATE_REVOKED", "leaf") }, revoked],
      expect: { refusal: reject("CERTIFICATE_REVOKED", "leaf") },
      decidedAt: 0,
    },
    {
      name: "an unknown CA refuses a good leaf, transiently",
      links: [{ validUntil: 5 }, unknown],
      expect: unknown,
      decidedAt: 1,
    },
    {
      name: "all good: held until the earliest validUntil, warnings kept",
      links: [{ validUntil: 9, warning: "a" }, { validUntil: 5 }, { warning: "b" }],
      expect: { validUntil: 5, warning: "a; b" },
      decidedAt: undefined,
    },
  ])("$name", async ({ links, expect: expected, decidedAt }) => {
    const chain = [pki.tppA.qseal, pki.issuingCa, pki.root, pki.root].slice(0, links.length + 1).map(parsed);
    // The deciding answer, each link's own (for the validation report) and where it was decided.
    const whole = { ...expected, each: links, ...(decidedAt === undefined ? {} : { decidedAt }) };
    const answers = [...links];
    const sync = checkPath({ check: () => answers.shift()! as RevocationStatus }, chain, NOW);
    expect(sync).toEqual(whole);
    const later = [...links];
    const async = checkPath({ check: () => Promise.resolve(later.shift()! as RevocationStatus) }, chain, NOW);
    expect(async).toBeInstanceOf(Promise);
    expect(await async).toEqual(whole);
  });
});

describe("revocation from CRL files", () => {
  it("refuses a revoked certificate with CERTIFICATE_REVOKED and the date", () => {
    const { checker, problems } = crlCheckerFromFolder(pki.paths.trustDir, store.all);
    expect(problems).toEqual([]);
    const issuer = store.all.find((c) => c.subjectRfc2253.startsWith("CN=Demo Qualified Issuing CA"))!;
    const r = checker.check(parsed(pki.revoked), issuer).refusal;
    expect(r?.code).toBe("CERTIFICATE_REVOKED");
    expect(r?.text).toContain(`SN=${parsed(pki.revoked).serialHex} was revoked`);
    expect(checker.check(parsed(pki.tppA.qseal), issuer).refusal).toBeUndefined();
  });

  it("ignores a CRL whose signature does not verify, and says so", () => {
    const dir = mkdtempSync(join(tmpdir(), "psd2-crl-"));
    const pem = (text: string) =>
      Buffer.from(text.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
    const der = pem(readFileSync(pki.paths.crl, "utf8"));
    der[der.length - 3]! ^= 0xff;
    writeFileSync(join(dir, "bad.crl"), der);
    const { checker, problems } = crlCheckerFromFolder(dir, store.all);
    expect(checker.lists).toHaveLength(0);
    expect(problems[0]).toContain("CRL signature does not verify");
  });

  it("loads trust material as one unit, and refuses an empty folder", () => {
    const material = loadTrustMaterial(pki.paths.trustDir);
    expect(material.store.size).toBe(3);
    // The issuing CA's, the root's (listing the revoked CA) and the revoked CA's.
    expect(material.revocation.lists).toHaveLength(3);
    expect(() => loadTrustMaterial(mkdtempSync(join(tmpdir(), "psd2-empty-")))).toThrow(
      "no CA certificates found",
    );
  });
});
