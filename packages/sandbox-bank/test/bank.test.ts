import { request as httpRequest } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSandboxBank, DEFAULT_IDENTITY_HEADERS } from "../src/index.js";
import {
  type Answer,
  amountsIn,
  type CustomerJson,
  daysBefore,
  type Link,
  NOW,
  RAW_GATEWAY_HEADERS,
  type RunningBank,
  rawBody,
  sendRaw,
  startBank,
  TEST_GATEWAY_SECRET,
  TODAY,
  throughGateway,
  tppCode,
  tppText,
} from "./helpers.js";
import { walkSca } from "./sca-walk.js";

interface AccountJson {
  resourceId: string;
  bban: string;
  currency: string;
  name: string;
  product: string;
  cashAccountType: string;
  status: string;
  _links: { balances: { href: string }; transactions: { href: string } };
}
interface BookedJson {
  transactionId: string;
  bookingDate: string;
  valueDate: string;
  transactionAmount: { currency: string; amount: string };
  creditorName?: string;
  debtorName?: string;
  remittanceInformationUnstructured: string;
  batchIndicator?: boolean;
  batchNumberOfTransactions?: number;
  _links: { transactionDetails: { href: string } };
}
interface PendingJson {
  valueDate: string;
  transactionAmount: { currency: string; amount: string };
}
interface TransactionsJson {
  account: { bban: string; currency: string };
  transactions: { booked?: BookedJson[]; pending?: PendingJson[]; _links: { account: { href: string } } };
}
interface CardTransactionJson {
  cardTransactionId: string;
  bookingDate?: string;
  transactionDate: string;
  transactionAmount: { currency: string; amount: string };
  originalAmount: { currency: string; amount: string };
  merchantCategoryCode: string;
  maskedPan: string;
}

const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
const VERBS = ["GET", "PUT", "POST", "DELETE"];

let running: RunningBank;
let customers: CustomerJson[];
let kari: CustomerJson;
let ola: CustomerJson;
let bakery: CustomerJson;

const psu = (customer: CustomerJson, extra: Record<string, string> = {}) => ({
  headers: { "PSU-ID": customer.customerId, ...extra },
});

async function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return running.call(path, { headers });
}

async function accountsOf(customer: CustomerJson): Promise<AccountJson[]> {
  const answer = await running.call("/v1/accounts", psu(customer));
  expect(answer.status).toBe(200);
  return (answer.json as { accounts: AccountJson[] }).accounts;
}

async function transactions(customer: CustomerJson, accountId: string, query: string) {
  const answer = await running.call(`/v1/accounts/${accountId}/transactions?${query}`, psu(customer));
  return { answer, body: answer.json as TransactionsJson };
}

function payment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instructedAmount: { amount: "125.50", currency: "NOK" },
    debtorAccount: { bban: running.bank.data.customers[0]!.accounts[0]!.bban },
    creditorAccount: { bban: "12345678903" },
    creditorName: "Per Bakken",
    remittanceInformationUnstructured: "Middag",
    ...overrides,
  };
}

