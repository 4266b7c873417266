import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type AgreedLimit,
  LimitAgreements,
  type LimitQuestion,
  readConsentFrequency,
} from "../../../src/limits/agreements.js";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";

const TPP = "PSDDE-BAFIN-111111";
const agreements = new LimitAgreements(
  [
    { organizationId: TPP, limit: { balances: 10 } },
    { organizationId: TPP, consentId: "c-agreed", limit: 12 },
    { organizationId: "PSDDE-BAFIN-222222", limit: 0 },
  ],
  4,
);

const ask = (q: Partial<LimitQuestion>): AgreedLimit =>
  agreements.choose({
    organizationId: TPP,
    consentId: undefined,
    class: "balances",
    register: undefined,
    consent: undefined,
    ...q,
  });

describe("which limit an unattended call is held to (most specific first)", () => {
  it.each<[string, Partial<LimitQuestion>, AgreedLimit]>([
    [
      "a consent's agreement in config",
      { consentId: "c-agreed", consent: 2 },
      { limit: 12, source: "config-consent", perConsent: true },
    ],
    [
      "the consent's frequencyPerDay the backend told",
      { consentId: "c-told", consent: 2 },
      { limit: 2, source: "consent", perConsent: true },
    ],
    [
      "the TPP's agreement in config",
      { consentId: "c-none", register: 7 },
      { limit: 10, source: "config", perConsent: false },
    ],
    [
      "the register's column, where config leaves the class out",
      { class: "transactions", register: { transactions: 7 } },
      { limit: 7, source: "register", perConsent: false },
    ],
    [
      "SPEC 8's 4 where nothing is agreed",
      { class: "transactions", register: { balances: 9 } },
      { limit: 4, source: "default", perConsent: false },
    ],
    [
      "another TPP's agreement of 0 (no unattended access)",
      { organizationId: "PSDDE-BAFIN-222222" },
      { limit: 0, source: "config", perConsent: false },
    ],
    [
      "another TPP's consent id never matches this one's agreement",
      { organizationId: "PSDDE-BAFIN-333333", consentId: "c-agreed" },
      { limit: 4, source: "default", perConsent: false },
    ],
  ])("%s", (_what, question, expected) => {
    expect(ask(question)).toEqual(expected);
  });
});

describe("a backend's header telling a consent's frequencyPerDay", () => {
  it.each<[string | string[] | undefined, string | undefined, ReturnType<typeof readConsentFrequency>]>([
    ["8", "c1", { consentId: "c1", frequencyPerDay: 8 }],
    [" 3 ; consent=c-new", undefined, { consentId: "c-new", frequencyPerDay: 3 }],
    ['3; consent="c-quoted"', "c1", { consentId: "c-quoted", frequencyPerDay: 3 }],
    ["8", undefined, undefined],
    ["0", "c1", undefined],
    ["10001", "c1", undefined],
    ["-1", "c1", undefined],
    ["8, 9", "c1", undefined],
    [["8", "9"], "c1", undefined],
    ["4; consent=a b", "c1", undefined],
    [`4; consent=${"x".repeat(129)}`, "c1", undefined],
    [undefined, "c1", undefined],
  ])("%j for Consent-ID %s", (value, consent, expected) => {
    expect(readConsentFrequency(value, consent)).toEqual(expected);
  });
});

describe("remembered limits in the memory store", () => {
  it("expire with their time and survive a restart through the snapshot", async () => {
    let now = 1_000_000;
    const snapshotFile = join(mkdtempSync(join(tmpdir(), "psd2-agreed-")), "limits.json");
    const first = new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: 10, snapshotFile, now: () => now });
    first.rememberLimit("short", 2, 1_000);
    first.rememberLimit("long", 8, 60_000);
    expect([first.recallLimit("short"), first.recallLimit("long"), first.recallLimit("never")]).toEqual([
      2,
      8,
      undefined,
    ]);
    await first.close();
    now += 2_000;
    const second = new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: 10, snapshotFile, now: () => now });
    expect([second.recallLimit("short"), second.recallLimit("long")]).toEqual([undefined, 8]);
    now += 60_000;
    expect(second.recallLimit("long")).toBeUndefined();
    await second.close();
  });
});
