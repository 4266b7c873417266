import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedCall, startTestGateway, type TestGateway, testPki } from "../helpers/gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

describe("a new CRL dropped into the trust folder", () => {
  let backend: RecordingBackend;
  let gw: TestGateway;
  beforeAll(async () => {
    backend = await startRecordingBackend();
    gw = await startTestGateway({ backendUrl: backend.url, config: { reload: { pollSeconds: 0.2 } } });
  });
  afterAll(async () => {
    await gw.close();
    await backend.close();
  });

  it("revokes a TPP's certificate on the running gateway, without a restart", async () => {
    const pki = await testPki();
    const before = await signedCall(gw, { signer: pki.tppB.qseal, target: "/v1/accounts" });
    expect(before.status, before.text).toBe(200);

    const now = Date.now();
    const crl = await x509.X509CrlGenerator.create({
      issuer: pki.issuingCa.certificate.subjectName,
      thisUpdate: new Date(now - 1000),
      nextUpdate: new Date(now + 24 * 3600 * 1000),
      entries: [
        { serialNumber: pki.revoked.certificate.serialNumber, revocationDate: new Date(now - 3600 * 1000) },
        { serialNumber: pki.tppB.qseal.certificate.serialNumber, revocationDate: new Date(now - 1000) },
      ],
      signingKey: pki.issuingCa.keys.privateKey as never,
      signingAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
    });
    // The newer list of the same issuer replaces the older one.
    writeFileSync(join(pki.paths.trustDir, "demo-issuing-ca-2.crl"), Buffer.from(crl.rawData));

    let after = before;
    for (let i = 0; i < 50 && after.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await signedCall(gw, { signer: pki.tppB.qseal, target: "/v1/accounts" });
    }
    expect(after.status).toBe(400);
    expect(after.json.tppMessages?.[0]?.code).toBe("CERTIFICATE_REVOKED");
    // TPP A is untouched.
    expect((await signedCall(gw, { signer: pki.tppA.qseal, target: "/v1/accounts" })).status).toBe(200);
  });
});
