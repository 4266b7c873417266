/**
 * Reading payment request bodies: bytes and the bank's today → a parsed request, or a refusal
 * with a Berlin Group code and a text that names the field to fix. Pure and total: no I/O, no
 * clock of its own, never an exception, whatever the bytes.
 *
 * Products offered (PAYMENT_PRODUCTS):
 * - single payments (/v1/payments/{product}): norwegian-domestic-credit-transfers
 *   (./payment-body/domestic.ts) and norwegian-cross-border-credit-transfers
 *   (./payment-body/cross-border.ts);
 * - periodic payments (/v1/periodic-payments/{product}): norwegian-domestic-credit-transfers
 *   (./payment-body/periodic.ts).
 *
 * Refusals: 404 PRODUCT_UNKNOWN for a product not offered for that kind of payment; 400
 * FORMAT_ERROR for everything else (SPEC 7: an invalid KID, duplicate months, missing structured
 * creditor data once enforced).
 */

import {
  CROSS_BORDER_MEMBERS,
  CROSS_BORDER_PRODUCT,
  type CrossBorderPaymentRequest,
  crossBorderKeyParts,
  readCrossBorderPayment,
} from "./payment-body/cross-border.js";
import {
  DOMESTIC_MEMBERS,
  DOMESTIC_PRODUCT,
  type DomesticPaymentRequest,
  domesticKeyParts,
  readDomesticPayment,
} from "./payment-body/domestic.js";
import { type Refusal, readJsonObject } from "./payment-body/fields.js";
import {
  PERIODIC_MEMBERS,
  type PeriodicPaymentRequest,
  periodicKeyParts,
  readPeriodicPayment,
} from "./payment-body/periodic.js";

export type { PostalAddress } from "./address.js";
export type {
  CrossBorderPaymentRequest,
  ForeignAccount,
  RegulatoryReporting,
} from "./payment-body/cross-border.js";
export type { Refusal, RefusalCode } from "./payment-body/fields.js";
export type { ExecutionRule, Frequency, PeriodicPaymentRequest } from "./payment-body/periodic.js";
export { CROSS_BORDER_PRODUCT, DOMESTIC_PRODUCT, type DomesticPaymentRequest };

export type PaymentKind = "single" | "periodic";

/** The products offered, per kind of payment. */
export const PAYMENT_PRODUCTS: { readonly [kind in PaymentKind]: readonly string[] } = {
  single: [DOMESTIC_PRODUCT, CROSS_BORDER_PRODUCT],
  periodic: [DOMESTIC_PRODUCT],
};

export function isOfferedProduct(kind: PaymentKind, product: string): boolean {
  return PAYMENT_PRODUCTS[kind]?.includes(product) ?? false;
}

export interface SingleDomesticPayment extends DomesticPaymentRequest {
  readonly kind: "single";
  readonly product: typeof DOMESTIC_PRODUCT;
}

export interface SingleCrossBorderPayment extends CrossBorderPaymentRequest {
  readonly kind: "single";
  readonly product: typeof CROSS_BORDER_PRODUCT;
}

export interface PeriodicDomesticPayment extends PeriodicPaymentRequest {
  readonly kind: "periodic";
  readonly product: typeof DOMESTIC_PRODUCT;
}

export type PaymentRequest = SingleDomesticPayment | SingleCrossBorderPayment | PeriodicDomesticPayment;

export type PaymentRequestResult = { readonly ok: true; readonly payment: PaymentRequest } | Refusal;

/**
 * The one entry point: `kind` and `product` from the path, the body's bytes, and the bank's today
 * (YYYY-MM-DD, UTC), which dates such as startDate and the structured-address rule are judged by.
 */
export function parsePaymentRequest(
  kind: PaymentKind,
  product: string,
  bytes: Uint8Array,
  today: string,
): PaymentRequestResult {
  if (!isOfferedProduct(kind, product)) {
    const offered = PAYMENT_PRODUCTS[kind] ?? [];
    return {
      ok: false,
      status: 404,
      code: "PRODUCT_UNKNOWN",
      text: `Payment product ${JSON.stringify(product.slice(0, 60))} is not offered for ${kind} payments; this sandbox offers ${offered.join(" and ")}`,
    };
  }
  if (kind === "periodic") {
    const body = readJsonObject(bytes, PERIODIC_MEMBERS);
    if (!body.ok) return body;
    const payment = readPeriodicPayment(body.value, today);
    if (!payment.ok) return payment;
    return { ok: true, payment: { ...payment.value, kind, product: DOMESTIC_PRODUCT } };
  }
  if (product === CROSS_BORDER_PRODUCT) {
    const body = readJsonObject(bytes, CROSS_BORDER_MEMBERS);
    if (!body.ok) return body;
    const payment = readCrossBorderPayment(body.value, today);
    if (!payment.ok) return payment;
    return { ok: true, payment: { ...payment.value, kind, product: CROSS_BORDER_PRODUCT } };
  }
  const body = readJsonObject(bytes, DOMESTIC_MEMBERS);
  if (!body.ok) return body;
  const payment = readDomesticPayment(body.value);
  if (!payment.ok) return payment;
  return { ok: true, payment: { ...payment.value, kind, product: DOMESTIC_PRODUCT } };
}

/**
 * The logical-duplicate key (the store refuses a second payment with the same key unless
 * allowLogicalDuplicate=true): kind and product, then debtor, creditor, amount and remittance
 * (text or KID), plus currency for cross-border and start date and frequency for periodic
 * payments. JSON-encoded, so no text inside can make two different payments collide.
 */
export function paymentLogicalKey(payment: PaymentRequest): string {
  switch (payment.product) {
    case CROSS_BORDER_PRODUCT:
      return JSON.stringify([payment.kind, payment.product, ...crossBorderKeyParts(payment)]);
    case DOMESTIC_PRODUCT:
      return payment.kind === "periodic"
        ? JSON.stringify([
            payment.kind,
            payment.product,
            ...domesticKeyParts(payment),
            ...periodicKeyParts(payment),
          ])
        : logicalKey(payment);
  }
}

// Kept for the existing route (payments.ts) ---------------------------------------------------

export type PaymentBodyResult =
  | { readonly ok: true; readonly payment: DomesticPaymentRequest }
  | { readonly ok: false; readonly text: string };

/** A single norwegian-domestic-credit-transfers body; the same as parsePaymentRequest("single", DOMESTIC_PRODUCT, …). */
export function parseDomesticPayment(bytes: Uint8Array): PaymentBodyResult {
  const body = readJsonObject(bytes, DOMESTIC_MEMBERS);
  if (!body.ok) return body;
  const payment = readDomesticPayment(body.value);
  if (!payment.ok) return payment;
  return { ok: true, payment: payment.value };
}

/** The logical-duplicate key of a single domestic payment: debtor, creditor, amount and remittance (text or KID). */
export function logicalKey(payment: DomesticPaymentRequest): string {
  return JSON.stringify(["single", DOMESTIC_PRODUCT, ...domesticKeyParts(payment)]);
}
