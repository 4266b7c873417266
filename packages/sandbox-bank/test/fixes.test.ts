/**
 * x-accept-fix (SPEC 9.2): each fix active when asked for or from its default date on, on the
 * bank's clock; its effect checked through a real bank on the endpoint it changes. Plus the
 * header's parsing rules and the variant catalogues' caching (fixes.ts, catalogue.ts).
 */

import { afterAll, describe, expect, it } from "vitest";
import { buildCatalogue, catalogueFor, catalogueWithout } from "../src/catalogue.js";
import type { RequestContext } from "../src/context.js";
import { buildInitialData, DEFAULT_SEED } from "../src/data.js";
import {
  ALL_DEFAULT_FROM_MS,
  ALL_FIXES,
  defaultFixes,
  FIX,
  FIXES,
  inactiveFixes,
  parseAcceptFix,
  proprietaryCashAccountType,
} from "../src/fixes.js";
import type { BankData, CardAccount } from "../src/index.js";
import { truncateName } from "../src/render.js";
import {
  amountsIn,
  NOW,
  RAW_GATEWAY_HEADERS,
  type RunningBank,
  rawBody,
  sendRaw,
  startBank,
  TEST_TPP,
} from "./helpers.js";

type Behaviour = "fixed" | "unfixed";

interface AmountJson {
  currency: string;
  amount: string | number;
}
interface BookedJson {
  transactionId: string;
  bookingDate: string;
  valueDate: string;
  transactionAmount: AmountJson;
  creditorName?: string;
  creditorAccount?: { bban: string };
  remittanceInformationUnstructured: string;
  proprietaryBankTransactionCode: string;
  batchIndicator?: boolean;
  batchNumberOfTransactions?: number;
  entryDetails?: unknown[];
}
interface CardTransactionJson {
  cardTransactionId: string;
  transactionAmount: AmountJson;
  originalAmount: AmountJson;
}

const MIDNIGHT = (date: string) => Date.parse(`${date}T00:00:00Z`);

/** One bank per clock, started on first use: the data's dates follow the clock at start. */
const banks = new Map<number, Promise<RunningBank>>();
function bankAt(nowMs: number): Promise<RunningBank> {
  let bank = banks.get(nowMs);
  if (bank === undefined) {
    bank = startBank({ clock: () => nowMs });
    banks.set(nowMs, bank);
  }
  return bank;
}

afterAll(async () => {
  for (const bank of banks.values()) await (await bank).listener.close();
});

function customers(data: BankData) {
  const [kari, , bakery] = data.customers;
  return { kari: kari!, bakery: bakery! };
}

async function getJson(running: RunningBank, path: string, headers: Record<string, string>) {
  const answer = await running.call(path, { headers });
  expect(answer.status, `${path}: ${answer.text}`).toBe(200);
  return answer.json;
}

/** Headers of a request: the PSU, and x-accept-fix when the row asks for the fix. */
function withFix(fix: string | undefined, psu: Record<string, string>): Record<string, string> {
  return fix === undefined ? psu : { ...psu, "x-accept-fix": fix };
}

/**
 * Each probe makes the requests that show one fix, checks the answer is exactly one of the two
 * behaviours (in every detail) and says which.
 */
type Probe = (running: RunningBank, fix: string | undefined) => Promise<Behaviour>;

const amountAsString: Probe = async (running, fix) => {
  const { kari } = customers(running.bank.dataOf(TEST_TPP));
  const psu = { "PSU-ID": kari.customerId };
  const paths = [
    `/v1/accounts/${kari.accounts[0]!.resourceId}/balances`,
    `/v1/accounts/${kari.accounts[0]!.resourceId}/transactions?bookingStatus=both`,
    `/v1/card-accounts/${kari.cardAccounts[0]!.resourceId}`,
    `/v1/card-accounts/${kari.cardAccounts[0]!.resourceId}/transactions?bookingStatus=both`,
  ];
  const seen = new Set<string>();
  for (const path of paths) {
    const amounts = amountsIn(await getJson(running, path, withFix(fix, psu)));
    // The reference: the same request also asking for the fix, which a request may always do.
    const reference = fix === undefined ? "amount-as-string" : `${fix}, amount-as-string`;
    const strings = amountsIn(await getJson(running, path, withFix(reference, psu)));
    expect(amounts.map((each) => each.path)).toEqual(strings.map((each) => each.path));
    expect(amounts.length, path).toBeGreaterThan(0);
    for (const [index, { path: at, value }] of amounts.entries()) {
      const text = strings[index]!.value;
      expect(text, at).toMatch(/^-?\d+\.\d{2}$/);
      seen.add(typeof value);
      if (typeof value === "number") expect(value, at).toBe(Number(text));
      else expect(value, at).toBe(text);
    }
  }
  expect(seen.size, "every amount as a string, or every amount as a number").toBe(1);
  return seen.has("string") ? "fixed" : "unfixed";
};

