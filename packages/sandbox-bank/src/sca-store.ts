/**
 * What SCA leaves behind (SPEC 1.8, 1.9, 2.4, 2.6, 5.11–5.15): authorisation resources waiting for
 * the PSU at the SCA page, the consents the PSU granted there, which PSU a TPP's PSU-ID names, and
 * the TPP-Session-ID an SCA is valid in. Bounded like the payments: anyone may start an
 * authorisation, so past `capacity` the oldest are forgotten.
 */

import { randomBytes, randomUUID } from "node:crypto";

/**
 * SPEC 2.4. The sandbox passes RECEIVED → STARTED (page opened) → PSU_AUTHENTICATED (number and
 * one-time code right) → FINALISED or FAILED.
 */
export const SCA_STATUSES = [
  "RECEIVED",
  "PSU_IDENTIFIED",
  "PSU_AUTHENTICATED",
  "SCA_METHOD_SELECTED",
  "STARTED",
  "FINALISED",
  "FAILED",
  "EXEMPTED",
] as const;
export type ScaStatus = (typeof SCA_STATUSES)[number];

export type AuthorisationSubject =
  | { readonly kind: "consent"; readonly consentId: string }
  | { readonly kind: "payment"; readonly product: string; readonly paymentId: string }
  | { readonly kind: "basket"; readonly basketId: string };

/** How the TPP asked for the SCA (SPEC 5.13, 5.15): kept to honour it on the page and in the redirect. */
export interface ScaRequest {
  readonly organizationId: string;
  /** The TPP's registered name as the gateway tells it, shown to the PSU; undefined when not told. */
  readonly organizationName: string | undefined;
  readonly redirectUri: string;
  readonly tppSessionId: string | undefined;
  /** X-PSU-IDENTITY: the national identification number the page starts with. */
  readonly preselectedIdentity: string | undefined;
  /** X-PSU-AuthMethod-Preferred, shown as the method used. */
  readonly preferredMethod: string | undefined;
  /** TPP-Redirect-Preferred: false asks for the biometric (decoupled) flow where a device has one. */
  readonly redirectPreferred: boolean;
}

export interface Authorisation extends ScaRequest {
  readonly authorisationId: string;
  readonly subject: AuthorisationSubject;
  /** The page's forms must send it back, and the cookie set with the page must match it (CSRF). */
  readonly formToken: string;
  readonly createdAt: number;
  scaStatus: ScaStatus;
  /** The customer who identified at the page (with the right one-time code). */
  customerId: string | undefined;
  /** Wrong one-time codes typed so far; too many fail the authorisation. */
  wrongCodes: number;
  /** Why a FAILED authorisation failed, in words for the PSU ("you cancelled it"). */
  failure: string | undefined;
}

export type ConsentStatus = "received" | "valid" | "rejected" | "revokedByPsu" | "terminatedByTpp";

export interface CorporateContext {
  readonly customerId: string;
  readonly agreementId: string;
  /** What the TPP sends in PSU-Corporate-ID (SPEC 2.6). */
  readonly psuCorporateId: string;
}

export interface Consent {
  readonly consentId: string;
  readonly organizationId: string;
  readonly createdAt: number;
  consentStatus: ConsentStatus;
  /** Set when the PSU grants it. */
  psuId: string | undefined;
  customerId: string | undefined;
  corporate: CorporateContext | undefined;
  /** resourceIds of the accounts and card accounts granted. */
  accounts: ReadonlySet<string>;
  /** When the PSU last authenticated for it (SPEC 8: 180-day renewal). */
  scaAt: number | undefined;
}

export interface ConsentGrant {
  readonly psuId: string;
  readonly customerId: string;
  readonly corporate: CorporateContext | undefined;
  readonly accounts: ReadonlySet<string>;
  readonly scaAt: number;
}

/** Whom a PSU-ID (and PSU-Corporate-ID) given to a TPP names. */
export interface PsuIdentity {
  readonly customerId: string;
  readonly corporate: CorporateContext | undefined;
}

