/**
 * A bank profile's dialect options (app/bank-profile.ts): the headers JAdES signs and RFC 9421
 * covers, UK OB's `b64: false` for banks on Read/Write API 3.1.3 and earlier, and the answer check
 * that accepts such a bank's `b64: false` answers only when `responses.ukObAllowB64False` says so.
 * Signed by the profile's signer, read back by the pure verifiers.
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { profileSigner, responseVerifierForProfile } from "../../../src/app/bank-profile.js";
import { type BankProfileConfig, parseEgressConfig } from "../../../src/config/schema.js";
import { isRejection } from "../../../src/errors.js";
import { readJadesHeader, readUkObHeader, signUkOb } from "../../../src/signature/jws/index.js";
import { parseSignatures } from "../../../src/signature/rfc9421/index.js";

let pki: DevPki;
beforeAll(async () => {
  pki = await generateDevPki(join(mkdtempSync(join(tmpdir(), "psd2-bank-profile-")), "pki"));
});

function profile(
  signing: Record<string, unknown>,
  responses: Record<string, unknown> = {},
): BankProfileConfig {
  const parsed = parseEgressConfig({
    mode: "egress",
    banks: [
      {
        name: "bank",
        prefix: "/bank",
        url: "https://bank.example",
        qseal: { cert: "qseal.pem", key: "qseal.key.pem" },
        signing,
        responses,
      },
    ],
  });
  if (!parsed.success) throw new Error(parsed.error.message);
  return parsed.data.banks[0]!;
}

const REQUEST = {
  method: "POST",
  target: "/v1/payments/sepa-credit-transfers",
  headers: {
    host: "bank.example",
    "PSU-ID": "PSU-1",
    "Consent-ID": "c-1",
    "TPP-Redirect-URI": "https://tpp.example/cb",
  },
  body: '{"instructedAmount":{"currency":"EUR","amount":"1.00"}}',
};

const qseal = () => ({
  privateKey: pki.tppA.qseal.privateKey,
  certificateDer: Buffer.from(pki.tppA.qseal.der),
});

describe("a bank profile's dialect options", () => {
  it.each([
    [
      "the default: PSU-ID, PSU-Corporate-ID and TPP-Redirect-URI when present",
      undefined,
      ["psu-id", "tpp-redirect-uri"],
    ],
    ["signing.jades.headers names Consent-ID too", ["consent-id", "psu-id"], ["consent-id", "psu-id"]],
    ["an always-signed name listed again is signed once", ["digest", "consent-id"], ["consent-id"]],
  ])("JAdES: %s", async (_what, headers, extra) => {
    const signer = profileSigner(profile({ dialect: "jades", jades: headers ? { headers } : {} }), qseal());
    const signed = await signer.sign(REQUEST);
    const read = readJadesHeader(signed["x-jws-signature"], { now: Date.now() });
    if (isRejection(read)) throw new Error(read.text);
    expect(read.header.pars).toEqual(["(request-target)", "digest", "x-request-id", ...extra]);
  });

  it("RFC 9421: signing.rfc9421.headers decides what is covered besides FAPI 2.0's components", async () => {
    const signer = profileSigner(
      profile({ dialect: "rfc9421", rfc9421: { headers: ["Consent-ID"] } }),
      qseal(),
    );
    const signed = await signer.sign(REQUEST);
    const parsed = parseSignatures(signed["Signature-Input"], signed.Signature);
    if (isRejection(parsed)) throw new Error(parsed.text);
    const covered = parsed[0]!.components.map((c) => c.serialized);
    expect(covered).toContain('"consent-id"');
    expect(covered).not.toContain('"psu-id"');
  });

  it("UK OB: signing.ukOb.b64False signs as Read/Write 3.1.3 (b64 false, among the crit claims)", async () => {
    for (const b64False of [false, true]) {
      const signer = profileSigner(profile({ dialect: "uk-ob", ukOb: { b64False } }), qseal());
      const signed = await signer.sign(REQUEST);
      const read = readUkObHeader(signed["x-jws-signature"], { now: Date.now(), allowB64False: true });
      if (isRejection(read)) throw new Error(read.text);
      expect(read.header.b64).toBe(!b64False);
      expect(read.jws.header.crit).toHaveLength(b64False ? 4 : 3);
    }
  });

  it("UK OB answers with b64 false: refused unless responses.ukObAllowB64False", async () => {
    const body = Buffer.from('{"ok":true}');
    const answer = signUkOb({
      key: pki.bankQseal.privateKey,
      kid: "bank-key",
      iss: "PSDNO-FSA-DEMOBANK",
      tan: "openbanking.org.uk",
      iat: Math.floor(Date.now() / 1000),
      body,
      b64False: true,
      certificateChain: [pki.bankQseal.der],
    });
    const response = {
      headers: { "x-jws-signature": answer },
      body,
      status: 200,
      request: { method: "GET", target: "/", requestId: "r" },
    };
    for (const allow of [false, true]) {
      const verifier = responseVerifierForProfile(
        profile(
          { dialect: "uk-ob" },
          { mode: "enforce", caDir: pki.paths.trustDir, ukObAllowB64False: allow },
        ),
        Date.now,
      )!;
      const verdict = await verifier.verify(response);
      if (allow) expect(verdict).toBe(true);
      else
        expect(verdict).toMatchObject({ code: "SIGNATURE_INVALID", text: expect.stringContaining("'b64'") });
    }
  });

  it.each([
    ["a QSealC (eseal), by default", "bankQseal", {}, true],
    ["a QWAC (web), refused by default", "qwac", {}, false],
    [
      "a QWAC, when responses.certificateKinds widens the kinds to web",
      "qwac",
      { certificateKinds: ["eseal", "web"] },
      true,
    ],
  ] as const)("an answer signed with %s", async (_what, which, responses, passes) => {
    const signer = which === "qwac" ? pki.tppA.qwac : pki.bankQseal;
    const body = Buffer.from('{"ok":true}');
    const answer = signUkOb({
      key: signer.privateKey,
      kid: "bank-key",
      // The signer's organizationIdentifier (a dev PKI QWAC stands in for a bank's).
      iss: which === "qwac" ? "PSDNO-FSA-DEMO0001" : "PSDNO-FSA-DEMOBANK",
      tan: "openbanking.org.uk",
      iat: Math.floor(Date.now() / 1000),
      body,
      certificateChain: [signer.der],
    });
    const verifier = responseVerifierForProfile(
      profile({ dialect: "uk-ob" }, { mode: "enforce", caDir: pki.paths.trustDir, ...responses }),
      Date.now,
    )!;
    const verdict = await verifier.verify({
      headers: { "x-jws-signature": answer },
      body,
      status: 200,
      request: { method: "GET", target: "/", requestId: "r" },
    });
    expect(verdict === true ? "passed" : `${verdict.code}: ${verdict.text}`).toMatch(
      passes ? /^passed$/ : /^CERTIFICATE_INVALID: .*(QWAC|web)/,
    );
  });

  it("a profile's response checks count every answer they judged (one chain, built once)", async () => {
    const body = Buffer.from('{"ok":true}');
    const answer = signUkOb({
      key: pki.bankQseal.privateKey,
      kid: "bank-key",
      iss: "PSDNO-FSA-DEMOBANK",
      tan: "openbanking.org.uk",
      iat: Math.floor(Date.now() / 1000),
      body,
      certificateChain: [pki.bankQseal.der],
    });
    const request = { method: "GET", target: "/", requestId: "r" };
    const verifier = responseVerifierForProfile(
      profile({ dialect: "uk-ob" }, { mode: "enforce", caDir: pki.paths.trustDir }),
      Date.now,
    )!;
    expect(
      await verifier.verify({ headers: { "x-jws-signature": answer }, body, status: 200, request }),
    ).toBe(true);
    const altered = Buffer.from('{"ok":false}');
    const refused = await verifier.verify({
      headers: { "x-jws-signature": answer },
      body: altered,
      status: 200,
      request,
    });
    expect(refused).toMatchObject({ code: "SIGNATURE_INVALID" });
    const { names, passed, refused: refusals } = verifier.counts();
    expect(Math.max(...passed)).toBe(2);
    expect(refusals.reduce((a, b) => a + b, 0)).toBe(1);
    expect(names.length).toBe(passed.length);
  });
});