const cardAmountSwitch: Probe = async (running, fix) => {
  const { kari } = customers(running.bank.dataOf(TEST_TPP));
  const card: CardAccount = kari.cardAccounts[0]!;
  const body = (await getJson(
    running,
    `/v1/card-accounts/${card.resourceId}/transactions?bookingStatus=both`,
    withFix(fix, { "PSU-ID": kari.customerId }),
  )) as { cardTransactions: { booked: CardTransactionJson[]; pending: CardTransactionJson[] } };
  const rendered = [...body.cardTransactions.booked, ...body.cardTransactions.pending];
  const model = [...card.booked, ...card.pending];
  expect(rendered.map((each) => each.cardTransactionId)).toEqual(model.map((each) => each.cardTransactionId));
  expect(model.some((each) => each.originalAmount.currency !== card.currency)).toBe(true);
  const money = (json: AmountJson) => ({
    currency: json.currency,
    minor: Math.round(Number(json.amount) * 100),
  });
  const behaviours = new Set<Behaviour>();
  for (const [index, each] of rendered.entries()) {
    const { transactionAmount, originalAmount } = model[index]!;
    const shown = { transaction: money(each.transactionAmount), original: money(each.originalAmount) };
    const same = { transaction: transactionAmount, original: originalAmount };
    const swapped = { transaction: originalAmount, original: transactionAmount };
    // A domestic purchase without markup reads the same either way: it only has to be right.
    if (JSON.stringify(same) === JSON.stringify(swapped)) {
      expect(shown).toEqual(same);
    } else if (shown.transaction.currency === transactionAmount.currency) {
      expect(shown).toEqual(same);
      behaviours.add("fixed");
    } else {
      expect(shown).toEqual(swapped);
      behaviours.add("unfixed");
    }
  }
  expect(behaviours.size).toBe(1);
  return [...behaviours][0]!;
};

const LONG_CARD_NAME = "Visa Gullkort for reiser og handel i utlandet Kari N"; // 51 characters

const longerNames: Probe = async (running, fix) => {
  const { kari, bakery } = customers(running.bank.dataOf(TEST_TPP));
  // A card account with a long name, made once per bank (names of the initial ones are short).
  let card = running.bank
    .dataOf(TEST_TPP)
    .customers[0]!.cardAccounts.find((each) => each.name === LONG_CARD_NAME);
  if (card === undefined) {
    const created = await running.call("/v1/sandbox/card-accounts", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ customerId: kari.customerId, name: LONG_CARD_NAME }),
    });
    expect(created.status, created.text).toBe(201);
    card = running.bank
      .dataOf(TEST_TPP)
      .customers[0]!.cardAccounts.find((each) => each.name === LONG_CARD_NAME)!;
  }
  const accounts = (
    (await getJson(
      running,
      "/v1/accounts",
      withFix(fix, { "PSU-ID": kari.customerId, "PSU-Corporate-ID": bakery.customerId }),
    )) as { accounts: { resourceId: string; name: string }[] }
  ).accounts;
  const cardJson = (
    (await getJson(
      running,
      `/v1/card-accounts/${card.resourceId}`,
      withFix(fix, { "PSU-ID": kari.customerId }),
    )) as {
      cardAccount: { name: string };
    }
  ).cardAccount;
  const names = [
    ...bakery.accounts.map((account, index) => ({ full: account.name, shown: accounts[index]!.name })),
    { full: card.name, shown: cardJson.name },
  ];
  expect(names.some(({ full }) => full.length > 35)).toBe(true);
  const behaviours = new Set(
    names
      .filter(({ full }) => full.length > 35)
      .map(({ full, shown }): Behaviour => {
        if (shown === full) return "fixed";
        expect(shown).toBe(full.slice(0, 35));
        return "unfixed";
      }),
  );
  for (const { full, shown } of names) if (full.length <= 35) expect(shown).toBe(full);
  expect(behaviours.size).toBe(1);
  return [...behaviours][0]!;
};

