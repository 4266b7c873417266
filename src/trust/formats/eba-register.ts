/**
 * The EBA PSD2 register mapped to register entries. Pure: the JSON comes in already parsed,
 * entries and counts go out. The file is published by the EBA but fed by 30 national
 * authorities, so every entity is read defensively: an entity that is not a PSD2 TPP, or lacks
 * what the organizationIdentifier needs, is skipped and counted, never fatal.
 *
 * organizationIdentifier (ETSI TS 119 495 5.2.1) = `PSD` + country + `-` + NCA id + `-` + the
 * NCA's reference (`ENT_NAT_REF_COD`) with spaces and dashes removed. Country and NCA id come from
 * `CA_OwnerID`; the published files use an underscore (`FI_FINFSA`, `IE_CBI`, `DE_BAFIN`), a
 * hyphen (`FI-FINFSA`) is accepted too.
 */

import type { Psd2Role, RegisterEntry } from "../../eidas/index.js";

/** PSD2 Annex I service codes that make a TPP role; PSP_AS and PSP_IC come only from our own JSON. */
const ROLE_BY_SERVICE: Readonly<Record<string, Psd2Role>> = { PS_070: "PSP_PI", PS_080: "PSP_AI" };

/**
 * Entity types that hold a licence of their own and may carry an eIDAS PSD2 certificate. Agents
 * (PSD_AG), branches (PSD_BR), e-money distributors (PSD_EMD) and exempted entities act under
 * someone else's licence: not TPPs here. Unknown types are skipped (fail closed).
 */
const TPP_TYPES: ReadonlySet<string> = new Set(["PSD_PI", "PSD_AISP", "PSD_EMI", "PSD_EPI", "PSD_EEMI"]);

const COUNTRY = /^[A-Z]{2}$/;
const NCA_ID = /^[A-Z0-9]{1,16}$/;
const OWNER = /^([A-Za-z]{2})[_-]([A-Za-z0-9]{1,16})$/;
const ISO_DATE = /^(\d{4}-\d{2}-\d{2})/;
/** Bounds on what one entity may contribute: a hostile file must not make an entry huge. */
const MAX_NAME = 512;
const MAX_REFERENCE = 64;

export type EbaSkipReason =
  | "not an entity"
  | "not a PSD2 TPP type"
  | "no PIS or AIS service"
  | "bad CA_OwnerID"
  | "no national reference"
  | "no authorisation date"
  | "malformed";

export interface EbaMapping {
  readonly entries: RegisterEntry[];
  /** Entities (and non-entity values) left out, by reason. */
  readonly skipped: Partial<Record<EbaSkipReason, number>>;
  readonly skippedTotal: number;
}

type Mapped = RegisterEntry | EbaSkipReason;

/**
 * Maps a parsed EBA register document (an array of arrays of entities; a flat array of entities
 * is accepted too). Never throws. When one organizationIdentifier appears twice (re-authorised
 * after a withdrawal), the authorised entity wins, else the first.
 */
export function mapEbaRegister(document: unknown, source = "EBA"): EbaMapping {
  const byId = new Map<string, RegisterEntry>();
  const skipped: Partial<Record<EbaSkipReason, number>> = {};
  let skippedTotal = 0;
  const visit = (value: unknown): void => {
    const mapped = safeMapEntity(value, source);
    if (typeof mapped === "string") {
      skipped[mapped] = (skipped[mapped] ?? 0) + 1;
      skippedTotal++;
      return;
    }
    const seen = byId.get(mapped.organizationIdentifier);
    if (!seen || (seen.status !== "authorised" && mapped.status === "authorised")) {
      byId.set(mapped.organizationIdentifier, mapped);
    }
  };
  if (Array.isArray(document)) {
    for (const group of document) {
      if (Array.isArray(group)) for (const value of group) visit(value);
      else visit(group);
    }
  } else {
    visit(document);
  }
  return { entries: [...byId.values()], skipped, skippedTotal };
}

/** One entity; the try is defence in depth, the checks below are meant to make it unreachable. */
function safeMapEntity(value: unknown, source: string): Mapped {
  try {
    return mapEbaEntity(value, source);
  } catch {
    return "malformed";
  }
}

