/**
 * The register document in our own format (`{"tpps": [...]}`, docs/operations.md, Live trust,
 * "Register"): what a register source reads from a file or URL, validated entry by entry into
 * register entries. Pure: the text comes in, entries or an Error naming the offending path come out. The EBA's format is
 * eba-register.ts; telling them apart and unzipping is the loader's (register-worker.ts).
 */

import { z } from "zod";
import { PSD2_ROLES, type RegisterEntry } from "../../eidas/index.js";

const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "expected an ISO date (YYYY-MM-DD)");
const agreedLimit = z.number().int().min(0).max(10_000);
const country = z.string().regex(/^[A-Z]{2}$/, "expected an ISO 3166 country code");

const entrySchema = z.object({
  organizationIdentifier: z.string().min(1),
  name: z.string().min(1),
  roles: z.array(z.enum(PSD2_ROLES)),
  /** `authorised` is the only status that lets requests through; anything else blocks. */
  status: z.string().min(1),
  /** SHA-256 fingerprints (hex, any case, colons allowed); when given, only these certificates are accepted. */
  certificateFingerprints: z.array(z.string()).optional(),
  withdrawnOn: isoDate.optional(),
  /** Where each role may be used; without it, a role counts for every country. */
  countries: z.partialRecord(z.enum(PSD2_ROLES), z.array(country)).optional(),
  /** Unattended reads a day the bank agreed with the TPP: one number, or per class. */
  unattendedLimit: z
    .union([
      agreedLimit,
      z.object({ balances: agreedLimit.optional(), transactions: agreedLimit.optional() }).strict(),
    ])
    .optional(),
});

const documentSchema = z.object({
  updated: z.string().optional(),
  tpps: z.array(entrySchema),
});

/** Parses a register document in our own format; throws with the offending path on malformed input. */
export function parseRegisterDocument(text: string, source?: string): RegisterEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`register is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = documentSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`register entry ${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data.tpps.map((e) => ({
    ...e,
    certificateFingerprints: e.certificateFingerprints?.map((f) => f.replace(/:/g, "").toLowerCase()),
    ...(source !== undefined ? { source } : {}),
  }));
}
