/**
 * Interop with jwcrypto (Debian's python3-jwcrypto), an independent JOSE implementation: tokens it
 * signs verify with ours, ours verify with it, and its signatures over tampered headers are refused
 * by ours with the right code. One Python process runs every jwcrypto operation of this file.
 */

import { createHash } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import {
  buildHttpHeadersPayload,
  HTTP_HEADERS_MID,
  type JwsAlgorithm,
  signJades,
  signUkOb,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
  verifyJades,
  verifyUkOb,
} from "../../../../src/signature/jws/index.js";
import {
  describeWithJwcrypto,
  type JwcryptoOp,
  type JwcryptoResult,
  runJwcrypto,
} from "../../../helpers/jwcrypto.js";
import { b64u, ec, NOW, PARS, request, rsa, type Signer } from "./material.js";

const payload = buildHttpHeadersPayload(PARS, request) as Buffer;
const BODY =
  '{"Data":{"ConsentId":"c-1","Initiation":{"InstructedAmount":{"Amount":"1.00","Currency":"GBP"}}}}';
const bodyB64 = Buffer.from(BODY).toString("base64");

function signerOf(alg: JwsAlgorithm): Signer {
  return alg === "ES256" ? ec : rsa;
}

function jadesHeader(alg: JwsAlgorithm, over: Record<string, unknown> = {}): Record<string, unknown> {
  const signer = signerOf(alg);
  return {
    alg,
    b64: false,
    crit: ["b64", "sigT", "sigD"],
    sigT: "2026-11-26T12:00:00Z",
    sigD: { mId: HTTP_HEADERS_MID, pars: [...PARS] },
    x5c: [Buffer.from(signer.der).toString("base64")],
    "x5t#S256": createHash("sha256").update(signer.der).digest("base64url"),
    ...over,
  };
}

function ukobHeader(alg: JwsAlgorithm, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    alg,
    kid: "kid-1",
    [UKOB_IAT]: NOW / 1000,
    [UKOB_ISS]: "0015800001041REAAY/tpp",
    [UKOB_TAN]: "openbanking.org.uk",
    crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN],
    typ: "JOSE",
    cty: "application/json",
    ...over,
  };
}

const ops: JwcryptoOp[] = [];
function add(op: JwcryptoOp): number {
  return ops.push(op) - 1;
}
function signByJwcrypto(
  alg: JwsAlgorithm,
  protectedHeader: Record<string, unknown> | string,
  bytes: Buffer,
): number {
  return add({
    op: "sign",
    key: signerOf(alg).privatePem,
    protected: protectedHeader,
    payload: bytes.toString("base64"),
  });
}

const ALGS: JwsAlgorithm[] = ["RS256", "PS256", "ES256"];
const changed = { ...request, headers: { ...request.headers, "psu-id": "PSU-9999" } };

// jwcrypto signs, ours verifies (or refuses).
const jadesFromJwcrypto: [string, number, string, typeof request | typeof changed][] = [
  ...ALGS.map(
    (alg) =>
      [`${alg}`, signByJwcrypto(alg, jadesHeader(alg), payload), "accepted", request] as [
        string,
        number,
        string,
        typeof request,
      ],
  ),
  [
    "a signed header changed",
    signByJwcrypto("RS256", jadesHeader("RS256"), payload),
    "SIGNATURE_INVALID",
    changed,
  ],
  [
    "HS256 with the certificate's public key as the secret",
    add({
      op: "sign",
      secret: rsa.publicPem,
      protected: jadesHeader("RS256", { alg: "HS256" }),
      payload: payload.toString("base64"),
    }),
    "SIGNATURE_INVALID",
    request,
  ],
  [
    "b64 flipped to true",
    signByJwcrypto("RS256", jadesHeader("RS256", { b64: true }), payload),
    "SIGNATURE_INVALID",
    request,
  ],
  [
    "crit without sigD",
    signByJwcrypto("PS256", jadesHeader("PS256", { crit: ["b64", "sigT"] }), payload),
    "SIGNATURE_INVALID",
    request,
  ],
  [
    "crit with an unknown name",
    signByJwcrypto(
      "ES256",
      jadesHeader("ES256", {
        crit: ["b64", "sigT", "sigD", "http://example.com/unknown"],
        "http://example.com/unknown": 1,
      }),
      payload,
    ),
    "SIGNATURE_INVALID",
    request,
  ],
  [
    "a duplicate sigD member (jwcrypto reads the last)",
    signByJwcrypto(
      "RS256",
      JSON.stringify(jadesHeader("RS256")).replace(
        '"sigD":',
        `"sigD":{"mId":"${HTTP_HEADERS_MID}","pars":["x-request-id"]},"sigD":`,
      ),
      payload,
    ),
    "SIGNATURE_INVALID",
    request,
  ],
  [
    "x5t#S256 of another certificate",
    signByJwcrypto(
      "RS256",
      jadesHeader("RS256", { "x5t#S256": createHash("sha256").update(ec.der).digest("base64url") }),
      payload,
    ),
    "CERTIFICATE_INVALID",
    request,
  ],
  [
    "sigT out of window",
    signByJwcrypto("RS256", jadesHeader("RS256", { sigT: "2026-11-26T11:58:00Z" }), payload),
    "TIMESTAMP_INVALID",
    request,
  ],
];

