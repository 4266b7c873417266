/**
 * CRLs come from the network now (distribution points): whatever bytes arrive, `verifiedCrl`
 * answers a verified list or a reason, never throws, and never accepts a list its issuer did
 * not sign.
 */

import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type ParsedCertificate, parseCertificate } from "../../../src/eidas/index.js";
import { verifiedCrl } from "../../../src/eidas/revocation.js";
import { isRejection } from "../../../src/errors.js";
import { encodeTlvTree, mutateTree, mutationsArbitrary, parseTlv } from "../../helpers/der-mutation.js";
import { testPki } from "../../helpers/gateway-fixture.js";
import { issuingCaCrl } from "../../helpers/test-qtsp.js";

let issuer: ParsedCertificate;
let crl: Uint8Array;

beforeAll(async () => {
  const pki = await testPki();
  const parsed = parseCertificate(pki.issuingCa.der);
  if (isRejection(parsed)) throw new Error(parsed.text);
  issuer = parsed;
  crl = await issuingCaCrl(pki, { revoked: [pki.revoked.certificate] });
}, 60_000);

describe("verifiedCrl on hostile bytes", () => {
  it("accepts the untouched list", () => {
    const list = verifiedCrl(crl, "test", [issuer]);
    expect(typeof list === "string" ? list : list.revoked.size).toBe(1);
  });

  it("answers a list or a reason for arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const r = verifiedCrl(bytes, "test", [issuer]);
        expect(typeof r === "string" || r.revoked instanceof Map).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("never accepts a structurally mutated list whose signed bytes changed", () => {
    fc.assert(
      fc.property(mutationsArbitrary(3), (mutations) => {
        let mutated: Uint8Array;
        try {
          mutated = encodeTlvTree(mutateTree(parseTlv(crl), mutations));
        } catch {
          return; // a mutation the encoder cannot express
        }
        const r = verifiedCrl(mutated, "test", [issuer]);
        if (typeof r === "string") return;
        // Accepted: then what was signed (the TBS) must be what the issuer signed.
        const original = verifiedCrl(crl, "test", [issuer]);
        if (typeof original === "string") throw new Error(original);
        expect([...r.revoked.keys()]).toEqual([...original.revoked.keys()]);
      }),
      { numRuns: 300 },
    );
  });
});
