import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";
import type { LimitStore } from "../../../src/limits/store.js";
import {
  DEFAULT_UNATTENDED_ROUTES,
  type HeldSlot,
  UnattendedAccessPolicy,
} from "../../../src/limits/unattended.js";

const NOW = Date.UTC(2026, 10, 22, 12);
const DAY = 24 * 3600 * 1000;

function policy(
  store: LimitStore = new MemoryLimitStore({ maxWindows: 100, maxReplayKeys: 100 }),
  overrides = {},
) {
  return new UnattendedAccessPolicy(
    {
      limit: 4,
      windowMs: DAY,
      routes: DEFAULT_UNATTENDED_ROUTES,
      includeConsentId: false,
      maxTransactionAgeDays: 90,
      failOpen: false,
      ...overrides,
    },
    store,
  );
}

function call(
  target: string,
  headers: Record<string, string> = {},
  organizationId = "PSDNO-FSA-1",
  now = NOW,
) {
  const path = target.split("?")[0]!.toLowerCase();
  return { method: "GET", target, routingPath: path, headers, organizationId, now };
}

async function admit(p: UnattendedAccessPolicy, ...args: Parameters<typeof call>) {
  return await p.admit(call(...args));
}

describe("unattended-access policy (SPEC 8)", () => {
  it("classifies balance and transaction reads of accounts and card accounts, GET only", () => {
    const p = policy();
    expect(p.classify("GET", "/v1/accounts/a1/balances")).toEqual({ class: "balances", account: "a1" });
    expect(p.classify("GET", "/v1/card-accounts/c1/balances")).toEqual({ class: "balances", account: "c1" });
    expect(p.classify("GET", "/v1/accounts/a1/transactions")).toEqual({
      class: "transactions",
      account: "a1",
    });
    expect(p.classify("GET", "/v1/accounts/a1/transactions/t9")).toEqual({
      class: "transactions",
      account: "a1",
    });
    expect(p.classify("GET", "/v1/card-accounts/c1/transactions")).toEqual({
      class: "transactions",
      account: "c1",
    });
    expect(p.classify("GET", "/v1/accounts")).toBeUndefined();
    expect(p.classify("GET", "/v1/accounts/a1")).toBeUndefined();
    expect(p.classify("POST", "/v1/accounts/a1/balances")).toBeUndefined();
  });

  it("lets the PSU-present call through untouched", async () => {
    const p = policy();
    for (let i = 0; i < 10; i++)
      expect(await admit(p, "/v1/accounts/a1/balances", { "psu-ip-address": "192.0.2.1" })).toBeUndefined();
  });

  it("allows 4 per account and class, then 429 ACCESS_EXCEEDED with Retry-After and the next allowed time", async () => {
    const p = policy();
    for (let i = 0; i < 4; i++) expect(isRejection(await admit(p, "/v1/accounts/a1/balances"))).toBe(false);
    const r = await admit(p, "/v1/accounts/a1/balances");
    expect(isRejection(r) && r.code).toBe("ACCESS_EXCEEDED");
    expect(isRejection(r) && r.retryAfterSeconds).toBe(24 * 3600);
    expect(isRejection(r) && r.text).toContain("at most 4 balance calls per 24 h");
    expect(isRejection(r) && r.text).toContain("2026-11-23T12:00:00.000Z");
    // Other class, other account, other TPP: their own windows.
    expect(isRejection(await admit(p, "/v1/accounts/a1/transactions"))).toBe(false);
    expect(isRejection(await admit(p, "/v1/accounts/a2/balances"))).toBe(false);
    expect(isRejection(await admit(p, "/v1/accounts/a1/balances", {}, "PSDNO-FSA-2"))).toBe(false);
  });

  it("counts per Consent-ID when configured", async () => {
    const p = policy(undefined, { includeConsentId: true });
    for (let i = 0; i < 4; i++) await admit(p, "/v1/accounts/a1/balances", { "consent-id": "c1" });
    expect(isRejection(await admit(p, "/v1/accounts/a1/balances", { "consent-id": "c1" }))).toBe(true);
    expect(isRejection(await admit(p, "/v1/accounts/a1/balances", { "consent-id": "c2" }))).toBe(false);
  });

  it("gives a slot back when released", async () => {
    const p = policy();
    const slots = [];
    for (let i = 0; i < 4; i++) slots.push((await admit(p, "/v1/accounts/a1/balances")) as HeldSlot);
    await slots[0]!.release();
    expect(isRejection(await admit(p, "/v1/accounts/a1/balances"))).toBe(false);
    expect(isRejection(await admit(p, "/v1/accounts/a1/balances"))).toBe(true);
  });

  it("refuses unattended transaction reads reaching back more than 90 days with PERIOD_INVALID", async () => {
    const p = policy();
    const ok = await admit(p, "/v1/accounts/a1/transactions?bookingStatus=booked&dateFrom=2026-08-24");
    expect(isRejection(ok)).toBe(false);
    const old = await admit(p, "/v1/accounts/a1/transactions?bookingStatus=booked&dateFrom=2026-08-23");
    expect(isRejection(old) && old.code).toBe("PERIOD_INVALID");
    expect(isRejection(old) && old.text).toContain("earlier than 2026-08-24");
    const bad = await admit(p, "/v1/accounts/a1/transactions?dateFrom=yesterday");
    expect(isRejection(bad) && bad.code).toBe("FORMAT_ERROR");
    // With the PSU present the bank decides.
    expect(
      await admit(p, "/v1/accounts/a1/transactions?dateFrom=2020-01-01", { "psu-ip-address": "192.0.2.1" }),
    ).toBeUndefined();
    // Switched off.
    expect(
      isRejection(
        await admit(
          policy(undefined, { maxTransactionAgeDays: 0 }),
          "/v1/accounts/a1/transactions?dateFrom=2020-01-01",
        ),
      ),
    ).toBe(false);
  });

  it("refuses with 503 when the store cannot be reached, or lets the call through when failing open", async () => {
    const broken: LimitStore = {
      reserve: () => Promise.reject(new Error("ECONNREFUSED")),
      release: () => undefined,
      checkAndRecord: () => false,
      ready: () => false,
      stats: { evictions: 0, errors: 0 },
      close: async () => {},
    };
    const closed = await admit(policy(broken), "/v1/accounts/a1/balances");
    expect(isRejection(closed) && closed.code).toBe("SERVICE_UNAVAILABLE");
    expect(await admit(policy(broken, { failOpen: true }), "/v1/accounts/a1/balances")).toBeUndefined();
  });
});
