/**
 * keyId escapes (issue 11, defect 6) against two independent signing libraries, over real HTTP
 * on loopback: joyent's http-signature 1.4 and dhensby's http-message-signatures (its draft-cavage
 * module) sign requests with a certificate whose issuer DN needs escaping in RFC 2253, the keyId
 * being `SN=<serial>,CA=<issuer RFC 2253>` copied into the quotes as it is; our RequestSigner too.
 * verifyRequestSignature with the keyId rule on (keyIdTarget) must accept each one, and refuse it
 * for another certificate of the same issuer. Each issuer is a real CA (@peculiar/x509, made at
 * test time) that issued the TPP's certificate.
 */

import { createHash, sign as cryptoSign, X509Certificate } from "node:crypto";
import type { ClientRequest } from "node:http";
import { cavage } from "http-message-signatures";
import httpSignature from "http-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import {
  buildKeyId,
  headerValue,
  type KeyIdTarget,
  keyIdTargetFromDer,
  RequestSigner,
  verifyRequestSignature,
} from "../../../src/signature/index.js";
import {
  ESCAPED_ISSUERS,
  type EscapedIssuer,
  generateKeys,
  type Issued,
  issuingCa,
  onTheWire,
  tppQseal,
} from "../../helpers/escaped-issuers.js";
import {
  type LoopbackServer,
  type ReceivedRequest,
  sendRequest,
  startLoopbackServer,
  type Verdict,
} from "../../helpers/loopback-http.js";

const SIGNED = ["(request-target)", "date", "digest", "x-request-id", "psu-id"];

interface Case {
  readonly issuer: EscapedIssuer;
  readonly tpp: Issued;
  /** Another certificate of the same CA (another serial): its keyId must not match `tpp`. */
  readonly other: Issued;
  readonly keyId: string;
}

let cases: Case[];
let server: LoopbackServer;
/** The certificate the server judges the next request against. */
let judgedAgainst: KeyIdTarget;

/** What an ingress does: the whole signature check with the keyId rule on, then the Digest. */
function ourVerdict({ message, body }: ReceivedRequest): Verdict {
  const request = { method: message.method ?? "", target: message.url ?? "", headers: message.headers };
  const certificate = headerValue(message.headers, "tpp-signature-certificate") ?? "";
  const publicKey = new X509Certificate(Buffer.from(certificate, "base64")).publicKey;
  const params = verifyRequestSignature(request, {
    publicKey,
    algorithms: ["rsa-sha256"],
    keyIdTarget: judgedAgainst,
  });
  if (isRejection(params)) return { status: 401, body: { code: params.code, text: params.text } };
  const digest = `SHA-256=${createHash("sha256").update(body).digest("base64")}`;
  if (headerValue(message.headers, "digest") !== digest) return { status: 401, body: { text: "digest" } };
  return { status: 200, body: { keyId: params.keyId, signed: params.headers } };
}

beforeAll(async () => {
  // One key for every CA and one for every TPP: the names are what this file is about.
  const [caKeys, tppKeys] = await Promise.all([generateKeys(), generateKeys()]);
  const root = await issuingCa([{ C: ["NO"] }, { O: ["Interop Root"] }, { CN: ["Interop Root CA"] }], {
    keys: caKeys,
  });
  cases = await Promise.all(
    ESCAPED_ISSUERS.map(async (issuer) => {
      const ca = await issuingCa(issuer.name, { parent: root, keys: caKeys });
      const tpp = {
        organizationId: "PSDNO-FSA-ESC00001",
        name: "Escape Test AS",
        roles: ["PSP_AI"] as const,
      };
      const [leaf, other] = await Promise.all([
        tppQseal(ca, { ...tpp, keys: tppKeys }),
        tppQseal(ca, { ...tpp, keys: tppKeys }),
      ]);
      return { issuer, tpp: leaf, other, keyId: buildKeyId(keyIdTargetFromDer(leaf.der)) };
    }),
  );
  server = await startLoopbackServer(ourVerdict);
}, 60_000);
afterAll(() => server?.close());

function caseFor(issuer: EscapedIssuer): Case {
  const found = cases.find((c) => c.issuer === issuer);
  if (!found) throw new Error(`no case for ${issuer.what}`);
  return found;
}

/** The request every signer signs: a GET with a PSU-ID and an empty body's Digest. */
function baseHeaders(tpp: Issued): Record<string, string> {
  return {
    Date: new Date().toUTCString(),
    Digest: `SHA-256=${createHash("sha256").update("").digest("base64")}`,
    "X-Request-ID": "6f5f2c1e-3b4a-4c5d-8e9f-0a1b2c3d4e5f",
    "PSU-ID": "PSU-1234",
    "TPP-Signature-Certificate": tpp.headerValue,
  };
}