/** SPEC 5.15: the TPP-Session-ID an SCA was completed in, and when. */
export interface ScaSession {
  readonly tppSessionId: string;
  readonly scaAt: number;
}

export const DEFAULT_SCA_CAPACITY = 10_000;

/** The store as JSON can hold it: maps as [key, value] lists, sets as arrays. */
export interface ScaStoreSnapshot {
  readonly authorisations: readonly Authorisation[];
  readonly consents: readonly (Omit<Consent, "accounts"> & { readonly accounts: readonly string[] })[];
  readonly granted: readonly (readonly [string, readonly string[]])[];
  readonly identities: readonly (readonly [string, PsuIdentity])[];
  readonly sessions: readonly (readonly [string, ScaSession])[];
}

export class ScaStore {
  private readonly authorisations = new Map<string, Authorisation>();
  private readonly consents = new Map<string, Consent>();
  /** `${organizationId}\n${psuId}\n${psuCorporateId}` → the consents granted in that context. */
  private readonly granted = new Map<string, string[]>();
  /** `${organizationId}\n${psuId}\n${psuCorporateId}` → the PSU's identities for that TPP. */
  private readonly identities = new Map<string, PsuIdentity>();
  /** `${organizationId}\n${psuId}` → the session of the PSU's last completed SCA with that TPP. */
  private readonly sessions = new Map<string, ScaSession>();

  constructor(private readonly capacity: number = DEFAULT_SCA_CAPACITY) {}

  /** Random (crypto): consent and authorisation ids are what a TPP or a PSU's link acts on. */
  nextId(): string {
    return randomUUID();
  }

  /** Everything it holds, oldest first, for the state file (a consent's accounts as a list). */
  snapshot(): ScaStoreSnapshot {
    return {
      authorisations: [...this.authorisations.values()],
      consents: [...this.consents.values()].map((consent) => ({
        ...consent,
        accounts: [...consent.accounts],
      })),
      granted: [...this.granted],
      identities: [...this.identities],
      sessions: [...this.sessions],
    };
  }

  /** Adds a snapshot's entries in their order (a restart). */
  restore(snapshot: ScaStoreSnapshot): void {
    for (const authorisation of snapshot.authorisations) {
      bounded(this.authorisations, authorisation.authorisationId, { ...authorisation }, this.capacity);
    }
    for (const consent of snapshot.consents) {
      bounded(
        this.consents,
        consent.consentId,
        { ...consent, accounts: new Set(consent.accounts) },
        this.capacity,
      );
    }
    for (const [key, ids] of snapshot.granted) bounded(this.granted, key, [...ids], this.capacity);
    for (const [key, identity] of snapshot.identities) bounded(this.identities, key, identity, this.capacity);
    for (const [key, session] of snapshot.sessions) bounded(this.sessions, key, session, this.capacity);
  }

  startAuthorisation(request: ScaRequest, subject: AuthorisationSubject, now: number): Authorisation {
    const authorisation: Authorisation = {
      ...request,
      authorisationId: this.nextId(),
      subject,
      // Random, not seeded: a token an attacker could compute would protect nothing.
      formToken: randomBytes(18).toString("base64url"),
      createdAt: now,
      scaStatus: "RECEIVED",
      customerId: undefined,
      wrongCodes: 0,
      failure: undefined,
    };
    bounded(this.authorisations, authorisation.authorisationId, authorisation, this.capacity);
    return authorisation;
  }

  authorisation(authorisationId: string): Authorisation | undefined {
    return this.authorisations.get(authorisationId);
  }

  /** The authorisation `authorisationId` when it belongs to `subject`. */
  authorisationOf(subject: AuthorisationSubject, authorisationId: string): Authorisation | undefined {
    const authorisation = this.authorisations.get(authorisationId);
    return authorisation && subjectKey(authorisation.subject) === subjectKey(subject)
      ? authorisation
      : undefined;
  }

  /** The authorisations of one subject, oldest first. */
  authorisationsOf(subject: AuthorisationSubject): Authorisation[] {
    const key = subjectKey(subject);
    return [...this.authorisations.values()].filter((a) => subjectKey(a.subject) === key);
  }

