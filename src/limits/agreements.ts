/**
 * Limits a TPP has agreed. The RTS (Art. 36(5)(b)) allows an AISP more than four unattended reads a
 * day where the AISP and the ASPSP agree, with the PSU's consent (EBA Q&A 2019_4631); a consent may
 * also ask for fewer (Berlin Group `frequencyPerDay`). Where the number comes from, most specific
 * first:
 *
 * 1. `config-consent`: the config's agreement for this TPP and Consent-ID;
 * 2. `consent`: the consent's own frequencyPerDay, which the bank's backend told the gateway in a
 *    response header (read, remembered in the limit store, removed before the TPP sees it);
 * 3. `config`: the config's agreement for this TPP;
 * 4. `register`: the register's `unattendedLimit` column for this TPP (where a bank keeps its
 *    agreements);
 * 5. `default`: `limits.unattended.limit` (SPEC 8: 4).
 *
 * The source, never the TPP, labels the metric: five values whatever the traffic.
 */

/** What an unattended call reads, each counted on its own (SPEC 8). */
export type LimitClass = "balances" | "transactions";

export const LIMIT_SOURCES = ["default", "register", "config", "consent", "config-consent"] as const;
export type LimitSource = (typeof LIMIT_SOURCES)[number];

/** A number of calls per window, per class, or one number for both classes. */
export type ClassLimits = number | Readonly<Partial<Record<LimitClass, number>>>;

/** One agreement in config: a TPP's, or one of its consents'. */
export interface LimitAgreement {
  readonly organizationId: string;
  /** Only this consent (the Consent-ID header); every consent of the TPP when absent. */
  readonly consentId?: string | undefined;
  readonly limit: ClassLimits;
}

/** The limit a call is held to, and where it came from. */
export interface AgreedLimit {
  readonly limit: number;
  readonly source: LimitSource;
  /** Counted per consent (a consent's own limit): the window's key names the consent. */
  readonly perConsent: boolean;
}

/** What is known about one call when its limit is chosen. */
export interface LimitQuestion {
  readonly organizationId: string;
  readonly consentId: string | undefined;
  readonly class: LimitClass;
  /** The register's column for the TPP, when its entry has one. */
  readonly register: ClassLimits | undefined;
  /** The consent's frequencyPerDay the backend told (from the limit store). */
  readonly consent: number | undefined;
}

export function limitFor(limits: ClassLimits, limitClass: LimitClass): number | undefined {
  return typeof limits === "number" ? limits : limits[limitClass];
}

/** The config's agreements, indexed once; answers which limit a call is held to. */
export class LimitAgreements {
  private readonly byTpp = new Map<string, ClassLimits>();
  private readonly byConsent = new Map<string, ClassLimits>();

  constructor(
    agreements: readonly LimitAgreement[],
    private readonly defaultLimit: number,
  ) {
    for (const a of agreements) {
      if (a.consentId === undefined) this.byTpp.set(a.organizationId, a.limit);
      else this.byConsent.set(consentKey(a.organizationId, a.consentId), a.limit);
    }
  }

  /** Whether any config agreement names a consent (then the Consent-ID is looked up). */
  get namesConsents(): boolean {
    return this.byConsent.size > 0;
  }

  choose(q: LimitQuestion): AgreedLimit {
    if (q.consentId !== undefined) {
      const agreed = this.byConsent.get(consentKey(q.organizationId, q.consentId));
      const own = agreed === undefined ? undefined : limitFor(agreed, q.class);
      if (own !== undefined) return { limit: own, source: "config-consent", perConsent: true };
      if (q.consent !== undefined) return { limit: q.consent, source: "consent", perConsent: true };
    }
    const tpp = this.byTpp.get(q.organizationId);
    const configured = tpp === undefined ? undefined : limitFor(tpp, q.class);
    if (configured !== undefined) return { limit: configured, source: "config", perConsent: false };
    const registered = q.register === undefined ? undefined : limitFor(q.register, q.class);
    if (registered !== undefined) return { limit: registered, source: "register", perConsent: false };
    return { limit: this.defaultLimit, source: "default", perConsent: false };
  }
}

/** The store's key for what a consent's frequencyPerDay is (the TPP's, so one TPP cannot set another's). */
export function consentKey(organizationId: string, consentId: string): string {
  return `${organizationId}|${consentId}`;
}

/** The most a consent may ask for per day: a bound on what a backend header can set. */
export const MAX_FREQUENCY_PER_DAY = 10_000;

/**
 * A backend's header telling a consent's frequencyPerDay: `<n>` for the request's own Consent-ID,
 * or `<n>; consent=<id>` naming it (the answer to a consent's creation, whose request has none).
 * Anything else is ignored (undefined): the backend is trusted, but not to send garbage.
 */
export function readConsentFrequency(
  value: string | string[] | undefined,
  requestConsentId: string | undefined,
): { readonly consentId: string; readonly frequencyPerDay: number } | undefined {
  if (typeof value !== "string") return undefined;
  const match = /^\s*(\d{1,5})\s*(?:;\s*consent\s*=\s*"?([A-Za-z0-9._~+/=-]{1,128})"?\s*)?$/.exec(value);
  if (!match) return undefined;
  const frequencyPerDay = Number(match[1]);
  const consentId = match[2] ?? requestConsentId;
  if (consentId === undefined || frequencyPerDay < 1 || frequencyPerDay > MAX_FREQUENCY_PER_DAY)
    return undefined;
  return { consentId, frequencyPerDay };
}
