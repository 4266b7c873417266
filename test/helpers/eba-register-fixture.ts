/**
 * A large register in the EBA's format, the size of the real one (~50 MB of JSON): agents
 * (which the mapping skips) between payment institutions with passported services.
 */

const COUNTRIES = ["FI", "SE", "NO", "DK", "DE", "FR", "IE", "MT", "NL", "BE"];
const OWNERS = ["FI_FINFSA", "SE_FI", "DK_DFSA", "DE_BAFIN", "FR_ACPR", "IE_CBI", "MT_MFSA", "NL_DNB"];

export interface LargeEbaRegister {
  readonly json: Uint8Array;
  /** Entries the mapping should give (distinct organizationIdentifiers). */
  readonly tpps: number;
  /** One TPP's organizationIdentifier, to look up. */
  readonly sample: string;
}

export function largeEbaRegister(targetBytes: number): LargeEbaRegister {
  const entities: unknown[] = [];
  let size = 0;
  let tpps = 0;
  for (let i = 0; size < targetBytes; i++) {
    const owner = OWNERS[i % OWNERS.length]!;
    const agent = i % 2 === 1;
    const passports = COUNTRIES.slice(0, i % COUNTRIES.length).map((c) => ({ [c]: ["PS_070", "PS_080"] }));
    const entity = {
      CA_OwnerID: owner,
      EntityCode: `${owner}!${i}`,
      EntityType: agent ? "PSD_AG" : i % 4 === 0 ? "PSD_AISP" : "PSD_PI",
      Properties: [
        { ENT_NAT_REF_COD: `R ${i}-A` },
        { ENT_NAM: i % 5 === 0 ? [`Institution ${i} Oy`, `Institution ${i} Ab`] : `Institution ${i} Ltd` },
        { ENT_ADD: `${i} Long Example Street, Building ${i % 97}` },
        { ENT_TOW_CIT_RES: "Example City" },
        { ENT_POS_COD: String(10000 + (i % 89999)) },
        { ENT_COU_RES: owner.slice(0, 2) },
        { ENT_AUT: i % 10 === 2 ? ["2019-01-01", "2024-03-01"] : ["2019-01-01"] },
      ],
      Services: [{ [owner.slice(0, 2)]: ["PS_010", i % 4 === 0 ? "PS_080" : "PS_070"] }, ...passports],
      __EBA_EntityVersion: "1",
    };
    if (!agent) tpps++;
    entities.push(entity);
    size += JSON.stringify(entity).length + 1;
  }
  const json = new TextEncoder().encode(JSON.stringify([[{ Version: "fixture" }], entities]));
  return { json, tpps, sample: `PSDFI-FINFSA-R0A` };
}
