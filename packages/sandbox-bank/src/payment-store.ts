/**
 * The payments received since start (or the last reset), per TPP. Bounded: the benchmarks create
 * payments without end, so past `capacity` the oldest are forgotten, and with them their claim to
 * be the original of a logical duplicate.
 */

import { randomUUID } from "node:crypto";
import type { PaymentRequest } from "./payment-body.js";

/**
 * RCVD until the PSU authorises; ACCP after, even without funds (SPEC 3 rule 2); RJCT when the
 * PSU refuses; CANC once cancelled; ACSC once the payment batch executed it (SPEC 1.7).
 */
export type TransactionStatus = "RCVD" | "ACCP" | "RJCT" | "CANC" | "ACSC";

/** Berlin Group payment services: a signing basket takes single payments only (SPEC 4.1, 7). */
export type PaymentService = "payments" | "periodic-payments" | "bulk-payments";

export interface StoredPayment {
  readonly paymentId: string;
  readonly service: PaymentService;
  readonly product: string;
  /** The TPP that created it ("" when the bank was called directly, without the gateway). */
  readonly organizationId: string;
  readonly request: PaymentRequest;
  readonly logicalKey: string;
  readonly fundsAvailable: boolean;
  transactionStatus: TransactionStatus;
}

/** SPEC 4.1: payments authorised together, each keeping its own status (not atomic, 3.1). */
export interface SigningBasket {
  readonly basketId: string;
  readonly organizationId: string;
  readonly paymentIds: readonly string[];
}

export const DEFAULT_PAYMENT_CAPACITY = 100_000;

export interface PaymentStoreSnapshot {
  readonly payments: readonly StoredPayment[];
  readonly baskets: readonly SigningBasket[];
}

export class PaymentStore {
  private readonly payments = new Map<string, StoredPayment>();
  /** `${organizationId}\n${logicalKey}` → the latest payment with that key. */
  private readonly byLogicalKey = new Map<string, StoredPayment>();
  private readonly byId = new Map<string, StoredPayment>();
  private readonly baskets = new Map<string, SigningBasket>();

  constructor(private readonly capacity: number = DEFAULT_PAYMENT_CAPACITY) {}

  get size(): number {
    return this.payments.size;
  }

  /** Random (crypto): a TPP that could guess another's ids could probe for them. */
  nextId(): string {
    return randomUUID();
  }

  add(payment: StoredPayment): void {
    this.payments.set(storeKey(payment.organizationId, payment.paymentId), payment);
    this.byId.set(payment.paymentId, payment);
    this.byLogicalKey.set(storeKey(payment.organizationId, payment.logicalKey), payment);
    while (this.payments.size > this.capacity) this.evictOldest();
  }

  find(organizationId: string, paymentId: string): StoredPayment | undefined {
    return this.payments.get(storeKey(organizationId, paymentId));
  }

  addBasket(basket: SigningBasket): void {
    this.baskets.set(basket.basketId, basket);
    while (this.baskets.size > this.capacity) this.baskets.delete(this.baskets.keys().next().value!);
  }

  /** A basket of this TPP; `organizationId` undefined: whatever TPP made it (the SCA page). */
  findBasket(organizationId: string | undefined, basketId: string): SigningBasket | undefined {
    const basket = this.baskets.get(basketId);
    return organizationId === undefined || basket?.organizationId === organizationId ? basket : undefined;
  }

  /** Payments the PSU approved and the batch has not executed yet (SPEC 1.7). */
  accepted(): StoredPayment[] {
    return [...this.payments.values()].filter((payment) => payment.transactionStatus === "ACCP");
  }

  /** The payment whatever TPP made it: for the SCA page, where the PSU, not a TPP, acts. */
  findAny(paymentId: string): StoredPayment | undefined {
    return this.byId.get(paymentId);
  }

  duplicateOf(organizationId: string, logicalKey: string): StoredPayment | undefined {
    return this.byLogicalKey.get(storeKey(organizationId, logicalKey));
  }

  /** Everything it holds, oldest first, for the state file. */
  snapshot(): PaymentStoreSnapshot {
    return { payments: [...this.payments.values()], baskets: [...this.baskets.values()] };
  }

  /** Adds a snapshot's payments and baskets in their order (a restart). */
  restore(snapshot: PaymentStoreSnapshot): void {
    for (const payment of snapshot.payments) this.add({ ...payment });
    for (const basket of snapshot.baskets) this.addBasket(basket);
  }

  private evictOldest(): void {
    const oldest = this.payments.entries().next();
    if (oldest.done === true) return;
    const [key, payment] = oldest.value;
    this.payments.delete(key);
    this.byId.delete(payment.paymentId);
    const duplicateKey = storeKey(payment.organizationId, payment.logicalKey);
    if (this.byLogicalKey.get(duplicateKey) === payment) this.byLogicalKey.delete(duplicateKey);
  }
}

function storeKey(organizationId: string, id: string): string {
  return `${organizationId}\n${id}`;
}
