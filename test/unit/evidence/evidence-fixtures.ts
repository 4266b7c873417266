/** Records for the evidence tests. */

import type { RequestCapture } from "../../../src/evidence/record.js";

export function request(requestId: string, extra: Partial<RequestCapture> = {}): RequestCapture {
  return {
    at: Date.UTC(2026, 0, 1),
    requestId,
    method: "POST",
    target: "/v1/payments/sepa-credit-transfers",
    role: "PSP_PI",
    organizationId: "PSDXX-NCA-TPPA",
    certificate: "ab".repeat(32),
    dialect: "cavage",
    signedWith: "rsa-sha256",
    signedBytes: Buffer.from(`x-request-id: ${requestId}`),
    signature: Buffer.from("signature"),
    ...extra,
  };
}

/**
 * Offers each record and waits until the store has written it: a rotation by size then falls
 * between records, as it does under traffic, rather than at close (where the chain just ends).
 */
export async function offerOneByOne(
  store: { offer(e: RequestCapture, mustKeep: boolean): boolean; status(): { written: number } },
  ids: readonly string[],
): Promise<void> {
  const before = store.status().written;
  for (const [i, id] of ids.entries()) {
    if (!store.offer(request(id), true)) throw new Error(`record ${id} refused`);
    for (let tries = 0; tries < 200 && store.status().written < before + i + 1; tries++)
      await new Promise((r) => setTimeout(r, 5));
    if (store.status().written < before + i + 1) throw new Error(`record ${id} not written`);
  }
}
