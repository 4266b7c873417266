/**
 * JAdES requests (Berlin Group openFinance API Framework 2.x: a detached JWS in x-jws-signature
 * over the headers sigD.pars lists, Digest binding the body, the QSealC in x5c), built by the shared
 * JWS builder (jws-common.ts: valid requests by TPP A, B (GET) and the EC TPP (ES256), the shared
 * hostile games, replays re-encoded, the mixed mode) from this table: what a correct JAdES signer
 * writes and signs, its alg, crit, duplicate and b64 games, and its own kinds, each refused at its
 * step with its code where the code is certain (src/signature/jws/, src/checks/dialects/): sigT and
 * sigD games, coverage gaps, a UK-OB-looking header (judged as UK OB, which the fuzz gateway accepts
 * too, and refused there), and a huge x-jws-signature.
 */

import { computeDigestHeader } from "../../../src/signature/index.js";
import {
  buildHttpHeadersPayload,
  formatSigT,
  HTTP_HEADERS_MID,
  type JwsAlgorithm,
  MAX_JWS_LENGTH,
} from "../../../src/signature/jws/index.js";
import type { Rng } from "../prng.js";
import { paymentBody, serialize } from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import {
  type Base,
  type Draft,
  escaped,
  type Game,
  game,
  jwsFamily,
  type Members,
  REFUSE,
  sendable,
  signText,
  thumbprint,
} from "./jws-common.js";

const PARS = ["(request-target)", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"] as const;
const CRIT = ["b64", "sigT", "sigD"];

function lowerHeaders(d: Draft): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of d.headers) out[n.toLowerCase()] = v;
  return out;
}

/** The HttpHeaders payload of `pars` over the draft (OBP-API layout, the gateway's default). */
function payloadOf(d: Draft, pars: readonly string[] = PARS): Buffer {
  const payload = buildHttpHeadersPayload(pars, {
    method: d.method,
    target: d.target,
    headers: lowerHeaders(d),
  });
  if (!Buffer.isBuffer(payload)) throw new Error(payload.text);
  return payload;
}

function algOf(tpp: FuzzTpp, rng: Rng): JwsAlgorithm {
  return tpp.privateKey.asymmetricKeyType === "ec" ? "ES256" : rng.pick(["PS256", "RS256"] as const);
}

/** The protected header a correct signer writes. */
function headerOf(d: Draft, alg: JwsAlgorithm, pars: readonly string[] = PARS, sigTOffsetMs = 0): Members {
  return {
    alg,
    b64: false,
    crit: [...CRIT],
    sigT: formatSigT(Date.now() + sigTOffsetMs),
    sigD: { mId: HTTP_HEADERS_MID, pars: [...pars] },
    x5c: [Buffer.from(d.tpp.der).toString("base64")],
    "x5t#S256": thumbprint(d.tpp.der),
  };
}

/** Valid: `pars` in a random order, sigT off by up to ±45 s (with milliseconds at times), x5t#S256 or kid or neither. */
function signValid(ctx: { rng: Rng }, d: Draft): { jws: string; label: string } {
  const { rng } = ctx;
  const alg = algOf(d.tpp, rng);
  const pars = rng.chance(0.5) ? [...PARS] : rng.shuffle([...PARS]);
  const offset = rng.pick([0, 0, 0, -45_000, 45_000, -30_000, 20_000]);
  const h = headerOf(d, alg, pars, offset);
  if (rng.chance(0.15))
    h.sigT = `${String(h.sigT).slice(0, -1)}.${rng.int(1000).toString().padStart(3, "0")}Z`;
  if (rng.chance(0.2)) delete h["x5t#S256"];
  if (rng.chance(0.2)) h.kid = `fuzz-${rng.int(100)}`;
  return {
    jws: signText(JSON.stringify(h), d, alg, payloadOf(d, pars)),
    label: `valid ${alg}${offset ? `, sigT ${offset / 1000} s` : ""}`,
  };
}