const groupBatchTransactions: Probe = async (running, fix) => {
  const { kari, bakery } = customers(running.bank.dataOf(TEST_TPP));
  const headers = withFix(fix, { "PSU-ID": kari.customerId, "PSU-Corporate-ID": bakery.customerId });
  const account = bakery.accounts[0]!;
  const batch = account.booked.find((each) => each.batch !== undefined)!;
  const members = batch.batch!;
  expect(members.length).toBeGreaterThan(1);
  const listed = (
    (await getJson(
      running,
      `/v1/accounts/${account.resourceId}/transactions?bookingStatus=booked`,
      headers,
    )) as {
      transactions: { booked: BookedJson[] };
    }
  ).transactions.booked;
  const details = (id: string) =>
    running.call(`/v1/accounts/${account.resourceId}/transactions/${id}`, { headers });
  const memberIds = members.map((_, index) => `${batch.transactionId}-${index + 1}`);
  const asBatch = listed.find((each) => each.transactionId === batch.transactionId);
  if (asBatch !== undefined) {
    expect(listed.length).toBe(account.booked.length);
    expect(asBatch).toMatchObject({ batchIndicator: true, batchNumberOfTransactions: members.length });
    expect(listed.some((each) => memberIds.includes(each.transactionId))).toBe(false);
    const detailed = await details(batch.transactionId);
    expect(detailed.status).toBe(200);
    expect(
      (detailed.json as { transactionsDetails: BookedJson }).transactionsDetails.entryDetails,
    ).toHaveLength(members.length);
    expect((await details(memberIds[0]!)).status).toBe(404);
    return "fixed";
  }
  // Without the fix: the members in the batch's place, each a transaction of its own.
  expect(listed.length).toBe(account.booked.length - 1 + members.length);
  const at = listed.findIndex((each) => each.transactionId === memberIds[0]);
  expect(at).toBe(account.booked.indexOf(batch));
  for (const [index, member] of members.entries()) {
    const shown = listed[at + index]!;
    expect(shown).toMatchObject({
      transactionId: memberIds[index],
      bookingDate: batch.bookingDate,
      valueDate: batch.valueDate,
      creditorName: member.creditorName,
      creditorAccount: { bban: member.creditorBban },
      remittanceInformationUnstructured: member.remittance,
      proprietaryBankTransactionCode: batch.proprietaryBankTransactionCode,
    });
    expect(Number(shown.transactionAmount.amount)).toBe(member.amount.minor / 100);
    expect(shown.batchIndicator).toBeUndefined();
    expect(shown.batchNumberOfTransactions).toBeUndefined();
    const detailed = await details(memberIds[index]!);
    expect(detailed.status).toBe(200);
    expect((detailed.json as { transactionsDetails: BookedJson }).transactionsDetails).toMatchObject({
      transactionId: memberIds[index],
      creditorName: member.creditorName,
    });
  }
  expect((await details(batch.transactionId)).status).toBe(404);
  return "unfixed";
};

const cashAccountTypeIso: Probe = async (running, fix) => {
  const { kari } = customers(running.bank.dataOf(TEST_TPP));
  const shown = [];
  for (const account of kari.accounts) {
    const body = (await getJson(
      running,
      `/v1/accounts/${account.resourceId}`,
      withFix(fix, { "PSU-ID": kari.customerId }),
    )) as { account: { cashAccountType: string } };
    shown.push(body.account.cashAccountType);
  }
  const iso = kari.accounts.map((account) => account.cashAccountType);
  expect(iso).toEqual(["CACC", "SVGS"]);
  if (shown.join() === iso.join()) return "fixed";
  expect(shown).toEqual(["CurrentAccount", "SavingsAccount"]);
  return "unfixed";
};

