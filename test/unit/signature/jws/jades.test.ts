import { createHash, createHmac, type KeyObject } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isRejection, type Rejection } from "../../../../src/errors.js";
import { signingInput, signJwsInput } from "../../../../src/signature/jws/compact.js";
import {
  buildHttpHeadersPayload,
  HTTP_HEADERS_MID,
  type JwsAlgorithm,
  parseSigT,
  readJadesHeader,
  signJades,
  verifyJades,
} from "../../../../src/signature/jws/index.js";
import { b64u, ec, ecP384, headerOf, NOW, PARS, request, rsa } from "./material.js";

function signed(alg: JwsAlgorithm = "RS256", over: Partial<Parameters<typeof signJades>[0]> = {}) {
  const signer = alg === "ES256" ? ec : rsa;
  return signJades({
    key: signer.privateKey,
    certificateChain: [signer.der],
    alg,
    pars: PARS,
    sigT: NOW,
    message: request,
    ...over,
  });
}

/** A JWS over `header` (any JSON text) signed with the right key over the real payload: only the header rule can fail. */
function resigned(
  headerText: string,
  alg: JwsAlgorithm = "RS256",
  key: KeyObject = rsa.privateKey,
  pars: readonly string[] = PARS,
) {
  const payload = buildHttpHeadersPayload(pars, request);
  if (isRejection(payload)) throw new Error(payload.text);
  const p = b64u(headerText);
  return `${p}..${signJwsInput(alg, key, signingInput(p, payload)).toString("base64url")}`;
}

function baseHeader(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    alg: "RS256",
    b64: false,
    crit: ["b64", "sigT", "sigD"],
    sigT: "2026-11-26T12:00:00Z",
    sigD: { mId: HTTP_HEADERS_MID, pars: [...PARS] },
    x5c: [Buffer.from(rsa.der).toString("base64")],
    "x5t#S256": createHash("sha256").update(rsa.der).digest("base64url"),
    ...over,
  };
}

function codeOf(r: unknown): string {
  return isRejection(r) ? r.code : "accepted";
}

describe("buildHttpHeadersPayload (OBP-API's form)", () => {
  it("writes '<name>: <value>' lines each ending in LF, request-target as method lower-case and target", () => {
    const payload = buildHttpHeadersPayload(PARS, request);
    expect(Buffer.isBuffer(payload) && payload.toString("latin1")).toBe(
      "(request-target): post /v2/payments/sepa-credit-transfers?x=1\n" +
        "digest: SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n" +
        "x-request-id: 99391c7e-ad88-49ec-a2ad-99ddcb1f7721\n" +
        "psu-id: PSU-1234\n",
    );
  });

  it("matches the payload OBP-API's JwsUtil.signRequestResponseCommon writes for its own pars", () => {
    // OBP-API signs these six names, in this order, from a template whose every line ends in LF.
    const pars = ["(request-target)", "host", "content-type", "psu-ip-address", "psu-geo-location", "digest"];
    const message = {
      method: "POST",
      target: "/berlin-group/v1.3/payments/sepa-credit-transfers",
      headers: {
        host: "obp.example",
        "content-type": "application/json",
        "psu-ip-address": "None",
        "psu-geo-location": "None",
        digest: "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
      },
    };
    const obp = [
      "(request-target): post /berlin-group/v1.3/payments/sepa-credit-transfers",
      "host: obp.example",
      "content-type: application/json",
      "psu-ip-address: None",
      "psu-geo-location: None",
      "digest: SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
      "",
    ].join("\n");
    const payload = buildHttpHeadersPayload(pars, message);
    expect(Buffer.isBuffer(payload) && payload.toString("latin1")).toBe(obp);
  });

  it("follows pars' order, joins a repeated header with ', ' and keeps bytes above ASCII", () => {
    const payload = buildHttpHeadersPayload(["psu-id", "x-multi"], {
      headers: { "psu-id": "J\u00fcrgen", "x-multi": ["a", "b"] },
    });
    expect(Buffer.isBuffer(payload) && [...payload]).toEqual([
      ...Buffer.from("psu-id: J\u00fcrgen\nx-multi: a, b\n", "latin1"),
    ]);
  });

  it("'etsi' style: lines joined by LF with none after the last, values trimmed (DSS's HttpHeadersPayloadBuilder)", () => {
    const payload = buildHttpHeadersPayload(
      ["(request-target)", "psu-id"],
      { ...request, headers: { "psu-id": " PSU-1234\t" } },
      "etsi",
    );
    expect(Buffer.isBuffer(payload) && payload.toString("latin1")).toBe(
      "(request-target): post /v2/payments/sepa-credit-transfers?x=1\npsu-id: PSU-1234",
    );
  });

  it.each([
    ["an absent header", ["psu-corporate-id"], request],
    ["(request-target) without a request line", ["(request-target)"], { headers: {} }],
    ["a char above U+00FF", ["psu-id"], { headers: { "psu-id": "\u20ac" } }],
  ])("refuses %s", (_, pars, message) => {
    expect(codeOf(buildHttpHeadersPayload(pars, message))).toBe("SIGNATURE_INVALID");
  });
});