const PATH = "/v1/accounts?withBalance=true";

type Sign = (
  c: Case,
  keyIdOnTheWire: string,
) => Promise<{ headers: Record<string, string>; prepare?: (r: ClientRequest) => void }>;

const SIGNERS: [string, Sign][] = [
  [
    "http-signature (joyent)",
    async (c, keyId) => ({
      headers: baseHeaders(c.tpp),
      prepare: (request) => {
        httpSignature.sign(request, {
          keyId,
          key: c.tpp.privateKeyPem,
          algorithm: "rsa-sha256",
          authorizationHeaderName: "Signature",
          headers: SIGNED,
        });
      },
    }),
  ],
  [
    "http-message-signatures (draft-cavage module)",
    async (c, keyId) => {
      const signed = await cavage.signMessage(
        {
          key: {
            id: keyId,
            alg: "rsa-v1_5-sha256",
            sign: async (data: Buffer) => cryptoSign("sha256", data, c.tpp.privateKey),
          },
          params: ["keyid", "alg"],
          fields: ["@request-target", "date", "digest", "x-request-id", "psu-id"],
        },
        { method: "GET", url: `http://127.0.0.1:${server.port}${PATH}`, headers: baseHeaders(c.tpp) },
      );
      return { headers: signed.headers as Record<string, string> };
    },
  ],
];

async function send(c: Case, sign: Sign, keyIdOnTheWire: string, against: Issued = c.tpp) {
  judgedAgainst = keyIdTargetFromDer(against.der);
  const { headers, prepare } = await sign(c, keyIdOnTheWire);
  return sendRequest(server.port, { method: "GET", path: PATH, headers }, prepare);
}

describe("the issuers' keyIds hold the RFC 2253 escapes signers copy", () => {
  it.each(ESCAPED_ISSUERS.map((i) => [i.what, i] as const))("%s", (_what, issuer) => {
    const c = caseFor(issuer);
    const serial = new X509Certificate(c.tpp.der).serialNumber;
    expect(c.keyId).toBe(`SN=${serial},CA=${issuer.rfc2253}`);
  });
});

for (const [library, sign] of SIGNERS) {
  describe(`signed by ${library}, keyId copied into the quotes as it is`, () => {
    for (const issuer of ESCAPED_ISSUERS) {
      const encodings = issuer.beyondLatin1 ? (["utf-8"] as const) : (["latin1", "utf-8"] as const);
      for (const as of encodings) {
        it(`${issuer.what}; non-ASCII sent as ${as === "latin1" ? "Latin-1" : "UTF-8"} bytes`, async () => {
          const c = caseFor(issuer);
          const response = await send(c, sign, onTheWire(c.keyId, as));
          expect(response.body).toMatchObject({ signed: SIGNED });
          expect(response.status).toBe(200);
        });
      }

      it(`${issuer.what}: refused for another certificate of the same CA`, async () => {
        const c = caseFor(issuer);
        const response = await send(c, sign, onTheWire(c.keyId, "utf-8"), c.other);
        expect(response.status).toBe(401);
        expect(String(response.body.text)).toContain("does not match the certificate serial");
      });
    }
  });
}

describe("signed by our RequestSigner", () => {
  for (const issuer of ESCAPED_ISSUERS) {
    it(`${issuer.what}: our verifier accepts it, and http-signature reads the keyId as the RFC 2253 text`, async () => {
      const c = caseFor(issuer);
      const signer = new RequestSigner({ privateKey: c.tpp.privateKey, certificate: c.tpp.der });
      expect(signer.keyId).toBe(c.keyId);
      const added = await signer.sign({
        method: "GET",
        target: PATH,
        headers: { "PSU-ID": "PSU-1234" },
      });
      judgedAgainst = keyIdTargetFromDer(c.tpp.der);
      const response = await sendRequest(server.port, {
        method: "GET",
        path: PATH,
        headers: { "PSU-ID": "PSU-1234", ...added },
      });
      expect(response.body).toMatchObject({ signed: SIGNED });
      expect(response.status).toBe(200);

      // A verifier that does not unescape (joyent's parser ends the value at the first quote)
      // reads our keyId as the RFC 2253 text, whenever the DN holds no quote.
      if (!c.keyId.includes('"') && !added.Signature.startsWith("=?")) {
        const parsed = httpSignature.parseRequest(
          {
            headers: Object.fromEntries(
              Object.entries({ "PSU-ID": "PSU-1234", ...added }).map(([k, v]) => [k.toLowerCase(), v]),
            ),
            method: "GET",
            url: PATH,
            httpVersion: "1.1",
          },
          { headers: ["date"] },
        );
        expect(parsed.keyId).toBe(c.keyId);
      }
    });
  }
});