const PROBES: Record<string, Probe> = {
  "amount-as-string": amountAsString,
  "cardaccount-switch-originalamount-and-transactionamount": cardAmountSwitch,
  "longer-names": longerNames,
  groupBatchTransactions,
  "cash-account-type-iso": cashAccountTypeIso,
};

const DEFAULT_SINCE: Record<string, string> = {
  "amount-as-string": "2020-08-01",
  "cardaccount-switch-originalamount-and-transactionamount": "2024-11-13",
  "longer-names": "2024-10-01",
  groupBatchTransactions: "2024-10-01",
  "cash-account-type-iso": "2024-11-13",
};

const ROWS = Object.keys(PROBES).flatMap((fix) =>
  [false, true].flatMap((requested) =>
    (["before", "on"] as const).map((when) => ({
      fix,
      requested,
      when,
      // The last millisecond before the default date, or its first.
      nowMs: MIDNIGHT(DEFAULT_SINCE[fix]!) - (when === "before" ? 1 : 0),
      expected: (requested || when === "on" ? "fixed" : "unfixed") as Behaviour,
    })),
  ),
);

describe("x-accept-fix: each fix per request and by its default date (SPEC 9.2)", () => {
  it("knows exactly the fixes and dates of SPEC 9.2", () => {
    expect(Object.fromEntries(FIXES.map((fix) => [fix.value, fix.defaultSince]))).toEqual(DEFAULT_SINCE);
  });

  it.each(ROWS)(
    "$fix, requested: $requested, $when its default date → $expected",
    async ({ fix, requested, nowMs, expected }) => {
      const running = await bankAt(nowMs);
      expect(await PROBES[fix]!(running, requested ? fix : undefined)).toBe(expected);
    },
  );

  it("before every default date, a request asking for nothing gets every old behaviour, and asking for all gets today's", async () => {
    const running = await bankAt(MIDNIGHT("2019-06-01"));
    const all = FIXES.map((fix) => fix.value).join(", ");
    for (const [fix, probe] of Object.entries(PROBES)) {
      expect(await probe(running, undefined), fix).toBe("unfixed");
      expect(await probe(running, all), fix).toBe("fixed");
    }
  });

  it("cannot switch a fix off after its default date, whatever the header says", async () => {
    const running = await bankAt(NOW);
    for (const [fix, probe] of Object.entries(PROBES)) {
      for (const header of [undefined, "", "none", `-${fix}`, `!${fix}`, "amount-as-number"]) {
        expect(await probe(running, header), `${fix} with ${header}`).toBe("fixed");
      }
    }
  });

  it("serves the same bodies with or without the header once every fix is a default", async () => {
    const running = await bankAt(NOW);
    const { kari } = customers(running.bank.dataOf(TEST_TPP));
    const path = `/v1/accounts/${kari.accounts[0]!.resourceId}/transactions?bookingStatus=both`;
    const plain = await running.call(path, { headers: { "PSU-ID": kari.customerId } });
    const asked = await running.call(path, {
      headers: { "PSU-ID": kari.customerId, "x-accept-fix": FIXES.map((fix) => fix.value).join(",") },
    });
    expect(asked.text).toBe(plain.text);
  });
});