describe("signJades → verifyJades", () => {
  it.each(["RS256", "PS256", "ES256"] as const)("%s round trip", (alg) => {
    const value = signed(alg);
    const r = verifyJades(value, request, { now: NOW });
    if (isRejection(r)) throw new Error(r.text);
    expect(r.header).toMatchObject({ alg, sigT: "2026-11-26T12:00:00Z", signedAt: NOW, pars: PARS });
    expect(r.header.x5c.der[0]).toEqual(Buffer.from(alg === "ES256" ? ec.der : rsa.der));
    expect(headerOf(value)).toMatchObject({
      b64: false,
      crit: ["b64", "sigT", "sigD"],
      sigD: { mId: HTTP_HEADERS_MID },
    });
  });

  it("a response: response headers, no request-target; (status-line) is the request's line, as OBP-API signs it", () => {
    const response = {
      method: "POST",
      target: "/v2/payments",
      headers: { "x-request-id": "r-1", digest: "SHA-256=x", "content-type": "application/json" },
    };
    const pars = ["(status-line)", "x-request-id", "digest", "content-type"];
    const value = signJades({
      key: rsa.privateKey,
      certificateChain: [rsa.der],
      pars,
      sigT: NOW,
      message: response,
    });
    expect(codeOf(verifyJades(value, response, { now: NOW }))).toBe("accepted");
    const payload = buildHttpHeadersPayload(pars, response);
    expect(Buffer.isBuffer(payload) && payload.toString().split("\n")[0]).toBe(
      "(status-line): post /v2/payments",
    );
    const plain = signJades({
      key: rsa.privateKey,
      certificateChain: [rsa.der],
      pars: pars.slice(1),
      sigT: NOW,
      message: { headers: response.headers },
    });
    expect(codeOf(verifyJades(plain, { headers: response.headers }, { now: NOW }))).toBe("accepted");
  });

  it("the two payload styles do not verify each other", () => {
    const etsi = signed("PS256", { payloadStyle: "etsi" });
    expect(codeOf(verifyJades(etsi, request, { now: NOW, payloadStyle: "etsi" }))).toBe("accepted");
    expect(codeOf(verifyJades(etsi, request, { now: NOW }))).toBe("SIGNATURE_INVALID");
    expect(codeOf(verifyJades(signed("PS256"), request, { now: NOW, payloadStyle: "etsi" }))).toBe(
      "SIGNATURE_INVALID",
    );
  });

  it("verifies with a key the caller gives (a cached certificate's)", () => {
    expect(codeOf(verifyJades(signed(), request, { now: NOW, publicKey: rsa.publicKey }))).toBe("accepted");
    expect(codeOf(verifyJades(signed(), request, { now: NOW, publicKey: ec.publicKey }))).toBe(
      "SIGNATURE_INVALID",
    );
  });

  it("signs header values given as JS strings as their UTF-8 bytes", () => {
    const message = { ...request, headers: { ...request.headers, "psu-id": "J\u00fcrgen" } };
    const value = signJades({
      key: rsa.privateKey,
      certificateChain: [rsa.der],
      pars: PARS,
      sigT: NOW,
      message,
    });
    const wire = {
      ...request,
      headers: { ...request.headers, "psu-id": Buffer.from("J\u00fcrgen").toString("latin1") },
    };
    expect(codeOf(verifyJades(value, wire, { now: NOW }))).toBe("accepted");
  });

  it("sign → verify holds for arbitrary signed header values, and any change to one is refused", () => {
    const value = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => /^[\x20-\x7e]+$/.test(s));
    fc.assert(
      fc.property(value, value, (a, b) => {
        const message = { method: "GET", target: "/v2/accounts", headers: { "psu-id": a } };
        const jws = signJades({
          key: ec.privateKey,
          certificateChain: [ec.der],
          pars: ["(request-target)", "psu-id"],
          sigT: NOW,
          message,
        });
        expect(codeOf(verifyJades(jws, message, { now: NOW }))).toBe("accepted");
        const other = { ...message, headers: { "psu-id": b } };
        expect(codeOf(verifyJades(jws, other, { now: NOW }))).toBe(
          a === b ? "accepted" : "SIGNATURE_INVALID",
        );
      }),
      { numRuns: 40 },
    );
  });
});

