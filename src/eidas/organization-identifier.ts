/**
 * The subject's organizationIdentifier (2.5.4.97) in the PSD2 form of ETSI EN 319 412-1 5.1.4
 * and ETSI TS 119 495 5.2.1: `PSD` + the NCA's country + `-` + the NCA's id + `-` + the
 * authorisation number the NCA gave the PSP, e.g. `PSDNO-FSA-123456`.
 */

export const ORGANIZATION_IDENTIFIER_OID = "2.5.4.97";

export interface PsdOrganizationIdentifier {
  readonly scheme: "PSD";
  /** ISO 3166-1 alpha-2 (or `EU`) of the NCA. */
  readonly country: string;
  /** The NCA's identifier: the part after the country up to the next hyphen. */
  readonly ncaId: string;
  /** The PSP's authorisation number; everything after the second hyphen, hyphens included. */
  readonly number: string;
}

// TS 119 495 asks for a 2–8 letter NCA id; digits are let through because registers are not all tidy.
const PSD_FORM = /^PSD([A-Z]{2})-([A-Za-z0-9]+)-(.+)$/s;

/** The split PSD form, or undefined when the value does not follow it (VAT…, NTR…, LEI…, or free text). */
export function parsePsdOrganizationIdentifier(value: string): PsdOrganizationIdentifier | undefined {
  const m = PSD_FORM.exec(value);
  if (!m) return undefined;
  return { scheme: "PSD", country: m[1]!, ncaId: m[2]!, number: m[3]! };
}