describe("x-accept-fix parsing", () => {
  const ALL = FIXES.map((fix) => fix.value);
  const maskOf = (values: readonly string[]) =>
    FIXES.filter((fix) => values.includes(fix.value)).reduce((mask, fix) => mask | fix.bit, 0);
  it.each<{ header: string | string[] | undefined; fixes: readonly string[] }>([
    { header: undefined, fixes: [] },
    { header: "", fixes: [] },
    { header: "amount-as-string", fixes: ["amount-as-string"] },
    { header: "AMOUNT-AS-STRING", fixes: ["amount-as-string"] },
    { header: "groupbatchtransactions", fixes: ["groupBatchTransactions"] },
    {
      header: " longer-names ,\tGroupBatchTransactions\t",
      fixes: ["longer-names", "groupBatchTransactions"],
    },
    { header: "longer-names,,, ,cash-account-type-iso,", fixes: ["longer-names", "cash-account-type-iso"] },
    { header: "longer-names, no-such-fix, amount-as-number", fixes: ["longer-names"] },
    { header: "longer-names;cash-account-type-iso", fixes: [] },
    { header: "longer names", fixes: [] },
    { header: "longer-names=true", fixes: [] },
    { header: ["longer-names", "Cash-Account-Type-ISO"], fixes: ["longer-names", "cash-account-type-iso"] },
    { header: ALL.join(","), fixes: ALL },
  ])("$header → $fixes", ({ header, fixes }) => {
    expect(parseAcceptFix(header)).toBe(maskOf(fixes));
  });

  it.each<{ date: string; defaults: readonly string[] }>([
    { date: "2019-12-31", defaults: [] },
    { date: "2020-08-01", defaults: ["amount-as-string"] },
    { date: "2024-09-30", defaults: ["amount-as-string"] },
    { date: "2024-10-01", defaults: ["amount-as-string", "longer-names", "groupBatchTransactions"] },
    { date: "2024-11-12", defaults: ["amount-as-string", "longer-names", "groupBatchTransactions"] },
    { date: "2024-11-13", defaults: ALL },
    { date: "2026-08-13", defaults: ALL },
  ])("on $date the defaults are $defaults", ({ date, defaults }) => {
    const expected = maskOf(defaults);
    // The whole UTC day: from its first millisecond to its last.
    for (const nowMs of [MIDNIGHT(date), MIDNIGHT(date) + 86_399_999]) {
      expect(defaultFixes(nowMs)).toBe(expected);
      expect(inactiveFixes(undefined, nowMs)).toBe(ALL_FIXES & ~expected);
      expect(inactiveFixes(ALL.join(","), nowMs)).toBe(0);
    }
  });

  it("leaves only the fixes neither asked for nor default inactive", () => {
    const at = MIDNIGHT("2024-10-15");
    expect(inactiveFixes("cash-account-type-iso", at)).toBe(FIX.cardAmountSwitch);
    expect(inactiveFixes("amount-as-string, longer-names", at)).toBe(
      FIX.cardAmountSwitch | FIX.cashAccountTypeIso,
    );
    expect(ALL_DEFAULT_FROM_MS).toBe(MIDNIGHT("2024-11-13"));
  });

  it("is honoured through the bank in any case and spacing, and over repeated header lines", async () => {
    const running = await bankAt(MIDNIGHT("2024-01-01"));
    const { kari } = customers(running.bank.dataOf(TEST_TPP));
    expect(await cashAccountTypeIso(running, "  Cash-Account-Type-ISO\t,Longer-Names ")).toBe("fixed");
    expect(await cashAccountTypeIso(running, "unknown-fix, another")).toBe("unfixed");
    const raw = await sendRaw(
      running.listener.port,
      `GET /v1/accounts/${kari.accounts[0]!.resourceId} HTTP/1.1\r\nHost: x\r\nPSU-ID: ${kari.customerId}\r\n` +
        `x-accept-fix: longer-names\r\nx-accept-fix: cash-account-type-iso\r\n${RAW_GATEWAY_HEADERS}Connection: close\r\n\r\n`,
    );
    expect(raw.status).toBe(200);
    expect((rawBody(raw.raw) as { account: { cashAccountType: string } }).account.cashAccountType).toBe(
      "CACC",
    );
  });

  it("never refuses a request for its x-accept-fix values", async () => {
    const running = await bankAt(MIDNIGHT("2024-01-01"));
    const { kari } = customers(running.bank.dataOf(TEST_TPP));
    for (const header of ["no-such-fix", ",,,", "amount-as-string;q=1", "é"]) {
      const answer = await running.call(`/v1/accounts/${kari.accounts[0]!.resourceId}`, {
        headers: { "PSU-ID": kari.customerId, "x-accept-fix": header },
      });
      expect(answer.status, header).toBe(200);
    }
  });
});