/** Algs the key did not sign with: another family's, or RS256 ↔ PS256 on an RSA key (fits the key, does not verify). */
function algGames({ rng, d, alg, header, payload, v, good }: Base): readonly Game[] {
  const over = (other: JwsAlgorithm) =>
    v(
      `alg ${other} over a ${alg} signature`,
      signText(JSON.stringify({ ...header, alg: other }), d, alg, payload),
      REFUSE("SIGNATURE_INVALID"),
    );
  return [
    () => over(alg === "ES256" ? rng.pick(["PS256", "RS256"] as const) : "ES256"),
    () =>
      alg === "ES256"
        ? v("alg ES256 with a P1363 signature cut", `${good().slice(0, -4)}`, REFUSE())
        : over(alg === "PS256" ? "RS256" : "PS256"),
  ];
}

function b64Games(b: Base): readonly Game[] {
  const S = REFUSE("SIGNATURE_INVALID");
  return [
    // b64: true would sign the payload base64url-encoded: do so, it must still be refused.
    game("b64 true", { b64: true }, S, Buffer.from(b.payload.toString("base64url"))),
    game("b64 absent", { b64: undefined }, S),
    game('b64 "false"', { b64: "false" }, S),
    game("b64 0", { b64: 0 }, S),
    game("b64 null", { b64: null }, S),
    () => {
      // b64: false only on a "__proto__" member: JSON.parse keeps it an own member, never the prototype.
      const { b64: _, ...rest } = b.header;
      const text = `${JSON.stringify(rest).slice(0, -1)},"__proto__":{"b64":false}}`;
      return b.v("b64 only under __proto__", signText(text, b.d, b.alg, b.payload), S);
    },
  ];
}

function sigTGames(): readonly Game[] {
  const now = Date.now();
  const F = REFUSE("FORMAT_ERROR");
  const T = REFUSE("TIMESTAMP_INVALID");
  return (
    [
      ["sigT absent", undefined, REFUSE("SIGNATURE_INVALID")],
      ["sigT a number", Math.floor(now / 1000), F],
      ["sigT malformed (space)", formatSigT(now).replace("T", " "), F],
      ["sigT without Z", formatSigT(now).slice(0, -1), F],
      ["sigT with an offset", `${formatSigT(now).slice(0, -1)}+00:00`, F],
      ["sigT 31 Feb", `${new Date(now).getUTCFullYear()}-02-31T12:00:00Z`, F],
      ["sigT 25:00", `${formatSigT(now).slice(0, 11)}25:00:00Z`, F],
      ["sigT far future", "9999-12-31T23:59:59Z", T],
      ["sigT year 1970", "1970-01-01T00:00:00Z", T],
      ["sigT 80 s ahead", formatSigT(now + 80_000), T],
      ["sigT 80 s behind", formatSigT(now - 80_000), T],
      ["sigT an hour behind", formatSigT(now - 3_600_000), T],
      ["sigT empty", "", F],
    ] as const
  ).map(([label, sigT, verdict]) => game(label, { sigT }, verdict));
}

function sigDGames(): readonly Game[] {
  const pars = [...PARS];
  const M = HTTP_HEADERS_MID;
  const F = REFUSE("FORMAT_ERROR");
  const S = REFUSE("SIGNATURE_INVALID");
  return (
    [
      ["sigD wrong mId", { mId: "http://uri.etsi.org/19182/ObjectIdByURI", pars }, S],
      ["sigD mId absent", { pars }, S],
      ["sigD pars not an array", { mId: M, pars: pars.join(" ") }, F],
      ["sigD pars empty", { mId: M, pars: [] }, F],
      [
        "sigD pars 33 names",
        { mId: M, pars: [...pars, ...Array.from({ length: 28 }, (_, i) => `x-h${i}`)] },
        F,
      ],
      [
        "sigD pars upper-case names",
        { mId: M, pars: pars.map((p) => (p.startsWith("(") ? p : p.toUpperCase())) },
        F,
      ],
      ["sigD pars with a duplicate", { mId: M, pars: [...pars, "psu-id"] }, F],
      ["sigD pars with a number", { mId: M, pars: [...pars, 7] }, F],
      ["sigD pars with a space in a name", { mId: M, pars: [...pars, "psu id"] }, F],
      ["sigD pars listing (status-line)", { mId: M, pars: [...pars, "(status-line)"] }, S],
      ["sigD pars listing an absent header", { mId: M, pars: [...pars, "psu-corporate-id"] }, S],
      ["sigD with an extra member", { mId: M, pars, hashM: "S256" }, F],
      [
        "sigD with a __proto__ member",
        JSON.parse(`{"mId":"${M}","pars":${JSON.stringify(pars)},"__proto__":{}}`),
        F,
      ],
      ["sigD an array", [M, pars], F],
      ["sigD a string", M, F],
      ["sigD absent", undefined, S],
    ] as const
  ).map(([label, sigD, verdict]) => game(label, { sigD }, verdict));
}

