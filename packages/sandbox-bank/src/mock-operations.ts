/**
 * The sandbox operations that change the mock data (SPEC 1.7, 4.3, 4.5; bodies in mock-input.ts
 * and card-transaction-input.ts). Each builds new data and commits it: the catalogue is rebuilt
 * (reads stay lookups) and the state file, if any, written. Answers are the resources as the
 * bank's GET operations serve them, except the SPEC 2.3 result of card transaction creation.
 */

import { parseCardTransactions } from "./card-transaction-input.js";
import type { RequestContext } from "./context.js";
import { isoDate } from "./dates.js";
import { errorReply, formatError, isReply, jsonReply, quote, type Reply, readBody } from "./http.js";
import {
  addAccountTransaction,
  addCardAccount,
  addCardTransactions,
  addCustomer,
  cryptoDraw,
  newestCardFirst,
} from "./mock-data.js";
import { parseAccountTransactionInput, parseCardAccountInput, parseCustomerInput } from "./mock-input.js";
import type { CardAccount, CardTransaction } from "./model.js";
import { amount, hrefs, type Json } from "./render.js";

/** Index of the customer list with accounts and agreements (catalogue.ts). */
const FULL_CUSTOMER_LIST = 3;

/**
 * POST /v1/sandbox/reset: SPEC 1.7 describes initialising the sandbox but names no path. Back to
 * the initial state (created customers gone, payments and consents forgotten); the answer is the
 * customer list with accounts and agreements, so that a client has the new state's ids at once.
 */
export function resetSandbox({ control }: RequestContext): Reply {
  return jsonReply(200, control.reset().catalogue.customerLists[FULL_CUSTOMER_LIST]);
}

/** POST /v1/sandbox/customers: 201 with the SPEC 2.1 customer element, accounts and agreements included. */
export async function createCustomer(context: RequestContext): Promise<Reply> {
  const body = await readJson(context, "a JSON object {customerType, customerName, accounts}");
  if (isReply(body)) return body;
  const input = parseCustomerInput(body.json);
  if (!input.ok) return formatError(input.text);
  const { state, control } = context;
  const { data, customer } = addCustomer(state.catalogue.data, input.value, cryptoDraw);
  control.commit(state, data);
  return jsonReply(201, state.catalogue.customerDetails.get(customer.customerId)!, {
    location: hrefs.customer(customer.customerId),
  });
}

/** POST /v1/sandbox/card-accounts: 201 with the card account as GET /v1/card-accounts/{id} shows it. */
export async function createCardAccount(context: RequestContext): Promise<Reply> {
  const body = await readJson(context, "a JSON object {customerId, currency, name}");
  if (isReply(body)) return body;
  const input = parseCardAccountInput(body.json);
  if (!input.ok) return formatError(input.text);
  const { state, control } = context;
  const owner = state.catalogue.data.customers.find((each) => each.customerId === input.value.customerId);
  if (owner === undefined) {
    return formatError(
      `customerId ${quote(input.value.customerId)} is not a sandbox customer; GET /v1/sandbox/customers lists them`,
    );
  }
  const { data, card } = addCardAccount(state.catalogue.data, owner, input.value, cryptoDraw);
  control.commit(state, data);
  return jsonReply(201, state.catalogue.cards.get(card.resourceId)!.details, {
    location: hrefs.cardAccount(card.resourceId),
  });
}

/** POST /v1/sandbox/card-accounts/{mockCardAccountId}/transactions (SPEC 4.3): booked, answered as SPEC 2.3. */
export async function createCardTransactions(context: RequestContext): Promise<Reply> {
  const body = await readJson(context, "a JSON array of card transactions (SPEC 2.2)");
  if (isReply(body)) return body;
  const { state, settings, control, params } = context;
  const card = state.catalogue.cards.get(params[0]!)?.card;
  if (card === undefined) {
    return errorReply(404, "RESOURCE_UNKNOWN", `No mock card account has the id ${quote(params[0]!)}`);
  }
  const existingIds = new Set([...card.booked, ...card.pending].map((each) => each.cardTransactionId));
  const parsed = parseCardTransactions(body.json, {
    nowMs: settings.now(),
    existingIds,
    currency: card.currency,
  });
  if (!parsed.ok) return formatError(parsed.text);
  control.commit(state, addCardTransactions(state.catalogue.data, card, parsed.value));
  return jsonReply(201, JSON.stringify(cardTransactionsResult(card, parsed.value)));
}

/** POST /v1/sandbox/accounts/{mockAccountId}/transactions: 201 with the transaction's details. */
export async function createAccountTransaction(context: RequestContext): Promise<Reply> {
  const body = await readJson(context, "a JSON object {transactionAmount, creditorName or debtorName, …}");
  if (isReply(body)) return body;
  const { state, settings, control, params } = context;
  const accountId = params[0]!;
  const account = state.catalogue.accounts.get(accountId)?.account;
  if (account === undefined) {
    return errorReply(404, "RESOURCE_UNKNOWN", `No mock account has the id ${quote(accountId)}`);
  }
  const input = parseAccountTransactionInput(body.json, account, isoDate(settings.now()));
  if (!input.ok) return formatError(input.text);
  const { data, transaction } = addAccountTransaction(state.catalogue.data, account, input.value, cryptoDraw);
  control.commit(state, data);
  const id = transaction.transactionId;
  return jsonReply(201, state.catalogue.accounts.get(accountId)!.transactionDetails.get(id)!, {
    location: hrefs.transaction(accountId, id),
  });
}

/** SPEC 2.3: the transactions just created, newest first; created transactions are booked, so none is pending. */
function cardTransactionsResult(card: CardAccount, added: readonly CardTransaction[]): Json {
  return {
    cardAccount: { maskedPan: card.maskedPan },
    cardTransactions: {
      booked: newestCardFirst(added).map((each) => ({
        cardTransactionId: each.cardTransactionId,
        bookingDate: each.bookingDate!,
        transactionDate: each.transactionDate,
        transactionAmount: amount(each.transactionAmount),
        originalAmount: amount(each.originalAmount),
        merchantCategoryCode: each.merchantCategoryCode,
      })),
      pending: [],
    },
  };
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

interface JsonBody {
  readonly json: unknown;
}

async function readJson({ req, settings }: RequestContext, expected: string): Promise<JsonBody | Reply> {
  const body = await readBody(req, settings.maxBodyBytes, settings.drainBytes);
  if (body.kind === "reply") return body.reply;
  if (body.kind === "aborted") return formatError("The request body was cut off");
  let text: string;
  try {
    text = utf8.decode(body.bytes);
  } catch {
    return formatError("The body is not valid UTF-8");
  }
  if (text.trim().length === 0) return formatError(`The body is empty: send ${expected}`);
  try {
    return { json: JSON.parse(text) };
  } catch (error) {
    return formatError(
      `The body is not valid JSON (${(error as Error).message.slice(0, 100)}): send ${expected}`,
    );
  }
}
