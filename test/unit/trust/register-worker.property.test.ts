/**
 * A register arrives from a file or URL someone else controls: whatever the bytes (our JSON, the
 * EBA's JSON, a ZIP, garbage), decoding yields entries or an Error with a message, and every
 * entry it yields is well-formed.
 */

import fc from "fast-check";
import { zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { decodeRegister } from "../../../src/trust/register-worker.js";

const FORMATS = ["auto", "json", "eba-json", "eba-zip"] as const;

function decoded(bytes: Uint8Array, format: (typeof FORMATS)[number]) {
  try {
    return decodeRegister(bytes, { format });
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message.length).toBeGreaterThan(0);
    return undefined;
  }
}

describe("decodeRegister on hostile input", () => {
  it("arbitrary JSON values, bytes and ZIPs of them: entries or an Error, never anything else", () => {
    const json = fc.jsonValue({ maxDepth: 5 }).map((v) => new TextEncoder().encode(JSON.stringify(v)));
    const zipped = json.map((b) => zipSync({ "register.json": b }));
    fc.assert(
      fc.property(
        fc.oneof(json, zipped, fc.uint8Array({ maxLength: 256 })),
        fc.constantFrom(...FORMATS),
        (bytes, format) => {
          const result = decoded(bytes, format);
          if (!result) return;
          expect(result).toBeDefined();
        },
      ),
      { numRuns: 400 },
    );
  });

  it("EBA-shaped documents with arbitrary fields: every entry yielded has an id, a name and known roles", () => {
    const entity = fc.record(
      {
        CA_OwnerID: fc.oneof(fc.string(), fc.constantFrom("NO_FSA", "FI-FINFSA", "")),
        EntityType: fc.oneof(fc.string(), fc.constantFrom("PSD_PI", "PSD_AISP", "PSD_EMI")),
        Properties: fc.array(
          fc.dictionary(
            fc.constantFrom("ENT_NAM", "ENT_NAT_REF_COD", "ENT_AUT", "X"),
            fc.jsonValue({ maxDepth: 2 }),
          ),
          { maxLength: 5 },
        ),
        Services: fc.array(
          fc.dictionary(
            fc.constantFrom("NO", "SE", "xx"),
            fc.oneof(fc.string(), fc.array(fc.constantFrom("PS_070", "PS_080", "PS_010"))),
          ),
          { maxLength: 3 },
        ),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(fc.array(entity, { maxLength: 4 }), { maxLength: 3 }), (doc) => {
        const result = decoded(new TextEncoder().encode(JSON.stringify(doc)), "eba-json");
        if (!result) return;
        for (const entry of result.entries) {
          expect(entry.organizationIdentifier).toMatch(/^PSD[A-Z]{2}-/);
          expect(typeof entry.name).toBe("string");
          for (const role of entry.roles) expect(["PSP_PI", "PSP_AI"]).toContain(role);
        }
      }),
      { numRuns: 300 },
    );
  });
});