/** Coverage gaps: a header not listed, or changed after signing; a body without Digest. */
function coverageGames(b: Base): readonly Game[] {
  const { rng } = b;
  const without = (name: string) => PARS.filter((p) => p !== name);
  const gap =
    (
      label: string,
      pars: readonly string[],
      options: {
        extra?: Record<string, string>;
        noDigest?: boolean;
        changed?: "psu-id" | "(request-target)";
      } = {},
    ) =>
    () => {
      const e = options.noDigest
        ? b.draft({ pay: true, noDigest: true })
        : options.extra
          ? b.draft({ extra: options.extra })
          : b.d;
      const a = algOf(e.tpp, rng);
      const request = sendable(e, signText(JSON.stringify(headerOf(e, a, pars)), e, a, payloadOf(e, pars)));
      if (options.changed === "psu-id")
        request.headers = request.headers.map(([n, val]) => (n === "PSU-ID" ? [n, `${val}0`] : [n, val]));
      if (options.changed === "(request-target)") request.target = `${request.target}&x=1`;
      return {
        tpp: e.tpp,
        label: `${label}: ${e.describe}`,
        request,
        verdict: REFUSE(options.noDigest ? "FORMAT_ERROR" : "SIGNATURE_INVALID"),
      };
    };
  return [
    gap("pars without (request-target)", without("(request-target)")),
    gap("pars without x-request-id", without("x-request-id")),
    gap("pars without digest", without("digest")),
    gap("pars without psu-id", without("psu-id")),
    gap("pars without tpp-redirect-uri", without("tpp-redirect-uri")),
    gap("PSU-Corporate-ID sent but not listed", PARS, { extra: { "PSU-Corporate-ID": "CORP-1" } }),
    gap("a listed header changed after signing", PARS, { changed: "psu-id" }),
    gap("(request-target) changed after signing", PARS, { changed: "(request-target)" }),
    // required-headers refuses a body without Digest before any JAdES step.
    gap("a body without Digest, pars without digest", without("digest"), { noDigest: true }),
  ];
}

/**
 * A UK OB header (crit of openbanking.org.uk names) in the 3.1.3 style (b64 false): the fuzz
 * gateway accepts uk-ob too, so it is judged as UK OB and refused there (b64 is not accepted by
 * default; ES256, for the EC TPP, neither).
 */
function ukobGames({ rng, d, v }: Base): readonly Game[] {
  return [
    () => {
      const h = {
        alg: "PS256",
        kid: "fuzz",
        b64: false,
        "http://openbanking.org.uk/iat": Math.floor(Date.now() / 1000),
        "http://openbanking.org.uk/iss": d.tpp.organizationId,
        "http://openbanking.org.uk/tan": "openbanking.org.uk",
        crit: [
          "b64",
          "http://openbanking.org.uk/iat",
          "http://openbanking.org.uk/iss",
          "http://openbanking.org.uk/tan",
        ],
      };
      const text = rng.chance(0.5) ? JSON.stringify(h) : JSON.stringify(h).replaceAll("/", "\\/");
      const a = d.tpp.privateKey.asymmetricKeyType === "ec" ? "ES256" : "PS256";
      return v(
        `UK OB header, b64 false${text.includes("\\/") ? " (slashes escaped)" : ""}`,
        signText(text.replace('"PS256"', `"${a}"`), d, a, d.body ?? Buffer.alloc(0)),
        REFUSE("SIGNATURE_INVALID"),
      );
    },
  ];
}

/**
 * An extra member sizing the whole value: within Node's 16 KiB head (signed, valid, so it is
 * forwarded), past it (refused by the listener), past MAX_JWS_LENGTH.
 */
