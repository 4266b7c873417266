/**
 * The sandbox's initial state (SPEC 1.7): two PRIVATE customers with two accounts and a card
 * account each, two CORPORATE customers with two accounts each and agreements granting them.
 * Everything comes from the seed and the clock, so a reset rebuilds exactly the same data, with
 * dates relative to "today". Some booked transactions are older than 90 days on purpose: they are
 * what the unattended-access rule (SPEC 8) must hide.
 */

import { isoDate, isoDateOffset } from "./dates.js";
import type {
  Account,
  Agreement,
  BankData,
  BatchEntry,
  BookedTransaction,
  CardAccount,
  CardTransaction,
  Customer,
  CustomerType,
  PendingTransaction,
} from "./model.js";
import { organisationNumber, syntheticNationalId } from "./national-id.js";
import { norwegianBban, SeededRandom } from "./random.js";

export const DEFAULT_SEED = 20_260_813;

/** A made-up bank registration number: every sandbox account number starts with it. */
export const BANK_CODE = "9710";
const NOK = "NOK";

/** A counterpart's name, or one filled in from the account's context (owner, employer). */
type Party = string | ((context: AccountContext) => string);

/** Whole kroner; an amount is drawn between the two, both included. */
type Range = readonly [number, number];

interface BookedTemplate {
  readonly daysAgo: number;
  /** Credits add to the account, debits take from it. */
  readonly direction: "credit" | "debit";
  readonly party: Party;
  readonly remittance: string;
  readonly range: Range;
  readonly code: string;
  /** Names of the creditors of a batch booking; its amount is the sum of theirs. */
  readonly batchOf?: readonly string[];
}

interface PendingTemplate {
  /** Negative for the past, positive for a scheduled future value date. */
  readonly valueInDays: number;
  readonly direction: "credit" | "debit";
  readonly party: Party;
  readonly remittance: string;
  readonly range: Range;
}

interface AccountKind {
  readonly name: string;
  readonly product: string;
  readonly cashAccountType: string;
  readonly openingRange: Range;
  readonly booked: readonly BookedTemplate[];
  readonly pending: readonly PendingTemplate[];
}

interface AccountContext {
  readonly ownerName: string;
  readonly employer: string;
}

/** Shorthands that keep the tables below one transaction to a line. */
const owner: Party = (context) => context.ownerName;
const employer: Party = (context) => context.employer;

function debit(
  daysAgo: number,
  party: Party,
  remittance: string,
  range: Range,
  code: string,
): BookedTemplate {
  return { daysAgo, direction: "debit", party, remittance, range, code };
}

function credit(
  daysAgo: number,
  party: Party,
  remittance: string,
  range: Range,
  code: string,
): BookedTemplate {
  return { daysAgo, direction: "credit", party, remittance, range, code };
}

function pendingDebit(valueInDays: number, party: Party, remittance: string, range: Range): PendingTemplate {
  return { valueInDays, direction: "debit", party, remittance, range };
}

function pendingCredit(valueInDays: number, party: Party, remittance: string, range: Range): PendingTemplate {
  return { valueInDays, direction: "credit", party, remittance, range };
}

const PRIVATE_CURRENT: AccountKind = {
  name: "Brukskonto",
  product: "Brukskonto",
  cashAccountType: "CACC",
  openingRange: [20_000, 60_000],
  booked: [
    debit(1, "Nærbutikken Solsiden", "Varekjøp", [150, 900], "VARE"),
    debit(3, "Kraftlaget Vest AS", "Faktura strøm", [600, 1_800], "EFAKTURA"),
    credit(9, employer, "Lønn", [28_000, 42_000], "LONN"),
    debit(16, "Boligbyggelaget Nord", "Husleie", [9_000, 14_000], "AVTALEGIRO"),
    debit(33, "Kollektivtrafikk Demo", "Periodebillett", [700, 900], "VARE"),
    credit(39, employer, "Lønn", [28_000, 42_000], "LONN"),
    debit(62, "Sportsbutikken Fjell", "Varekjøp", [300, 2_500], "VARE"),
    debit(95, "Forsikringsselskapet Trygg", "Forsikring kvartal", [1_500, 3_000], "EFAKTURA"),
    credit(121, "Skatteetaten", "Skatteoppgjør", [1_000, 9_000], "OVERFORING"),
    debit(200, "Møbelhuset Sør", "Sofa, ordre 4471", [2_000, 9_000], "VARE"),
  ],
  pending: [
    pendingDebit(0, "Kaffebaren Torget", "Reservasjon", [45, 120]),
    pendingDebit(4, "Boligbyggelaget Nord", "Husleie (forfall)", [9_000, 14_000]),
    pendingDebit(-12, "Nettbutikken Nord", "Reservasjon", [200, 1_200]),
  ],
};

