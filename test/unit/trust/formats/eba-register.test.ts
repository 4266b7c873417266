/**
 * The EBA register mapping: what a bank's gateway makes of the EBA's JSON. Rows are entities as
 * the EBA publishes them; each says which register entry (or which skip) it becomes.
 */

import { ebaRegisterDocument, ebaRegisterZip } from "@psd2-gateway/dev-pki";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RegisterEntry } from "../../../../src/eidas/index.js";
import { mapEbaEntity, mapEbaRegister } from "../../../../src/trust/formats/eba-register.js";
import { decodeRegister } from "../../../../src/trust/register-worker.js";
import { named } from "../../../helpers/named-rows.js";

function entity(overrides: {
  type?: unknown;
  owner?: unknown;
  reference?: unknown;
  name?: unknown;
  authorised?: unknown;
  services?: unknown;
}): Record<string, unknown> {
  const properties: unknown[] = [];
  if (overrides.reference !== null) properties.push({ ENT_NAT_REF_COD: overrides.reference ?? "29884997" });
  if (overrides.name !== null) properties.push({ ENT_NAM: overrides.name ?? "Example Oy" });
  properties.push({ ENT_COU_RES: "FI" });
  if (overrides.authorised !== null) properties.push({ ENT_AUT: overrides.authorised ?? ["2019-02-01"] });
  return {
    CA_OwnerID: overrides.owner ?? "FI_FINFSA",
    EntityCode: "FI_FINFSA!29884997",
    EntityType: overrides.type ?? "PSD_PI",
    Properties: properties,
    Services: overrides.services ?? [{ FI: ["PS_010", "PS_070", "PS_080"] }],
  };
}