/** One EBA entity to a register entry, or the reason it is left out. */
export function mapEbaEntity(value: unknown, source = "EBA"): Mapped {
  if (!isObject(value)) return "not an entity";
  const type = own(value, "EntityType");
  if (typeof type !== "string") return "not an entity";
  if (!TPP_TYPES.has(type)) return "not a PSD2 TPP type";

  const owner = own(value, "CA_OwnerID");
  const ownerMatch = typeof owner === "string" ? OWNER.exec(owner) : null;
  if (!ownerMatch) return "bad CA_OwnerID";
  const country = ownerMatch[1]!.toUpperCase();
  const ncaId = ownerMatch[2]!.toUpperCase();
  if (!COUNTRY.test(country) || !NCA_ID.test(ncaId)) return "bad CA_OwnerID";

  const properties = readProperties(own(value, "Properties"));
  const rawReference = firstString(properties.get("ENT_NAT_REF_COD"));
  const reference = rawReference?.replace(/[\s-]+/g, "");
  if (!reference || reference.length > MAX_REFERENCE) return "no national reference";

  const authorisation = properties.get("ENT_AUT");
  const dates = Array.isArray(authorisation) ? authorisation : [authorisation];
  if (typeof dates[0] !== "string" || !ISO_DATE.test(dates[0])) return "no authorisation date";
  const withdrawal = dates[1];
  // A second element that is present but not a date still says "withdrawn": fail closed.
  const withdrawn = withdrawal !== undefined && withdrawal !== null && withdrawal !== "";
  const withdrawnOn = typeof withdrawal === "string" ? ISO_DATE.exec(withdrawal)?.[1] : undefined;

  const countries = serviceCountries(own(value, "Services"), country);
  const roles = (Object.keys(countries) as Psd2Role[]).sort();
  // A withdrawn TPP is kept whatever its services, so that lookups can say when it was withdrawn.
  if (!withdrawn && roles.length === 0) return "no PIS or AIS service";

  const organizationIdentifier = `PSD${country}-${ncaId}-${reference}`;
  const name = (firstString(properties.get("ENT_NAM")) ?? "").trim().slice(0, MAX_NAME);
  return {
    organizationIdentifier,
    name: name || organizationIdentifier,
    roles,
    status: withdrawn ? "withdrawn" : "authorised",
    ...(withdrawnOn ? { withdrawnOn } : {}),
    countries,
    source,
  };
}

/** `Properties` is a list of one-key objects; the first value of each key is kept. */
function readProperties(value: unknown): Map<string, unknown> {
  const properties = new Map<string, unknown>();
  if (!Array.isArray(value)) return properties;
  for (const property of value) {
    if (!isObject(property)) continue;
    for (const key of Object.keys(property)) {
      if (!properties.has(key)) properties.set(key, property[key]);
    }
  }
  return properties;
}

/** Where each role's service is authorised or passported; the home country counts for any role held. */
function serviceCountries(value: unknown, home: string): Partial<Record<Psd2Role, readonly string[]>> {
  const byRole = new Map<Psd2Role, Set<string>>();
  const add = (role: Psd2Role, country: string) => {
    const set = byRole.get(role) ?? new Set<string>();
    byRole.set(role, set.add(country));
  };
  if (Array.isArray(value)) {
    for (const service of value) {
      if (!isObject(service)) continue;
      for (const key of Object.keys(service)) {
        const country = key.toUpperCase();
        if (!COUNTRY.test(country)) continue;
        const codes = service[key];
        for (const code of Array.isArray(codes) ? codes : [codes]) {
          const role =
            typeof code === "string" && Object.hasOwn(ROLE_BY_SERVICE, code)
              ? ROLE_BY_SERVICE[code]
              : undefined;
          if (role) add(role, country);
        }
      }
    }
  }
  const result: Partial<Record<Psd2Role, readonly string[]>> = {};
  for (const [role, set] of byRole) {
    set.add(home);
    result[role] = [...set].sort();
  }
  return result;
}

/** A string, or the first non-empty string of an array (ENT_NAM in several scripts). */
function firstString(value: unknown): string | undefined {
  if (typeof value === "string") return value.trim() ? value : undefined;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === "string" && item.trim()) return item;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}