const PRIVATE_SAVINGS: AccountKind = {
  name: "Sparekonto",
  product: "Høyrente Spar",
  cashAccountType: "SVGS",
  openingRange: [20_000, 250_000],
  booked: [
    credit(5, owner, "Fast sparing", [1_000, 3_000], "OVERFORING"),
    credit(35, owner, "Fast sparing", [1_000, 3_000], "OVERFORING"),
    debit(70, owner, "Uttak ferie", [3_000, 12_000], "OVERFORING"),
    credit(96, "Sandkassebanken", "Renter", [300, 1_500], "RENTER"),
    credit(160, owner, "Fast sparing", [1_000, 3_000], "OVERFORING"),
  ],
  pending: [pendingCredit(2, owner, "Fast sparing", [1_000, 3_000])],
};

const CORPORATE_OPERATING: AccountKind = {
  name: "Driftskonto",
  product: "Bedriftskonto",
  cashAccountType: "CACC",
  openingRange: [150_000, 900_000],
  booked: [
    credit(1, "Kafé Sentrum AS", "Faktura 10234", [4_000, 25_000], "INNBETALING"),
    debit(2, "Mel og Korn Grossist AS", "Faktura 88812", [8_000, 40_000], "EFAKTURA"),
    // A salary run booked as one batch (SPEC 2.7); each range is one member's net pay.
    {
      ...debit(7, "Lønnsutbetaling", "Lønn", [24_000, 48_000], "LONN"),
      batchOf: ["Kari Nordmann", "Per Bakken", "Sigrid Lie"],
    },
    debit(14, "Skatteetaten", "Merverdiavgift termin", [20_000, 80_000], "OVERFORING"),
    credit(30, "Hotell Bryggen AS", "Faktura 10198", [6_000, 30_000], "INNBETALING"),
    debit(45, "Kraftlaget Vest AS", "Strøm lokaler", [3_000, 12_000], "EFAKTURA"),
    debit(91, "Utstyrsleverandøren AS", "Ovn, ordre 5512", [30_000, 90_000], "EFAKTURA"),
    credit(100, "Kafé Sentrum AS", "Faktura 9950", [4_000, 25_000], "INNBETALING"),
    debit(180, "Eiendomsselskapet Kaia AS", "Husleie lokaler", [15_000, 35_000], "AVTALEGIRO"),
  ],
  pending: [
    pendingDebit(0, "Emballasje Norge AS", "Faktura 3321", [2_000, 9_000]),
    pendingDebit(3, "Eiendomsselskapet Kaia AS", "Husleie lokaler", [15_000, 35_000]),
    pendingCredit(-20, "Kafé Sentrum AS", "Faktura 10301 (under behandling)", [4_000, 25_000]),
  ],
};

const CORPORATE_TAX: AccountKind = {
  name: "Skattetrekkskonto",
  product: "Skattetrekkskonto",
  cashAccountType: "TAXE",
  openingRange: [30_000, 120_000],
  booked: [
    credit(7, owner, "Skattetrekk lønn", [8_000, 16_000], "OVERFORING"),
    credit(37, owner, "Skattetrekk lønn", [8_000, 16_000], "OVERFORING"),
    debit(60, "Skatteetaten", "Forskuddstrekk termin", [16_000, 32_000], "OVERFORING"),
    credit(97, owner, "Skattetrekk lønn", [8_000, 16_000], "OVERFORING"),
  ],
  pending: [pendingDebit(10, "Skatteetaten", "Forskuddstrekk termin", [16_000, 32_000])],
};

interface CardTemplate {
  readonly daysAgo: number;
  readonly merchant: string;
  readonly city: string;
  readonly country: string;
  readonly mcc: string;
  readonly currency: string;
  /** Kroner per unit of `currency`, as the string the API shows; absent for NOK. */
  readonly rate?: string;
  readonly range: Range;
}

function purchase(
  daysAgo: number,
  merchant: string,
  city: string,
  country: string,
  mcc: string,
  range: Range,
  foreign?: { currency: string; rate: string },
): CardTemplate {
  return {
    daysAgo,
    merchant,
    city,
    country,
    mcc,
    range,
    currency: foreign?.currency ?? NOK,
    rate: foreign?.rate,
  };
}

const CARD_BOOKED: readonly CardTemplate[] = [
  purchase(2, "Kiosken Stasjonen", "Oslo", "NO", "5499", [89, 250]),
  purchase(6, "Café du Port", "Paris", "FR", "5812", [18, 60], { currency: "EUR", rate: "11.6420" }),
  purchase(12, "Bokhandelen Sentrum", "Bergen", "NO", "5942", [199, 650]),
  purchase(40, "Hotell Bryggen", "Bergen", "NO", "7011", [1_200, 3_400]),
  purchase(100, "Tunnelbanan Stockholm", "Stockholm", "SE", "4111", [39, 160], {
    currency: "SEK",
    rate: "1.0150",
  }),
];

