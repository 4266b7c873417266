/** Records for the evidence tests. */

import type { RequestEvidence } from "../../../src/evidence/record.js";

export function request(requestId: string, extra: Partial<RequestEvidence> = {}): RequestEvidence {
  return {
    time: "2026-01-01T00:00:00.000Z",
    requestId,
    method: "POST",
    target: "/v1/payments/sepa-credit-transfers",
    role: "PSP_PI",
    organizationId: "PSDXX-NCA-TPPA",
    certificate: "ab".repeat(32),
    dialect: "cavage",
    signedWith: "rsa-sha256",
    signedBytes: Buffer.from(`x-request-id: ${requestId}`).toString("base64"),
    signature: Buffer.from("signature").toString("base64"),
    bodyDigest: "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",
    indication: "TOTAL_PASSED",
    verdict: "accepted",
    ...extra,
  };
}