  createConsent(organizationId: string, now: number): Consent {
    const consent: Consent = {
      consentId: this.nextId(),
      organizationId,
      createdAt: now,
      consentStatus: "received",
      psuId: undefined,
      customerId: undefined,
      corporate: undefined,
      accounts: new Set(),
      scaAt: undefined,
    };
    bounded(this.consents, consent.consentId, consent, this.capacity);
    return consent;
  }

  consent(organizationId: string, consentId: string): Consent | undefined {
    const consent = this.consents.get(consentId);
    return consent?.organizationId === organizationId ? consent : undefined;
  }

  /** The consent whatever TPP it is for: for the SCA page, where the PSU, not a TPP, acts. */
  consentById(consentId: string): Consent | undefined {
    return this.consents.get(consentId);
  }

  /** The PSU granted the consent at the SCA page. */
  grantConsent(consent: Consent, grant: ConsentGrant): void {
    consent.consentStatus = "valid";
    consent.psuId = grant.psuId;
    consent.customerId = grant.customerId;
    consent.corporate = grant.corporate;
    consent.accounts = grant.accounts;
    consent.scaAt = grant.scaAt;
    const key = identityKey(consent.organizationId, grant.psuId, grant.corporate?.psuCorporateId);
    const granted = this.granted.get(key) ?? [];
    granted.push(consent.consentId);
    bounded(this.granted, key, granted, this.capacity);
  }

  /** The valid consents the PSU granted this TPP in this context (corporate or not). */
  validConsents(organizationId: string, psuId: string, psuCorporateId: string | undefined): Consent[] {
    const key = identityKey(organizationId, psuId, psuCorporateId);
    const ids = this.granted.get(key);
    if (ids === undefined) return [];
    const found: Consent[] = [];
    const kept: string[] = [];
    for (const id of ids) {
      const consent = this.consents.get(id);
      if (consent === undefined) continue; // forgotten past capacity
      kept.push(id);
      if (consent.consentStatus === "valid") found.push(consent);
    }
    if (kept.length !== ids.length) this.granted.set(key, kept);
    return found;
  }

  remember(organizationId: string, psuId: string, identity: PsuIdentity): void {
    const key = identityKey(organizationId, psuId, identity.corporate?.psuCorporateId);
    bounded(this.identities, key, identity, this.capacity);
  }

  identity(
    organizationId: string,
    psuId: string,
    psuCorporateId: string | undefined,
  ): PsuIdentity | undefined {
    return this.identities.get(identityKey(organizationId, psuId, psuCorporateId));
  }

  /**
   * SPEC 5.15: a completed SCA in a new session invalidates the old session id; an aborted one
   * leaves it valid (only completions are recorded).
   */
  completeSession(
    organizationId: string,
    psuId: string,
    tppSessionId: string | undefined,
    now: number,
  ): void {
    if (tppSessionId === undefined) return;
    bounded(this.sessions, `${organizationId}\n${psuId}`, { tppSessionId, scaAt: now }, this.capacity);
  }

  session(organizationId: string, psuId: string): ScaSession | undefined {
    return this.sessions.get(`${organizationId}\n${psuId}`);
  }
}

function identityKey(organizationId: string, psuId: string, psuCorporateId: string | undefined): string {
  return `${organizationId}\n${psuId}\n${psuCorporateId ?? ""}`;
}

function subjectKey(subject: AuthorisationSubject): string {
  switch (subject.kind) {
    case "consent":
      return `consent/${subject.consentId}`;
    case "payment":
      return `payment/${subject.product}/${subject.paymentId}`;
    case "basket":
      return `basket/${subject.basketId}`;
  }
}

/** Sets `key` as the newest entry, forgetting the oldest past `capacity`. */
function bounded<V>(map: Map<string, V>, key: string, value: V, capacity: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > capacity) {
    const oldest = map.keys().next();
    if (oldest.done === true) break;
    map.delete(oldest.value);
  }
}
