import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  buildTrustedLists,
  type DevCaService,
  type DevPki,
  generateDevPki,
  generateTrustedListSigner,
  type IssuedCertificate,
  type TrustedListSigner,
} from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { parseCertificate } from "../../../src/eidas/certificate.js";
import { TppVerifier } from "../../../src/eidas/tpp-verifier.js";
import { type ChainPurpose, TrustStore } from "../../../src/eidas/trust-store.js";
import { isRejection } from "../../../src/errors.js";
import { loadTrustedLists } from "../../../src/trust/trusted-lists.js";
import { named } from "../../helpers/named-rows.js";

const DAY = 24 * 3600 * 1000;
const NOW = new Date();
let pki: DevPki;
let lotlSigner: TrustedListSigner;
let nationalSigner: TrustedListSigner;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "psd2-tl-anchors-"));
  [pki, lotlSigner, nationalSigner] = await Promise.all([
    generateDevPki(join(dir, "pki"), NOW.getTime()),
    generateTrustedListSigner("Anchor test LOTL signer"),
    generateTrustedListSigner("Anchor test XX signer"),
  ]);
});

function parsed(c: IssuedCertificate) {
  const p = parseCertificate(c.der);
  if (isRejection(p)) throw new Error(p.text);
  return p;
}

/** A store whose only trust is a trusted list naming the demo issuing CA as `service` says. */
async function storeWith(service: Omit<DevCaService, "certificate">, folder = false): Promise<TrustStore> {
  const name = `${Math.random().toString(16).slice(2)}`;
  const nationalPath = join(dir, `${name}-xx.xml`);
  const lotlPath = join(dir, `${name}-lotl.xml`);
  const { lotlXml, nationalXml } = buildTrustedLists({
    lotlSigner,
    nationalSigner,
    nationalListUrl: nationalPath,
    nextUpdate: new Date(NOW.getTime() + 30 * DAY),
    issueDate: NOW,
    services: [{ ...service, certificate: pki.issuingCa.der }],
  });
  writeFileSync(nationalPath, nationalXml);
  writeFileSync(lotlPath, lotlXml);
  const { anchors, lists } = await loadTrustedLists({
    lotl: lotlPath,
    lotlSigners: [lotlSigner.der],
    now: NOW,
  });
  expect(lists.map((l) => l.ok)).toEqual([true, true]);
  return new TrustStore(folder ? [parsed(pki.root), parsed(pki.issuingCa)] : [], anchors);
}

const BOTH = { serviceName: "Demo QC CA", qualifiedFor: { qwac: true, qseal: true } };
const WEB_ONLY = { serviceName: "Demo web CA", qualifiedFor: { qwac: true, qseal: false } };
// The demo leaves were issued one day before NOW.
const WITHDRAWN_BEFORE_ISSUE = {
  serviceName: "Demo withdrawn CA",
  qualifiedFor: { qwac: true, qseal: true },
  grantedFrom: new Date(NOW.getTime() - 300 * DAY),
  withdrawnAt: new Date(NOW.getTime() - 2 * DAY),
};
const WITHDRAWN_AFTER_ISSUE = { ...WITHDRAWN_BEFORE_ISSUE, withdrawnAt: new Date(NOW.getTime() - DAY / 2) };

interface Row {
  readonly name: string;
  readonly service: Omit<DevCaService, "certificate">;
  readonly folder?: boolean;
  readonly leaf: (p: DevPki) => IssuedCertificate;
  readonly purpose?: ChainPurpose;
  /** undefined: accepted; else a fragment of the refusal text. */
  readonly refused?: RegExp;
}

