/**
 * Broken certificates in TPP-Signature-Certificate on an otherwise validly signed request: random
 * bytes, a truncated certificate, mutated DER of a real one (structure-aware, test/helpers/
 * der-mutation.ts), PEM, odd base64; and the PKI's expired, revoked, unregistered and untrusted
 * certificates signing correctly. None may reach the backend, none may end in a 5xx.
 */

import { X509Certificate } from "node:crypto";
import fc from "fast-check";
import { encodeTlvTree, mutateTree, mutationsArbitrary, parseTlv } from "../../helpers/der-mutation.js";
import { serialize } from "../request.js";
import type { Expectation, Family } from "../types.js";
import { validSigned } from "./common.js";

export const certificates: Family = {
  name: "certificates",
  weight: 2,
  async run(ctx) {
    const { rng, tpps, pki } = ctx;
    const variant = rng.weighted<string>([
      [2, "random"],
      [2, "truncated"],
      [5, "mutated-der"],
      [1, "pem"],
      [1, "odd-base64"],
      [1, "other-tpp-cert"],
      [2, "bad-tpp"],
    ]);
    let expect: Expectation = "refuse";
    if (variant === "bad-tpp") {
      const tpp = rng.pick([tpps.expired, tpps.revoked, tpps.unregistered, tpps.untrusted]);
      const valid = await validSigned(ctx, { tpp, pay: rng.chance(0.5) });
      await ctx.exchange({
        requests: [
          {
            tag: valid.tag,
            requestId: valid.requestId,
            label: `signed with the ${tpp.name} certificate: ${valid.describe}`,
            expect,
          },
        ],
        writes: [{ data: serialize(valid.request) }],
      });
      return;
    }
    const valid = await validSigned(ctx, { tpp: rng.pick([tpps.A, tpps.B, tpps.EC]) });
    const der = Buffer.from(valid.tpp.der);
    let value: string;
    let label: string = variant;
    switch (variant) {
      case "random": {
        const bytes = rng.bytes(rng.pick([0, 1, 2, 16, 100, 1000, 5000]));
        if (rng.chance(0.5) && bytes.length > 2) bytes[0] = 0x30; // looks like a SEQUENCE
        value = bytes.toString("base64");
        label = `random ${bytes.length} bytes`;
        break;
      }
      case "truncated": {
        const keep = rng.int(der.length);
        value = rng.chance(0.5)
          ? der.subarray(0, keep).toString("base64")
          : der.toString("base64").slice(0, Math.floor((keep * 4) / 3));
        label = `truncated to ${keep} of ${der.length}`;
        break;
      }
      case "mutated-der": {
        const [mutations] = fc.sample(mutationsArbitrary(3), { seed: rng.next() | 0, numRuns: 1 });
        const mutated = Buffer.from(encodeTlvTree(mutateTree(parseTlv(der), mutations!)));
        value = mutated.toString("base64");
        label = `mutated DER ${JSON.stringify(mutations).slice(0, 300)}`;
        // A mutation OpenSSL still reads as a certificate the issuing CA signed (a non-minimal
        // length outside the signed part, say) may be accepted: equivalent encodings are not a
        // defect. (The issuer's key is Node's KeyObject: @peculiar/x509's key made verify throw,
        // which sent such cases to "refuse".)
        try {
          const issuer = new X509Certificate(pki.issuingCa.pem);
          const parsed = new X509Certificate(mutated);
          if (parsed.checkIssued(issuer) && parsed.verify(issuer.publicKey)) expect = "any";
        } catch {
          // not readable: must be refused
        }
        if (mutated.equals(der)) expect = "any";
        break;
      }
      case "pem": {
        const pem = `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/(.{64})/g, "$1\n")}\n-----END CERTIFICATE-----`;
        value = rng.chance(0.5) ? encodeURIComponent(pem) : pem.replaceAll("\n", " ");
        label = "PEM";
        expect = "any";
        break;
      }
      case "odd-base64": {
        const b64 = der.toString("base64");
        value = rng.pick([
          b64.replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", ""),
          `${b64}==`,
          `${b64}AAAA`,
          b64.replace(/=+$/, ""),
          `${b64.slice(0, 100)}!${b64.slice(100)}`,
          `${b64.slice(0, 50)} ${b64.slice(50)}`,
          `${b64},${b64}`,
          Buffer.concat([der, der]).toString("base64"),
          Buffer.concat([der, Buffer.from([0])]).toString("base64"),
        ]);
        label = `odd base64 (${value.length} chars)`;
        // Lenient base64 readings of the same bytes may pass; extra bytes after the certificate may not.
        expect = value.includes(",") || value.length > b64.length + 4 ? "refuse" : "any";
        break;
      }
      default: {
        // A real certificate of another TPP (its key did not sign): keyId or signature must fail.
        const other = valid.tpp.name === "B" ? tpps.A : tpps.B;
        value = other.headerValue;
        label = `TPP ${other.name}'s certificate`;
        break;
      }
    }
    const headers = valid.request.headers.map(([n, v]) =>
      n === "TPP-Signature-Certificate" ? ([n, value] as [string, string]) : ([n, v] as [string, string]),
    );
    await ctx.exchange({
      requests: [
        {
          tag: valid.tag,
          requestId: valid.requestId,
          label: `certificate ${label} on ${valid.describe}`,
          expect,
          tpp: valid.tpp,
        },
      ],
      writes: [{ data: serialize({ ...valid.request, headers }) }],
    });
  },
};
