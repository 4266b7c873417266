/**
 * The sandbox operations that change the mock data (SPEC 1.7, 2.1, 2.3, 4.2, 4.3, 4.5), over
 * HTTP: what they create is then served by the customer list and the account information
 * operations, and a reset takes it all away again.
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isValidNationalId, isValidOrganisationNumber } from "../src/national-id.js";
import { mod11CheckDigit } from "../src/random.js";
import {
  type Answer,
  amountsIn,
  type CustomerJson,
  daysBefore,
  type RunningBank,
  startBank,
  TODAY,
  tppCode,
  tppText,
} from "./helpers.js";

interface CardAccountJson {
  resourceId: string;
  maskedPan: string;
  currency: string;
  name: string;
  creditLimit: { currency: string; amount: string };
}
interface BookedJson {
  transactionId: string;
  bookingDate: string;
  valueDate: string;
  transactionAmount: { currency: string; amount: string };
  creditorName?: string;
  creditorAccount?: { bban: string };
  debtorName?: string;
  debtorAccount?: { bban: string };
  remittanceInformationUnstructured: string;
}

let running: RunningBank;

beforeAll(async () => {
  running = await startBank();
});

afterAll(async () => {
  await running.listener.close();
});

beforeEach(() => running.bank.reset());

function post(path: string, body: unknown): Promise<Answer> {
  return running.call(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return running.call(path, { headers });
}

async function customers(query = "?withAccounts=true&withAgreements=true"): Promise<CustomerJson[]> {
  const answer = await get(`/v1/sandbox/customers${query}`);
  expect(answer.status).toBe(200);
  return answer.json as CustomerJson[];
}

async function createCustomer(body: Record<string, unknown>): Promise<CustomerJson> {
  const answer = await post("/v1/sandbox/customers", body);
  expect(answer.status, answer.text).toBe(201);
  return answer.json as CustomerJson;
}

async function createCard(body: Record<string, unknown>): Promise<CardAccountJson> {
  const answer = await post("/v1/sandbox/card-accounts", body);
  expect(answer.status, answer.text).toBe(201);
  return (answer.json as { cardAccount: CardAccountJson }).cardAccount;
}

function expectFormatError(answer: Answer, ...fragments: string[]): void {
  expect(answer.status, answer.text).toBe(400);
  expect(tppCode(answer.json)).toBe("FORMAT_ERROR");
  for (const fragment of fragments) expect(tppText(answer.json)).toContain(fragment);
}

/** A valid SPEC 2.2 card transaction (amounts in minor units). */
function cardTransaction(
  id: string,
  bookingDate: string,
  transactionDate = bookingDate,
): Record<string, unknown> {
  return {
    cardTransactionId: id,
    terminalId: "87654321",
    bookingDate,
    transactionDate,
    transactionAmount: { currency: "NOK", amount: -12_350 },
    originalAmount: { currency: "SEK", amount: -12_167 },
    merchantCategoryCode: "5411",
    currencyExchange: {
      sourceCurrency: "SEK",
      targetCurrency: "NOK",
      unitCurrency: "SEK",
      exchangeRate: "1.0150",
      quotationDate: transactionDate,
    },
    markupFee: { currency: "NOK", amount: 0 },
    markupFeePercentage: "0.00",
    cardAcceptorId: "998877665544332",
    cardAcceptorAddress: { street: "Drottninggatan", buildingNumber: "5", city: "Stockholm", country: "SE" },
    maskedPan: "492500******0001",
    transactionDetails: "ICA Nära, Stockholm",
    invoiced: "false",
    proprietaryBankTransactionCode: "VARE",
  };
}

