import { describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";
import type { LimitStore } from "../../../src/limits/store.js";
import {
  checkDateFrom,
  checkTransactionDetails,
  DEFAULT_UNATTENDED_ROUTES,
  defaultPeriodRule,
  earliestReadableDay,
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
  const request = call(...args);
  return await p.admit(request, await p.agreedLimit(request));
}

describe("unattended-access policy (SPEC 8)", () => {
  it("classifies balance and transaction reads of accounts and card accounts, whatever the method", () => {
    const p = policy();
    expect(p.classify("GET", "/v1/accounts/a1/balances")).toEqual({
      class: "balances",
      account: "a1",
      period: "none",
    });
    expect(p.classify("GET", "/v1/card-accounts/c1/balances")).toEqual({
      class: "balances",
      account: "c1",
      period: "none",
    });
    expect(p.classify("GET", "/v1/accounts/a1/transactions")).toEqual({
      class: "transactions",
      account: "a1",
      period: "dateFrom",
    });
    expect(p.classify("GET", "/v1/accounts/a1/transactions/t9")).toEqual({
      class: "transactions",
      account: "a1",
      period: "bookingDate",
    });
    expect(p.classify("GET", "/v1/card-accounts/c1/transactions")).toEqual({
      class: "transactions",
      account: "c1",
      period: "dateFrom",
    });
    expect(p.classify("GET", "/v1/card-accounts/c1/transactions/t9")).toEqual({
      class: "transactions",
      account: "c1",
      period: "bookingDate",
    });
    expect(p.classify("GET", "/v1/accounts")).toBeUndefined();
    expect(p.classify("GET", "/v1/accounts/a1")).toBeUndefined();
    // HEAD is the read it is; a legacy core serving these whatever the method gives no free read.
    for (const method of ["HEAD", "POST", "PUT", "DELETE", "OPTIONS"])
      expect(p.classify(method, "/v1/accounts/a1/balances")).toEqual({
        class: "balances",
        account: "a1",
        period: "none",
      });
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

  it("reserves slots for transaction reads whatever their period (the period is its own step)", async () => {
    const p = policy();
    for (let i = 0; i < 4; i++)
      expect(isRejection(await admit(p, "/v1/accounts/a1/transactions?dateFrom=2020-01-01"))).toBe(false);
    const r = await admit(p, "/v1/accounts/a1/transactions/t1");
    expect(isRejection(r) && r.code).toBe("ACCESS_EXCEEDED");
  });

  it("refuses with 503 when the store cannot be reached, or lets the call through when failing open", async () => {
    const broken: LimitStore = {
      reserve: () => Promise.reject(new Error("ECONNREFUSED")),
      release: () => undefined,
      rememberLimit: () => Promise.reject(new Error("ECONNREFUSED")),
      recallLimit: () => Promise.reject(new Error("ECONNREFUSED")),
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

describe("which period rule an unattended call gets (SPEC 8: 90 days)", () => {
  const UNATTENDED = {};
  const PRESENT = { "psu-ip-address": "192.0.2.1" };

  it.each([
    ["GET", "/v1/accounts/a1/transactions", UNATTENDED, "dateFrom"],
    ["GET", "/v1/card-accounts/c1/transactions", UNATTENDED, "dateFrom"],
    ["GET", "/v1/accounts/a1/transactions/t1", UNATTENDED, "bookingDate"],
    ["GET", "/v1/card-accounts/c1/transactions/t1", UNATTENDED, "bookingDate"],
    ["GET", "/v1/accounts/a1/transactions", PRESENT, "none"],
    ["GET", "/v1/accounts/a1/transactions/t1", PRESENT, "none"],
    ["GET", "/v1/accounts/a1/balances", UNATTENDED, "none"],
    ["GET", "/v1/accounts", UNATTENDED, "none"],
    ["POST", "/v1/accounts/a1/transactions", UNATTENDED, "dateFrom"],
    ["HEAD", "/v1/accounts/a1/transactions", UNATTENDED, "dateFrom"],
    ["HEAD", "/v1/accounts/a1/transactions/t1", UNATTENDED, "bookingDate"],
  ] as const)("%s %s %o → %s", (method, path, headers, rule) => {
    expect(policy().periodRule(method, path, headers)).toBe(rule);
  });

  it("applies none when the rule is switched off (maxTransactionAgeDays: 0)", () => {
    const off = policy(undefined, { maxTransactionAgeDays: 0 });
    expect(off.checksPeriod).toBe(false);
    expect(off.periodRule("GET", "/v1/accounts/a1/transactions", {})).toBe("none");
  });

  it.each([
    [{ pattern: "/v1/accounts/{account}/transactions", class: "transactions" }, "dateFrom"],
    [{ pattern: "/v1/accounts/{account}/transactions/{*}", class: "transactions" }, "bookingDate"],
    [{ pattern: "/v1/accounts/{account}/transactions/{*}/x", class: "transactions" }, "dateFrom"],
    [{ pattern: "/v1/accounts/{account}/balances", class: "balances" }, "none"],
  ] as const)("a configured route without period: %o → %s", (route, rule) => {
    expect(defaultPeriodRule(route)).toBe(rule);
  });

  it("takes a route's own period over the default", () => {
    const p = policy(undefined, {
      routes: [
        { pattern: "/v1/accounts/{account}/transactions/{*}/x", class: "transactions", period: "none" },
      ],
    });
    expect(p.periodRule("GET", "/v1/accounts/a1/transactions/t1/x", {})).toBe("none");
  });
});

describe("an unattended transaction list's dateFrom (SPEC 8: 90 days)", () => {
  // NOW is 2026-11-22 12:00 UTC: 90 days back is 2026-08-24.
  const LIST = "/v1/accounts/a1/transactions";

  it("counts the days back from the UTC date of the clock", () => {
    expect(earliestReadableDay(NOW, 90)).toBe("2026-08-24");
    expect(earliestReadableDay(Date.UTC(2026, 10, 22, 0, 0, 0), 90)).toBe("2026-08-24");
    expect(earliestReadableDay(Date.UTC(2026, 10, 22, 23, 59, 59, 999), 90)).toBe("2026-08-24");
    expect(earliestReadableDay(Date.UTC(2026, 10, 23), 90)).toBe("2026-08-25");
    expect(earliestReadableDay(Date.UTC(2024, 4, 30), 90)).toBe("2024-03-01"); // across a leap day
  });

  it.each([
    // [query, code or undefined for admitted, a fragment of the text]
    ["?dateFrom=2026-08-24", undefined, ""],
    ["?bookingStatus=booked&dateFrom=2026-08-24&dateTo=2026-11-22", undefined, ""],
    ["?dateFrom=2026-11-22", undefined, ""],
    [
      "?dateFrom=2026-08-23",
      "PERIOD_INVALID",
      "send dateFrom on or after 2026-08-24; dateFrom 2026-08-23 is earlier",
    ],
    ["?dateFrom=2020-01-01", "PERIOD_INVALID", "dateFrom 2020-01-01 is earlier"],
    ["", "PERIOD_INVALID", "send dateFrom on or after 2026-08-24; this request has no dateFrom"],
    ["?bookingStatus=booked", "PERIOD_INVALID", "this request has no dateFrom"],
    ["?dateTo=2026-11-01", "PERIOD_INVALID", "this request has no dateFrom"],
    ["?dateFrom=yesterday", "FORMAT_ERROR", "dateFrom 'yesterday' is not an ISO date (YYYY-MM-DD)"],
    ["?dateFrom=2026-02-31", "FORMAT_ERROR", "is not an ISO date"],
    ["?dateFrom=2026-09-01T00:00:00Z", "FORMAT_ERROR", "is not an ISO date"],
    ["?dateFrom=", "FORMAT_ERROR", "is not an ISO date"],
    ["?dateFrom=2026-09-01&dateFrom=2020-01-01", "FORMAT_ERROR", "names dateFrom 2 times"],
    ["?dateFrom=2026-09-01&DATEFROM=2020-01-01", "FORMAT_ERROR", "exactly once, as dateFrom=YYYY-MM-DD"],
    ["?datefrom=2020-01-01", "FORMAT_ERROR", "in another spelling"],
    ["?date%46rom=2020-01-01", "FORMAT_ERROR", "in another spelling"],
    ["?dateFrom=2026-09-01&date%46rom=2020-01-01", "FORMAT_ERROR", "names dateFrom 2 times"],
    ["?x=1;dateFrom=2020-01-01&dateFrom=2026-09-01", "FORMAT_ERROR", "names dateFrom 2 times"],
    ["?dateFrom=2026-09-01&entryReferenceFrom=e1", "PARAMETER_NOT_SUPPORTED", "leave out entryReferenceFrom"],
    ["?dateFrom=2026-09-01&deltaList=true", "PARAMETER_NOT_SUPPORTED", "may ignore dateFrom"],
  ] as const)("%s → %s", (query, code, text) => {
    const r = checkDateFrom(LIST + query, NOW, 90);
    if (code === undefined) {
      expect(r).toBeUndefined();
      return;
    }
    expect(isRejection(r) && r.code).toBe(code);
    expect(isRejection(r) && r.text).toContain(text);
    // Every refusal says what to send.
    expect(isRejection(r) && r.text).toContain("send dateFrom on or after 2026-08-24");
    expect(isRejection(r) && r.text).toContain("without the PSU present (no PSU-IP-Address)");
  });

  it("counts other numbers of days", () => {
    expect(checkDateFrom(`${LIST}?dateFrom=2026-11-15`, NOW, 7)).toBeUndefined();
    const r = checkDateFrom(`${LIST}?dateFrom=2026-11-14`, NOW, 7);
    expect(isRejection(r) && r.text).toContain("the last 7 days only");
  });
});

describe("an unattended transaction's details, judged on the bank's answer (SPEC 8: 90 days)", () => {
  const details = (fields: Record<string, unknown>) =>
    JSON.stringify({ transactionsDetails: { transactionId: "t1", ...fields } });

  it.each([
    // [body, Content-Encoding, code or undefined for passed on, a fragment of the text]
    [details({ bookingDate: "2026-08-24", valueDate: "2026-08-20" }), undefined, undefined, ""],
    [details({ bookingDate: "2026-11-22" }), undefined, undefined, ""],
    [details({ valueDate: "2026-08-24" }), undefined, undefined, ""],
    [details({ bookingDate: null, valueDate: "2026-09-01" }), undefined, undefined, ""],
    [details({ bookingDate: "2026-08-24T23:59:59+02:00" }), undefined, undefined, ""],
    [details({ bookingDate: "2026-08-24" }), "identity", undefined, ""],
    [
      details({ bookingDate: "2026-08-23", valueDate: "2026-08-30" }),
      undefined,
      "PERIOD_INVALID",
      "this transaction's bookingDate is 2026-08-23, before 2026-08-24; read it with the PSU present",
    ],
    [details({ valueDate: "2026-08-23" }), undefined, "PERIOD_INVALID", "valueDate is 2026-08-23"],
    [details({ bookingDate: "2019-12-31" }), undefined, "PERIOD_INVALID", "bookingDate is 2019-12-31"],
    [details({ bookingDate: "2026-08-24" }), "gzip", "BAD_GATEWAY", "Content-Encoding gzip"],
    ["<html>", undefined, "BAD_GATEWAY", "is not JSON"],
    ["null", undefined, "BAD_GATEWAY", "has no transactionsDetails object"],
    ['{"transactionsDetails":"x"}', undefined, "BAD_GATEWAY", "has no transactionsDetails"],
    [details({}), undefined, "BAD_GATEWAY", "names neither bookingDate nor valueDate"],
    [details({ bookingDate: "last week" }), undefined, "BAD_GATEWAY", "bookingDate that is not an ISO date"],
    [details({ bookingDate: 20260901 }), undefined, "BAD_GATEWAY", "bookingDate that is not an ISO date"],
    [details({ bookingDate: "2026-02-30" }), undefined, "BAD_GATEWAY", "not an ISO date"],
  ] as const)("%s (%s) → %s", (body, encoding, code, text) => {
    const r = checkTransactionDetails(Buffer.from(body), encoding, NOW, 90);
    if (code === undefined) {
      expect(r).toBeUndefined();
      return;
    }
    expect(isRejection(r) && r.code).toBe(code);
    expect(isRejection(r) && r.text).toContain(text);
    expect(isRejection(r) && r.text).toContain("for the last 90 days only (SPEC 8)");
  });
});
