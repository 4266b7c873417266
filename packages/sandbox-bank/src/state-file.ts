/**
 * The optional state file (option `stateFile`, `psd2-gateway sandbox --state-file`): every TPP's
 * room kept across restarts: customers, accounts and transactions, payments and signing baskets,
 * consents, SCA authorisations, which customer a PSU-ID names and the TPP sessions. Read at start
 * when it exists; a file that is not a valid snapshot stops the start with an error naming what is
 * wrong. Written after every request that may change something, to a temporary file beside it
 * (mode 0600: it holds every TPP's data) that is then renamed over it, so that a crash leaves the
 * old file or the new one, never half.
 *
 * The snapshot is `{ "version": 2, "rooms": [{ "organizationId", "data", "payments", "baskets",
 * "sca" }] }`; a reader ignores members it does not know.
 */

import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { z } from "zod";
import type { BankState } from "./context.js";
import { parseBankData } from "./data-schema.js";
import type { BankData } from "./model.js";
import type { PaymentStoreSnapshot } from "./payment-store.js";
import type { Rooms } from "./rooms.js";
import { SCA_STATUSES, type ScaStoreSnapshot } from "./sca-store.js";

export const STATE_FILE_VERSION = 2;

export interface RoomSnapshot extends PaymentStoreSnapshot {
  readonly organizationId: string;
  readonly data: BankData;
  readonly sca: ScaStoreSnapshot;
}

export interface StateSnapshot {
  readonly version: typeof STATE_FILE_VERSION;
  readonly rooms: readonly RoomSnapshot[];
}

export class StateFileError extends Error {
  override readonly name = "StateFileError";
}

export function snapshotOf(rooms: Rooms): StateSnapshot {
  return {
    version: STATE_FILE_VERSION,
    rooms: [...rooms.entries()].map(([organizationId, room]) => roomSnapshot(organizationId, room)),
  };
}

function roomSnapshot(organizationId: string, room: BankState): RoomSnapshot {
  return { organizationId, data: room.catalogue.data, ...room.payments.snapshot(), sca: room.sca.snapshot() };
}

const text = z.string();
const optionalText = text.optional();
const instant = z.number().int();

/** The members the bank's code reads of a stored payment's parsed request; the rest is kept as written. */
const paymentRequest = z.looseObject({
  kind: z.enum(["single", "periodic"]),
  product: text,
  amount: text,
  amountMinor: z.int(),
  currency: text,
  debtorBban: text,
  creditorName: text,
});

const payment = z.object({
  paymentId: text,
  service: z.enum(["payments", "periodic-payments", "bulk-payments"]),
  product: text,
  organizationId: text,
  request: paymentRequest,
  logicalKey: text,
  fundsAvailable: z.boolean(),
  transactionStatus: z.enum(["RCVD", "ACCP", "RJCT", "CANC", "ACSC"]),
});

const basket = z.object({ basketId: text, organizationId: text, paymentIds: z.array(text) });

const corporate = z.object({ customerId: text, agreementId: text, psuCorporateId: text });

const authorisation = z.object({
  authorisationId: text,
  organizationId: text,
  redirectUri: text,
  tppSessionId: optionalText,
  preselectedIdentity: optionalText,
  preferredMethod: optionalText,
  redirectPreferred: z.boolean(),
  subject: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("consent"), consentId: text }),
    z.object({ kind: z.literal("payment"), product: text, paymentId: text }),
    z.object({ kind: z.literal("basket"), basketId: text }),
  ]),
  formToken: text,
  createdAt: instant,
  scaStatus: z.enum(SCA_STATUSES),
  customerId: optionalText,
});

const consent = z.object({
  consentId: text,
  organizationId: text,
  createdAt: instant,
  consentStatus: z.enum(["received", "valid", "rejected", "revokedByPsu", "terminatedByTpp"]),
  psuId: optionalText,
  customerId: optionalText,
  corporate: corporate.optional(),
  accounts: z.array(text),
  scaAt: instant.optional(),
});

const room = z.object({
  organizationId: text,
  data: z.unknown(),
  payments: z.array(payment),
  baskets: z.array(basket),
  sca: z.object({
    authorisations: z.array(authorisation),
    consents: z.array(consent),
    granted: z.array(z.tuple([text, z.array(text)])),
    identities: z.array(z.tuple([text, z.object({ customerId: text, corporate: corporate.optional() })])),
    sessions: z.array(z.tuple([text, z.object({ tppSessionId: text, scaAt: instant })])),
  }),
});

const snapshot = z.object({ version: z.literal(STATE_FILE_VERSION), rooms: z.array(room) });

/** The snapshot in `path`, or undefined when there is no file there yet. */
export function loadStateFile(path: string): StateSnapshot | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StateFileError(`Sandbox state file ${path} cannot be read: ${(error as Error).message}`);
  }
  const invalid = (reason: string) =>
    new StateFileError(
      `Sandbox state file ${path} is not a sandbox state: ${reason}. Fix or delete it (the bank then starts from its initial state)`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw invalid(`not JSON (${(error as Error).message.slice(0, 100)})`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalid("expected a JSON object {version, rooms}");
  }
  const version = (json as { version?: unknown }).version;
  if (version !== STATE_FILE_VERSION) {
    throw invalid(
      `version is ${JSON.stringify(version) ?? "missing"}; this bank reads version ${STATE_FILE_VERSION}`,
    );
  }
  const parsed = snapshot.safeParse(json);
  if (!parsed.success) {
    throw invalid(
      parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.map(String).join(".")}: ${issue.message}`)
        .join("; "),
    );
  }
  const rooms = parsed.data.rooms.map((each, index): RoomSnapshot => {
    const data = parseBankData(each.data);
    if (typeof data === "string") throw invalid(`rooms[${index}].${data}`);
    // JSON has no undefined: absent optional members read as the model's `T | undefined` members.
    return { ...(each as unknown as RoomSnapshot), data };
  });
  return { version: STATE_FILE_VERSION, rooms };
}

export function saveStateFile(path: string, snapshot: StateSnapshot): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    // 0600 from creation: the file holds every TPP's data, and the rename keeps the mode.
    writeFileSync(temporary, `${JSON.stringify(snapshot)}\n`, { flush: true, mode: 0o600 });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new StateFileError(`Sandbox state file ${path} cannot be written: ${(error as Error).message}`);
  }
}
