/**
 * Reading a norwegian-domestic-credit-transfers request body. Pure and total: any bytes give
 * either a payment or a text naming the field to fix, never an exception.
 */

import { parsePositiveAmount } from "./money.js";

export const DOMESTIC_PRODUCT = "norwegian-domestic-credit-transfers";

export interface DomesticPaymentRequest {
  /** As the TPP sent it, e.g. "10.5". */
  readonly amount: string;
  readonly amountMinor: number;
  readonly currency: "NOK";
  readonly debtorBban: string;
  readonly creditorBban: string;
  readonly creditorName: string;
  readonly remittance: string | undefined;
}

export type PaymentBodyResult =
  | { readonly ok: true; readonly payment: DomesticPaymentRequest }
  | { readonly ok: false; readonly text: string };

const utf8 = new TextDecoder("utf-8", { fatal: true });
const BBAN = /^\d{11}$/;
/** Surrogates: characters outside the Basic Multilingual Plane (emoji) or broken halves of them. */
const OUTSIDE_BMP = /[\ud800-\udfff]/;
const MAX_CREDITOR_NAME = 70;
const MAX_REMITTANCE = 140;

function problem(text: string): PaymentBodyResult {
  return { ok: false, text };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "object") return "an object";
  return `the ${typeof value} ${String(value)}`;
}

export function parseDomesticPayment(bytes: Uint8Array): PaymentBodyResult {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return problem("Body is not valid UTF-8");
  }
  if (text.trim().length === 0) {
    return problem(
      "Body is empty; send a JSON object with instructedAmount, debtorAccount, creditorAccount and creditorName",
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    return problem(
      `Body is not valid JSON: ${error instanceof Error ? error.message.slice(0, 100) : "parse error"}`,
    );
  }
  if (!isObject(body)) return problem(`Body must be a JSON object; got ${describe(body)}`);

  const instructedAmount = body["instructedAmount"];
  if (!isObject(instructedAmount)) {
    return problem(
      `instructedAmount must be an object {amount, currency}; got ${describe(instructedAmount)}`,
    );
  }
  const amount = instructedAmount["amount"];
  if (typeof amount !== "string") {
    return problem(
      `instructedAmount.amount must be a decimal string such as "10.00" (amounts are strings); got ${describe(amount)}`,
    );
  }
  const amountMinor = parsePositiveAmount(amount);
  if (amountMinor === undefined) {
    return problem(
      `instructedAmount.amount must be a positive decimal with at most 2 decimals, such as "10.00"; got ${describe(amount)}`,
    );
  }
  const currency = instructedAmount["currency"];
  if (currency !== "NOK") {
    return problem(
      `instructedAmount.currency must be "NOK" for a ${DOMESTIC_PRODUCT} payment; got ${describe(currency)}`,
    );
  }

  const debtorBban = bbanOf(body, "debtorAccount");
  if (!debtorBban.ok) return debtorBban;
  const creditorBban = bbanOf(body, "creditorAccount");
  if (!creditorBban.ok) return creditorBban;

  const creditorName = body["creditorName"];
  if (typeof creditorName !== "string" || creditorName.trim().length === 0) {
    return problem(`creditorName must be a non-empty string; got ${describe(creditorName)}`);
  }
  if (creditorName.length > MAX_CREDITOR_NAME) {
    return problem(
      `creditorName is ${creditorName.length} characters long; at most ${MAX_CREDITOR_NAME} are allowed`,
    );
  }
  const remittance = body["remittanceInformationUnstructured"];
  if (remittance !== undefined && typeof remittance !== "string") {
    return problem(
      `remittanceInformationUnstructured must be a string when present; got ${describe(remittance)}`,
    );
  }
  if (remittance !== undefined && remittance.length > MAX_REMITTANCE) {
    return problem(
      `remittanceInformationUnstructured is ${remittance.length} characters long; at most ${MAX_REMITTANCE} are allowed`,
    );
  }
  // SPEC 1.3: the core system cannot store characters such as emoji, so the request is refused.
  for (const [name, value] of [
    ["creditorName", creditorName],
    ["remittanceInformationUnstructured", remittance],
  ] as const) {
    if (value !== undefined && OUTSIDE_BMP.test(value)) {
      return problem(`${name} contains a character the core system cannot process (such as an emoji)`);
    }
  }

  return {
    ok: true,
    payment: {
      amount,
      amountMinor,
      currency: "NOK",
      debtorBban: debtorBban.bban,
      creditorBban: creditorBban.bban,
      creditorName,
      remittance,
    },
  };
}

function bbanOf(
  body: Record<string, unknown>,
  name: "debtorAccount" | "creditorAccount",
): { readonly ok: true; readonly bban: string } | { readonly ok: false; readonly text: string } {
  const account = body[name];
  if (!isObject(account))
    return { ok: false, text: `${name} must be an object {bban}; got ${describe(account)}` };
  const bban = account["bban"];
  if (typeof bban !== "string" || !BBAN.test(bban)) {
    return {
      ok: false,
      text: `${name}.bban must be an 11-digit Norwegian account number string; got ${describe(bban)}`,
    };
  }
  return { ok: true, bban };
}

/** What makes two payments the same payment: debtor, creditor, amount and remittance text. */
export function logicalKey(payment: DomesticPaymentRequest): string {
  return `${payment.debtorBban}|${payment.creditorBban}|${payment.amountMinor}|${payment.remittance ?? ""}`;
}