async function postPayment(body: unknown, query = "", headers: Record<string, string> = {}): Promise<Answer> {
  return running.call(PAYMENTS + query, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

beforeAll(async () => {
  running = await startBank();
  const answer = await running.call("/v1/sandbox/customers?withAccounts=true&withAgreements=true");
  customers = answer.json as CustomerJson[];
  [kari, ola, bakery] = customers as [CustomerJson, CustomerJson, CustomerJson];
});

afterAll(async () => {
  await running.listener.close();
});

describe("the sandbox customer list (SPEC 1.7, 2.1, 4.2)", () => {
  it("holds two PRIVATE customers with 2 accounts and a card account, and two CORPORATE ones with 2 accounts", () => {
    expect(customers.map((customer) => customer.customerType)).toEqual([
      "PRIVATE",
      "PRIVATE",
      "CORPORATE",
      "CORPORATE",
    ]);
    for (const customer of customers) {
      const corporate = customer.customerType === "CORPORATE";
      expect(customer.accounts).toHaveLength(2);
      expect(customer.cardAccounts).toHaveLength(corporate ? 0 : 1);
      expect(customer.agreements.length > 0).toBe(corporate);
    }
    expect(new Set(customers.flatMap((customer) => customer.accounts)).size).toBe(8);
  });

  it("carries every field SPEC 2.1 requires, with the required types and Links", () => {
    const isLink = (link: Link) =>
      typeof link.href === "string" &&
      Array.isArray(link.verbs) &&
      link.verbs.length > 0 &&
      link.verbs.every((verb) => VERBS.includes(verb));
    for (const customer of customers) {
      expect(Object.keys(customer).sort()).toEqual(
        [
          "_links",
          "accounts",
          "agreements",
          "cardAccounts",
          "customerId",
          "customerName",
          "customerNumber",
          "customerType",
        ].sort(),
      );
      for (const field of ["customerId", "customerNumber", "customerName"] as const)
        expect(customer[field]).toMatch(/\S/);
      expect(customer.customerNumber).toMatch(customer.customerType === "PRIVATE" ? /^\d{11}$/ : /^\d{9}$/);
      expect(customer.accounts.every((id) => typeof id === "string")).toBe(true);
      expect(isLink(customer._links.self)).toBe(true);
      for (const agreement of customer.agreements) {
        expect(typeof agreement.id).toBe("string");
        expect(typeof agreement.name).toBe("string");
        expect(agreement.engagements.length).toBeGreaterThan(0);
        // An agreement grants accounts of its own customer (SPEC 1.8).
        for (const engagement of agreement.engagements) expect(customer.accounts).toContain(engagement);
        expect(isLink(agreement._links.self) && isLink(agreement._links.engagements)).toBe(true);
      }
    }
  });

  it("leaves accounts and agreements out unless asked, keeping the required fields as empty arrays", async () => {
    const bare = (await get("/v1/sandbox/customers")).json as CustomerJson[];
    expect(bare).toHaveLength(4);
    for (const customer of bare) {
      expect(customer.accounts).toEqual([]);
      expect(customer.cardAccounts).toEqual([]);
      expect(customer.agreements).toEqual([]);
    }
    const withAgreements = (await get("/v1/sandbox/customers?withAgreements=true")).json as CustomerJson[];
    expect(withAgreements[2]!.agreements).toEqual(bakery.agreements);
    expect(withAgreements[2]!.accounts).toEqual([]);
  });

  it("refuses a flag that is not true or false, naming it", async () => {
    const answer = await get("/v1/sandbox/customers?withAccounts=yes");
    expect(answer.status).toBe(400);
    expect(tppCode(answer.json)).toBe("FORMAT_ERROR");
    expect(tppText(answer.json)).toContain("withAccounts");
  });

  it("serves the customer and agreement links it hands out", async () => {
    const self = await get(kari._links.self.href);
    expect(self.status).toBe(200);
    expect(self.json).toEqual(kari);
    const agreement = bakery.agreements[0]!;
    expect((await get(agreement._links.self.href)).json).toEqual(agreement);
    expect((await get(agreement._links.engagements.href)).json).toEqual({
      engagements: agreement.engagements,
    });
    expect((await get(`${kari._links.self.href}/agreements/nope`)).status).toBe(404);
    expect(tppCode((await get("/v1/sandbox/customers/nobody")).json)).toBe("RESOURCE_UNKNOWN");
  });
});

describe("account information (SPEC 4.5, 5.11, 5.12)", () => {
  it("answers the first call without PSU-ID with 401 and the scaRedirect link of a new consent", async () => {
    const account = kari.accounts[0]!;
    for (const path of [
      "/v1/accounts",
      `/v1/accounts/${account}/balances`,
      `/v1/accounts/${account}/transactions?bookingStatus=both`,
      "/v1/card-accounts",
    ]) {
      const answer = await get(path, { "TPP-Redirect-URI": "https://tpp.example/cb" });
      expect(answer.status, path).toBe(401);
      expect(tppCode(answer.json)).toBe("CONSENT_INVALID");
      const links = (answer.json as { _links?: { scaRedirect?: { href?: string } } })._links;
      expect(links?.scaRedirect?.href).toMatch(new RegExp(`^${running.listener.scaUrl}/sca/`));
    }
    // Without TPP-Redirect-URI there is nowhere to send the PSU back: the text says so instead.
    const bare = await get("/v1/accounts");
    expect(bare.status).toBe(401);
    expect(bare.text).toMatch(/send TPP-Redirect-URI/);
  });

  it("lists the accounts of the customer whose customerId or customerNumber is the PSU-ID", async () => {
    const byId = await accountsOf(ola);
    expect(byId.map((account) => account.resourceId)).toEqual(ola.accounts);
    const byNumber = await running.call("/v1/accounts", { headers: { "PSU-ID": ola.customerNumber } });
    expect((byNumber.json as { accounts: AccountJson[] }).accounts).toEqual(byId);
    for (const account of byId) {
      expect(account.bban).toMatch(/^\d{11}$/);
      expect(account.currency).toBe("NOK");
      expect(account.status).toBe("enabled");
      expect(account.name.length).toBeLessThanOrEqual(70);
      expect(account.cashAccountType).toMatch(/^[A-Z]{4}$/);
      expect(account.product).toMatch(/\S/);
      expect(account._links.balances.href).toBe(`/v1/accounts/${account.resourceId}/balances`);
      expect(account._links.transactions.href).toBe(`/v1/accounts/${account.resourceId}/transactions`);
    }
  });

  it("answers a PSU-ID no SCA gave this TPP with 401 and a new scaRedirect", async () => {
    const answer = await get("/v1/accounts", {
      "PSU-ID": "0b6f2c1e-3d4a-4f5b-8c6d-7e8f9a0b1c2d",
      "TPP-Redirect-URI": "https://tpp.example/cb",
    });
    expect(answer.status).toBe(401);
    expect(tppCode(answer.json)).toBe("CONSENT_INVALID");
  });

  it("reaches a corporate customer's accounts only through PSU-Corporate-ID (SPEC 1.8, 7)", async () => {
    const corporate = await get("/v1/accounts", {
      "PSU-ID": kari.customerId,
      "PSU-Corporate-ID": bakery.customerId,
    });
    expect(corporate.status).toBe(200);
    expect(
      (corporate.json as { accounts: AccountJson[] }).accounts.map((account) => account.resourceId),
    ).toEqual(bakery.accounts);
    const withoutCorporateId = await get("/v1/accounts", { "PSU-ID": bakery.customerId });
    expect(withoutCorporateId.status).toBe(400);
    expect(tppText(withoutCorporateId.json)).toContain("PSU-Corporate-ID");
    const unknownCorporate = await get("/v1/accounts", {
      "PSU-ID": kari.customerId,
      "PSU-Corporate-ID": "nobody",
    });
    expect(unknownCorporate.status).toBe(401);
    expect(JSON.stringify(unknownCorporate.json)).toContain("scaRedirect");
  });

  it("answers another customer's account exactly like an unknown one: 404 RESOURCE_UNKNOWN", async () => {
    const foreign = await get(`/v1/accounts/${ola.accounts[0]}/balances`, { "PSU-ID": kari.customerId });
    expect(foreign.status).toBe(404);
    expect(tppCode(foreign.json)).toBe("RESOURCE_UNKNOWN");
    const unknown = await get("/v1/accounts/no-such-account/balances", { "PSU-ID": kari.customerId });
    expect(unknown.status).toBe(404);
    expect(tppCode(unknown.json)).toBe("RESOURCE_UNKNOWN");
    expect(
      (await get(`/v1/card-accounts/${ola.cardAccounts[0]}`, { "PSU-ID": kari.customerId })).status,
    ).toBe(404);
  });

  it("serves the account itself and its balances, with amounts as strings and today's reference date", async () => {
    const [account] = await accountsOf(kari);
    const details = await get(`/v1/accounts/${account!.resourceId}`, { "PSU-ID": kari.customerId });
    expect(details.json).toEqual({ account });
    const answer = await get(account!._links.balances.href, { "PSU-ID": kari.customerId });
    expect(answer.status).toBe(200);
    const body = answer.json as {
      account: { bban: string; currency: string };
      balances: {
        balanceAmount: { currency: string; amount: string };
        balanceType: string;
        referenceDate: string;
      }[];
    };
    expect(body.account).toEqual({ bban: account!.bban, currency: "NOK" });
    expect(body.balances.map((balance) => balance.balanceType)).toEqual(
      expect.arrayContaining(["interimAvailable", "expected"]),
    );
    for (const balance of body.balances) {
      expect(balance.balanceAmount.amount).toMatch(/^-?\d+\.\d{2}$/);
      expect(balance.balanceAmount.currency).toBe("NOK");
      expect(balance.referenceDate).toBe(TODAY);
    }
  });

  it("lists booked and pending transactions, booked newest first, with some older than 90 days", async () => {
    const { answer, body } = await transactions(kari, kari.accounts[0]!, "bookingStatus=both");
    expect(answer.status).toBe(200);
    const booked = body.transactions.booked!;
    expect(booked.length).toBeGreaterThanOrEqual(3);
    expect(body.transactions.pending!.length).toBeGreaterThanOrEqual(1);
    expect(body.transactions._links.account.href).toBe(`/v1/accounts/${kari.accounts[0]}`);
    const dates = booked.map((transaction) => transaction.bookingDate);
    expect([...dates].sort().reverse()).toEqual(dates);
    expect(dates.some((date) => date < daysBefore(90))).toBe(true);
    expect(dates.some((date) => date >= daysBefore(90))).toBe(true);
    expect(dates.every((date) => date <= TODAY)).toBe(true);
    for (const transaction of booked) {
      expect(transaction.transactionId).toMatch(/\S/);
      expect(transaction.valueDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(transaction.transactionAmount.currency).toBe("NOK");
      expect(typeof (transaction.creditorName ?? transaction.debtorName)).toBe("string");
      expect(typeof transaction.remittanceInformationUnstructured).toBe("string");
    }
  });

  it("returns only the list bookingStatus asks for", async () => {
    const booked = (await transactions(kari, kari.accounts[0]!, "bookingStatus=booked")).body.transactions;
    expect(booked.booked!.length).toBeGreaterThan(0);
    expect(booked.pending).toBeUndefined();
    const pending = (await transactions(kari, kari.accounts[0]!, "bookingStatus=pending")).body.transactions;
    expect(pending.booked).toBeUndefined();
    expect(pending.pending!.length).toBeGreaterThan(0);
    const all = (await transactions(kari, kari.accounts[0]!, "bookingStatus=all")).body.transactions;
    expect(all).toEqual(
      (await transactions(kari, kari.accounts[0]!, "bookingStatus=both")).body.transactions,
    );
  });

  it("filters booked transactions by dateFrom and dateTo, both included", async () => {
    const all = (await transactions(kari, kari.accounts[0]!, "bookingStatus=booked")).body.transactions
      .booked!;
    const from = all[3]!.bookingDate;
    const to = all[1]!.bookingDate;
    const window = (
      await transactions(kari, kari.accounts[0]!, `bookingStatus=booked&dateFrom=${from}&dateTo=${to}`)
    ).body.transactions.booked!;
    expect(window).toEqual(
      all.filter((transaction) => transaction.bookingDate >= from && transaction.bookingDate <= to),
    );
    expect(window.map((transaction) => transaction.bookingDate)).toContain(from);
    expect(window.map((transaction) => transaction.bookingDate)).toContain(to);
  });

  it("pages booked transactions with offset and limit", async () => {
    const all = (await transactions(kari, kari.accounts[0]!, "bookingStatus=booked")).body.transactions
      .booked!;
    const page = (await transactions(kari, kari.accounts[0]!, "bookingStatus=booked&offset=2&limit=3")).body
      .transactions.booked!;
    expect(page).toEqual(all.slice(2, 5));
  });

  it("returns every pending transaction whatever dateFrom, dateTo and limit say with pendingIgnoresDateFilter (production's SPEC 4.5 known issue)", async () => {
    const production = await startBank({ pendingIgnoresDateFilter: true });
    try {
      const list = async (query: string) =>
        (
          (await production.call(`/v1/accounts/${kari.accounts[0]}/transactions?${query}`, psu(kari)))
            .json as TransactionsJson
        ).transactions;
      const everything = (await list("bookingStatus=pending")).pending!;
      const from = daysBefore(2);
      expect(everything.some((transaction) => transaction.valueDate < from)).toBe(true);
      for (const status of ["pending", "both"]) {
        const filtered = await list(`bookingStatus=${status}&dateFrom=${from}&dateTo=${TODAY}&limit=1`);
        expect(filtered.pending).toEqual(everything);
        expect(filtered.booked?.every((transaction) => transaction.bookingDate >= from) ?? true).toBe(true);
      }
    } finally {
      await production.listener.close();
    }
  });

  it("filters pending transactions by dateFrom, dateTo and limit by default: the sandbox is not affected by the known issue (SPEC 4.5)", async () => {
    const everything = (await transactions(kari, kari.accounts[0]!, "bookingStatus=pending")).body
      .transactions.pending!;
    const from = daysBefore(2);
    expect(everything.some((transaction) => transaction.valueDate < from)).toBe(true);
    const inWindow = everything.filter((transaction) => transaction.valueDate >= from);
    expect(inWindow.length).toBeGreaterThan(0);
    for (const status of ["pending", "both"]) {
      const filtered = (
        await transactions(kari, kari.accounts[0]!, `bookingStatus=${status}&dateFrom=${from}`)
      ).body.transactions;
      expect(filtered.pending).toEqual(inWindow);
      const limited = (
        await transactions(kari, kari.accounts[0]!, `bookingStatus=${status}&dateFrom=${from}&limit=1`)
      ).body.transactions;
      expect(limited.pending).toEqual(inWindow.slice(0, 1));
      const upTo = (await transactions(kari, kari.accounts[0]!, `bookingStatus=${status}&dateTo=${from}`))
        .body.transactions;
      expect(upTo.pending).toEqual(everything.filter((transaction) => transaction.valueDate <= from));
    }
  });

  it("refuses a missing or unknown bookingStatus, bad dates, a reversed period and bad paging", async () => {
    const account = kari.accounts[0]!;
    const cases: [string, string, string][] = [
      ["", "FORMAT_ERROR", "bookingStatus"],
      ["bookingStatus=information", "FORMAT_ERROR", "bookingStatus"],
      ["bookingStatus=both&dateFrom=2026-02-30", "FORMAT_ERROR", "dateFrom"],
      ["bookingStatus=both&dateTo=13.08.2026", "FORMAT_ERROR", "dateTo"],
      [`bookingStatus=both&dateFrom=${TODAY}&dateTo=${daysBefore(1)}`, "PERIOD_INVALID", "dateFrom"],
      ["bookingStatus=both&limit=0", "FORMAT_ERROR", "limit"],
      ["bookingStatus=both&offset=-1", "FORMAT_ERROR", "offset"],
    ];
    for (const [query, code, named] of cases) {
      const { answer } = await transactions(kari, account, query);
      expect(answer.status, query).toBe(400);
      expect(tppCode(answer.json), query).toBe(code);
      expect(tppText(answer.json), query).toContain(named);
    }
  });

  it("serves the details of every listed booked transaction, batch members included (SPEC 2.7)", async () => {
    let batches = 0;
    for (const customer of [kari, bakery]) {
      const headers: Record<string, string> =
        customer === bakery
          ? { "PSU-ID": kari.customerId, "PSU-Corporate-ID": bakery.customerId }
          : { "PSU-ID": kari.customerId };
      for (const accountId of customer.accounts) {
        const list = (await get(`/v1/accounts/${accountId}/transactions?bookingStatus=booked`, headers))
          .json as TransactionsJson;
        for (const transaction of list.transactions.booked!) {
          const answer = await get(transaction._links.transactionDetails.href, headers);
          expect(answer.status).toBe(200);
          const details = (answer.json as { transactionsDetails: BookedJson & { entryDetails?: unknown[] } })
            .transactionsDetails;
          expect(details.transactionId).toBe(transaction.transactionId);
          expect(details.transactionAmount).toEqual(transaction.transactionAmount);
          if (transaction.batchIndicator === true) {
            batches++;
            expect(details.entryDetails).toHaveLength(transaction.batchNumberOfTransactions!);
          }
        }
      }
    }
    expect(batches).toBeGreaterThan(0);
    const unknown = await get(`/v1/accounts/${kari.accounts[0]}/transactions/nope`, {
      "PSU-ID": kari.customerId,
    });
    expect(unknown.status).toBe(404);
    expect(tppCode(unknown.json)).toBe("RESOURCE_UNKNOWN");
  });

  it("keeps booked transactionIds stable across calls, resets and banks with the same seed (SPEC 9.5)", async () => {
    const ids = async (bank: RunningBank) => {
      const answer = await bank.call(
        `/v1/accounts/${kari.accounts[0]}/transactions?bookingStatus=booked`,
        psu(kari),
      );
      return (answer.json as TransactionsJson).transactions.booked!.map(
        (transaction) => transaction.transactionId,
      );
    };
    const first = await ids(running);
    expect(new Set(first).size).toBe(first.length);
    expect(await ids(running)).toEqual(first);
    const twin = await startBank();
    try {
      expect(await ids(twin)).toEqual(first);
      twin.bank.reset();
      expect(await ids(twin)).toEqual(first);
    } finally {
      await twin.listener.close();
    }
    const other = createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, clock: () => NOW, seed: 7 });
    expect(other.data.customers[0]!.customerId).not.toBe(kari.customerId);
  });

  it("serves card accounts, their balances and card transactions in the SPEC 2.3 shape", async () => {
    const list = await get("/v1/card-accounts", { "PSU-ID": kari.customerId });
    const cards = (list.json as { cardAccounts: { resourceId: string; maskedPan: string }[] }).cardAccounts;
    expect(cards.map((card) => card.resourceId)).toEqual(kari.cardAccounts);
    const card = cards[0]!;
    expect((await get(`/v1/card-accounts/${card.resourceId}`, { "PSU-ID": kari.customerId })).status).toBe(
      200,
    );
    const balances = await get(`/v1/card-accounts/${card.resourceId}/balances`, {
      "PSU-ID": kari.customerId,
    });
    expect((balances.json as { cardAccount: unknown }).cardAccount).toEqual({ maskedPan: card.maskedPan });
    const answer = await get(`/v1/card-accounts/${card.resourceId}/transactions?bookingStatus=both`, {
      "PSU-ID": kari.customerId,
    });
    const body = answer.json as {
      cardAccount: { maskedPan: string };
      cardTransactions: { booked: CardTransactionJson[]; pending: CardTransactionJson[] };
    };
    expect(body.cardAccount.maskedPan).toBe(card.maskedPan);
    expect(body.cardTransactions.booked.length).toBeGreaterThan(0);
    expect(body.cardTransactions.pending.length).toBeGreaterThan(0);
    for (const transaction of body.cardTransactions.booked) {
      for (const field of [
        "cardTransactionId",
        "bookingDate",
        "transactionDate",
        "merchantCategoryCode",
      ] as const)
        expect(typeof transaction[field], field).toBe("string");
      expect(transaction.maskedPan).toBe(card.maskedPan);
      expect(transaction.transactionAmount.currency).toBe("NOK");
      expect(transaction.bookingDate! >= transaction.transactionDate).toBe(true);
    }
    expect(
      body.cardTransactions.booked.some((transaction) => transaction.originalAmount.currency !== "NOK"),
    ).toBe(true);
  });

  it("filters card transactions by date, pending ones too: card accounts are not affected by the known issue", async () => {
    const path = `/v1/card-accounts/${kari.cardAccounts[0]}/transactions?bookingStatus=both&dateFrom=${TODAY}`;
    const body = (await get(path, { "PSU-ID": kari.customerId })).json as {
      cardTransactions: { booked: CardTransactionJson[]; pending: CardTransactionJson[] };
    };
    expect(body.cardTransactions.pending.length).toBeGreaterThan(0);
    expect(body.cardTransactions.pending.every((transaction) => transaction.transactionDate >= TODAY)).toBe(
      true,
    );
    expect(body.cardTransactions.booked).toEqual([]);
  });
});

describe("payment initiation (SPEC 4.5, 3)", () => {
  beforeEach(() => running.bank.reset());

  it("creates a payment as RCVD with startAuthorisation, self and status links", async () => {
    const answer = await postPayment(payment());
    expect(answer.status).toBe(201);
    const body = answer.json as {
      transactionStatus: string;
      paymentId: string;
      _links: Record<string, { href: string }>;
    };
    expect(body.transactionStatus).toBe("RCVD");
    expect(body.paymentId).toMatch(/^[0-9a-f-]{36}$/);
    const base = `${PAYMENTS}/${body.paymentId}`;
    expect(body._links).toEqual({
      startAuthorisation: { href: `${base}/authorisations` },
      self: { href: base },
      status: { href: `${base}/status` },
    });
    expect(answer.headers.get("location")).toBe(base);
    const self = await get(base);
    expect(self.json).toMatchObject({
      instructedAmount: { amount: "125.50", currency: "NOK" },
      transactionStatus: "RCVD",
    });
  });

  it("reports RCVD, then ACCP once the PSU approves at the SCA page; fundsAvailable tells whether the money is there", async () => {
    const created = (await postPayment(payment())).json as {
      paymentId: string;
      _links: Record<string, { href: string }>;
    };
    expect((await get(created._links.status!.href)).json).toEqual({
      transactionStatus: "RCVD",
      fundsAvailable: true,
    });

    const authorisation = await running.call(created._links.startAuthorisation!.href, {
      method: "POST",
      headers: { "TPP-Redirect-URI": "https://tpp.example/cb" },
    });
    expect(authorisation.status).toBe(201);
    const started = authorisation.json as { scaStatus: string; _links: { scaRedirect: { href: string } } };
    expect(started.scaStatus).toBe("RECEIVED");
    await walkSca(started._links.scaRedirect.href, { identity: kari.customerNumber });
    expect((await get(created._links.status!.href)).json).toEqual({
      transactionStatus: "ACCP",
      fundsAvailable: true,
    });

    const tooMuch = (
      await postPayment(payment({ instructedAmount: { amount: "99999999.00", currency: "NOK" } }))
    ).json as { _links: Record<string, { href: string }> };
    const tooMuchAuthorisation = await running.call(tooMuch._links.startAuthorisation!.href, {
      method: "POST",
      headers: { "TPP-Redirect-URI": "https://tpp.example/cb" },
    });
    await walkSca(
      (tooMuchAuthorisation.json as { _links: { scaRedirect: { href: string } } })._links.scaRedirect.href,
      {
        identity: kari.customerNumber,
      },
    );
    expect((await get(tooMuch._links.status!.href)).json).toEqual({
      transactionStatus: "ACCP",
      fundsAvailable: false,
    });
  });

  it("answers 404 RESOURCE_UNKNOWN for an unknown payment or a payment under another product", async () => {
    const created = (await postPayment(payment())).json as { paymentId: string };
    for (const path of [
      `${PAYMENTS}/00000000-0000-4000-8000-000000000000/status`,
      `/v1/payments/sepa-credit-transfers/${created.paymentId}/status`,
    ]) {
      const answer = await get(path);
      expect(answer.status, path).toBe(404);
      expect(tppCode(answer.json)).toBe("RESOURCE_UNKNOWN");
    }
    const otherProduct = await running.call("/v1/payments/sepa-credit-transfers", {
      method: "POST",
      body: "{}",
    });
    expect(otherProduct.status).toBe(404);
    expect(tppCode(otherProduct.json)).toBe("PRODUCT_UNKNOWN");
  });

  it("keeps each TPP's payments to itself, by the organisation header the gateway adds", async () => {
    const header = DEFAULT_IDENTITY_HEADERS.organizationId;
    const created = (await postPayment(payment(), "", { [header]: "PSDNO-FSA-111" })).json as {
      paymentId: string;
    };
    const status = `${PAYMENTS}/${created.paymentId}/status`;
    expect((await get(status, { [header]: "PSDNO-FSA-111" })).status).toBe(200);
    expect((await get(status, { [header]: "PSDNO-FSA-222" })).status).toBe(404);
    expect((await get(status)).status).toBe(404);
    // The same payment from another TPP is not a duplicate of the first.
    expect((await postPayment(payment(), "", { [header]: "PSDNO-FSA-222" })).status).toBe(201);
  });

  it("reads the organisation from a configured header name", async () => {
    const custom = await startBank({ identityHeaders: { organizationId: "X-Gateway-Org" } });
    try {
      const post = (headers: Record<string, string>) =>
        custom.call(PAYMENTS, { method: "POST", headers, body: JSON.stringify(payment()) });
      const created = (await post({ "X-Gateway-Org": "org-a" })).json as { paymentId: string };
      expect(
        (
          await custom.call(`${PAYMENTS}/${created.paymentId}/status`, {
            headers: { "X-Gateway-Org": "org-a" },
          })
        ).status,
      ).toBe(200);
      expect((await custom.call(`${PAYMENTS}/${created.paymentId}/status`)).status).toBe(404);
    } finally {
      await custom.listener.close();
    }
  });

  const invalidBodies: [string, string | Record<string, unknown>, string][] = [
    ["invalid JSON", '{"instructedAmount": ', "JSON"],
    ["an empty body", "", "empty"],
    ["a JSON array", "[]", "object"],
    ["a JSON string", '"pay"', "object"],
    ["no instructedAmount", { instructedAmount: undefined }, "instructedAmount"],
    [
      "an amount that is a number",
      { instructedAmount: { amount: 125.5, currency: "NOK" } },
      "instructedAmount.amount",
    ],
    [
      "an amount with three decimals",
      { instructedAmount: { amount: "1.005", currency: "NOK" } },
      "instructedAmount.amount",
    ],
    [
      "a negative amount",
      { instructedAmount: { amount: "-5.00", currency: "NOK" } },
      "instructedAmount.amount",
    ],
    ["a zero amount", { instructedAmount: { amount: "0.00", currency: "NOK" } }, "instructedAmount.amount"],
    [
      "an amount in exponent form",
      { instructedAmount: { amount: "1e3", currency: "NOK" } },
      "instructedAmount.amount",
    ],
    [
      "a foreign currency",
      { instructedAmount: { amount: "5.00", currency: "EUR" } },
      "instructedAmount.currency",
    ],
    ["no debtorAccount", { debtorAccount: undefined }, "debtorAccount"],
    ["a short creditor bban", { creditorAccount: { bban: "1234" } }, "creditorAccount.bban"],
    ["a numeric creditor bban", { creditorAccount: { bban: 12345678903 } }, "creditorAccount.bban"],
    ["no creditorName", { creditorName: undefined }, "creditorName"],
    ["a creditorName over 70 characters", { creditorName: "x".repeat(71) }, "creditorName"],
    [
      "a remittance that is not a string",
      { remittanceInformationUnstructured: 42 },
      "remittanceInformationUnstructured",
    ],
    ["an emoji the core cannot store (SPEC 1.3)", { creditorName: "Per 🍕" }, "creditorName"],
    ["a debtor account of another bank", { debtorAccount: { bban: "12345678903" } }, "debtorAccount.bban"],
  ];

  it.each(invalidBodies)(
    "refuses %s with 400 FORMAT_ERROR naming the problem",
    async (_name, body, named) => {
      const answer = await postPayment(typeof body === "string" ? body : payment(body));
      expect(answer.status).toBe(400);
      expect(tppCode(answer.json)).toBe("FORMAT_ERROR");
      expect(tppText(answer.json)).toContain(named);
    },
  );

  it("refuses a payment to its own debtor account, bytes that are not UTF-8 and a bad allowLogicalDuplicate", async () => {
    const own = payment();
    own["creditorAccount"] = own["debtorAccount"];
    expect(tppText((await postPayment(own)).json)).toContain("creditorAccount");
    const notUtf8 = await running.call(PAYMENTS, {
      method: "POST",
      body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    });
    expect(notUtf8.status).toBe(400);
    expect(tppText(notUtf8.json)).toContain("UTF-8");
    const badFlag = await postPayment(payment(), "?allowLogicalDuplicate=1");
    expect(badFlag.status).toBe(400);
    expect(tppText(badFlag.json)).toContain("allowLogicalDuplicate");
  });

  it("refuses a logical duplicate unless allowLogicalDuplicate=true", async () => {
    const first = (await postPayment(payment())).json as { paymentId: string };
    const duplicate = await postPayment(payment({ instructedAmount: { amount: "125.5", currency: "NOK" } }));
    expect(duplicate.status).toBe(400);
    expect(tppCode(duplicate.json)).toBe("PAYMENT_FAILED");
    expect(tppText(duplicate.json)).toContain("logical duplicate");
    expect(tppText(duplicate.json)).toContain(first.paymentId);
    expect((await postPayment(payment(), "?allowLogicalDuplicate=false")).status).toBe(400);

    const allowed = await postPayment(payment(), "?allowLogicalDuplicate=true");
    expect(allowed.status).toBe(201);
    expect((allowed.json as { paymentId: string }).paymentId).not.toBe(first.paymentId);

    expect((await postPayment(payment({ remittanceInformationUnstructured: "Lunsj" }))).status).toBe(201);
    expect((await postPayment(payment({ creditorAccount: { bban: "12345678911" } }))).status).toBe(201);
    running.bank.reset();
    expect((await postPayment(payment())).status).toBe(201);
  });

  it("forgets payments on reset and never hands out the same payment id again (ids are random)", async () => {
    const first = (await postPayment(payment())).json as { paymentId: string };
    running.bank.reset();
    expect((await get(`${PAYMENTS}/${first.paymentId}/status`)).status).toBe(404);
    const again = (await postPayment(payment())).json as { paymentId: string };
    expect(again.paymentId).not.toBe(first.paymentId);
  });
});

describe("amounts are strings everywhere (SPEC 4 General, 9.2 amount-as-string)", () => {
  it("has no amount that is not a decimal string in any response", async () => {
    const headers = { "PSU-ID": kari.customerId };
    const corporate = { "PSU-ID": kari.customerId, "PSU-Corporate-ID": bakery.customerId };
    const answers: Answer[] = [
      await get("/v1/sandbox/customers?withAccounts=true&withAgreements=true"),
      await get("/v1/accounts", headers),
      await get("/v1/card-accounts", headers),
    ];
    for (const [customer, h] of [
      [kari, headers],
      [bakery, corporate],
    ] as const) {
      for (const id of customer.accounts) {
        answers.push(await get(`/v1/accounts/${id}/balances`, h));
        const list = await get(`/v1/accounts/${id}/transactions?bookingStatus=both`, h);
        answers.push(list);
        for (const transaction of (list.json as TransactionsJson).transactions.booked!)
          answers.push(await get(transaction._links.transactionDetails.href, h));
      }
    }
    for (const id of kari.cardAccounts) {
      answers.push(await get(`/v1/card-accounts/${id}/balances`, headers));
      answers.push(await get(`/v1/card-accounts/${id}/transactions?bookingStatus=both`, headers));
    }
    const created = (await postPayment(payment(), "?allowLogicalDuplicate=true")).json as {
      paymentId: string;
    };
    answers.push(await get(`${PAYMENTS}/${created.paymentId}`));

    const amounts = answers.flatMap((answer) => amountsIn(answer.json));
    expect(amounts.length).toBeGreaterThan(100);
    const notStrings = amounts.filter(
      (found) => typeof found.value !== "string" || !/^-?\d+\.\d{1,2}$/.test(found.value),
    );
    expect(notStrings).toEqual([]);
  });
});

describe("HTTP behaviour", () => {
  it("echoes X-Request-ID on successes and on every kind of error, and makes one up when absent", async () => {
    const cases: [string, RequestInit, number][] = [
      ["/v1/sandbox/customers", {}, 200],
      ["/v1/accounts", {}, 401],
      ["/v1/nowhere", {}, 404],
      [PAYMENTS, {}, 405],
      [PAYMENTS, { method: "POST", body: "nope" }, 400],
      [PAYMENTS, { method: "POST", body: "x".repeat(1024 * 1024 + 1) }, 413],
    ];
    for (const [path, init, status] of cases) {
      const requestId = `req-${status}-${path.length}`;
      const answer = await running.call(path, { ...init, headers: { "X-Request-ID": requestId } });
      expect(answer.status, path).toBe(status);
      expect(answer.headers.get("x-request-id")).toBe(requestId);
      expect(answer.headers.get("content-type")).toBe("application/json; charset=utf-8");
    }
    const generated = (await get("/v1/sandbox/customers")).headers.get("x-request-id");
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers an unknown path 404 and a known path with the wrong method 405 with Allow", async () => {
    const unknown = await get("/v2/accounts");
    expect(unknown.status).toBe(404);
    expect(tppCode(unknown.json)).toBe("RESOURCE_UNKNOWN");
    expect((await get("/v1/accounts/")).status).toBe(404);
    const wrongMethod = await running.call("/v1/accounts", { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET");
    expect(tppCode(wrongMethod.json)).toBe("SERVICE_INVALID");
    const getOnPost = await get(PAYMENTS);
    expect(getOnPost.headers.get("allow")).toBe("POST");
  });

  it("answers 413 to a declared body over 1 MiB without reading it", async () => {
    const answer = await postPayment("x".repeat(1024 * 1024 + 1));
    expect(answer.status).toBe(413);
    expect(tppCode(answer.json)).toBe("PAYLOAD_TOO_LARGE");
    // Exactly at the limit the body is read (and then found not to be JSON).
    expect((await postPayment(" ".repeat(1024 * 1024))).status).toBe(400);
  });

  it("answers 413 to a chunked body that grows past the limit, and keeps the connection usable", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const headers = Object.fromEntries(throughGateway());
      const req = httpRequest(`${running.listener.url}${PAYMENTS}`, { method: "POST", headers }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      for (let i = 0; i < 20; i++) req.write(chunk);
      req.end();
    });
    expect(status).toBe(413);
    expect((await get("/v1/sandbox/customers")).status).toBe(200);
  });

  it("honours a smaller configured body limit", async () => {
    const small = await startBank({ maxBodyBytes: 100 });
    try {
      const answer = await small.call(PAYMENTS, { method: "POST", body: JSON.stringify(payment()) });
      expect(answer.status).toBe(413);
      expect(tppText(answer.json)).toContain("100 bytes");
    } finally {
      await small.listener.close();
    }
  });

  it("answers malformed request targets with 4xx, never 500", async () => {
    const port = running.listener.port;
    const raw = (target: string) =>
      sendRaw(
        port,
        `GET ${target} HTTP/1.1\r\nHost: x\r\nX-Request-ID: raw-1\r\n${RAW_GATEWAY_HEADERS}Connection: close\r\n\r\n`,
      );
    const badPercent = await raw("/v1/accounts/%E0%A4%A/balances");
    expect(badPercent.status).toBe(400);
    expect(tppText(rawBody(badPercent.raw))).toContain("percent-encoding");
    expect(badPercent.raw.toLowerCase()).toContain("x-request-id: raw-1");
    expect((await raw("//evil.example/v1/accounts")).status).toBe(404);
    expect((await raw("*")).status).toBe(400);
    expect((await raw("/v1/sandbox/customers?junk=%ZZ&&=&withAccounts=true")).status).toBe(200);
    const absolute = await raw("http://bank.example/v1/sandbox/customers");
    expect(absolute.status).toBe(200);
    expect((await raw("/v1/accounts/%00/balances")).status).toBe(401);
  });

  it("never answers 5xx, nor anything but JSON, to arbitrary paths and queries", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.constantFrom("v1", "accounts", "payments", "sandbox", "customers", "status"),
            fc.string(),
          ),
          {
            maxLength: 6,
          },
        ),
        fc.string(),
        fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH"),
        async (segments, query, method) => {
          const path = `/${segments.map(encodeURIComponent).join("/")}?${encodeURIComponent(query)}`;
          const answer = await running.call(path, {
            method,
            headers: { "PSU-ID": kari.customerId },
            ...(method === "GET" ? {} : { body: query }),
          });
          expect(answer.status).toBeLessThan(500);
          expect(answer.json).toBeTypeOf("object");
        },
      ),
      { numRuns: 150 },
    );
  });

  it("never answers 5xx to arbitrary payment bodies", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string().map((text) => new TextEncoder().encode(text)),
          fc.uint8Array({ maxLength: 200 }),
          fc.jsonValue().map((value) => new TextEncoder().encode(JSON.stringify(value))),
          fc
            .record({ amount: fc.oneof(fc.string(), fc.double(), fc.constant(null)), bban: fc.string() })
            .map(({ amount, bban }) =>
              new TextEncoder().encode(
                JSON.stringify(
                  payment({ instructedAmount: { amount, currency: "NOK" }, creditorAccount: { bban } }),
                ),
              ),
            ),
        ),
        async (body) => {
          const answer = await running.call(`${PAYMENTS}?allowLogicalDuplicate=true`, {
            method: "POST",
            body,
          });
          expect([201, 400]).toContain(answer.status);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("state and lifecycle", () => {
  it("opens a room per TPP up to maxRooms; beyond, a new TPP gets 503 until the operator resets every room", async () => {
    const small = await startBank({ maxRooms: 1 });
    try {
      const list = (tpp: string) =>
        small.call("/v1/sandbox/customers", { headers: { "X-TPP-Organization-Id": tpp } });
      expect((await list("PSDNO-FSA-ONE")).status).toBe(200);
      const refused = await list("PSDNO-FSA-TWO");
      expect(refused.status).toBe(503);
      expect(tppCode(refused.json)).toBe("SERVICE_BLOCKED");
      expect(tppText(refused.json)).toContain("reset all rooms");
      expect((await list("PSDNO-FSA-ONE")).status).toBe(200);
      small.bank.reset();
      expect((await list("PSDNO-FSA-TWO")).status).toBe(200);
    } finally {
      await small.listener.close();
    }
  });

  it("refuses an API call that names no TPP, even with the gateway's secret: 401 before any room", async () => {
    const answer = await fetch(`${running.listener.url}/v1/sandbox/customers`, {
      headers: { "x-sandbox-gateway-secret": TEST_GATEWAY_SECRET },
    });
    expect(answer.status).toBe(401);
    expect(tppCode(await answer.json())).toBe("CERTIFICATE_MISSING");
  });

  it("dates the data from the clock and moves it on reset", async () => {
    let now = NOW;
    const bank = createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, clock: () => now });
    expect(bank.data.today).toBe(TODAY);
    const firstBooking = bank.data.customers[0]!.accounts[0]!.booked[0]!;
    now += 10 * 86_400_000;
    bank.reset();
    expect(bank.data.today).toBe("2026-08-23");
    const moved = bank.data.customers[0]!.accounts[0]!.booked[0]!;
    expect(moved.transactionId).toBe(firstBooking.transactionId);
    expect(moved.bookingDate > firstBooking.bookingDate).toBe(true);
  });

  it("listens twice, API and SCA page, and its listeners close twice without complaint", async () => {
    const bank = createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, clock: () => NOW });
    const listeners = await bank.listen();
    const { api, sca } = listeners;
    expect(api.url).toBe(`http://127.0.0.1:${api.port}`);
    expect(sca.url).toBe(`http://127.0.0.1:${sca.port}`);
    expect(sca.port).not.toBe(api.port);
    const response = await fetch(`${api.url}/v1/sandbox/customers`, { headers: throughGateway() });
    expect(response.status).toBe(200);
    await listeners.close();
    await listeners.close();
    await expect(fetch(`${api.url}/v1/sandbox/customers`)).rejects.toThrow();
  });
});