function hugeGames(b: Base): readonly Game[] {
  return [
    () => {
      const { rng, d } = b;
      const size = rng.pick([
        6_000,
        12_000,
        15_000,
        20_000,
        MAX_JWS_LENGTH - 100,
        MAX_JWS_LENGTH + 10,
        3 * MAX_JWS_LENGTH,
      ]);
      const pad = Math.max(0, Math.floor(((size - b.good().length) * 3) / 4) - 8);
      const jws = b.signedWith({ ...b.header, "x-pad": "p".repeat(pad) });
      const request = sendable(d, jws);
      const head = serialize({ ...request, body: Buffer.alloc(0) }).length;
      return {
        tpp: d.tpp,
        label: `x-jws-signature of ${jws.length} chars (head ${head}): ${d.describe}`,
        request,
        verdict: head < 15_500 ? { expect: "forward" } : { expect: "refuse", mayLackId: true },
      };
    },
  ];
}

export const jades = jwsFamily({
  name: "jades",
  checks: "jades",
  weight: 2,
  crit: CRIT,
  payChance: 0.4,
  signers: (tpps, pay) => (pay ? [tpps.A, tpps.EC] : [tpps.A, tpps.B, tpps.EC]),
  body: (rng) => paymentBody(`${rng.range(1, 9999)}.${rng.range(10, 99)}`),
  headers: (body, options) => [
    ["PSU-ID", "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a"],
    ["PSU-IP-Address", "192.0.2.10"],
    ...(options.noDigest
      ? []
      : ([["Digest", computeDigestHeader(body ?? Buffer.alloc(0))]] as [string, string][])),
    ...(body ? ([["Content-Type", "application/json"]] as [string, string][]) : []),
    ...Object.entries(options.extra ?? {}),
  ],
  describeSize: false,
  algOf,
  headerOf: (d, alg) => headerOf(d, alg),
  payloadOf: (d) => payloadOf(d),
  signValid,
  validChunked: [0.2, 4],
  games: {
    duplicates: ({ rng, alg, header }) => ({
      alg: rng.pick(["none", "HS256", alg]),
      crit: rng.pick([["b64"], [...CRIT]]),
      b64: rng.pick([true, false]),
      sigD: { mId: HTTP_HEADERS_MID, pars: ["x-request-id"] },
      sigT: header.sigT,
      x5c: header.x5c,
    }),
    // Inside sigD: pars twice.
    duplicatesInside: ({ rng, d, alg, header, payload, v }) => [
      () => {
        const esc = rng.chance(0.5);
        const inner = JSON.stringify(header).replace(
          '"pars":',
          `"pars":["(request-target)"],${esc ? escaped("pars") : '"pars"'}:`,
        );
        return v(
          `sigD.pars twice${esc ? " (\\u escaped)" : ""}`,
          signText(inner, d, alg, payload),
          REFUSE("SIGNATURE_INVALID"),
        );
      },
    ],
    alg: algGames,
    crit: () => [
      ["crit missing sigD", ["b64", "sigT"]],
      ["crit missing b64", ["sigT", "sigD"]],
      ["crit with an unknown name", [...CRIT, "exp"]],
      ["crit with an unknown name instead of one", ["b64", "sigT", "x5t#S256"]],
      ["crit not an array", "b64,sigT,sigD"],
      ["crit an object", { b64: true }],
      ["crit empty", []],
      ["crit with a duplicate", ["b64", "b64", "sigT"]],
      ["crit with a duplicate, four long", ["b64", "sigT", "sigD", "sigD"]],
      ["crit with a number", ["b64", "sigT", 3]],
      ["crit absent", undefined],
    ],
    b64: b64Games,
    // Digest no longer holds: the head may reach the backend, the payment must not run.
    tampered: { expect: "no-execute", codes: ["SIGNATURE_INVALID"] },
  },
  own: { sigT: sigTGames, sigD: sigDGames, coverage: coverageGames, ukob: ukobGames, huge: hugeGames },
  weights: [
    [3, "compact"],
    [3, "json"],
    [3, "duplicate"],
    [4, "alg"],
    [3, "crit"],
    [2, "b64"],
    [3, "sigT"],
    [4, "sigD"],
    [4, "x5c"],
    [4, "coverage"],
    [2, "tamper"],
    [1, "ukob"],
    [1, "huge"],
  ],
  modes: [
    [3, "valid"],
    [10, "hostile"],
    [2, "replay"],
    [1, "mixed"],
  ],
  mixedKinds: ["crit", "sigD", "alg", "sigT", "coverage", "duplicate"],
});
