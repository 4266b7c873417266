import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall, testPki } from "../helpers/gateway-fixture.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

describe("a new CRL dropped into the trust folder", () => {
  const env = useGatewayAndBackend({ config: { reload: { pollSeconds: 0.2 } } });

  it("revokes a TPP's certificate on the running gateway, without a restart", async () => {
    const { gw } = env;
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