const CARD_PENDING: readonly CardTemplate[] = [
  purchase(0, "Drivstoff Nord", "Tromsø", "NO", "5541", [400, 1_100]),
  purchase(1, "Webshop Example Ltd", "London", "GB", "5969", [15, 80], { currency: "GBP", rate: "13.6010" }),
];

/** Foreign purchases carry a currency markup; domestic ones none. */
const FOREIGN_MARKUP_BASIS_POINTS = 175;

interface CustomerTemplate {
  readonly type: CustomerType;
  readonly name: string;
  readonly employer: string;
  readonly accounts: readonly AccountKind[];
  readonly hasCard: boolean;
  /** Agreement name → indexes into `accounts` it grants. */
  readonly agreements: readonly { readonly name: string; readonly accounts: readonly number[] }[];
}

const CUSTOMERS: readonly CustomerTemplate[] = [
  {
    type: "PRIVATE",
    name: "Kari Nordmann",
    employer: "Fjordlys Bakeri AS",
    accounts: [PRIVATE_CURRENT, PRIVATE_SAVINGS],
    hasCard: true,
    agreements: [],
  },
  {
    type: "PRIVATE",
    name: "Ola Fjellheim",
    employer: "Nordvik Transport AS",
    accounts: [PRIVATE_CURRENT, PRIVATE_SAVINGS],
    hasCard: true,
    agreements: [],
  },
  {
    type: "CORPORATE",
    name: "Fjordlys Bakeri AS",
    employer: "Fjordlys Bakeri AS",
    accounts: [CORPORATE_OPERATING, CORPORATE_TAX],
    hasCard: false,
    agreements: [{ name: "Nettbank bedrift", accounts: [0, 1] }],
  },
  {
    type: "CORPORATE",
    name: "Nordvik Transport AS",
    employer: "Nordvik Transport AS",
    accounts: [CORPORATE_OPERATING, CORPORATE_TAX],
    hasCard: false,
    agreements: [
      { name: "Nettbank bedrift", accounts: [0, 1] },
      { name: "Regnskapsførertilgang", accounts: [0] },
    ],
  },
];

/** Builds the whole initial state. Pure: the same seed and the same day give equal data. */
export function buildInitialData(seed: number, nowMs: number): BankData {
  const random = new SeededRandom(seed);
  // A stream of its own, so that ids, account numbers and amounts do not depend on how many draws
  // a valid customer number took.
  const numbers = new SeededRandom(seed ^ 0x5eed_1d);
  const customers = CUSTOMERS.map((template) => buildCustomer(template, random, numbers, nowMs));
  return { today: isoDate(nowMs), customers };
}

function buildCustomer(
  template: CustomerTemplate,
  random: SeededRandom,
  numbers: SeededRandom,
  nowMs: number,
): Customer {
  const customerId = random.uuid();
  // The numbers a customer types at the SCA page pass the MOD11 checks a client may apply (national-id.ts).
  const customerNumber =
    template.type === "PRIVATE" ? syntheticNationalId(numbers) : organisationNumber(numbers);
  const context: AccountContext = { ownerName: template.name, employer: template.employer };
  const accounts = template.accounts.map((kind) => buildAccount(kind, customerId, context, random, nowMs));
  const cardAccounts = template.hasCard ? [buildCardAccount(template.name, customerId, random, nowMs)] : [];
  const agreements: Agreement[] = template.agreements.map((agreement) => ({
    id: random.uuid(),
    name: `${agreement.name} ${template.name}`,
    engagements: agreement.accounts.map((index) => accounts[index]!.resourceId),
  }));
  return {
    customerId,
    customerNumber,
    customerType: template.type,
    customerName: template.name,
    agreements,
    accounts,
    cardAccounts,
  };
}

function amountIn(random: SeededRandom, range: Range): number {
  return random.int(range[0] * 100, range[1] * 100);
}

function partyName(party: Party, context: AccountContext): string {
  return typeof party === "string" ? party : party(context);
}