const ROWS: Row[] = [
  {
    name: "QSealC via a CA granted for both, as a seal",
    service: BOTH,
    leaf: (p) => p.tppA.qseal,
    purpose: "qseal",
  },
  {
    name: "QWAC via a CA granted for both, as a QWAC",
    service: BOTH,
    leaf: (p) => p.tppA.qwac,
    purpose: "qwac",
  },
  {
    name: "QSealC via a web-only CA, as a seal: refused",
    service: WEB_ONLY,
    leaf: (p) => p.tppA.qseal,
    purpose: "qseal",
    refused:
      /which is on the XX trusted list for website authentication \(QWACs\) only, not for electronic seals \(QSealCs\)/,
  },
  {
    name: "the same certificate via a web-only CA, as a QWAC",
    service: WEB_ONLY,
    leaf: (p) => p.tppA.qseal,
    purpose: "qwac",
  },
  { name: "via a web-only CA without a purpose", service: WEB_ONLY, leaf: (p) => p.tppA.qseal },
  {
    name: "issued after the CA was withdrawn: refused, naming CA and date",
    service: WITHDRAWN_BEFORE_ISSUE,
    leaf: (p) => p.tppA.qseal,
    purpose: "qseal",
    refused: new RegExp(
      `by CA .*Demo Qualified Issuing CA.*which was not granted on the XX trusted list then: its status there has been withdrawn since ${WITHDRAWN_BEFORE_ISSUE.withdrawnAt
        .toISOString()
        .replace(/\.\d{3}Z/, ".000Z")
        .replace(/[.]/g, "\\.")}`,
    ),
  },
  {
    name: "issued before the CA was withdrawn: still valid",
    service: WITHDRAWN_AFTER_ISSUE,
    leaf: (p) => p.tppA.qseal,
    purpose: "qseal",
  },
  {
    name: "a CA both in the folder and on the list is judged by the list",
    service: WITHDRAWN_BEFORE_ISSUE,
    folder: true,
    leaf: (p) => p.tppB.qseal,
    refused: /withdrawn since/,
  },
  {
    name: "a CA not on the list",
    service: BOTH,
    leaf: (p) => p.untrusted,
    refused: /CN=Rogue Root,O=Rogue CA,C=XX, which is not in the gateway's trust store/,
  },
];

describe("trust store with trusted-list anchors", () => {
  it.each(named(ROWS))("%s", async (_name, row) => {
    const store = await storeWith(row.service, row.folder);
    const result = store.verifyChain(parsed(row.leaf(pki)), NOW, row.purpose);
    if (row.refused) {
      expect(isRejection(result) && result.code).toBe("CERTIFICATE_INVALID");
      expect(isRejection(result) ? result.text : "accepted").toMatch(row.refused);
    } else {
      if (isRejection(result)) throw new Error(result.text);
      expect(result.chain.map((c) => c.subjectRfc2253.split(",")[0])).toEqual([
        expect.stringContaining("CN="),
        "CN=Demo Qualified Issuing CA",
      ]);
      expect(result.anchor?.source).toContain("XX trusted list");
      expect(result.anchor?.qualifiedFor).toEqual(row.service.qualifiedFor);
    }
  });

  it("keeps folder chains (to a self-signed root) as they were, without an anchor", async () => {
    const store = new TrustStore([parsed(pki.root), parsed(pki.issuingCa)]);
    const result = store.verifyChain(parsed(pki.tppA.qseal), NOW, "qseal");
    if (isRejection(result)) throw new Error(result.text);
    expect(result.chain).toHaveLength(3);
    expect(result.anchor).toBeUndefined();
    expect(store.anchorCount).toBe(0);
  });
});

describe("the validation report of a path ending at a trusted-list service", () => {
  /** A verifier over `store`, revocation not asked (the anchors' CA names no source here), no register. */
  const reportOf = async (store: TrustStore, leaf: IssuedCertificate, purpose: ChainPurpose) => {
    const verifier = new TppVerifier({
      trustStore: () => store,
      revocation: () => ({ check: () => ({}) }),
      cacheTtlMs: 0,
      failureTtlMs: 0,
      maxEntries: 1,
    });
    return verifier.assess(leaf.headerValue, purpose);
  };

  it("names the service, its territory, its status at issuance and what it is qualified for", async () => {
    const report = await reportOf(await storeWith(BOTH), pki.tppA.qseal, "qseal");
    expect(report.indication).toBe("TOTAL_PASSED");
    expect(report.trustAnchor).toMatchObject({
      kind: "trusted-list",
      service: expect.stringContaining("Demo QC CA"),
      territory: "XX",
      statusAtIssuance: {
        status: expect.stringContaining("granted"),
        from: expect.stringMatching(/^\d{4}-/),
      },
      qualification: ["QWAC", "QSealC"],
    });
    expect(report.path.map((p) => p.role)).toEqual(["signer", "trust-anchor"]);
  });

  it.each([
    { name: "a QSealC under a CA qualified for QWACs only", service: WEB_ONLY, purpose: "qseal" as const },
    {
      name: "a QSealC issued after the service was withdrawn",
      service: WITHDRAWN_BEFORE_ISSUE,
      purpose: "qseal" as const,
    },
  ])("$name: CHAIN_CONSTRAINTS_FAILURE decided by the trusted list", async ({ service, purpose }) => {
    const report = await reportOf(await storeWith(service), pki.tppA.qseal, purpose);
    expect(report).toMatchObject({
      indication: "INDETERMINATE",
      subIndication: "CHAIN_CONSTRAINTS_FAILURE",
      check: "trusted-list",
      refusal: { code: "CERTIFICATE_INVALID" },
    });
  });
});
