/**
 * The record of a response ingress signed (src/evidence/response.ts `withResponseEvidence`), in
 * every dialect it signs: the signed bytes rebuilt from what was sent (RFC 9421's also from the
 * request it answers) and the signature, checked by the `openssl` binary with the bank's public key,
 * as the dispute bundle's README tells a bank to.
 */

import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { responseSignerFrom } from "../../../src/app/request-path.js";
import { CheckContext, type Dialect, requestMessage } from "../../../src/checks/index.js";
import { validateConfig } from "../../../src/config/load.js";
import { opensslCheck, rawEcdsaToDer } from "../../../src/evidence/bundle.js";
import type { ResponseEvidence } from "../../../src/evidence/record.js";
import { withResponseEvidence } from "../../../src/evidence/response.js";

let pki: DevPki;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "psd2-response-evidence-"));
  pki = await generateDevPki(join(dir, "pki"));
});

const BODY = Buffer.from(JSON.stringify({ transactionStatus: "RCVD", paymentId: "p-1" }));
const REQUEST_ID = "0b7f6a1e-52c4-4d7e-9f61-3c2a8e5d9b10";

async function signedRecord(dialect: Dialect): Promise<ResponseEvidence> {
  const config = validateConfig({
    trust: { caDir: "unused" },
    register: { file: "unused.json" },
    responseSigning: { qseal: { cert: "unused.pem", key: "unused.pem" } },
  });
  const qseal = { privateKey: pki.bankQseal.privateKey, certificateDer: Buffer.from(pki.bankQseal.der) };
  const records: ResponseEvidence[] = [];
  const signer = withResponseEvidence(
    responseSignerFrom(config.responseSigning!, qseal as Parameters<typeof responseSignerFrom>[1]),
    {
      sink: {
        offerResponse: (e) => records.push(e) > 0,
        hasCertificate: () => true,
        putCertificate: () => undefined,
      },
      bodies: "all",
      certificate: qseal.certificateDer,
      requestMessage: (request) => requestMessage(request, "https"),
    },
  );
  const request = new CheckContext(
    "POST",
    "/v1/payments/sepa-credit-transfers",
    { host: "bank.example", "x-request-id": REQUEST_ID, "content-type": "application/json" },
    { path: "/v1/payments/sepa-credit-transfers", role: "PSP_PI" },
    undefined,
  );
  request.dialect = dialect;
  await signer.sign(BODY, { "content-type": "application/json", "x-request-id": REQUEST_ID }, 201, request);
  expect(records).toHaveLength(1);
  return records[0]!;
}

describe("the record of a response ingress signed", () => {
  it.each(["cavage", "rfc9421", "jades", "uk-ob"] as const)(
    "%s: its signed bytes and signature check with openssl and the bank's public key",
    async (dialect) => {
      const record = await signedRecord(dialect);
      expect(record).toMatchObject({ type: "response", verdict: "signed", dialect, requestId: REQUEST_ID });
      expect(record.signedBytes, "the signed bytes are kept").toBeDefined();
      const keyType = pki.bankQseal.privateKey.asymmetricKeyType ?? "unknown";
      const check = opensslCheck(record.signedWith!, keyType);
      const out = mkdtempSync(join(dir, `${dialect}-`));
      const signature = Buffer.from(record.signature!, "base64");
      writeFileSync(join(out, "signed-bytes.bin"), Buffer.from(record.signedBytes!, "base64"));
      writeFileSync(join(out, "signature.bin"), check.derFromRaw ? rawEcdsaToDer(signature) : signature);
      const publicKey = new X509Certificate(Buffer.from(pki.bankQseal.der)).publicKey;
      writeFileSync(join(out, "tpp-public.pem"), publicKey.export({ type: "spki", format: "pem" }));
      const [command, ...args] = check.command;
      expect(execFileSync(command!, args, { cwd: out, encoding: "utf8" })).toContain("Verified OK");
      // One byte of what was signed changed: openssl refuses it.
      const bytes = Buffer.from(record.signedBytes!, "base64");
      bytes[bytes.length - 1]! ^= 1;
      writeFileSync(join(out, "signed-bytes.bin"), bytes);
      expect(() => execFileSync(command!, args, { cwd: out, stdio: "pipe" })).toThrow();
    },
  );
});