const MAPPED: readonly {
  name: string;
  entity: unknown;
  expected: Partial<RegisterEntry> | string;
  absent?: readonly string[];
}[] = [
  {
    name: "a payment institution with PIS and AIS at home",
    entity: entity({}),
    expected: {
      organizationIdentifier: "PSDFI-FINFSA-29884997",
      name: "Example Oy",
      roles: ["PSP_AI", "PSP_PI"],
      status: "authorised",
      countries: { PSP_PI: ["FI"], PSP_AI: ["FI"] },
      source: "EBA",
    },
  },
  {
    name: "reference with a space (C 102960 → C102960)",
    entity: entity({ owner: "MT_MFSA", reference: "C 102960" }),
    expected: { organizationIdentifier: "PSDMT-MFSA-C102960" },
  },
  {
    name: "reference with dashes and a hyphenated CA_OwnerID",
    entity: entity({ owner: "FI-FINFSA", reference: "2988-4997 " }),
    expected: { organizationIdentifier: "PSDFI-FINFSA-29884997" },
  },
  {
    name: "lower-case CA_OwnerID is upper-cased",
    entity: entity({ owner: "ie_cbi", reference: "C58301" }),
    expected: { organizationIdentifier: "PSDIE-CBI-C58301" },
  },
  {
    name: "ENT_NAM as an array of names in several scripts: the first",
    entity: entity({ name: ["", "Пример ООД", "Primer OOD"] }),
    expected: { name: "Пример ООД" },
  },
  {
    name: "no name: the organizationIdentifier stands in",
    entity: entity({ name: null }),
    expected: { name: "PSDFI-FINFSA-29884997", status: "authorised" },
  },
  {
    name: "withdrawn, with the date",
    entity: entity({ authorised: ["2019-02-01", "2024-03-01"] }),
    expected: { status: "withdrawn", withdrawnOn: "2024-03-01" },
  },
  {
    name: "withdrawn with a timestamp: the date part",
    entity: entity({ authorised: ["2019-02-01", "2024-03-01T00:00:00Z"] }),
    expected: { status: "withdrawn", withdrawnOn: "2024-03-01" },
  },
  {
    name: "withdrawn with something that is not a date: still withdrawn",
    entity: entity({ authorised: ["2019-02-01", "soon"] }),
    expected: { status: "withdrawn" },
    absent: ["withdrawnOn"],
  },
  {
    name: "withdrawn and no services left: kept, so lookups can say so",
    entity: entity({ authorised: ["2019-02-01", "2024-03-01"], services: [] }),
    expected: { status: "withdrawn", roles: [] },
  },
  {
    name: "AIS-only, passported (service codes as single strings)",
    entity: entity({ type: "PSD_AISP", services: [{ FI: "PS_080" }, { SE: "PS_080" }, { DE: "PS_080" }] }),
    expected: { roles: ["PSP_AI"], countries: { PSP_AI: ["DE", "FI", "SE"] } },
  },
  {
    name: "PI passported to some countries, AIS only at home",
    entity: entity({
      services: [{ FI: ["PS_070", "PS_080"] }, { NO: ["PS_070"] }, { DK: ["PS_070", "PS_030"] }],
    }),
    expected: { roles: ["PSP_AI", "PSP_PI"], countries: { PSP_PI: ["DK", "FI", "NO"], PSP_AI: ["FI"] } },
  },
  {
    name: "home country counts even when Services only lists passports",
    entity: entity({ type: "PSD_AISP", services: [{ SE: ["PS_080"] }] }),
    expected: { countries: { PSP_AI: ["FI", "SE"] } },
  },
  {
    name: "an e-money institution offering PIS",
    entity: entity({ type: "PSD_EMI", services: [{ FI: ["PS_070"] }] }),
    expected: { roles: ["PSP_PI"] },
  },
  { name: "an agent is not a TPP", entity: entity({ type: "PSD_AG" }), expected: "not a PSD2 TPP type" },
  { name: "a branch is not a TPP", entity: entity({ type: "PSD_BR" }), expected: "not a PSD2 TPP type" },
  {
    name: "a payment institution without PIS or AIS",
    entity: entity({ services: [{ FI: ["PS_010", "PS_030"] }] }),
    expected: "no PIS or AIS service",
  },
  { name: "no reference", entity: entity({ reference: null }), expected: "no national reference" },
  { name: "reference of spaces", entity: entity({ reference: " - " }), expected: "no national reference" },
  {
    name: "reference not a string",
    entity: entity({ reference: { x: 1 } }),
    expected: "no national reference",
  },
  { name: "CA_OwnerID without NCA", entity: entity({ owner: "FI" }), expected: "bad CA_OwnerID" },
  { name: "CA_OwnerID with a dot", entity: entity({ owner: "FI.FINFSA" }), expected: "bad CA_OwnerID" },
  { name: "CA_OwnerID a number", entity: entity({ owner: 42 }), expected: "bad CA_OwnerID" },
  { name: "no ENT_AUT", entity: entity({ authorised: null }), expected: "no authorisation date" },
  {
    name: "ENT_AUT not a date",
    entity: entity({ authorised: ["yesterday"] }),
    expected: "no authorisation date",
  },
  { name: "null", entity: null, expected: "not an entity" },
  { name: "a string", entity: "PSD_PI", expected: "not an entity" },
  { name: "an object without EntityType", entity: { Version: "1" }, expected: "not an entity" },
  {
    name: "Properties and Services of the wrong shapes",
    entity: { ...entity({}), Properties: "x", Services: { FI: "PS_070" } },
    expected: "no national reference",
  },
];

