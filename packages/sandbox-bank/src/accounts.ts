/**
 * Account information (AIS): accounts, card accounts, balances and transactions of the PSU, read
 * from the catalogue as the request's x-accept-fix header and the bank's date select it (SPEC 9.2,
 * fixes.ts).
 */

import {
  type AccountEntry,
  type CardEntry,
  catalogueFor,
  type Fragment,
  type TransactionListParts,
} from "./catalogue.js";
import type { RequestContext } from "./context.js";
import { isIsoDate } from "./dates.js";
import { errorReply, formatError, isReply, jsonReply, quote, type Reply } from "./http.js";
import { mayReach, resolvePsu } from "./psu.js";
import { consentRequired } from "./sca-flow.js";

/** The whole list is served as serialised; a consent's share is joined from the accounts' own. */
export function listAccounts(context: RequestContext): Reply {
  const access = resolvePsu(context);
  if (isReply(access)) return access;
  const catalogue = catalogueFor(context);
  const { customer, granted } = access;
  if (granted === undefined) return jsonReply(200, catalogue.accountLists.get(customer.customerId)!);
  const chosen = customer.accounts.filter((account) => granted.has(account.resourceId));
  return jsonReply(
    200,
    joinList(
      "accounts",
      chosen.map((a) => catalogue.accounts.get(a.resourceId)!.details),
    ),
  );
}

export function listCardAccounts(context: RequestContext): Reply {
  const access = resolvePsu(context);
  if (isReply(access)) return access;
  const catalogue = catalogueFor(context);
  const { customer, granted } = access;
  if (granted === undefined) return jsonReply(200, catalogue.cardAccountLists.get(customer.customerId)!);
  const chosen = customer.cardAccounts.filter((card) => granted.has(card.resourceId));
  return jsonReply(
    200,
    joinList(
      "cardAccounts",
      chosen.map((c) => catalogue.cards.get(c.resourceId)!.details),
    ),
  );
}

/** `{"account":{…}}` details bodies → `{"accounts":[{…},…]}`. */
function joinList(name: "accounts" | "cardAccounts", details: readonly Buffer[]): string {
  const members = details.map((body) => {
    const text = body.toString("utf8");
    return text.slice(text.indexOf(":") + 1, -1);
  });
  return `{"${name}":[${members.join(",")}]}`;
}

/**
 * The PSU's account named in the path. Another customer's account answers exactly like an unknown
 * one, so that a TPP cannot probe which ids exist.
 */
function ownAccount(context: RequestContext): AccountEntry | Reply {
  const access = resolvePsu(context);
  if (isReply(access)) return access;
  const accountId = context.params[0]!;
  const entry = catalogueFor(context).accounts.get(accountId);
  if (
    entry !== undefined &&
    entry.account.ownerCustomerId === access.customer.customerId &&
    !mayReach(access, accountId, entry.account.ownerCustomerId)
  ) {
    return consentRequired(
      context,
      "CONSENT_INVALID",
      `The PSU's consent does not cover account ${quote(accountId)}`,
    );
  }
  if (entry === undefined || !mayReach(access, accountId, entry.account.ownerCustomerId)) {
    return errorReply(404, "RESOURCE_UNKNOWN", `The PSU has no account ${quote(accountId)}`);
  }
  return entry;
}

function ownCard(context: RequestContext): CardEntry | Reply {
  const access = resolvePsu(context);
  if (isReply(access)) return access;
  const cardId = context.params[0]!;
  const entry = catalogueFor(context).cards.get(cardId);
  if (
    entry !== undefined &&
    entry.card.ownerCustomerId === access.customer.customerId &&
    !mayReach(access, cardId, entry.card.ownerCustomerId)
  ) {
    return consentRequired(
      context,
      "CONSENT_INVALID",
      `The PSU's consent does not cover card account ${quote(cardId)}`,
    );
  }
  if (entry === undefined || !mayReach(access, cardId, entry.card.ownerCustomerId)) {
    return errorReply(404, "RESOURCE_UNKNOWN", `The PSU has no card account ${quote(cardId)}`);
  }
  return entry;
}

export function getAccount(context: RequestContext): Reply {
  const entry = ownAccount(context);
  return isReply(entry) ? entry : jsonReply(200, entry.details);
}

export function getBalances(context: RequestContext): Reply {
  const entry = ownAccount(context);
  return isReply(entry) ? entry : jsonReply(200, entry.balances);
}

export function getTransactionDetails(context: RequestContext): Reply {
  const entry = ownAccount(context);
  if (isReply(entry)) return entry;
  const transactionId = context.params[1]!;
  const details = entry.transactionDetails.get(transactionId);
  if (details === undefined) {
    return errorReply(
      404,
      "RESOURCE_UNKNOWN",
      `Account ${quote(entry.account.resourceId)} has no booked transaction ${quote(transactionId)}`,
    );
  }
  return jsonReply(200, details);
}