describe("POST /v1/sandbox/customers", () => {
  it("creates a PRIVATE customer with a synthetic national id and 2 accounts by default, answered as SPEC 2.1", async () => {
    const answer = await post("/v1/sandbox/customers", {
      customerType: "PRIVATE",
      customerName: "Anne Berg",
    });
    expect(answer.status).toBe(201);
    const created = answer.json as CustomerJson;
    expect(answer.headers.get("location")).toBe(created._links.self.href);
    expect(Object.keys(created).sort()).toEqual(
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
    expect(created).toMatchObject({
      customerType: "PRIVATE",
      customerName: "Anne Berg",
      agreements: [],
      cardAccounts: [],
    });
    expect(created.accounts).toHaveLength(2);
    expect(created.customerNumber).toMatch(/^\d{11}$/);
    expect(isValidNationalId(created.customerNumber)).toBe(true);
    // Synthetic: 80 added to the month, never a real person's number.
    expect(Number(created.customerNumber.slice(2, 4))).toBeGreaterThan(80);
    expect(created._links.self).toEqual({
      href: `/v1/sandbox/customers/${created.customerId}`,
      verbs: ["GET"],
    });
    expect((await get(created._links.self.href)).json).toEqual(created);
  });

  it("lists created customers after the initial ones, honouring withAccounts and withAgreements (SPEC 4.2)", async () => {
    const anne = await createCustomer({ customerType: "PRIVATE", customerName: "Anne Berg", accounts: 3 });
    const firm = await createCustomer({ customerType: "CORPORATE", customerName: "Berg Snekkeri AS" });
    const full = await customers();
    expect(full).toHaveLength(6);
    expect(full.slice(4)).toEqual([anne, firm]);
    const bare = await customers("");
    expect(bare.slice(4).map((each) => [each.customerId, each.accounts, each.agreements])).toEqual([
      [anne.customerId, [], []],
      [firm.customerId, [], []],
    ]);
    const agreementsOnly = await customers("?withAgreements=true");
    expect(agreementsOnly[5]!.agreements).toEqual(firm.agreements);
    expect(agreementsOnly[5]!.accounts).toEqual([]);
    expect(anne.accounts).toHaveLength(3);
  });

  it("gives a CORPORATE customer an organisation number and an agreement granting its accounts (SPEC 1.8)", async () => {
    const firm = await createCustomer({
      customerType: "CORPORATE",
      customerName: "Berg Snekkeri AS",
      accounts: 1,
    });
    expect(firm.customerNumber).toMatch(/^\d{9}$/);
    expect(isValidOrganisationNumber(firm.customerNumber)).toBe(true);
    expect(firm.agreements).toHaveLength(1);
    expect(firm.agreements[0]!.engagements).toEqual(firm.accounts);
    expect((await get(firm.agreements[0]!._links.engagements.href)).json).toEqual({
      engagements: firm.accounts,
    });
    const accounts = await get("/v1/accounts", {
      "PSU-ID": firm.customerNumber,
      "PSU-Corporate-ID": firm.customerId,
    });
    expect(accounts.status, accounts.text).toBe(200);
    const listed = (accounts.json as { accounts: { resourceId: string; usage: string }[] }).accounts;
    expect(listed.map((each) => each.resourceId)).toEqual(firm.accounts);
    expect(listed.every((each) => each.usage === "ORGA")).toBe(true);
  });

  it("makes mock accounts the PSU reaches: Norwegian account numbers, NOK, empty, balance zero", async () => {
    const anne = await createCustomer({ customerType: "PRIVATE", customerName: "Anne Berg" });
    const answer = await get("/v1/accounts", { "PSU-ID": anne.customerNumber });
    expect(answer.status, answer.text).toBe(200);
    const accounts = (
      answer.json as { accounts: { resourceId: string; bban: string; name: string; currency: string }[] }
    ).accounts;
    expect(accounts.map((each) => each.resourceId)).toEqual(anne.accounts);
    for (const account of accounts) {
      expect(account.bban).toMatch(/^9710\d{7}$/);
      expect(mod11CheckDigit(account.bban.slice(0, 10))).toBe(Number(account.bban[10]));
      expect(account.currency).toBe("NOK");
      expect(account.name).toContain("Anne Berg");
    }
    expect(accounts.map((each) => each.name)).toEqual(["Brukskonto Anne Berg", "Sparekonto Anne Berg"]);
    const balances = await get(`/v1/accounts/${anne.accounts[0]}/balances`, { "PSU-ID": anne.customerId });
    expect(
      (balances.json as { balances: { balanceAmount: { amount: string } }[] }).balances[0]!.balanceAmount
        .amount,
    ).toBe("0.00");
  });

  it.each([
    [{ customerName: "Anne" }, "customerType is required"],
    [{ customerType: "private", customerName: "Anne" }, 'customerType must be "PRIVATE" or "CORPORATE"'],
    [{ customerType: "PRIVATE" }, "customerName is required"],
    [
      { customerType: "PRIVATE", customerName: "x".repeat(71) },
      "customerName is 71 characters long: send at most 70",
    ],
    [
      { customerType: "PRIVATE", customerName: "Anne", accounts: 0 },
      "accounts must be a whole number from 1 to 10",
    ],
    [
      { customerType: "PRIVATE", customerName: "Anne", accounts: 11 },
      "accounts must be a whole number from 1 to 10",
    ],
    [{ customerType: "PRIVATE", customerName: "Anne", accounts: "2" }, "accounts must be a whole number"],
    [[], "The body must be a JSON object"],
    ["{", "The body is not valid JSON"],
    ["", "The body is empty"],
  ])("refuses %j: 400 FORMAT_ERROR, nothing created", async (body, text) => {
    expectFormatError(await post("/v1/sandbox/customers", body), text);
    expect(await customers("")).toHaveLength(4);
  });
});

describe("POST /v1/sandbox/card-accounts", () => {
  it("creates a card account for a customer, then listed for the customer and the PSU", async () => {
    const anne = await createCustomer({ customerType: "PRIVATE", customerName: "Anne Berg" });
    const answer = await post("/v1/sandbox/card-accounts", {
      customerId: anne.customerId,
      name: "Visa Anne",
    });
    expect(answer.status, answer.text).toBe(201);
    const card = (answer.json as { cardAccount: CardAccountJson }).cardAccount;
    expect(answer.headers.get("location")).toBe(`/v1/card-accounts/${card.resourceId}`);
    expect(card).toMatchObject({
      name: "Visa Anne",
      currency: "NOK",
      creditLimit: { currency: "NOK", amount: "20000.00" },
    });
    expect(card.maskedPan).toMatch(/^\d{6}\*{6}\d{4}$/);
    const listed = (await customers()).find((each) => each.customerId === anne.customerId)!;
    expect(listed.cardAccounts).toEqual([card.resourceId]);
    const psu = await get("/v1/card-accounts", { "PSU-ID": anne.customerId });
    expect((psu.json as { cardAccounts: CardAccountJson[] }).cardAccounts).toEqual([card]);
    expect((await get(`/v1/card-accounts/${card.resourceId}`, { "PSU-ID": anne.customerId })).json).toEqual({
      cardAccount: card,
    });
  });

  it("adds a second card account to an initial customer, with a default name, another currency and a limit", async () => {
    const [kari] = await customers();
    const card = await createCard({ customerId: kari!.customerId, currency: "EUR", creditLimit: "5000" });
    expect(card.name).toBe(`Visa Kredittkort ${kari!.customerName}`);
    expect(card.creditLimit).toEqual({ currency: "EUR", amount: "5000.00" });
    expect((await customers())[0]!.cardAccounts).toEqual([...kari!.cardAccounts, card.resourceId]);
  });

  it.each([
    [{}, "customerId is required"],
    [{ customerId: "nobody" }, "customerId 'nobody' is not a sandbox customer"],
    [{ customerId: "KNOWN", name: "x".repeat(71) }, "name is 71 characters long: send at most 70"],
    [
      { customerId: "KNOWN", currency: "XYZ" },
      "currency must be an ISO 4217 currency code of the SPEC 2.2 table",
    ],
    [{ customerId: "KNOWN", creditLimit: "-5" }, "creditLimit must be a positive decimal string"],
    [{ customerId: "KNOWN", creditLimit: 5000 }, "creditLimit must be a positive decimal string"],
  ])("refuses %j with a text naming the field", async (body: Record<string, unknown>, text) => {
    const [kari] = await customers();
    const withId = body["customerId"] === "KNOWN" ? { ...body, customerId: kari!.customerId } : body;
    expectFormatError(await post("/v1/sandbox/card-accounts", withId), text);
    expect((await customers())[0]!.cardAccounts).toEqual(kari!.cardAccounts);
  });
});

describe("POST /v1/sandbox/card-accounts/{mockCardAccountId}/transactions (SPEC 4.3)", () => {
  it("books the transactions and answers the SPEC 2.3 result, amounts as decimal strings of the minor units", async () => {
    const anne = await createCustomer({ customerType: "PRIVATE", customerName: "Anne Berg" });
    const card = await createCard({ customerId: anne.customerId });
    const body = [cardTransaction("t-old", daysBefore(5), daysBefore(4)), cardTransaction("t-new", TODAY)];
    const answer = await post(`/v1/sandbox/card-accounts/${card.resourceId}/transactions`, body);
    expect(answer.status, answer.text).toBe(201);
    expect(answer.json).toEqual({
      cardAccount: { maskedPan: card.maskedPan },
      cardTransactions: {
        booked: [
          {
            cardTransactionId: "t-new",
            bookingDate: TODAY,
            transactionDate: TODAY,
            transactionAmount: { currency: "NOK", amount: "-123.50" },
            originalAmount: { currency: "SEK", amount: "-121.67" },
            merchantCategoryCode: "5411",
          },
          {
            cardTransactionId: "t-old",
            bookingDate: daysBefore(5),
            transactionDate: daysBefore(4),
            transactionAmount: { currency: "NOK", amount: "-123.50" },
            originalAmount: { currency: "SEK", amount: "-121.67" },
            merchantCategoryCode: "5411",
          },
        ],
        pending: [],
      },
    });
  });

  it("adds them to the card account's booked list, newest first, with the address as sent", async () => {
    const [kari] = await customers();
    const cardId = kari!.cardAccounts[0]!;
    const psu = { "PSU-ID": kari!.customerId };
    const path = `/v1/card-accounts/${cardId}/transactions?bookingStatus=booked`;
    const before = (await get(path, psu)).json as {
      cardTransactions: { booked: { cardTransactionId: string }[] };
    };
    const answer = await post(`/v1/sandbox/card-accounts/${cardId}/transactions`, [
      cardTransaction("mine", TODAY),
    ]);
    expect(answer.status, answer.text).toBe(201);
    const after = (await get(path, psu)).json as {
      cardTransactions: {
        booked: { cardTransactionId: string; cardAcceptorAddress: unknown; invoiced: string }[];
      };
    };
    expect(after.cardTransactions.booked.map((each) => each.cardTransactionId)).toEqual([
      "mine",
      ...before.cardTransactions.booked.map((each) => each.cardTransactionId),
    ]);
    expect(after.cardTransactions.booked[0]).toMatchObject({
      cardAcceptorAddress: {
        street: "Drottninggatan",
        buildingNumber: "5",
        city: "Stockholm",
        country: "SE",
      },
      invoiced: "false",
    });
    const balances = await get(`/v1/card-accounts/${cardId}/balances`, psu);
    expect(amountsIn(balances.json).every((each) => typeof each.value === "string")).toBe(true);
  });

  it("refuses a charge in another currency than the card account's, so its balances stay in one currency", async () => {
    const [kari] = await customers();
    const card = await createCard({ customerId: kari!.customerId, currency: "EUR" });
    const path = `/v1/sandbox/card-accounts/${card.resourceId}/transactions`;
    expectFormatError(
      await post(path, [cardTransaction("nok", TODAY)]),
      "Card transaction [0]",
      "transactionAmount.currency must be EUR, the card account's currency",
    );
    const inEuro = {
      ...cardTransaction("eur", TODAY),
      transactionAmount: { currency: "EUR", amount: -1_060 },
      markupFee: { currency: "EUR", amount: 0 },
    };
    expect((await post(path, [inEuro])).status).toBe(201);
    const balances = await get(`/v1/card-accounts/${card.resourceId}/balances`, {
      "PSU-ID": kari!.customerId,
    });
    const listed = (balances.json as { balances: { balanceAmount: { currency: string } }[] }).balances;
    expect(listed.map((each) => each.balanceAmount.currency)).toEqual(["EUR", "EUR"]);
  });

  it("refuses a defective transaction naming its index and field, and books none of the body", async () => {
    const [kari] = await customers();
    const cardId = kari!.cardAccounts[0]!;
    const bad = { ...cardTransaction("b", TODAY), cardAcceptorAddress: { country: "NOR" } };
    const answer = await post(`/v1/sandbox/card-accounts/${cardId}/transactions`, [
      cardTransaction("a", TODAY),
      bad,
    ]);
    expectFormatError(answer, "Card transaction [1]", "cardAcceptorAddress.country", "at most 2");
    const listed = await get(
      `/v1/card-accounts/${cardId}/transactions?bookingStatus=booked&dateFrom=${TODAY}`,
      {
        "PSU-ID": kari!.customerId,
      },
    );
    expect((listed.json as { cardTransactions: { booked: unknown[] } }).cardTransactions.booked).toEqual([]);
  });

  it("refuses a cardTransactionId the card account already has", async () => {
    const [kari] = await customers();
    const path = `/v1/sandbox/card-accounts/${kari!.cardAccounts[0]}/transactions`;
    expect((await post(path, [cardTransaction("once", TODAY)])).status).toBe(201);
    expectFormatError(await post(path, [cardTransaction("once", TODAY)]), "already on this card account");
  });

  it("answers 404 RESOURCE_UNKNOWN for an unknown card account, and 400 for a body that is not an array", async () => {
    const unknown = await post("/v1/sandbox/card-accounts/nope/transactions", [cardTransaction("x", TODAY)]);
    expect(unknown.status).toBe(404);
    expect(tppCode(unknown.json)).toBe("RESOURCE_UNKNOWN");
    const [kari] = await customers();
    expectFormatError(
      await post(
        `/v1/sandbox/card-accounts/${kari!.cardAccounts[0]}/transactions`,
        cardTransaction("x", TODAY),
      ),
      "JSON array of card transactions",
    );
  });
});

describe("POST /v1/sandbox/accounts/{mockAccountId}/transactions (SPEC 4.5)", () => {
  async function anneAccounts() {
    const anne = await createCustomer({ customerType: "PRIVATE", customerName: "Anne Berg" });
    const answer = await get("/v1/accounts", { "PSU-ID": anne.customerId });
    const accounts = (answer.json as { accounts: { resourceId: string; bban: string }[] }).accounts;
    return { anne, psu: { "PSU-ID": anne.customerId }, account: accounts[0]!, other: accounts[1]! };
  }

  function path(accountId: string): string {
    return `/v1/sandbox/accounts/${accountId}/transactions`;
  }

  it("books a credit and a debit: listed newest first, with details, and the booked balance moves", async () => {
    const { psu, account } = await anneAccounts();
    const credit = await post(path(account.resourceId), {
      transactionAmount: { currency: "NOK", amount: "30000.00" },
      debtorName: "Fjordlys Bakeri AS",
      debtorAccount: { bban: "12345678903" },
      remittanceInformationUnstructured: "Lønn",
      bookingDate: daysBefore(2),
    });
    expect(credit.status, credit.text).toBe(201);
    const debit = await post(path(account.resourceId), {
      transactionAmount: { currency: "NOK", amount: "-125.5" },
      creditorName: "Nærbutikken",
    });
    expect(debit.status, debit.text).toBe(201);
    const details = (debit.json as { transactionsDetails: BookedJson }).transactionsDetails;
    expect(details).toMatchObject({
      bookingDate: TODAY,
      valueDate: TODAY,
      transactionAmount: { currency: "NOK", amount: "-125.50" },
      creditorName: "Nærbutikken",
      remittanceInformationUnstructured: "",
      proprietaryBankTransactionCode: "OVERFORING",
    });
    expect(debit.headers.get("location")).toBe(
      `/v1/accounts/${account.resourceId}/transactions/${details.transactionId}`,
    );
    expect((await get(debit.headers.get("location")!, psu)).json).toEqual(debit.json);

    const list = await get(`/v1/accounts/${account.resourceId}/transactions?bookingStatus=booked`, psu);
    const booked = (list.json as { transactions: { booked: BookedJson[] } }).transactions.booked;
    expect(booked.map((each) => each.transactionAmount.amount)).toEqual(["-125.50", "30000.00"]);
    expect(booked[1]).toMatchObject({
      debtorName: "Fjordlys Bakeri AS",
      debtorAccount: { bban: "12345678903" },
    });
    const balances = await get(`/v1/accounts/${account.resourceId}/balances`, psu);
    const interimBooked = (
      balances.json as { balances: { balanceType: string; balanceAmount: { amount: string } }[] }
    ).balances[0]!;
    expect(interimBooked.balanceAmount.amount).toBe("29874.50");
  });

  it("refuses a debit with another account as debtor (SPEC 4.5), saying what to send", async () => {
    const { account, other } = await anneAccounts();
    const answer = await post(path(account.resourceId), {
      transactionAmount: { currency: "NOK", amount: "-100.00" },
      debtorAccount: { bban: other.bban },
      creditorName: "Nærbutikken",
    });
    expectFormatError(
      answer,
      `debtorAccount.bban ${other.bban} is another account`,
      `the account itself (${account.bban}) as debtor`,
      "leave debtorAccount out",
    );
    const own = await post(path(account.resourceId), {
      transactionAmount: { currency: "NOK", amount: "-100.00" },
      debtorAccount: { bban: account.bban },
      creditorName: "Nærbutikken",
    });
    expect(own.status, own.text).toBe(201);
  });

  it.each([
    [{ transactionAmount: { currency: "NOK", amount: "-1.00" } }, "creditorName is required"],
    [{ transactionAmount: { currency: "NOK", amount: "1.00" } }, "debtorName is required"],
    [{ creditorName: "X" }, "transactionAmount is required"],
    [
      { transactionAmount: { currency: "EUR", amount: "-1.00" }, creditorName: "X" },
      "must be NOK, the account's currency",
    ],
    [
      { transactionAmount: { currency: "NOK", amount: -1 }, creditorName: "X" },
      "transactionAmount.amount must be",
    ],
    [{ transactionAmount: { currency: "NOK", amount: "0" }, creditorName: "X" }, "a non-zero decimal string"],
    [{ transactionAmount: { currency: "NOK", amount: "-1.005" }, creditorName: "X" }, "at most 2 decimals"],
    [
      {
        transactionAmount: { currency: "NOK", amount: "-1.00" },
        creditorName: "X",
        bookingDate: "2099-01-01",
      },
      "bookingDate 2099-01-01 lies after today",
    ],
    [
      {
        transactionAmount: { currency: "NOK", amount: "-1.00" },
        creditorName: "X",
        creditorAccount: { bban: "123" },
      },
      "creditorAccount.bban must be an 11-digit",
    ],
    [
      {
        transactionAmount: { currency: "NOK", amount: "1.00" },
        debtorName: "X",
        creditorAccount: { bban: "12345678903" },
      },
      "creditorAccount.bban 12345678903 is another account",
    ],
  ])("refuses %j", async (body, text) => {
    const { account } = await anneAccounts();
    expectFormatError(await post(path(account.resourceId), body), text);
  });

  it("refuses a transaction whose other party is the account itself, and answers 404 for an unknown account", async () => {
    const { account } = await anneAccounts();
    expectFormatError(
      await post(path(account.resourceId), {
        transactionAmount: { currency: "NOK", amount: "5.00" },
        debtorName: "Me",
        debtorAccount: { bban: account.bban },
      }),
      "is this account itself",
    );
    const unknown = await post(path("nope"), { transactionAmount: { currency: "NOK", amount: "5.00" } });
    expect(unknown.status).toBe(404);
    expect(tppCode(unknown.json)).toBe("RESOURCE_UNKNOWN");
  });
});

describe("POST /v1/sandbox/reset (SPEC 1.7)", () => {
  it("returns to the initial state: created customers, card accounts and transactions gone", async () => {
    const initial = await customers();
    const anne = await createCustomer({ customerType: "PRIVATE", customerName: "Anne Berg" });
    await createCard({ customerId: initial[0]!.customerId });
    const answer = await post("/v1/sandbox/reset", "");
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(initial);
    expect(await customers()).toEqual(initial);
    expect((await get(`/v1/sandbox/customers/${anne.customerId}`)).status).toBe(404);
    expect((await get("/v1/accounts", { "PSU-ID": anne.customerId })).status).not.toBe(200);
  });

  it("is what SandboxBank.reset() does, and has no GET", async () => {
    const initial = await customers();
    await createCustomer({ customerType: "CORPORATE", customerName: "Berg AS" });
    running.bank.reset();
    expect(await customers()).toEqual(initial);
    expect((await get("/v1/sandbox/reset")).status).toBe(405);
  });
});

describe("amounts in the answers of the sandbox operations", () => {
  it("are decimal strings everywhere (SPEC 4 General)", async () => {
    const [kari] = await customers();
    const answers = [
      await post("/v1/sandbox/card-accounts", { customerId: kari!.customerId }),
      await post(`/v1/sandbox/card-accounts/${kari!.cardAccounts[0]}/transactions`, [
        cardTransaction("s", TODAY),
      ]),
      await post(`/v1/sandbox/accounts/${kari!.accounts[0]}/transactions`, {
        transactionAmount: { currency: "NOK", amount: "-1.00" },
        creditorName: "X",
      }),
    ];
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(201);
      const amounts = amountsIn(answer.json);
      expect(amounts.length).toBeGreaterThan(0);
      for (const { path, value } of amounts) expect(value, path).toMatch(/^-?\d+\.\d{2}$/);
    }
  });
});
