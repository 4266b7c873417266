/**
 * A register arrives from a file or URL someone else controls: whatever the bytes (our JSON, the
 * EBA's JSON, a ZIP, garbage), decoding yields entries or an Error with a message, and every
 * entry it yields is well-formed. Each run counts what it checked and asserts the count, so a
 * generator that stops reaching a branch fails the test instead of passing it vacuously.
 */

import fc from "fast-check";
import { zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import type { RegisterEntry } from "../../../src/eidas/index.js";
import { PSD2_ROLES } from "../../../src/eidas/index.js";
import { decodeRegister, isZip } from "../../../src/trust/register-worker.js";

const FORMATS = ["auto", "json", "eba-json", "eba-zip"] as const;

function expectWellFormed(entry: RegisterEntry, roles: readonly string[]): void {
  expect(entry.organizationIdentifier.length).toBeGreaterThan(0);
  expect(typeof entry.name).toBe("string");
  expect(entry.name.length).toBeGreaterThan(0);
  for (const role of entry.roles) expect(roles).toContain(role);
}

describe("decodeRegister on hostile input", () => {
  it("arbitrary JSON values, bytes and ZIPs of them: entries or an Error, never anything else", () => {
    const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    // Our own format: well-formed entries (decoded), or one with one field wrong (refused).
    const good = fc.record({
      organizationIdentifier: fc.stringMatching(/^PSD[A-Z]{2}-[A-Z]{2,4}-\d{1,6}$/),
      name: fc.string({ minLength: 1 }),
      roles: fc.subarray([...PSD2_ROLES]),
      status: fc.constantFrom("authorised", "withdrawn"),
    });
    const wrong = {
      organizationIdentifier: ["", 42],
      name: ["", null],
      roles: [["PSP_XX"], "PSP_PI"],
      status: ["", true],
    } as const;
    const entry = fc.oneof(
      good,
      fc
        .tuple(good, fc.constantFrom(...(Object.keys(wrong) as (keyof typeof wrong)[])), fc.nat(1))
        .map(([e, field, i]) => ({ ...e, [field]: wrong[field][i] })),
    );
    const ours = fc.record({ tpps: fc.array(entry, { maxLength: 3 }) }).map(encode);
    const json = fc.oneof(fc.jsonValue({ maxDepth: 5 }).map(encode), ours);
    const zipped = json.map((b) => zipSync({ "register.json": b }));
    const seen = { json: 0, eba: 0, refused: 0, entries: 0 };
    fc.assert(
      fc.property(
        fc.oneof(json, zipped, fc.uint8Array({ maxLength: 256 })),
        fc.constantFrom(...FORMATS),
        (bytes, format) => {
          let result: ReturnType<typeof decodeRegister>;
          try {
            result = decodeRegister(bytes, { format });
          } catch (error) {
            expect(error).toBeInstanceOf(Error);
            expect((error as Error).message.length).toBeGreaterThan(0);
            seen.refused++;
            return;
          }
          seen[result.kind]++;
          expect(result.zipped).toBe(isZip(bytes));
          if (format === "json") expect(result.kind).toBe("json");
          if (format === "eba-json" || format === "eba-zip") expect(result.kind).toBe("eba");
          expect(Array.isArray(result.entries)).toBe(true);
          for (const entry of result.entries) expectWellFormed(entry, PSD2_ROLES);
          seen.entries += result.entries.length;
        },
      ),
      { numRuns: 400 },
    );
    // Every outcome was reached, not only refusals, and entries were checked (about 25 a run).
    expect(seen.entries).toBeGreaterThan(0);
    expect(seen.json).toBeGreaterThan(0);
    expect(seen.eba).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(0);
  });

  it("EBA-shaped documents with arbitrary fields: every entry yielded has an id, a name and known roles", () => {
    // Valid values often enough that many entities map to entries; hostile ones for the rest.
    const mostly = <T>(valid: fc.Arbitrary<T>) =>
      fc.oneof(
        { arbitrary: valid, weight: 8 },
        { arbitrary: fc.string(), weight: 1 },
        { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 1 },
      );
    const properties = fc
      .tuple(
        fc.record({ ENT_NAM: mostly(fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 3 }))) }),
        fc.record({
          ENT_NAT_REF_COD: mostly(
            fc.oneof(
              { arbitrary: fc.stringMatching(/^[0-9A-Z][0-9A-Z -]{0,11}$/), weight: 4 },
              { arbitrary: fc.constantFrom(" ", "", "--"), weight: 1 },
            ),
          ),
        }),
        fc.record({
          ENT_AUT: mostly(
            fc.oneof(
              fc.tuple(fc.constantFrom("2019-01-01", "2021-06-30T00:00:00")),
              fc.tuple(fc.constant("2019-01-01"), fc.constantFrom("2023-02-01", "", null, "soon")),
            ),
          ),
        }),
        fc.dictionary(fc.constantFrom("X", "ENT_NAM", "ENT_AUT"), fc.jsonValue({ maxDepth: 2 })),
      )
      // In any order (the first value of a key is the one read), sometimes one left out.
      .chain((all) => fc.shuffledSubarray<object>(all, { minLength: all.length - 1 }));
    const entity = fc.record(
      {
        CA_OwnerID: mostly(fc.constantFrom("NO_FSA", "FI-FINFSA", "de_bafin", "NOFSA")),
        EntityType: mostly(fc.constantFrom("PSD_PI", "PSD_AISP", "PSD_EMI", "PSD_EPI", "PSD_AG")),
        Properties: mostly(properties),
        Services: mostly(
          fc.array(
            fc.dictionary(
              fc.constantFrom("NO", "SE", "xx"),
              fc.oneof(fc.string(), fc.array(fc.constantFrom("PS_070", "PS_080", "PS_010"))),
            ),
            { maxLength: 3 },
          ),
        ),
      },
      { requiredKeys: ["CA_OwnerID", "EntityType", "Properties", "Services"] },
    );
    let entriesChecked = 0;
    fc.assert(
      fc.property(fc.array(fc.array(entity, { maxLength: 4 }), { maxLength: 3 }), (doc) => {
        // A JSON array of arrays is always an EBA document: decoding must not throw.
        const result = decodeRegister(new TextEncoder().encode(JSON.stringify(doc)), { format: "eba-json" });
        const entities = doc.flat().length;
        expect(result.kind).toBe("eba");
        // Every entity is mapped or skipped (one organizationIdentifier twice makes one entry).
        expect(result.entries.length + result.skipped).toBeLessThanOrEqual(entities);
        if (result.entries.length === 0) expect(result.skipped).toBe(entities);
        const byReason = Object.values(result.skippedByReason).reduce((a, b) => a + b, 0);
        expect(byReason).toBe(result.skipped);
        for (const entry of result.entries) {
          expect(entry.organizationIdentifier).toMatch(/^PSD[A-Z]{2}-[A-Z0-9]{1,16}-\S+$/);
          expectWellFormed(entry, ["PSP_PI", "PSP_AI"]);
          expect(["authorised", "withdrawn"]).toContain(entry.status);
          entriesChecked++;
        }
      }),
      { numRuns: 300 },
    );
    // The loop above checked entries, not none (about 50 a run; 10 leaves room for chance).
    expect(entriesChecked).toBeGreaterThanOrEqual(10);
  });
});
