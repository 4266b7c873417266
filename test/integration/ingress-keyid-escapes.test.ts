/**
 * keyId escapes (issue 11, defect 6) through the whole gateway over TLS: qualified issuing CAs
 * whose names need RFC 2253 escapes (under the demo root, in the gateway's trust folder) issue a
 * registered TPP's QSealC; http-signature, http-message-signatures (draft-cavage module) and our
 * RequestSigner sign with keyId `SN=…,CA=<issuer RFC 2253>` as a TPP copies it, and the gateway
 * forwards each request under the strict keyId policy. A keyId naming another certificate of
 * the same CA is refused and never reaches the backend. The gateway takes header bytes as UTF-8
 * only (SPEC 1.3): a keyId sent as Latin-1 bytes is refused as such, naming the header.
 */

import { createHash, sign as cryptoSign } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cavage } from "http-message-signatures";
import httpSignature from "http-signature";
import { beforeAll, describe, expect, it } from "vitest";
import { buildKeyId, keyIdTargetFromDer, RequestSigner } from "../../src/signature/index.js";
import {
  ESCAPED_ISSUERS,
  type EscapedIssuer,
  emptyCrlPem,
  generateKeys,
  type Issued,
  issuingCa,
  onTheWire,
  tppQseal,
} from "../helpers/escaped-issuers.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, send } from "../helpers/gateway-fixture.js";

const TPP = { organizationId: "PSDNO-FSA-ESCAPE01", name: "Escape Interop AS", roles: ["PSP_AI"] as const };

interface Case {
  readonly issuer: EscapedIssuer;
  readonly qseal: Issued;
  readonly other: Issued;
  readonly keyId: string;
}

const cases = new Map<EscapedIssuer, Case>();

const env = useGatewayAndBackend(async (pki) => {
  // One key for the CAs and one for the QSealCs: the names are what this file is about.
  const [caKeys, tppKeys] = await Promise.all([generateKeys(), generateKeys()]);
  const trustDir = join(pki.dir, "trust-escaped");
  mkdirSync(trustDir, { recursive: true });
  for (const file of readdirSync(pki.paths.trustDir))
    copyFileSync(join(pki.paths.trustDir, file), join(trustDir, file));
  let n = 0;
  for (const issuer of ESCAPED_ISSUERS) {
    const ca = await issuingCa(issuer.name, { parent: pki.root, keys: caKeys });
    writeFileSync(join(trustDir, `escaped-ca-${++n}.pem`), ca.pem);
    writeFileSync(join(trustDir, `escaped-ca-${n}.crl.pem`), await emptyCrlPem(ca));
    const [qseal, other] = await Promise.all([
      tppQseal(ca, { ...TPP, keys: tppKeys }),
      tppQseal(ca, { ...TPP, keys: tppKeys }),
    ]);
    cases.set(issuer, { issuer, qseal, other, keyId: buildKeyId(keyIdTargetFromDer(qseal.der)) });
  }
  // The dev PKI's register with this TPP added, as `psd2-gateway certs` writes it.
  const register = JSON.parse(readFileSync(pki.paths.register, "utf8")) as { tpps: unknown[] };
  register.tpps.push({
    organizationIdentifier: TPP.organizationId,
    name: TPP.name,
    roles: TPP.roles,
    status: "authorised",
  });
  const registerFile = join(pki.dir, "register-escaped.json");
  writeFileSync(registerFile, `${JSON.stringify(register, null, 2)}\n`);
  return { config: { trust: { caDir: trustDir }, register: { file: registerFile } } };
});

const PATH = "/v1/accounts?withBalance=true";
const SIGNED = ["(request-target)", "date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"];

function caseFor(issuer: EscapedIssuer): Case {
  const c = cases.get(issuer);
  if (!c) throw new Error(`no case for ${issuer.what}`);
  return c;
}

/** A GET as a TPP sends it, before signing; the certificate is `sentCertificate`'s. */
function unsigned(sentCertificate: Issued, requestId: string): Record<string, string> {
  return {
    Date: new Date().toUTCString(),
    Digest: `SHA-256=${createHash("sha256").update("").digest("base64")}`,
    "X-Request-ID": requestId,
    "PSU-ID": "PSU-1234",
    "PSU-IP-Address": "192.0.2.10",
    "TPP-Redirect-URI": "https://tpp.example/cb",
    "TPP-Signature-Certificate": sentCertificate.headerValue,
  };
}

/** Signs the headers with the QSealC's key; returns every header to send. */
type Sign = (c: Case, keyId: string, headers: Record<string, string>) => Promise<Record<string, string>>;

