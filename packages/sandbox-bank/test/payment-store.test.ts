import { describe, expect, it } from "vitest";
import type { SingleDomesticPayment } from "../src/payment-body.js";
import { PaymentStore, type StoredPayment } from "../src/payment-store.js";
import { createSandboxBank } from "../src/server.js";
import { TEST_GATEWAY_SECRET } from "./helpers.js";

const request: SingleDomesticPayment = {
  kind: "single",
  product: "norwegian-domestic-credit-transfers",
  amount: "1.00",
  amountMinor: 100,
  currency: "NOK",
  debtorBban: "97100000000",
  creditorBban: "12345678903",
  creditorName: "Per",
  remittance: undefined,
};

function stored(store: PaymentStore, logicalKey: string, organizationId = "tpp"): StoredPayment {
  const payment: StoredPayment = {
    paymentId: store.nextId(),
    service: "payments",
    product: "norwegian-domestic-credit-transfers",
    organizationId,
    request,
    logicalKey,
    fundsAvailable: true,
    transactionStatus: "RCVD",
  };
  store.add(payment);
  return payment;
}

describe("the payment store", () => {
  it("stays within its capacity, forgetting the oldest payment and its claim to be an original", () => {
    const store = new PaymentStore(2);
    const first = stored(store, "a");
    const second = stored(store, "b");
    const third = stored(store, "c");
    expect(store.size).toBe(2);
    expect(store.find("tpp", first.paymentId)).toBeUndefined();
    expect(store.duplicateOf("tpp", "a")).toBeUndefined();
    expect(store.find("tpp", second.paymentId)).toBe(second);
    expect(store.duplicateOf("tpp", "c")).toBe(third);
  });

  it("keeps the newest payment as the original when an older one with the same key is evicted", () => {
    const store = new PaymentStore(2);
    stored(store, "same");
    const newer = stored(store, "same");
    stored(store, "other");
    expect(store.duplicateOf("tpp", "same")).toBe(newer);
  });

  it("keeps TPPs apart", () => {
    const store = new PaymentStore(10);
    const payment = stored(store, "k", "tpp-a");
    expect(store.find("tpp-b", payment.paymentId)).toBeUndefined();
    expect(store.duplicateOf("tpp-b", "k")).toBeUndefined();
  });

  it("draws random ids: two stores never start with the same one", () => {
    const first = new PaymentStore(10).nextId();
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new PaymentStore(10).nextId()).not.toBe(first);
  });
});

describe("sandbox bank options", () => {
  it("refuses limits that are not positive integers, naming the option", () => {
    expect(() => createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, maxBodyBytes: 0 })).toThrow(
      /maxBodyBytes/,
    );
    expect(() => createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, maxStoredPayments: 1.5 })).toThrow(
      /maxStoredPayments/,
    );
    expect(() => createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, maxRooms: 0 })).toThrow(/maxRooms/);
  });

  it("refuses a gateway secret shorter than 32 characters: the proof is only as strong as it", () => {
    expect(() => createSandboxBank({ gatewaySecret: "short" })).toThrow(/at least 32 characters/);
  });
});
