/**
 * A register in the EBA's own format for the dev PKI and tests: the JSON document (an array of
 * arrays of entities) and the ZIP the EBA publishes it in. Mapping the document back
 * (trust/formats/eba-register.ts) gives the same organizationIdentifiers, roles, countries and withdrawals.
 */

import { createHash } from "node:crypto";
import { strToU8, zipSync } from "fflate";
import { type Psd2Role, parsePsdOrganizationIdentifier } from "psd2-gateway/eidas";

export interface DevEbaTpp {
  /** `PSD` + country + `-` + NCA id + `-` + reference; the reference may not hold spaces or dashes (the EBA mapping drops them). */
  readonly organizationId: string;
  readonly name: string;
  /** PSP_PI and PSP_AI are written as services PS_070 and PS_080; PSP_AS and PSP_IC have no EBA service and are left out. */
  readonly roles: readonly Psd2Role[];
  /** ISO date; the entity is then listed as withdrawn. */
  readonly withdrawnOn?: string;
  /** Countries each role is passported to; the home country is always included. */
  readonly countries?: Partial<Record<Psd2Role, readonly string[]>>;
  /** Default 2019-09-14 (the day PSD2's RTS applied). */
  readonly authorisedOn?: string;
}

const SERVICE_BY_ROLE: Partial<Record<Psd2Role, string>> = { PSP_PI: "PS_070", PSP_AI: "PS_080" };

/** The EBA register JSON (parsed form) listing these TPPs; throws on an organizationId it cannot express. */
export function ebaRegisterDocument(tpps: readonly DevEbaTpp[]): unknown[][] {
  const entities = tpps.map((tpp, index) => {
    const id = parsePsdOrganizationIdentifier(tpp.organizationId);
    if (!id || /[\s-]/.test(id.number)) {
      throw new Error(
        `${tpp.organizationId} is a form of organizationIdentifier the EBA register cannot express`,
      );
    }
    const services = new Map<string, string[]>();
    for (const role of tpp.roles) {
      const code = SERVICE_BY_ROLE[role];
      if (!code) continue;
      for (const country of new Set([id.country, ...(tpp.countries?.[role] ?? [])])) {
        services.set(country, [...(services.get(country) ?? []), code]);
      }
    }
    const psd2 = tpp.roles.filter((r) => SERVICE_BY_ROLE[r]);
    if (psd2.length === 0 && !tpp.withdrawnOn) {
      throw new Error(
        `${tpp.organizationId} has neither PSP_PI nor PSP_AI; the EBA register would not list it as a TPP`,
      );
    }
    const owner = `${id.country}_${id.ncaId}`;
    return {
      CA_OwnerID: owner,
      EntityCode: `${owner}!${id.number}`,
      EntityType: psd2.includes("PSP_PI") ? "PSD_PI" : "PSD_AISP",
      Properties: [
        { ENT_NAT_REF_COD: id.number },
        { ENT_NAM: tpp.name },
        { ENT_COU_RES: id.country },
        { ENT_AUT: [tpp.authorisedOn ?? "2019-09-14", ...(tpp.withdrawnOn ? [tpp.withdrawnOn] : [])] },
      ],
      Services: [...services].map(([country, codes]) => ({ [country]: codes })),
      __EBA_EntityVersion: String(index + 1),
    };
  });
  // The published file starts with a list of its own before the entities; a mapper must skip it.
  return [[{ Version: "dev", Generated: "psd2-gateway dev PKI" }], entities];
}

/**
 * The document zipped the way the EBA publishes it: the JSON file and, unless `sidecar` is false, a
 * SHA-256 sidecar of it (`<name>.sha256`, as `sha256sum` writes it).
 */
export function ebaRegisterZip(
  document: unknown,
  fileName = "eba-psd2-register.json",
  options: { readonly sidecar?: boolean } = {},
): Uint8Array {
  const json = strToU8(JSON.stringify(document));
  const sidecar =
    options.sidecar === false ? {} : { [`${fileName}.sha256`]: strToU8(`${sha256Hex(json)}  ${fileName}\n`) };
  return zipSync({ [fileName]: json, ...sidecar }, { level: 6 });
}

/**
 * The EBA's file metadata (what `GET /register/api/filemetadata` answers) for a ZIP published at
 * `context` + `relativePath`: its size and SHA-256 computed from the bytes, `madeAt` in the EBA's
 * way of writing it (`Mon Aug 24 16:00:29 UTC 2026`).
 */
export function ebaFileMetadata(
  zip: Uint8Array,
  where: { readonly context: string; readonly relativePath: string; readonly madeAt: Date },
): string {
  return JSON.stringify({
    latest_version_relative_zip_path: where.relativePath,
    latest_version_relative_zip_size: String(zip.length),
    sha256_hash: sha256Hex(zip),
    timestamp: ebaTimestamp(where.madeAt),
    golden_copy_path_context: where.context,
  });
}

function ebaTimestamp(date: Date): string {
  // toUTCString: "Mon, 24 Aug 2026 16:00:29 GMT".
  const [weekday, day, month, year, time] = date.toUTCString().split(" ");
  return `${weekday!.slice(0, 3)} ${month} ${day} ${time} UTC ${year}`;
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
