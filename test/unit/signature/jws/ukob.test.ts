import { createHash, createHmac, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import { signingInput, signJwsInput } from "../../../../src/signature/jws/compact.js";
import {
  checkUkObClaims,
  type JwsAlgorithm,
  readUkObHeader,
  signUkOb,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
  verifyUkOb,
} from "../../../../src/signature/jws/index.js";
import { b64u, ec, headerOf, NOW, rsa } from "./material.js";

const BODY = '{"Data":{"Initiation":{"InstructedAmount":{"Amount":"10.00","Currency":"GBP"}}},"Risk":{}}';
const ISS = "0015800001041REAAY/2kiXQyo0tedjW2somjSgH7";
const TAN = "openbanking.org.uk";
const IAT = NOW / 1000;

function codeOf(r: unknown): string {
  return isRejection(r) ? r.code : "accepted";
}

function signed(over: Partial<Parameters<typeof signUkOb>[0]> = {}) {
  return signUkOb({ key: rsa.privateKey, kid: "kid-1", iss: ISS, tan: TAN, iat: IAT, body: BODY, ...over });
}

function baseHeader(over: Record<string, unknown> = {}) {
  return {
    alg: "PS256",
    kid: "kid-1",
    [UKOB_IAT]: IAT,
    [UKOB_ISS]: ISS,
    [UKOB_TAN]: TAN,
    crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN],
    typ: "JOSE",
    cty: "application/json",
    ...over,
  };
}

function resigned(
  headerText: string,
  b64 = true,
  alg: JwsAlgorithm = "PS256",
  key: KeyObject = rsa.privateKey,
) {
  const p = b64u(headerText);
  const payload = b64 ? Buffer.from(Buffer.from(BODY).toString("base64url")) : Buffer.from(BODY);
  return `${p}..${signJwsInput(alg, key, signingInput(p, payload)).toString("base64url")}`;
}

describe("signUkOb → verifyUkOb", () => {
  it.each([
    ["PS256", rsa],
    ["RS256", rsa],
    ["ES256", ec],
  ] as const)("%s, key resolved from kid by the caller", (alg, signer) => {
    const value = signed({ alg, key: signer.privateKey });
    const r = verifyUkOb(value, BODY, { now: NOW, algorithms: [alg], publicKey: signer.publicKey });
    if (isRejection(r)) throw new Error(r.text);
    expect(r.header).toEqual({ alg, kid: "kid-1", iat: IAT, iss: ISS, tan: TAN, b64: true });
    expect(headerOf(value)).toMatchObject({
      typ: "JOSE",
      cty: "application/json",
      crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN],
    });
    expect(headerOf(value)).not.toHaveProperty("b64");
  });

  it("with x5c the certificate's key is used", () => {
    const value = signed({ certificateChain: [rsa.der] });
    expect(codeOf(verifyUkOb(value, Buffer.from(BODY), { now: NOW }))).toBe("accepted");
  });

  it("without x5c or a key: CERTIFICATE_MISSING, and readUkObHeader gives the kid to resolve", () => {
    expect(codeOf(verifyUkOb(signed(), BODY, { now: NOW }))).toBe("CERTIFICATE_MISSING");
    const read = readUkObHeader(signed(), { now: NOW });
    expect(isRejection(read) ? read.text : read.header.kid).toBe("kid-1");
  });

  it("x5t#S256 without x5c is returned for the caller's key lookup", () => {
    const thumbprint = createHash("sha256").update(rsa.der).digest("base64url");
    const read = readUkObHeader(resigned(JSON.stringify(baseHeader({ "x5t#S256": thumbprint }))), {
      now: NOW,
    });
    expect(isRejection(read) ? read.text : read.header.x5tS256).toBe(thumbprint);
  });

  it("3.1.3 style b64 false only when allowed", () => {
    const value = signed({ b64False: true });
    expect(headerOf(value)).toMatchObject({ b64: false, crit: ["b64", UKOB_IAT, UKOB_ISS, UKOB_TAN] });
    expect(codeOf(verifyUkOb(value, BODY, { now: NOW, publicKey: rsa.publicKey }))).toBe("SIGNATURE_INVALID");
    const r = verifyUkOb(value, BODY, { now: NOW, publicKey: rsa.publicKey, allowB64False: true });
    expect(isRejection(r) ? r.text : r.header.b64).toBe(false);
  });

  it("an empty body", () => {
    expect(codeOf(verifyUkOb(signed({ body: "" }), "", { now: NOW, publicKey: rsa.publicKey }))).toBe(
      "accepted",
    );
  });
});

