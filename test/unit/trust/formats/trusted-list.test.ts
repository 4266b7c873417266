import {
  buildTrustedLists,
  type DevTrustedLists,
  generateTrustedListSigner,
  type TrustedListSigner,
} from "@psd2-gateway/dev-pki";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type CaService,
  grantedAt,
  readTrustedList,
  STATUS_GRANTED,
  STATUS_WITHDRAWN,
  TrustedListError,
} from "../../../../src/trust/formats/trusted-list.js";
import { named } from "../../../helpers/named-rows.js";

const DAY = 24 * 3600 * 1000;
const NOW = new Date();
let lotlSigner: TrustedListSigner;
let nationalSigner: TrustedListSigner;
let stranger: TrustedListSigner;
let ca: TrustedListSigner;
let lists: DevTrustedLists;
let byId: DevTrustedLists;

function build(extra: Partial<Parameters<typeof buildTrustedLists>[0]> = {}): DevTrustedLists {
  return buildTrustedLists({
    lotlSigner,
    nationalSigner,
    nationalListUrl: "https://tl.example/xx.xml",
    nextUpdate: new Date(NOW.getTime() + 90 * DAY),
    issueDate: NOW,
    services: [
      { serviceName: "Both CA", certificate: ca.der, qualifiedFor: { qwac: true, qseal: true } },
      { serviceName: "Web CA", certificate: ca.der, qualifiedFor: { qwac: true, qseal: false } },
      {
        serviceName: "Withdrawn CA",
        certificate: ca.der,
        qualifiedFor: { qwac: false, qseal: true },
        grantedFrom: new Date(NOW.getTime() - 400 * DAY),
        withdrawnAt: new Date(NOW.getTime() - 10 * DAY),
      },
    ],
    ...extra,
  });
}

beforeAll(async () => {
  [lotlSigner, nationalSigner, stranger, ca] = await Promise.all([
    generateTrustedListSigner("Test LOTL signer"),
    generateTrustedListSigner("Test XX signer"),
    generateTrustedListSigner("Stranger"),
    generateTrustedListSigner("Some CA"),
  ]);
  lists = build();
  byId = build({ referenceById: true });
});

describe("readTrustedList: signed lists that verify", () => {
  it("reads the LOTL's XML pointer with the national signers it names", () => {
    const lotl = readTrustedList(lists.lotlXml, [lotlSigner.der]);
    expect(lotl).toMatchObject({ kind: "lotl", territory: "EU", sequenceNumber: 1, services: [] });
    expect(lotl.pointers).toEqual([
      {
        territory: "XX",
        location: "https://tl.example/xx.xml",
        mimeType: "application/vnd.etsi.tsl+xml",
        signers: [nationalSigner.der],
      },
    ]);
    expect(lotl.nextUpdate?.getTime()).toBe(Math.floor((NOW.getTime() + 90 * DAY) / 1000) * 1000);
  });

  it("reads the CA/QC services of a national list, with qualifications and history", () => {
    const national = readTrustedList(lists.nationalXml, [nationalSigner.der]);
    expect(national.kind).toBe("national");
    expect(national.territory).toBe("XX");
    expect(national.services.map((s) => [s.serviceName, s.qualifiedFor, s.status, s.history.length])).toEqual(
      [
        ["Both CA", { qwac: true, qseal: true }, STATUS_GRANTED, 0],
        ["Web CA", { qwac: true, qseal: false }, STATUS_GRANTED, 0],
        ["Withdrawn CA", { qwac: false, qseal: true }, STATUS_WITHDRAWN, 1],
      ],
    );
    expect(national.services[0]!.certificates).toEqual([ca.der]);
  });

  it("accepts a reference to the root by its Id", () => {
    expect(readTrustedList(byId.nationalXml, [nationalSigner.der]).services).toHaveLength(3);
    expect(byId.nationalXml).toContain('URI="#tsl-XX"');
  });
});

const SIGNATURE = /<ds:Signature[\s\S]*<\/ds:Signature>/;

interface RefusalRow {
  readonly name: string;
  readonly xml: () => string;
  readonly signers?: () => Uint8Array[];
  readonly error: RegExp;
}

