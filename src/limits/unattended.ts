/**
 * SPEC 8: without the PSU present (no PSU-IP-Address, SPEC 5.16) a TPP may read balances at most
 * 4 times and transactions at most 4 times per 24 hours per account, and only transactions at most
 * 90 days old. A slot is reserved before the call is forwarded and handed back when the call does
 * not count (the backend did not answer 2xx), so the bank's own failures never burn a quota.
 */

import { createHash } from "node:crypto";
import { type Rejection, reject } from "../errors.js";
import type { LimitStore, MaybePromise, Reservation } from "./store.js";

export type LimitClass = "balances" | "transactions";

export interface UnattendedRoute {
  /** A path with `{account}` for the account id and `{*}` for any one segment. */
  readonly pattern: string;
  readonly class: LimitClass;
}

export const DEFAULT_UNATTENDED_ROUTES: readonly UnattendedRoute[] = [
  { pattern: "/v1/accounts/{account}/balances", class: "balances" },
  { pattern: "/v1/card-accounts/{account}/balances", class: "balances" },
  { pattern: "/v1/accounts/{account}/transactions", class: "transactions" },
  { pattern: "/v1/accounts/{account}/transactions/{*}", class: "transactions" },
  { pattern: "/v1/card-accounts/{account}/transactions", class: "transactions" },
  { pattern: "/v1/card-accounts/{account}/transactions/{*}", class: "transactions" },
];

export interface UnattendedOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly routes: readonly UnattendedRoute[];
  /** Count per consent as well (the Consent-ID header) instead of per account only. */
  readonly includeConsentId: boolean;
  /** Refuse unattended transaction reads whose dateFrom lies further back; 0 turns the rule off. */
  readonly maxTransactionAgeDays: number;
  /** When the store cannot be reached: refuse (false, the default) or let the call through. */
  readonly failOpen: boolean;
}

interface CompiledRoute {
  readonly segments: readonly string[];
  readonly accountAt: number;
  readonly class: LimitClass;
}

export interface LimitedCall {
  readonly class: LimitClass;
  readonly account: string;
}

/** A slot held for a call: give it back when the call did not count. */
export interface HeldSlot {
  release(): MaybePromise<void>;
}

export interface UnattendedRequest {
  readonly method: string;
  readonly target: string;
  /** The normalised path (routes.ts routingPath). */
  readonly routingPath: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly organizationId: string;
  readonly now: number;
}

const DAY = 24 * 3600 * 1000;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function describeWindow(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 1000)} s`;
}

export class UnattendedAccessPolicy {
  private readonly routes: CompiledRoute[];

  constructor(
    private readonly options: UnattendedOptions,
    private readonly store: LimitStore,
    private readonly events: {
      readonly onStoreError?: (error: unknown) => void;
      /** A call refused with ACCESS_EXCEEDED, for metrics. */
      readonly onExceeded?: (limitClass: LimitClass) => void;
    } = {},
  ) {
    this.routes = options.routes.map((r) => {
      const segments = r.pattern.toLowerCase().split("/").filter(Boolean);
      return { segments, accountAt: segments.indexOf("{account}"), class: r.class };
    });
  }

  /** Which limited class and account a GET path falls under, if any. */
  classify(method: string, routingPath: string): LimitedCall | undefined {
    if (method !== "GET") return undefined;
    const parts = routingPath.split("/").filter(Boolean);
    for (const route of this.routes) {
      if (route.segments.length !== parts.length) continue;
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const want = route.segments[i]!;
        ok = want.startsWith("{") || want === parts[i];
      }
      if (ok) return { class: route.class, account: route.accountAt >= 0 ? parts[route.accountAt]! : "" };
    }
    return undefined;
  }

  /**
   * Nothing to do (`undefined`) when the PSU is present or the route is not limited; otherwise a
   * held slot, or a rejection: ACCESS_EXCEEDED (429 with Retry-After), PERIOD_INVALID, or
   * SERVICE_UNAVAILABLE when the store cannot be reached and failing open is not configured.
   */
  admit(request: UnattendedRequest): MaybePromise<HeldSlot | Rejection | undefined> {
    if (request.headers["psu-ip-address"] !== undefined) return undefined;
    const call = this.classify(request.method, request.routingPath);
    if (!call) return undefined;

    if (call.class === "transactions" && this.options.maxTransactionAgeDays > 0) {
      const period = this.checkPeriod(request.target, request.now);
      if (period) return period;
    }

    const key = this.keyOf(request, call);
    let reservation: MaybePromise<Reservation>;
    try {
      reservation = this.store.reserve(key, this.options.limit, this.options.windowMs, request.now);
    } catch (error) {
      return this.storeFailed(error);
    }
    const decide = (r: Reservation): HeldSlot | Rejection => {
      if (r.allowed) return { release: () => this.store.release(key, r.slotId) };
      return this.exceeded(call, request.now, r.retryAfterMs);
    };
    return reservation instanceof Promise
      ? reservation.then(decide, (e: unknown) => this.storeFailed(e))
      : decide(reservation);
  }

  private keyOf(request: UnattendedRequest, call: LimitedCall): string {
    const consent = this.options.includeConsentId ? request.headers["consent-id"] : undefined;
    const consentPart = typeof consent === "string" ? `|${consent}` : "";
    // Hashed: account ids come from the path (attacker input); a digest bounds the key's size.
    const account = createHash("sha256").update(call.account).digest("base64url").slice(0, 22);
    return `ua|${request.organizationId}|${call.class}|${account}${consentPart}`;
  }

  private exceeded(call: LimitedCall, now: number, retryAfterMs: number): Rejection {
    this.events.onExceeded?.(call.class);
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    const next = new Date(now + retryAfterMs).toISOString();
    const what = call.class === "balances" ? "balance" : "transaction";
    return reject(
      "ACCESS_EXCEEDED",
      `without the PSU present (no PSU-IP-Address) at most ${this.options.limit} ${what} calls per ${describeWindow(this.options.windowMs)} are allowed for this account (SPEC 8); the next one is allowed at ${next} (in ${seconds} s)`,
      seconds,
    );
  }

  private checkPeriod(target: string, now: number): Rejection | undefined {
    const q = target.indexOf("?");
    if (q < 0) return undefined;
    const dateFrom = new URLSearchParams(target.slice(q + 1)).get("dateFrom");
    if (dateFrom === null) return undefined;
    const m = ISO_DATE.exec(dateFrom);
    const from = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
    if (Number.isNaN(from))
      return reject("FORMAT_ERROR", `dateFrom '${dateFrom.slice(0, 40)}' is not an ISO date (YYYY-MM-DD)`);
    const today = Math.floor(now / DAY) * DAY;
    const earliest = today - this.options.maxTransactionAgeDays * DAY;
    if (from < earliest) {
      return reject(
        "PERIOD_INVALID",
        `without the PSU present only transactions of the last ${this.options.maxTransactionAgeDays} days may be read (SPEC 8); dateFrom ${dateFrom} is earlier than ${new Date(earliest).toISOString().slice(0, 10)}`,
      );
    }
    return undefined;
  }

  private storeFailed(error: unknown): HeldSlot | Rejection | undefined {
    this.events.onStoreError?.(error);
    if (this.options.failOpen) return undefined;
    return reject(
      "SERVICE_UNAVAILABLE",
      "the limit store cannot be reached, so calls without the PSU present cannot be counted and are refused; try again shortly",
    );
  }
}