describe("verifyUkOb refuses", () => {
  const opts = { now: NOW, publicKey: rsa.publicKey };
  const cases: [string, () => string, string, object?, string?][] = [
    ["a changed body", () => signed(), "SIGNATURE_INVALID", {}, BODY.replace("10.00", "99.00")],
    ["alg none", () => `${b64u(JSON.stringify(baseHeader({ alg: "none" })))}..AAAA`, "SIGNATURE_INVALID"],
    [
      "HS256 with the public key as the secret",
      () => {
        const p = b64u(JSON.stringify(baseHeader({ alg: "HS256" })));
        const input = signingInput(p, Buffer.from(Buffer.from(BODY).toString("base64url")));
        return `${p}..${createHmac("sha256", rsa.publicPem).update(input).digest("base64url")}`;
      },
      "SIGNATURE_INVALID",
    ],
    ["RS256 when PS256 only is configured", () => signed({ alg: "RS256" }), "SIGNATURE_INVALID"],
    [
      "b64 false flipped into a 3.1.4 header",
      () =>
        resigned(
          JSON.stringify(baseHeader({ b64: false, crit: ["b64", UKOB_IAT, UKOB_ISS, UKOB_TAN] })),
          false,
        ),
      "SIGNATURE_INVALID",
    ],
    [
      "b64 true when allowed",
      () => resigned(JSON.stringify(baseHeader({ b64: true, crit: ["b64", UKOB_IAT, UKOB_ISS, UKOB_TAN] }))),
      "SIGNATURE_INVALID",
      { allowB64False: true },
    ],
    [
      "b64 false not in crit",
      () => resigned(JSON.stringify(baseHeader({ b64: false })), false),
      "SIGNATURE_INVALID",
      { allowB64False: true },
    ],
    [
      "crit without tan",
      () => resigned(JSON.stringify(baseHeader({ crit: [UKOB_IAT, UKOB_ISS] }))),
      "SIGNATURE_INVALID",
    ],
    [
      "crit with an unknown name",
      () => resigned(JSON.stringify(baseHeader({ crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN, "exp"], exp: 1 }))),
      "SIGNATURE_INVALID",
    ],
    [
      "crit naming an absent claim",
      () => resigned(JSON.stringify(baseHeader({ [UKOB_TAN]: undefined }))),
      "SIGNATURE_INVALID",
    ],
    [
      "a duplicate iss",
      () =>
        resigned(
          JSON.stringify(baseHeader()).replace(`"${UKOB_ISS}":`, `"${UKOB_ISS}":"evil","${UKOB_ISS}":`),
        ),
      "SIGNATURE_INVALID",
    ],
    [
      "iat as a string",
      () => resigned(JSON.stringify(baseHeader({ [UKOB_IAT]: String(IAT) }))),
      "FORMAT_ERROR",
    ],
    ["iat in milliseconds", () => signed({ iat: NOW }), "TIMESTAMP_INVALID"],
    ["iat 61 s old", () => signed({ iat: IAT - 61 }), "TIMESTAMP_INVALID"],
    ["kid absent", () => resigned(JSON.stringify(baseHeader({ kid: undefined }))), "FORMAT_ERROR"],
    ["typ JWT", () => resigned(JSON.stringify(baseHeader({ typ: "JWT" }))), "FORMAT_ERROR"],
    ["cty text/plain", () => resigned(JSON.stringify(baseHeader({ cty: "text/plain" }))), "FORMAT_ERROR"],
    ["iss empty", () => resigned(JSON.stringify(baseHeader({ [UKOB_ISS]: "" }))), "FORMAT_ERROR"],
    [
      "x5t#S256 mismatch",
      () =>
        resigned(
          JSON.stringify(
            baseHeader({
              x5c: [Buffer.from(rsa.der).toString("base64")],
              "x5t#S256": createHash("sha256").update(ec.der).digest("base64url"),
            }),
          ),
        ),
      "CERTIFICATE_INVALID",
    ],
    [
      "a PS256 header over an EC key",
      () => resigned(JSON.stringify(baseHeader()), true, "ES256", ec.privateKey),
      "SIGNATURE_INVALID",
      { publicKey: ec.publicKey },
    ],
  ];
  it.each(cases)("%s", (_, make, code, extra = {}, body = BODY) => {
    const r = verifyUkOb(make(), body, { ...opts, ...extra });
    expect(codeOf(r), isRejection(r) ? r.text : "").toBe(code);
  });

  it("the table's base header is accepted", () => {
    expect(codeOf(verifyUkOb(resigned(JSON.stringify(baseHeader())), BODY, opts))).toBe("accepted");
  });
});

describe("checkUkObClaims", () => {
  const header = { iss: ISS, tan: TAN };
  it.each([
    [{}, "accepted"],
    [{ iss: ISS, tan: TAN }, "accepted"],
    [{ iss: ["other", ISS], tan: [TAN] }, "accepted"],
    [{ iss: "0015800001041REAAY/other" }, "SIGNATURE_INVALID"],
    [{ tan: "directory.example" }, "SIGNATURE_INVALID"],
  ])("%j → %s", (expected, code) => {
    expect(codeOf(checkUkObClaims(header, expected))).toBe(code);
  });
});