const REFUSALS: RefusalRow[] = [
  {
    name: "a byte changed in a signed element",
    xml: () => build({ breakSignature: "national" }).nationalXml,
    error: /signature does not verify/,
  },
  {
    name: "a service name changed after signing",
    xml: () => lists.nationalXml.replace("Web CA", "Wob CA"),
    error: /signature does not verify/,
  },
  {
    name: "signed by a certificate not among the allowed signers",
    xml: () => lists.nationalXml,
    signers: () => [stranger.der, lotlSigner.der],
    error: /signed by CN=Test XX signer.*not among the 2 certificate/,
  },
  {
    name: "no allowed signers at all",
    xml: () => lists.lotlXml,
    signers: () => [],
    error: /not among the 0 certificate/,
  },
  {
    name: "wrapping: a second TSP list added beside the signed one",
    xml: () =>
      lists.nationalXml.replace(
        "<ds:Signature",
        '<TrustServiceProviderList><TrustServiceProvider><TSPInformation><TSPName><Name xml:lang="en">Evil</Name></TSPName></TSPInformation></TrustServiceProvider></TrustServiceProviderList><ds:Signature',
      ),
    error: /does not verify|at most one/,
  },
  {
    name: "wrapping: the signature moved into SchemeInformation",
    xml: () => {
      const signature = lists.nationalXml.match(SIGNATURE)![0];
      return lists.nationalXml
        .replace(signature, "")
        .replace("</SchemeInformation>", `${signature}</SchemeInformation>`);
    },
    error: /not a direct child of the root/,
  },
  {
    name: 'wrapping: the signed list nested in a forged root (URI="")',
    xml: () => forgedRoot(lists.nationalXml),
    error: /not a direct child of the root/,
  },
  {
    name: 'wrapping: the signed list nested in a forged root, signature moved up (URI="")',
    xml: () => forgedRoot(lists.nationalXml, true),
    error: /digest differs/,
  },
  {
    name: 'wrapping: the signed list nested in a forged root, signature moved up (URI="#id")',
    xml: () => forgedRoot(byId.nationalXml, true),
    error: /exactly one reference to the whole list \(URI="" or "#forged"\); it has 0/,
  },
  {
    name: "two signatures",
    xml: () => {
      const signature = lists.nationalXml.match(SIGNATURE)![0];
      return lists.nationalXml.replace("</TrustServiceStatusList>", `${signature}</TrustServiceStatusList>`);
    },
    error: /2 ds:Signature elements/,
  },
  {
    name: "a DOCTYPE (entity expansion)",
    xml: () =>
      `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]>${lists.nationalXml.replace(/^<\?xml[^>]*\?>/, "")}`,
    error: /DOCTYPE or ENTITY/,
  },
  { name: "not XML", xml: () => "hello <", error: /not well-formed|root element/ },
  {
    name: "another root element",
    xml: () => '<a xmlns="urn:x"/>',
    error: /not \{http:\/\/uri.etsi.org\/02231\/v2#\}TrustServiceStatusList/,
  },
  { name: "unsigned", xml: () => lists.nationalXml.replace(SIGNATURE, ""), error: /0 ds:Signature/ },
];

/** The signed list inside a forged root that claims other content (the classic wrapping shape). */
function forgedRoot(signed: string, moveSignatureUp = false): string {
  const body = signed.replace(/^<\?xml[^>]*\?>/, "");
  const signature = body.match(SIGNATURE)![0];
  const inner = moveSignatureUp ? body.replace(signature, "") : body;
  const forged = body
    .replace(signature, "")
    .replace('Id="tsl-XX"', 'Id="forged"')
    .replace(/<TrustServiceProviderList>[\s\S]*<\/TrustServiceProviderList>/, "");
  return forged.replace(
    /<\/TrustServiceStatusList>$/,
    `<SchemeInformation>${inner}</SchemeInformation>${moveSignatureUp ? signature : ""}</TrustServiceStatusList>`,
  );
}

describe("readTrustedList refuses", () => {
  it.each(named(REFUSALS))("%s", (_name, row) => {
    const signers = row.signers?.() ?? [nationalSigner.der];
    expect(() => readTrustedList(row.xml(), signers)).toThrow(TrustedListError);
    expect(() => readTrustedList(row.xml(), signers)).toThrow(row.error);
  });

  it("a list issued outside its signer's validity", () => {
    const late = build({ issueDate: new Date(NOW.getTime() + 4000 * DAY) });
    expect(() =>
      readTrustedList(late.nationalXml, [nationalSigner.der], { now: new Date(NOW.getTime() + 4000 * DAY) }),
    ).toThrow(/outside its signing certificate's validity/);
    expect(() => readTrustedList(late.nationalXml, [nationalSigner.der])).toThrow(/in the future/);
  });
});

describe("grantedAt: the status in force at a date", () => {
  const start = new Date("2020-01-01T00:00:00Z");
  const withdrawn = new Date("2024-06-01T00:00:00Z");
  const service = (status: string, history: CaService["history"] = []): CaService => ({
    providerName: "P",
    serviceName: "S",
    certificates: [],
    type: "http://uri.etsi.org/TrstSvc/Svctype/CA/QC",
    status,
    statusStarting: history.length ? withdrawn : start,
    history,
    qualifiedFor: { qwac: true, qseal: true },
  });
  const ROWS = [
    { name: "granted, after its start", s: service(STATUS_GRANTED), at: "2023-01-01", granted: true },
    { name: "granted, before its start", s: service(STATUS_GRANTED), at: "2019-01-01", granted: false },
    {
      name: "withdrawn, date in the earlier granted period",
      s: service(STATUS_WITHDRAWN, [{ status: STATUS_GRANTED, from: start }]),
      at: "2024-05-31",
      granted: true,
    },
    {
      name: "withdrawn, date after the withdrawal",
      s: service(STATUS_WITHDRAWN, [{ status: STATUS_GRANTED, from: start }]),
      at: "2024-06-02",
      granted: false,
    },
    {
      name: "pre-eIDAS undersupervision counts as granted",
      s: service("http://uri.etsi.org/TrstSvc/Svcstatus/undersupervision"),
      at: "2021-01-01",
      granted: true,
    },
    {
      name: "pre-eIDAS accredited counts as granted",
      s: service("http://uri.etsi.org/TrstSvc/Svcstatus/accredited"),
      at: "2021-01-01",
      granted: true,
    },
    {
      name: "a history period of another service type is not granted",
      s: service(STATUS_WITHDRAWN, [
        { status: STATUS_GRANTED, from: start, type: "http://uri.etsi.org/TrstSvc/Svctype/TSA" },
      ]),
      at: "2022-01-01",
      granted: false,
    },
  ];
  it.each(named(ROWS))("%s", (_name, row) => {
    expect(grantedAt(row.s, new Date(`${row.at}T00:00:00Z`))).toBe(row.granted);
  });
});

describe("readTrustedList on hostile input (property)", () => {
  function only(run: () => unknown): void {
    try {
      run();
    } catch (error) {
      if (!(error instanceof TrustedListError)) throw error;
    }
  }

  it("answers a TrustedList or a TrustedListError for any string", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) =>
        only(() => readTrustedList(text, [nationalSigner.der])),
      ),
      { numRuns: 300 },
    );
  });

  it("answers a TrustedList or a TrustedListError for a mutated valid list", () => {
    const xml = lists.nationalXml;
    const edit = fc.record({
      at: fc.nat({ max: xml.length - 1 }),
      drop: fc.nat({ max: 40 }),
      insert: fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          "<",
          ">",
          "&",
          "&amp;",
          "</x>",
          '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"/>',
          '"',
          "]]>",
        ),
      ),
    });
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 3 }), (edits) => {
        let text = xml;
        for (const e of edits) {
          const at = Math.min(e.at, text.length);
          text = text.slice(0, at) + e.insert + text.slice(at + e.drop);
        }
        only(() => readTrustedList(text, [nationalSigner.der]));
      }),
      { numRuns: 150 },
    );
  });
});