describe("verifyJades refuses", () => {
  const good = baseHeader();
  const cases: [string, () => string, string, Partial<Parameters<typeof verifyJades>[2]>?][] = [
    ["a changed signed header", () => signed(), "SIGNATURE_INVALID"],
    ["alg none", () => `${b64u(JSON.stringify(baseHeader({ alg: "none" })))}..AAAA`, "SIGNATURE_INVALID"],
    [
      "HS256 with the public key as the secret",
      () => {
        const p = b64u(JSON.stringify(baseHeader({ alg: "HS256" })));
        const payload = buildHttpHeadersPayload(PARS, request) as Buffer;
        return `${p}..${createHmac("sha256", rsa.publicPem).update(signingInput(p, payload)).digest("base64url")}`;
      },
      "SIGNATURE_INVALID",
    ],
    [
      "an alg outside the configured list",
      () => resigned(JSON.stringify(good)),
      "SIGNATURE_INVALID",
      { algorithms: ["PS256"] },
    ],
    ["RS384", () => resigned(JSON.stringify(baseHeader({ alg: "RS384" }))), "SIGNATURE_INVALID"],
    ["b64 true", () => resigned(JSON.stringify(baseHeader({ b64: true }))), "SIGNATURE_INVALID"],
    [
      "b64 absent",
      () => resigned(JSON.stringify(baseHeader({ b64: undefined, crit: ["sigT", "sigD"] }))),
      "SIGNATURE_INVALID",
    ],
    ["b64 as a string", () => resigned(JSON.stringify(baseHeader({ b64: "false" }))), "SIGNATURE_INVALID"],
    [
      "crit without sigD",
      () => resigned(JSON.stringify(baseHeader({ crit: ["b64", "sigT"] }))),
      "SIGNATURE_INVALID",
    ],
    [
      "crit with an unknown name",
      () => resigned(JSON.stringify(baseHeader({ crit: ["b64", "sigT", "sigD", "exp"], exp: 1 }))),
      "SIGNATURE_INVALID",
    ],
    [
      "crit listing a name twice",
      () => resigned(JSON.stringify(baseHeader({ crit: ["b64", "sigT", "sigT"] }))),
      "SIGNATURE_INVALID",
    ],
    ["crit absent", () => resigned(JSON.stringify(baseHeader({ crit: undefined }))), "SIGNATURE_INVALID"],
    [
      "crit naming an absent member",
      () => resigned(JSON.stringify(baseHeader({ sigT: undefined }))),
      "SIGNATURE_INVALID",
    ],
    [
      "a duplicate alg member",
      () => resigned(JSON.stringify(good).replace('"alg":"RS256"', '"alg":"HS256","alg":"RS256"')),
      "SIGNATURE_INVALID",
    ],
    [
      "a duplicate crit member",
      () => resigned(JSON.stringify(good).replace('"crit":', '"crit":["b64"],"crit":')),
      "SIGNATURE_INVALID",
    ],
    [
      "x5t#S256 of another certificate",
      () =>
        resigned(
          JSON.stringify(baseHeader({ "x5t#S256": createHash("sha256").update(ec.der).digest("base64url") })),
        ),
      "CERTIFICATE_INVALID",
    ],
    [
      "x5t#S256 not 32 bytes",
      () => resigned(JSON.stringify(baseHeader({ "x5t#S256": "abc" }))),
      "CERTIFICATE_INVALID",
    ],
    [
      "x5c absent",
      () => resigned(JSON.stringify(baseHeader({ x5c: undefined, "x5t#S256": undefined }))),
      "CERTIFICATE_MISSING",
    ],
    [
      "x5c in base64url",
      () =>
        resigned(
          JSON.stringify(
            baseHeader({ x5c: [Buffer.from(rsa.der).toString("base64url")], "x5t#S256": undefined }),
          ),
        ),
      "CERTIFICATE_INVALID",
    ],
    [
      "x5c not a certificate",
      () => resigned(JSON.stringify(baseHeader({ x5c: ["AAAA"], "x5t#S256": undefined }))),
      "CERTIFICATE_INVALID",
    ],
    [
      "x5c with 5 certificates",
      () =>
        resigned(JSON.stringify(baseHeader({ x5c: Array(5).fill(Buffer.from(rsa.der).toString("base64")) }))),
      "CERTIFICATE_INVALID",
    ],
    [
      "ES256 with an RSA certificate",
      () => resigned(JSON.stringify(baseHeader({ alg: "ES256" })), "ES256", ec.privateKey),
      "SIGNATURE_INVALID",
    ],
    [
      "ES256 with a P-384 certificate's key",
      () => resigned(JSON.stringify(baseHeader({ alg: "ES256" })), "ES256", ec.privateKey),
      "SIGNATURE_INVALID",
      { publicKey: ecP384.publicKey },
    ],
    ["sigT 61 s behind", () => signed("RS256", { sigT: NOW - 61_000 }), "TIMESTAMP_INVALID"],
    ["sigT 61 s ahead", () => signed("RS256", { sigT: NOW + 61_000 }), "TIMESTAMP_INVALID"],
    [
      "sigT with an offset",
      () => resigned(JSON.stringify(baseHeader({ sigT: "2026-11-26T13:00:00+01:00" }))),
      "FORMAT_ERROR",
    ],
    ["sigT a number", () => resigned(JSON.stringify(baseHeader({ sigT: NOW / 1000 }))), "FORMAT_ERROR"],
    [
      "sigD of another mechanism",
      () =>
        resigned(
          JSON.stringify(
            baseHeader({ sigD: { mId: "http://uri.etsi.org/19182/ObjectIdByURI", pars: ["a"] } }),
          ),
        ),
      "SIGNATURE_INVALID",
    ],
    [
      "sigD with hashV",
      () =>
        resigned(
          JSON.stringify(baseHeader({ sigD: { mId: HTTP_HEADERS_MID, pars: [...PARS], hashV: ["x"] } })),
        ),
      "FORMAT_ERROR",
    ],
    [
      "pars with upper case",
      () => resigned(JSON.stringify(baseHeader({ sigD: { mId: HTTP_HEADERS_MID, pars: ["Digest"] } }))),
      "FORMAT_ERROR",
    ],
    [
      "pars listing a name twice",
      () =>
        resigned(JSON.stringify(baseHeader({ sigD: { mId: HTTP_HEADERS_MID, pars: ["digest", "digest"] } }))),
      "FORMAT_ERROR",
    ],
    [
      "pars empty",
      () => resigned(JSON.stringify(baseHeader({ sigD: { mId: HTTP_HEADERS_MID, pars: [] } }))),
      "FORMAT_ERROR",
    ],
    [
      "pars without a required name",
      () => signed("RS256", { pars: ["x-request-id"] }),
      "SIGNATURE_INVALID",
      { requiredPars: ["digest"] },
    ],
    [
      "pars listing an absent header",
      () => signed("RS256", { pars: ["x-request-id"] }),
      "SIGNATURE_INVALID",
      { requiredPars: [] },
    ],
    ["kid a number", () => resigned(JSON.stringify(baseHeader({ kid: 1 }))), "FORMAT_ERROR"],
  ];

  it.each(cases)("%s", (what, make, code, options) => {
    const value = make();
    const message =
      what === "a changed signed header"
        ? { ...request, headers: { ...request.headers, "psu-id": "PSU-9999" } }
        : what === "pars listing an absent header"
          ? { ...request, headers: { ...request.headers, "x-request-id": undefined } }
          : request;
    const r: unknown = verifyJades(value, message, { now: NOW, ...options });
    expect(codeOf(r), isRejection(r) ? r.text : "accepted").toBe(code);
    expect((r as Rejection).text.length).toBeGreaterThan(10);
  });

  it("the unmodified header is accepted (the table's base is sound)", () => {
    expect(codeOf(verifyJades(resigned(JSON.stringify(good)), request, { now: NOW }))).toBe("accepted");
  });

  it("reads the header without crypto", () => {
    const r = readJadesHeader(signed(), { now: NOW });
    expect(isRejection(r) ? r.text : r.header.pars).toEqual(PARS);
  });
});

describe("parseSigT", () => {
  it.each([
    ["2026-11-26T12:00:00Z", NOW],
    ["2026-11-26T12:00:00.250Z", NOW + 250],
    ["2026-11-26T12:00:00.123456789Z", NOW + 123],
    ["2026-02-31T12:00:00Z", undefined],
    ["2026-11-26T24:00:00Z", undefined],
    ["2026-11-26 12:00:00Z", undefined],
    ["2026-11-26T12:00:00", undefined],
  ])("%s", (text, ms) => {
    expect(parseSigT(text)).toBe(ms);
  });
});