describe("EBA register mapping", () => {
  it.each(named(MAPPED))("%s", (_name, row) => {
    const mapped = mapEbaEntity(row.entity);
    if (typeof row.expected === "string") expect(mapped).toBe(row.expected);
    else expect(mapped).toMatchObject(row.expected);
    for (const key of row.absent ?? []) expect(mapped).not.toHaveProperty(key);
  });

  it("maps a whole document, counting what it skips, and prefers the authorised copy of a duplicate", () => {
    const mapping = mapEbaRegister(
      [
        [{ Version: "1.0" }],
        [
          entity({ authorised: ["2019-02-01", "2020-01-01"] }),
          entity({ reference: "2988 4997", name: "Example Oy (re-authorised)" }),
          entity({ type: "PSD_AG" }),
          entity({ owner: "??" }),
          7,
        ],
      ],
      "eba",
    );
    expect(mapping.entries).toHaveLength(1);
    expect(mapping.entries[0]).toMatchObject({
      name: "Example Oy (re-authorised)",
      status: "authorised",
      source: "eba",
    });
    expect(mapping.skipped).toEqual({ "not an entity": 2, "not a PSD2 TPP type": 1, "bad CA_OwnerID": 1 });
    expect(mapping.skippedTotal).toBe(4);
  });

  it("never throws, whatever JSON it is given", () => {
    const anyEntity = fc.record(
      {
        CA_OwnerID: fc.oneof(fc.constantFrom("FI_FINFSA", "MT-MFSA", "x_"), fc.anything()),
        EntityType: fc.oneof(fc.constantFrom("PSD_PI", "PSD_AISP", "PSD_EMI", "PSD_AG"), fc.anything()),
        Properties: fc.oneof(
          fc.array(
            fc.oneof(
              fc.record({ ENT_NAT_REF_COD: fc.anything() }),
              fc.record({ ENT_NAM: fc.oneof(fc.string(), fc.array(fc.anything()), fc.anything()) }),
              fc.record({
                ENT_AUT: fc.oneof(
                  fc.array(fc.oneof(fc.constant("2020-01-01"), fc.anything())),
                  fc.anything(),
                ),
              }),
              fc.anything(),
            ),
          ),
          fc.anything(),
        ),
        Services: fc.oneof(
          fc.array(
            fc.dictionary(
              fc.oneof(fc.constantFrom("FI", "se"), fc.string()),
              fc.oneof(fc.constantFrom("PS_070", "PS_080"), fc.array(fc.anything()), fc.anything()),
            ),
          ),
          fc.anything(),
        ),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.oneof(fc.anything(), fc.array(fc.array(fc.oneof(anyEntity, fc.anything())))),
        (document) => {
          const mapping = mapEbaRegister(document);
          for (const entry of mapping.entries) {
            expect(entry.organizationIdentifier).toMatch(/^PSD[A-Z]{2}-[A-Z0-9]+-\S+$/);
            expect(["authorised", "withdrawn"]).toContain(entry.status);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("reads JSON-parsed hostile shapes (__proto__ keys, deep nesting) without throwing", () => {
    const hostile = JSON.parse(
      '[[{"__proto__":{"EntityType":"PSD_PI"},"CA_OwnerID":"FI_FINFSA"},{"EntityType":"PSD_PI","CA_OwnerID":"FI_FINFSA","Properties":[{"__proto__":{"ENT_NAT_REF_COD":"1"}}]}]]',
    );
    expect(mapEbaRegister(hostile).entries).toEqual([]);
    let deep: unknown = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(mapEbaRegister(deep).entries).toEqual([]);
  });
});

describe("dev EBA register", () => {
  const tpps = [
    { organizationId: "PSDNO-FSA-123456", name: "Dev AS", roles: ["PSP_AI", "PSP_PI"] as const },
    {
      organizationId: "PSDFI-FINFSA-29884997",
      name: "Passporting Oy",
      roles: ["PSP_PI", "PSP_AI", "PSP_AS"] as const,
      countries: { PSP_PI: ["NO", "SE"] },
    },
    {
      organizationId: "PSDMT-MFSA-C102960",
      name: "Gone Ltd",
      roles: ["PSP_AI"] as const,
      withdrawnOn: "2024-03-01",
    },
  ];

  it("maps back to the same TPPs, from the document and from the ZIP", () => {
    const document = ebaRegisterDocument(tpps.map((t) => ({ ...t, roles: [...t.roles] })));
    const fromDoc = mapEbaRegister(document).entries;
    const fromZip = decodeRegister(ebaRegisterZip(document), { format: "eba-zip" });
    expect(fromZip.zipped).toBe(true);
    for (const entries of [fromDoc, fromZip.entries]) {
      const byId = new Map(entries.map((e) => [e.organizationIdentifier, e]));
      expect([...byId.keys()].sort()).toEqual(tpps.map((t) => t.organizationId).sort());
      expect(byId.get("PSDNO-FSA-123456")).toMatchObject({
        roles: ["PSP_AI", "PSP_PI"],
        status: "authorised",
      });
      expect(byId.get("PSDFI-FINFSA-29884997")?.countries).toEqual({
        PSP_PI: ["FI", "NO", "SE"],
        PSP_AI: ["FI"],
      });
      expect(byId.get("PSDMT-MFSA-C102960")).toMatchObject({
        status: "withdrawn",
        withdrawnOn: "2024-03-01",
      });
    }
  });

  it("refuses what the EBA format cannot express", () => {
    expect(() =>
      ebaRegisterDocument([{ organizationId: "PSDNO-FSA-12-34", name: "x", roles: ["PSP_AI"] }]),
    ).toThrow("cannot express");
    expect(() =>
      ebaRegisterDocument([{ organizationId: "VATNO-123", name: "x", roles: ["PSP_AI"] }]),
    ).toThrow();
    expect(() =>
      ebaRegisterDocument([{ organizationId: "PSDNO-FSA-1", name: "x", roles: ["PSP_AS"] }]),
    ).toThrow("neither PSP_PI nor PSP_AI");
  });
});
