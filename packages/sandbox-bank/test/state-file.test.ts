/**
 * The optional state file: what the sandbox operations create survives a restart (each TPP's
 * room); a reset writes the caller's room anew, the operator's reset every room; a file that is
 * not a valid snapshot stops the start with a clear error; a write that fails changes nothing.
 */

import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createSandboxBank,
  type RoomSnapshot,
  STATE_FILE_VERSION,
  StateFileError,
  type StateSnapshot,
} from "../src/index.js";
import {
  type Answer,
  NOW,
  type RunningBank,
  startBank,
  TEST_GATEWAY_SECRET,
  TEST_TPP,
  TODAY,
  tppCode,
} from "./helpers.js";

const gatewaySecret = TEST_GATEWAY_SECRET;

let dir: string;
let file: string;
const open: RunningBank[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sandbox-state-"));
  file = join(dir, "state.json");
});

afterEach(async () => {
  for (const running of open.splice(0)) await running.listener.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(stateFile = file, clock = () => NOW): Promise<RunningBank> {
  const running = await startBank({ stateFile, clock });
  open.push(running);
  return running;
}

function post(running: RunningBank, path: string, body: unknown): Promise<Answer> {
  return running.call(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

function readSnapshot(): StateSnapshot {
  return JSON.parse(readFileSync(file, "utf8")) as StateSnapshot;
}

/** The test TPP's room in a snapshot. */
function roomOf(snapshot: StateSnapshot): RoomSnapshot {
  const room = snapshot.rooms.find((each) => each.organizationId === TEST_TPP);
  if (room === undefined) throw new Error(`no room of ${TEST_TPP} in the state file`);
  return room;
}

function writeSnapshot(value: unknown): void {
  writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
}

/** Everything the customer list and a created customer's account show, for comparing two banks. */
async function view(running: RunningBank, customerId: string, cardId: string) {
  const psu = { headers: { "PSU-ID": customerId } };
  const list = await running.call("/v1/sandbox/customers?withAccounts=true&withAgreements=true");
  const accounts = (await running.call("/v1/accounts", psu)).json as { accounts: { resourceId: string }[] };
  const firstAccount = accounts.accounts[0]!.resourceId;
  return {
    customers: list.json,
    accounts,
    transactions: (await running.call(`/v1/accounts/${firstAccount}/transactions?bookingStatus=both`, psu))
      .json,
    balances: (await running.call(`/v1/accounts/${firstAccount}/balances`, psu)).json,
    cards: (await running.call(`/v1/card-accounts/${cardId}/transactions?bookingStatus=both`, psu)).json,
  };
}

describe("the state file", () => {
  it("is written at start when absent: no room yet, as a versioned snapshot; mode 0600", async () => {
    await start();
    const snapshot = readSnapshot();
    expect(snapshot.version).toBe(STATE_FILE_VERSION);
    expect(Object.keys(snapshot)).toEqual(["version", "rooms"]);
    expect(snapshot.rooms).toEqual([]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("holds a TPP's room from its first change, the generated data and what it changed", async () => {
    const running = await start();
    await post(running, "/v1/sandbox/customers", { customerType: "PRIVATE", customerName: "Anne" });
    const room = roomOf(readSnapshot());
    expect(JSON.parse(JSON.stringify(running.bank.dataOf(TEST_TPP)))).toEqual(room.data);
    expect(room.data.customers).toHaveLength(5);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("keeps created customers, card accounts and transactions across a restart", async () => {
    const first = await start();
    const created = await post(first, "/v1/sandbox/customers", {
      customerType: "PRIVATE",
      customerName: "Anne Berg",
    });
    const anne = created.json as { customerId: string; accounts: string[] };
    const card = await post(first, "/v1/sandbox/card-accounts", { customerId: anne.customerId });
    const cardId = (card.json as { cardAccount: { resourceId: string } }).cardAccount.resourceId;
    const cardTransaction = {
      cardTransactionId: "kept",
      terminalId: "1",
      bookingDate: TODAY,
      transactionDate: TODAY,
      transactionAmount: { currency: "NOK", amount: -4_990 },
      originalAmount: { currency: "NOK", amount: -4_990 },
      merchantCategoryCode: "5499",
      markupFee: { currency: "NOK", amount: 0 },
      markupFeePercentage: "0.00",
      cardAcceptorId: "1",
      cardAcceptorAddress: { postalCode: "0150", country: "NO" },
      maskedPan: "492500******0001",
      transactionDetails: "Kiosk",
      invoiced: "true",
      proprietaryBankTransactionCode: "VARE",
    };
    expect(
      (await post(first, `/v1/sandbox/card-accounts/${cardId}/transactions`, [cardTransaction])).status,
    ).toBe(201);
    const booked = await post(first, `/v1/sandbox/accounts/${anne.accounts[0]}/transactions`, {
      transactionAmount: { currency: "NOK", amount: "1500.00" },
      debtorName: "Ola Fjellheim",
    });
    expect(booked.status, booked.text).toBe(201);
    const before = await view(first, anne.customerId, cardId);
    await first.listener.close();

    const second = await start();
    expect(await view(second, anne.customerId, cardId)).toEqual(before);
    expect(second.bank.dataOf(TEST_TPP)).toEqual(first.bank.dataOf(TEST_TPP));
    expect(readdirSync(dir)).toEqual(["state.json"]); // no temporary file left behind
  });

  it("takes today from the clock, not from the file: the dates stay as they were", async () => {
    const first = await start();
    await post(first, "/v1/sandbox/customers", { customerType: "PRIVATE", customerName: "Anne" });
    const firstBooking = roomOf(readSnapshot()).data.customers[0]!.accounts[0]!.booked[0]!;
    const later = await start(file, () => NOW + 3 * 86_400_000);
    expect(later.bank.dataOf(TEST_TPP).today).toBe("2026-08-16");
    expect(later.bank.dataOf(TEST_TPP).customers[0]!.accounts[0]!.booked[0]).toEqual(firstBooking);
  });

  it("is rewritten with the caller's room anew on reset, and without any room on the operator's", async () => {
    const running = await start();
    await post(running, "/v1/sandbox/customers", { customerType: "CORPORATE", customerName: "Berg AS" });
    expect(roomOf(readSnapshot()).data.customers).toHaveLength(5);
    expect((await post(running, "/v1/sandbox/reset", {})).status).toBe(200);
    expect(roomOf(readSnapshot()).data.customers).toHaveLength(4);
    await post(running, "/v1/sandbox/customers", { customerType: "PRIVATE", customerName: "Anne" });
    running.bank.reset();
    expect(readSnapshot().rooms).toEqual([]);
  });

  it("keeps what a payment batch run booked, though no request changed anything", async () => {
    let now = NOW;
    const first = await start(file, () => now);
    await post(first, "/v1/sandbox/customers", { customerType: "PRIVATE", customerName: "Anne" });
    const pendingBefore = (data: RoomSnapshot["data"]) =>
      data.customers.flatMap((customer) => customer.accounts).reduce((sum, a) => sum + a.pending.length, 0);
    expect(pendingBefore(roomOf(readSnapshot()).data)).toBeGreaterThan(0);
    // Far enough for every pending value date; the run happens before the next call is answered.
    now = NOW + 30 * 86_400_000;
    expect((await first.call("/v1/sandbox/customers")).status).toBe(200);
    expect(pendingBefore(roomOf(readSnapshot()).data)).toBe(0);
  });

  it("is not written by a refused operation", async () => {
    const running = await start();
    const before = readFileSync(file, "utf8");
    expect((await post(running, "/v1/sandbox/customers", { customerType: "NONE" })).status).toBe(400);
    expect(readFileSync(file, "utf8")).toBe(before);
  });

  it("when it cannot be written, answers 500 and leaves the data as it was", async () => {
    const running = await start();
    rmSync(dir, { recursive: true, force: true });
    const answer = await post(running, "/v1/sandbox/customers", {
      customerType: "PRIVATE",
      customerName: "Anne",
    });
    expect(answer.status).toBe(500);
    expect(tppCode(answer.json)).toBe("INTERNAL_SERVER_ERROR");
    expect(running.bank.dataOf(TEST_TPP).customers).toHaveLength(4);
  });

  it("stops the start when its folder does not exist", () => {
    expect(() => createSandboxBank({ gatewaySecret, stateFile: join(dir, "missing", "state.json") })).toThrow(
      /cannot be written/,
    );
  });
});

describe("a state file that is not a valid snapshot stops the start with a clear error", () => {
  const valid = (): StateSnapshot & { rooms: { data: RoomSnapshot["data"] }[] } => {
    const bank = createSandboxBank({ gatewaySecret, clock: () => NOW });
    const sca = { authorisations: [], consents: [], granted: [], identities: [], sessions: [] };
    const room = { organizationId: TEST_TPP, data: bank.data, payments: [], baskets: [], sca };
    return JSON.parse(JSON.stringify({ version: STATE_FILE_VERSION, rooms: [room] }));
  };

  it.each([
    ["not JSON", "{ this is not json", /not JSON/],
    ["an empty file", "", /not JSON/],
    ["an array", "[]", /expected a JSON object \{version, rooms\}/],
    ["no version", { rooms: [] }, /version is "?missing"?; this bank reads version 2/],
    ["the version before rooms", { version: 1, data: {} }, /version is 1; this bank reads version 2/],
    ["no rooms", { version: 2 }, /rooms: /],
    [
      "a payment without its status",
      { version: 2, rooms: [{ organizationId: "a", data: {}, payments: [{ paymentId: "p" }], baskets: [] }] },
      /rooms\.0\.payments\.0\./,
    ],
  ])("%s", (_name, content, message) => {
    writeSnapshot(content);
    expect(() => createSandboxBank({ gatewaySecret, stateFile: file })).toThrow(StateFileError);
    expect(() => createSandboxBank({ gatewaySecret, stateFile: file })).toThrow(message);
    expect(() => createSandboxBank({ gatewaySecret, stateFile: file })).toThrow(file);
  });

  it.each([
    [
      "a bban that is a number",
      (snapshot: StateSnapshot) => {
        (snapshot.rooms[0]!.data.customers[1]!.accounts[0] as { bban: unknown }).bban = 12345678903;
      },
      /data\.customers\[1\]\.accounts\[0\]\.bban: /,
    ],
    [
      "a date that is no date",
      (snapshot: StateSnapshot) => {
        (
          snapshot.rooms[0]!.data.customers[0]!.accounts[0]!.booked[0] as { bookingDate: string }
        ).bookingDate = "yesterday";
      },
      /bookingDate: expected a date written YYYY-MM-DD/,
    ],
    [
      "an unknown customer type",
      (snapshot: StateSnapshot) => {
        (snapshot.rooms[0]!.data.customers[0] as { customerType: string }).customerType = "PERSON";
      },
      /customerType/,
    ],
    [
      "no PRIVATE customer",
      (snapshot: StateSnapshot) => {
        (snapshot.rooms[0]!.data as { customers: unknown }).customers =
          snapshot.rooms[0]!.data.customers.slice(2);
      },
      /no PRIVATE customer/,
    ],
    [
      "an account listed under another customer",
      (snapshot: StateSnapshot) => {
        (snapshot.rooms[0]!.data.customers[0]!.accounts[0] as { ownerCustomerId: string }).ownerCustomerId =
          "someone";
      },
      /owned by someone/,
    ],
    [
      "an agreement granting another customer's account",
      (snapshot: StateSnapshot) => {
        (snapshot.rooms[0]!.data.customers[2]!.agreements[0]!.engagements as string[]).push(
          snapshot.rooms[0]!.data.customers[0]!.accounts[0]!.resourceId,
        );
      },
      /is not one of its accounts/,
    ],
    [
      "a customer number used twice",
      (snapshot: StateSnapshot) => {
        (snapshot.rooms[0]!.data.customers[1] as { customerNumber: string }).customerNumber =
          snapshot.rooms[0]!.data.customers[0]!.customerNumber;
      },
      /occurs twice/,
    ],
  ])("%s", (_name, spoil, message) => {
    const snapshot = valid();
    spoil(snapshot);
    writeSnapshot(snapshot);
    expect(() => createSandboxBank({ gatewaySecret, stateFile: file })).toThrow(message);
  });

  it("accepts members it does not know next to rooms", () => {
    writeSnapshot({ ...valid(), later: [] });
    const bank = createSandboxBank({ gatewaySecret, stateFile: file, clock: () => NOW });
    expect(bank.dataOf(TEST_TPP).customers).toHaveLength(4);
  });
});