function buildAccount(
  kind: AccountKind,
  ownerCustomerId: string,
  context: AccountContext,
  random: SeededRandom,
  nowMs: number,
): Account {
  const resourceId = random.uuid();
  const bban = norwegianBban(random, BANK_CODE);
  const booked = kind.booked.map((template) => buildBooked(template, context, random, nowMs));
  const pending: PendingTransaction[] = kind.pending.map((template): PendingTransaction => {
    const minor = amountIn(random, template.range);
    return {
      valueDate: isoDateOffset(nowMs, template.valueInDays),
      amount: { minor: template.direction === "debit" ? -minor : minor, currency: NOK },
      counterpartyName: partyName(template.party, context),
      remittance: template.remittance,
    };
  });
  // Newest value date first, as booked transactions are listed.
  pending.sort((a, b) => (a.valueDate < b.valueDate ? 1 : a.valueDate > b.valueDate ? -1 : 0));
  return {
    resourceId,
    bban,
    currency: NOK,
    name: `${kind.name} ${context.ownerName}`,
    product: kind.product,
    cashAccountType: kind.cashAccountType,
    ownerCustomerId,
    bookedBalanceMinor: amountIn(random, kind.openingRange),
    booked,
    pending,
  };
}

function buildBooked(
  template: BookedTemplate,
  context: AccountContext,
  random: SeededRandom,
  nowMs: number,
): BookedTransaction {
  const transactionId = random.hex(24);
  const date = isoDateOffset(nowMs, -template.daysAgo);
  const sign = template.direction === "debit" ? -1 : 1;
  let batch: BatchEntry[] | undefined;
  let minor: number;
  if (template.batchOf === undefined) {
    minor = amountIn(random, template.range);
  } else {
    batch = template.batchOf.map((creditorName) => ({
      amount: { minor: sign * amountIn(random, template.range), currency: NOK },
      creditorName,
      creditorBban: norwegianBban(random, BANK_CODE),
      remittance: template.remittance,
    }));
    minor = batch.reduce((sum, entry) => sum + Math.abs(entry.amount.minor), 0);
  }
  return {
    transactionId,
    bookingDate: date,
    valueDate: date,
    amount: { minor: sign * minor, currency: NOK },
    counterpartyName: partyName(template.party, context),
    counterpartyBban: batch === undefined ? norwegianBban(random, BANK_CODE) : undefined,
    remittance: template.remittance,
    proprietaryBankTransactionCode: template.code,
    batch,
  };
}

function buildCardAccount(
  ownerName: string,
  ownerCustomerId: string,
  random: SeededRandom,
  nowMs: number,
): CardAccount {
  const resourceId = random.uuid();
  const maskedPan = `492500******${random.digits(4)}`;
  const booked = CARD_BOOKED.map((template) => buildCardTransaction(template, true, random, nowMs));
  const pending = CARD_PENDING.map((template) => buildCardTransaction(template, false, random, nowMs));
  return {
    resourceId,
    maskedPan,
    currency: NOK,
    name: `Visa Kredittkort ${ownerName}`,
    product: "Visa Kredittkort",
    ownerCustomerId,
    creditLimitMinor: random.int(2, 6) * 10_000_00,
    booked,
    pending,
  };
}

function buildCardTransaction(
  template: CardTemplate,
  booked: boolean,
  random: SeededRandom,
  nowMs: number,
): CardTransaction {
  const transactionDate = isoDateOffset(nowMs, -template.daysAgo);
  const originalMinor = amountIn(random, template.range);
  const foreign = template.rate !== undefined;
  // Rates have four decimals; integer arithmetic keeps the kroner amount exact to the øre.
  const rateTenThousandths = foreign ? Math.round(Number(template.rate) * 10_000) : 10_000;
  const nokMinor = Math.round((originalMinor * rateTenThousandths) / 10_000);
  const markupMinor = foreign ? Math.round((nokMinor * FOREIGN_MARKUP_BASIS_POINTS) / 10_000) : 0;
  return {
    cardTransactionId: random.hex(20),
    terminalId: random.digits(8),
    // SPEC 2.2: a booking date not later than the value date, which is the transactionDate here
    // (card-transaction-input.ts): booked on the day of the purchase.
    bookingDate: booked ? transactionDate : undefined,
    transactionDate,
    transactionAmount: { minor: -(nokMinor + markupMinor), currency: NOK },
    originalAmount: { minor: -originalMinor, currency: template.currency },
    currencyExchange: foreign
      ? {
          sourceCurrency: template.currency,
          targetCurrency: NOK,
          unitCurrency: template.currency,
          exchangeRate: template.rate!,
          quotationDate: transactionDate,
        }
      : undefined,
    markupFee: { minor: markupMinor, currency: NOK },
    markupFeePercentage: foreign ? (FOREIGN_MARKUP_BASIS_POINTS / 100).toFixed(2) : "0.00",
    merchantCategoryCode: template.mcc,
    cardAcceptorId: random.digits(15),
    cardAcceptorAddress: {
      street: undefined,
      buildingNumber: undefined,
      postalCode: undefined,
      city: template.city,
      country: template.country,
    },
    transactionDetails: `${template.merchant}, ${template.city}`,
    invoiced: booked && template.daysAgo > 30,
    proprietaryBankTransactionCode: "VARE",
  };
}