const ukobFromJwcrypto: [string, number, string, object][] = [
  ...ALGS.map(
    (alg) =>
      [alg, signByJwcrypto(alg, ukobHeader(alg), Buffer.from(BODY)), "accepted", {}] as [
        string,
        number,
        string,
        object,
      ],
  ),
  [
    "b64 false (3.1.3), allowed",
    signByJwcrypto(
      "PS256",
      ukobHeader("PS256", { b64: false, crit: ["b64", UKOB_IAT, UKOB_ISS, UKOB_TAN] }),
      Buffer.from(BODY),
    ),
    "accepted",
    { allowB64False: true },
  ],
  [
    "b64 false (3.1.3), not allowed",
    signByJwcrypto(
      "PS256",
      ukobHeader("PS256", { b64: false, crit: ["b64", UKOB_IAT, UKOB_ISS, UKOB_TAN] }),
      Buffer.from(BODY),
    ),
    "SIGNATURE_INVALID",
    {},
  ],
  [
    "crit without tan",
    signByJwcrypto("PS256", ukobHeader("PS256", { crit: [UKOB_IAT, UKOB_ISS] }), Buffer.from(BODY)),
    "SIGNATURE_INVALID",
    {},
  ],
  [
    "iat out of window",
    signByJwcrypto("PS256", ukobHeader("PS256", { [UKOB_IAT]: NOW / 1000 - 3600 }), Buffer.from(BODY)),
    "TIMESTAMP_INVALID",
    {},
  ],
];

// Ours signs, jwcrypto verifies.
const ours: [string, number, boolean][] = [
  ...ALGS.map((alg): [string, number, boolean] => {
    const value = signJades({
      key: signerOf(alg).privateKey,
      certificateChain: [signerOf(alg).der],
      alg,
      pars: PARS,
      sigT: NOW,
      message: request,
    });
    return [
      `JAdES ${alg}`,
      add({ op: "verify", key: signerOf(alg).publicPem, jws: value, payload: payload.toString("base64") }),
      true,
    ];
  }),
  [
    "JAdES RS256 over another payload",
    add({
      op: "verify",
      key: rsa.publicPem,
      jws: signJades({
        key: rsa.privateKey,
        certificateChain: [rsa.der],
        pars: PARS,
        sigT: NOW,
        message: request,
      }),
      payload: (buildHttpHeadersPayload(PARS, changed) as Buffer).toString("base64"),
    }),
    false,
  ],
  ...ALGS.flatMap((alg): [string, number, boolean][] =>
    [false, true].map((b64False): [string, number, boolean] => {
      const value = signUkOb({
        key: signerOf(alg).privateKey,
        alg,
        kid: "k",
        iss: "i",
        tan: "t",
        iat: NOW / 1000,
        body: BODY,
        b64False,
      });
      return [
        `UK OB ${alg}${b64False ? " b64 false" : ""}`,
        add({ op: "verify", key: signerOf(alg).publicPem, jws: value, payload: bodyB64 }),
        true,
      ];
    }),
  ),
];

function codeOf(r: unknown): string {
  return isRejection(r) ? r.code : "accepted";
}

describeWithJwcrypto("JWS interop with jwcrypto", () => {
  let results: JwcryptoResult[] = [];
  beforeAll(() => {
    results = runJwcrypto(ops);
  });

  function tokenAt(i: number): string {
    const r = results[i];
    if (!r?.jws) throw new Error(`jwcrypto did not sign: ${r?.error}`);
    return r.jws;
  }

  it.each(jadesFromJwcrypto)("JAdES signed by jwcrypto: %s → %s", (_, i, code, message) => {
    const r = verifyJades(tokenAt(i), message, { now: NOW });
    expect(codeOf(r), isRejection(r) ? r.text : "").toBe(code);
  });

  it("JAdES alg none (jwcrypto will not write it: made by hand) → SIGNATURE_INVALID", () => {
    const value = `${b64u(JSON.stringify(jadesHeader("RS256", { alg: "none" })))}..`;
    expect(codeOf(verifyJades(`${value}AAAA`, request, { now: NOW }))).toBe("SIGNATURE_INVALID");
  });

  it.each(ukobFromJwcrypto)("UK OB signed by jwcrypto: %s → %s", (name, i, code, extra) => {
    const alg = (ALGS.find((a) => name.startsWith(a)) ?? "PS256") as JwsAlgorithm;
    const r = verifyUkOb(tokenAt(i), BODY, {
      now: NOW,
      algorithms: [alg],
      publicKey: signerOf(alg).publicKey,
      ...extra,
    });
    expect(codeOf(r), isRejection(r) ? r.text : "").toBe(code);
  });

  it.each(ours)("ours verified by jwcrypto: %s → %s", (_, i, valid) => {
    expect(results[i]?.valid, results[i]?.error).toBe(valid);
  });
});