const SIGNERS: [string, Sign][] = [
  [
    "http-signature (joyent)",
    async (c, keyId, headers) => {
      // What http-signature's sign reads and writes of an http.ClientRequest.
      const out: Record<string, string> = { ...headers };
      const find = (name: string) => Object.keys(out).find((k) => k.toLowerCase() === name.toLowerCase());
      httpSignature.sign(
        {
          method: "GET",
          path: PATH,
          getHeader: (name) => {
            const key = find(name);
            return key === undefined ? undefined : out[key];
          },
          setHeader: (name, value) => {
            out[find(name) ?? name] = value;
          },
        },
        {
          keyId,
          key: c.qseal.privateKeyPem,
          algorithm: "rsa-sha256",
          authorizationHeaderName: "Signature",
          headers: SIGNED,
        },
      );
      return out;
    },
  ],
  [
    "http-message-signatures (draft-cavage module)",
    async (c, keyId, headers) => {
      const signed = await cavage.signMessage(
        {
          key: {
            id: keyId,
            alg: "rsa-v1_5-sha256",
            sign: async (data: Buffer) => cryptoSign("sha256", data, c.qseal.privateKey),
          },
          params: ["keyid", "alg"],
          fields: SIGNED.map((h) => (h === "(request-target)" ? "@request-target" : h)),
        },
        { method: "GET", url: `https://localhost${PATH}`, headers },
      );
      return signed.headers as Record<string, string>;
    },
  ],
];

let requestCounter = 0;
const nextRequestId = () => `0b6a1d2e-0000-4000-8000-${(++requestCounter).toString(16).padStart(12, "0")}`;

beforeAll(() => {
  // Fail early and clearly when the set-up did not produce a case per issuer.
  expect(cases.size).toBe(ESCAPED_ISSUERS.length);
});

for (const [library, sign] of SIGNERS) {
  describe(`signed by ${library}, keyId copied into the quotes as it is`, () => {
    for (const issuer of ESCAPED_ISSUERS) {
      // A DN value that starts with a quote, written `O=\"Nord\"…` inside the quotes: read as a
      // quoted-pair it is `O="Nord" Bank…`, which no DN parser reads back; only the text as written
      // (SignatureParams.keyIdAsWritten, tried by matchSignatureKeyId in the key-id step) names it.
      it(`${issuer.what}; non-ASCII as UTF-8 bytes: forwarded`, async () => {
        const c = caseFor(issuer);
        const headers = await sign(c, onTheWire(c.keyId, "utf-8"), unsigned(c.qseal, nextRequestId()));
        const r = await send(env.gw, "GET", PATH, headers);
        expect(r.status, r.text).toBe(200);
        expect(env.backend.requests).toHaveLength(1);
      });

      if (!issuer.beyondLatin1 && /[^\x00-\x7f]/.test(issuer.rfc2253)) {
        it(`${issuer.what}; non-ASCII as Latin-1 bytes: refused as not UTF-8 (SPEC 1.3), naming the header`, async () => {
          const c = caseFor(issuer);
          const headers = await sign(c, onTheWire(c.keyId, "latin1"), unsigned(c.qseal, nextRequestId()));
          const r = await send(env.gw, "GET", PATH, headers);
          expectRejected(r, {
            status: 400,
            code: "FORMAT_ERROR",
            text: ["header signature is not valid UTF-8"],
          });
          expect(env.backend.requests).toHaveLength(0);
        });
      }

      it(`${issuer.what}: a keyId naming another certificate of the CA is refused`, async () => {
        const c = caseFor(issuer);
        const otherKeyId = buildKeyId(keyIdTargetFromDer(c.other.der));
        const headers = await sign(c, onTheWire(otherKeyId, "utf-8"), unsigned(c.qseal, nextRequestId()));
        const r = await send(env.gw, "GET", PATH, headers);
        expectRejected(r, {
          status: 400,
          code: "SIGNATURE_INVALID",
          text: ["does not match the certificate serial"],
        });
        expect(env.backend.requests).toHaveLength(0);
      });
    }
  });
}

describe("signed by our RequestSigner", () => {
  for (const issuer of ESCAPED_ISSUERS) {
    it(`${issuer.what}: forwarded`, async () => {
      const c = caseFor(issuer);
      const signer = new RequestSigner({ privateKey: c.qseal.privateKey, certificate: c.qseal.der });
      expect(signer.keyId).toBe(c.keyId);
      const base = {
        "PSU-ID": "PSU-1234",
        "PSU-IP-Address": "192.0.2.10",
        "TPP-Redirect-URI": "https://tpp.example/cb",
      };
      const added = await signer.sign({ method: "GET", target: PATH, headers: base });
      const r = await send(env.gw, "GET", PATH, { ...base, ...added });
      expect(r.status, r.text).toBe(200);
      expect(env.backend.requests).toHaveLength(1);
    });
  }
});