describe("variant catalogues", () => {
  const data = buildInitialData(DEFAULT_SEED, MIDNIGHT("2024-01-01"));

  it("serves every fix active from the catalogue itself, and other fix sets from variants built once", () => {
    const catalogue = buildCatalogue(data);
    expect(catalogueWithout(catalogue, 0)).toBe(catalogue);
    const short = catalogueWithout(catalogue, FIX.longerNames);
    expect(short === catalogue).toBe(false);
    expect(catalogueWithout(catalogue, FIX.longerNames)).toBe(short);
    expect(catalogueWithout(catalogue, FIX.longerNames | FIX.amountAsString) === short).toBe(false);
    // What no fix changes is shared, not rendered again.
    expect(short.customerLists).toBe(catalogue.customerLists);
    expect(short.customersByIdOrNumber).toBe(catalogue.customersByIdOrNumber);
    expect(short.data).toBe(catalogue.data);
    // A catalogue built anew (the data changed) has variants of its own.
    const rebuilt = buildCatalogue(data);
    expect(catalogueWithout(rebuilt, FIX.longerNames) === short).toBe(false);
    const texts = (lists: ReadonlyMap<string, Buffer>) =>
      [...lists].map(([id, body]) => [id, body.toString()]);
    expect(texts(catalogueWithout(rebuilt, FIX.longerNames).accountLists)).toEqual(texts(short.accountLists));
  });

  it("picks the catalogue by the request's header and the bank's clock", () => {
    const catalogue = buildCatalogue(data);
    const context = (nowMs: number, header?: string) =>
      ({
        req: { headers: header === undefined ? {} : { "x-accept-fix": header } },
        state: { catalogue },
        settings: { now: () => nowMs },
      }) as unknown as RequestContext;
    expect(catalogueFor(context(NOW))).toBe(catalogue);
    expect(catalogueFor(context(ALL_DEFAULT_FROM_MS, "nothing"))).toBe(catalogue);
    expect(catalogueFor(context(ALL_DEFAULT_FROM_MS - 1, FIXES.map((fix) => fix.value).join()))).toBe(
      catalogue,
    );
    expect(catalogueFor(context(ALL_DEFAULT_FROM_MS - 1))).toBe(
      catalogueWithout(catalogue, FIX.cardAmountSwitch | FIX.cashAccountTypeIso),
    );
  });

  it("serves a variant of the new data after a change", async () => {
    const running = await startBank({ clock: () => MIDNIGHT("2024-01-01") });
    try {
      const { kari } = customers(running.bank.dataOf(TEST_TPP));
      const list = async () =>
        (
          (await getJson(running, "/v1/card-accounts", { "PSU-ID": kari.customerId })) as {
            cardAccounts: { name: string }[];
          }
        ).cardAccounts.map((card) => card.name);
      expect(await list()).toEqual(kari.cardAccounts.map((card) => card.name));
      const created = await running.call("/v1/sandbox/card-accounts", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ customerId: kari.customerId, name: LONG_CARD_NAME }),
      });
      expect(created.status, created.text).toBe(201);
      expect(await list()).toEqual([
        ...kari.cardAccounts.map((card) => card.name),
        LONG_CARD_NAME.slice(0, 35),
      ]);
    } finally {
      await running.listener.close();
    }
  });
});

describe("the renderings of the old behaviours", () => {
  it("cuts names by code points, never inside a surrogate pair", () => {
    expect(truncateName("Konto", 35)).toBe("Konto");
    expect(truncateName("a".repeat(36), 35)).toBe("a".repeat(35));
    const emoji = `${"a".repeat(34)}💶💶`;
    expect(truncateName(emoji, 35)).toBe(`${"a".repeat(34)}💶`);
    expect(truncateName(`${"a".repeat(33)}💶`, 34)).toBe(`${"a".repeat(33)}💶`);
  });

  it("maps ISO cash account types to the bank's own, passing unknown codes through", () => {
    expect(["CACC", "SVGS", "LOAN", "TAXE"].map(proprietaryCashAccountType)).toEqual([
      "CurrentAccount",
      "SavingsAccount",
      "Loan",
      "TaxAccount",
    ]);
    expect(proprietaryCashAccountType("NREX")).toBe("NREX");
    expect(proprietaryCashAccountType("toString")).toBe("toString");
  });
});