export function getCardAccount(context: RequestContext): Reply {
  const entry = ownCard(context);
  return isReply(entry) ? entry : jsonReply(200, entry.details);
}

export function getCardBalances(context: RequestContext): Reply {
  const entry = ownCard(context);
  return isReply(entry) ? entry : jsonReply(200, entry.balances);
}

export function getTransactions(context: RequestContext): Reply {
  const entry = ownAccount(context);
  if (isReply(entry)) return entry;
  const query = parseTransactionQuery(context.query);
  if (isReply(query)) return query;
  return jsonReply(
    200,
    assembleTransactions(entry.transactions, query, context.settings.pendingIgnoresDateFilter),
  );
}

/** Card accounts are not affected by the pending-transactions known issue (SPEC 4.5). */
export function getCardTransactions(context: RequestContext): Reply {
  const entry = ownCard(context);
  if (isReply(entry)) return entry;
  const query = parseTransactionQuery(context.query);
  if (isReply(query)) return query;
  return jsonReply(200, assembleTransactions(entry.transactions, query, false));
}

export interface TransactionQuery {
  readonly booked: boolean;
  readonly pending: boolean;
  readonly dateFrom: string | undefined;
  readonly dateTo: string | undefined;
  readonly offset: number;
  readonly limit: number | undefined;
}

const BOOKING_STATUSES = "booked, pending, both or all";
const COUNT = /^\d{1,9}$/;

/**
 * bookingStatus is required, as in Berlin Group: a missing one is a 400 FORMAT_ERROR rather than a
 * silent default, so that a TPP notices. `all` means the same as `both` here.
 */
export function parseTransactionQuery(query: URLSearchParams): TransactionQuery | Reply {
  const status = query.get("bookingStatus");
  if (status === null) return formatError(`Query parameter bookingStatus is required: ${BOOKING_STATUSES}`);
  if (status !== "booked" && status !== "pending" && status !== "both" && status !== "all") {
    return formatError(`Query parameter bookingStatus must be ${BOOKING_STATUSES}; got ${quote(status)}`);
  }
  const dateFrom = query.get("dateFrom") ?? undefined;
  const dateTo = query.get("dateTo") ?? undefined;
  for (const [name, value] of [
    ["dateFrom", dateFrom],
    ["dateTo", dateTo],
  ] as const) {
    if (value !== undefined && !isIsoDate(value)) {
      return formatError(`Query parameter ${name} must be a date written YYYY-MM-DD; got ${quote(value)}`);
    }
  }
  if (dateFrom !== undefined && dateTo !== undefined && dateFrom > dateTo) {
    return errorReply(400, "PERIOD_INVALID", `dateFrom ${dateFrom} is after dateTo ${dateTo}`);
  }
  const offsetText = query.get("offset");
  const limitText = query.get("limit");
  if (offsetText !== null && !COUNT.test(offsetText)) {
    return formatError(`Query parameter offset must be a whole number ≥ 0; got ${quote(offsetText)}`);
  }
  if (limitText !== null && (!COUNT.test(limitText) || Number(limitText) === 0)) {
    return formatError(`Query parameter limit must be a whole number ≥ 1; got ${quote(limitText)}`);
  }
  return {
    booked: status !== "pending",
    pending: status !== "booked",
    dateFrom,
    dateTo,
    offset: offsetText === null ? 0 : Number(offsetText),
    limit: limitText === null ? undefined : Number(limitText),
  };
}

/**
 * Joins the pre-serialised elements that pass the query. Date bounds are inclusive; offset and
 * limit page each list on its own. With `pendingIgnoresFilter` the pending list is returned whole,
 * as the production bank does (SPEC 4.5 known issue).
 */
export function assembleTransactions(
  parts: TransactionListParts,
  query: TransactionQuery,
  pendingIgnoresFilter: boolean,
): string {
  let body = parts.head;
  if (query.booked) body += `"booked":[${select(parts.booked, query)}],`;
  if (query.pending) {
    const pending = pendingIgnoresFilter
      ? parts.pending.map((fragment) => fragment.json).join(",")
      : select(parts.pending, query);
    body += `"pending":[${pending}],`;
  }
  return body + parts.tail;
}

function select(fragments: readonly Fragment[], query: TransactionQuery): string {
  const { dateFrom, dateTo, offset, limit } = query;
  const end = limit === undefined ? Number.POSITIVE_INFINITY : offset + limit;
  let body = "";
  let index = 0;
  for (const fragment of fragments) {
    if (dateFrom !== undefined && fragment.date < dateFrom) continue;
    if (dateTo !== undefined && fragment.date > dateTo) continue;
    if (index >= offset && index < end) body += body.length === 0 ? fragment.json : `,${fragment.json}`;
    index++;
    if (index >= end) break;
  }
  return body;
}
