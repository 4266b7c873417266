/**
 * UK Open Banking requests (a detached JWS over the body in x-jws-signature, RFC 7515 appendix F;
 * crit exactly the openbanking.org.uk iat, iss and tan claims; the QSealC in x5c; PS256 only by
 * default), built by the shared JWS builder (jws-common.ts: valid requests by TPP A and B, GET (the
 * empty payload signed) and POST with bodies of several sizes, chunked too, their answers signed
 * back in UK OB; the shared hostile games; replays re-encoded) from this table: what a correct UK
 * OB signer writes and signs, its alg, crit, duplicate and b64 games, and its own kinds, each
 * refused at its step with its code where the code is certain (src/signature/jws/ukob.ts,
 * compact.ts, src/checks/dialects/): iat edges, iss of another TPP, a tan not configured, kid, typ
 * and cty games. A body changed after signing is refused whole: nothing of it reaches the backend.
 */

import {
  type JwsAlgorithm,
  signUkOb,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
} from "../../../src/signature/jws/index.js";
import type { Rng } from "../prng.js";
import type { CaseContext } from "../types.js";
import {
  type Base,
  critOf,
  type Draft,
  type Game,
  game,
  type JwsDialect,
  jwsFamily,
  type Members,
  REFUSE,
  signText,
  thumbprint,
} from "./jws-common.js";

const CRIT = [UKOB_IAT, UKOB_ISS, UKOB_TAN];
const TAN = "openbanking.org.uk";

/** A payment body of about `size` bytes (its remittance padded), sizes not all multiples of 3. */
function bodyOf(rng: Rng, size: number): Buffer {
  const base = {
    instructedAmount: { currency: "GBP", amount: `${rng.range(1, 9999)}.${rng.range(10, 99)}` },
    creditorAccount: { schemeName: "UK.OBIE.SortCodeAccountNumber", identification: "08080021325698" },
    creditorName: "Fuzz Creditor",
    remittanceInformationUnstructured: "",
  };
  const empty = JSON.stringify(base).length;
  base.remittanceInformationUnstructured = "r".repeat(Math.max(1, size - empty));
  return Buffer.from(JSON.stringify(base));
}

/** The payload: the body's base64url (or the raw body when `raw`), the empty payload without one. */
function payloadOf(d: Draft, raw = false): Buffer {
  const body = d.body ?? Buffer.alloc(0);
  return raw ? body : Buffer.from(body.toString("base64url"), "latin1");
}

/** The protected header a correct signer writes. */
function headerOf(
  d: Draft,
  alg: JwsAlgorithm = "PS256",
  iatOffsetS = 0,
  iss = d.tpp.organizationId,
): Members {
  return {
    alg,
    kid: `fuzz-${d.tpp.name}`,
    [UKOB_IAT]: Math.floor(Date.now() / 1000) + iatOffsetS,
    [UKOB_ISS]: iss,
    [UKOB_TAN]: TAN,
    crit: [...CRIT],
    typ: "JOSE",
    cty: "application/json",
    x5c: [Buffer.from(d.tpp.der).toString("base64")],
  };
}

/** Valid: iat off by up to ±45 s, iss the organisation or `<org>/<software>`, by the gateway's own signer or by hand. */
function signValid(ctx: CaseContext, d: Draft): { jws: string; label: string } {
  const { rng } = ctx;
  const offset = rng.pick([0, 0, 0, -45, 45, -30, 20]);
  const iss = rng.chance(0.5) ? d.tpp.organizationId : `${d.tpp.organizationId}/software-${rng.int(100)}`;
  let jws: string;
  if (rng.chance(0.4)) {
    // The gateway's own signer (typ and cty too).
    jws = signUkOb({
      key: d.tpp.privateKey,
      kid: `kid-${rng.int(100)}`,
      iss,
      tan: TAN,
      iat: Math.floor(Date.now() / 1000) + offset,
      body: d.body ?? "",
      certificateChain: [d.tpp.der],
    });
  } else {
    const h = headerOf(d, "PS256", offset, iss);
    if (rng.chance(0.3)) delete h.typ;
    if (rng.chance(0.3)) delete h.cty;
    if (rng.chance(0.3)) h.crit = rng.shuffle([...CRIT]);
    if (rng.chance(0.2)) h["x5t#S256"] = thumbprint(d.tpp.der);
    const text = JSON.stringify(h);
    // A signer that escapes '/' in JSON (PHP's default): the same header.
    jws = signText(rng.chance(0.2) ? text.replaceAll("/", "\\/") : text, d, "PS256", payloadOf(d));
  }
  return {
    jws,
    label: `valid PS256${offset ? `, iat ${offset} s` : ""}${iss.includes("/") ? ", iss with a software id" : ""}`,
  };
}

/** Algs that fit the key and verify but are not accepted by default. */
function algGames(b: Base): readonly Game[] {
  return [
    () =>
      b.v(
        "alg RS256 (not accepted)",
        b.signedWith({ ...b.header, alg: "RS256" }, b.payload, "RS256"),
        REFUSE("SIGNATURE_INVALID"),
      ),
    () => {
      // ES256 by the EC TPP, its own certificate and a valid signature.
      const { d: e, request } = b.signed({ tpp: b.tpps.EC }, "ES256");
      return {
        tpp: e.tpp,
        label: `alg ES256 (not accepted): ${e.describe}`,
        request,
        verdict: REFUSE("SIGNATURE_INVALID"),
      };
    },
  ];
}

/** b64 present at all (3.1.3 style): not accepted unless verification.dialects.ukOb.allowB64False. */
function b64Games({ d }: Base): readonly Game[] {
  const S = REFUSE("SIGNATURE_INVALID");
  return [
    game(
      "b64 false with b64 in crit, the raw body signed",
      { b64: false, crit: ["b64", ...CRIT] },
      S,
      payloadOf(d, true),
    ),
    game("b64 false, not in crit, the raw body signed", { b64: false }, S, payloadOf(d, true)),
    game("b64 true", { b64: true }, S),
    game("b64 'false' (a string)", { b64: "false", crit: ["b64", ...CRIT] }, S),
  ];
}

function iatGames(): readonly Game[] {
  const now = Math.floor(Date.now() / 1000);
  const T = REFUSE("TIMESTAMP_INVALID");
  const F = REFUSE("FORMAT_ERROR");
  return (
    [
      ["iat 90 s behind", now - 90, T],
      ["iat 90 s ahead", now + 90, T],
      ["iat an hour behind", now - 3600, T],
      ["iat a day ahead", now + 86_400, T],
      ["iat 0", 0, T],
      ["iat in milliseconds", Date.now(), T],
      ["iat a string", String(now), F],
      ["iat an ISO date", new Date().toISOString(), F],
      ["iat fractional", now + 0.5, F],
      ["iat negative", -now, F],
      ["iat past 2^53", 2 ** 53 + 2, F],
      ["iat null", null, F],
    ] as const
  ).map(([label, iat, verdict]) => game(label, { [UKOB_IAT]: iat }, verdict));
}

function issGames({ d, tpps }: Base): readonly Game[] {
  const own = d.tpp.organizationId;
  const other = d.tpp === tpps.B ? tpps.A.organizationId : tpps.B.organizationId;
  const S = REFUSE("SIGNATURE_INVALID");
  const F = REFUSE("FORMAT_ERROR");
  return (
    [
      ["iss of another TPP", other, S],
      ["iss of another TPP with a software id", `${other}/software-1`, S],
      ["iss the own id with a suffix", `${own}X`, S],
      ["iss the own id in lower case", own.toLowerCase(), S],
      ["iss another's id with the own as software id", `${other}/${own}`, S],
      ["iss empty", "", F],
      ["iss of 300 chars", `${own}/${"s".repeat(300)}`, F],
      ["iss not a string", 42, F],
    ] as const
  ).map(([label, iss, verdict]) => game(label, { [UKOB_ISS]: iss }, verdict));
}

function tanGames(): readonly Game[] {
  const S = REFUSE("SIGNATURE_INVALID");
  const F = REFUSE("FORMAT_ERROR");
  return (
    [
      ["tan not configured", "example.org", S],
      ["tan in upper case", TAN.toUpperCase(), S],
      ["tan with a trailing dot", `${TAN}.`, S],
      ["tan a subdomain", `evil.${TAN}`, S],
      ["tan empty", "", F],
      ["tan an array", [TAN], F],
    ] as const
  ).map(([label, tan, verdict]) => game(label, { [UKOB_TAN]: tan }, verdict));
}

/** kid, typ and cty (the kid-only header, no x5c, is a shared x5c game). */
function kidGames(): readonly Game[] {
  const F = REFUSE("FORMAT_ERROR");
  return [
    game("kid absent", { kid: undefined }, F),
    game("kid empty", { kid: "" }, F),
    game("kid not a string", { kid: 7 }, F),
    game("typ JWT", { typ: "JWT" }, F),
    game("cty text/plain", { cty: "text/plain" }, F),
  ];
}

const UKOB: JwsDialect<"iat" | "iss" | "tan" | "kid"> = {
  name: "uk-ob",
  checks: "ukob",
  weight: 2,
  crit: CRIT,
  payChance: 0.5,
  signers: (tpps, pay) => (pay ? [tpps.A] : [tpps.A, tpps.B]),
  body: (rng) => bodyOf(rng, rng.pick([150, 151, 152, 1_000, 4_097, 16_385, 40_000, 60_001])),
  headers: (body) => [
    ["PSU-IP-Address", "192.0.2.10"],
    ...(body ? ([["Content-Type", "application/json"]] as [string, string][]) : []),
  ],
  describeSize: true,
  algOf: () => "PS256",
  headerOf: (d, alg) => headerOf(d, alg),
  payloadOf: (d) => payloadOf(d),
  signValid,
  validChunked: [0.3, 6],
  games: {
    duplicates: ({ rng, header, tpps }) => ({
      alg: rng.pick(["none", "HS256", "PS256"]),
      crit: rng.pick([CRIT.slice(0, 2), [...CRIT]]),
      kid: "other",
      [UKOB_IAT]: header[UKOB_IAT],
      [UKOB_ISS]: tpps.B.organizationId,
      [UKOB_TAN]: TAN,
      x5c: header.x5c,
    }),
    alg: algGames,
    crit: () => [
      ["crit absent", undefined],
      ["crit empty", []],
      ["crit a string", UKOB_IAT],
      ["crit without tan", CRIT.slice(0, 2)],
      ["crit without iat", CRIT.slice(1)],
      ["crit with an unknown name", [...CRIT, "exp"]],
      ["crit with b64 (no b64 member)", ["b64", ...CRIT]],
      ["crit listing iss twice", [UKOB_IAT, UKOB_ISS, UKOB_ISS]],
      ["crit names in upper case", CRIT.map((n) => n.toUpperCase())],
      ["crit names with https", CRIT.map((n) => n.replace("http:", "https:"))],
      ["crit of non-strings", [1, 2, 3]],
    ],
    b64: b64Games,
    // The body is verified whole before anything is sent: the backend never sees the head either.
    tampered: REFUSE("SIGNATURE_INVALID"),
  },
  own: { iat: iatGames, iss: issGames, tan: tanGames, kid: kidGames },
  weights: [
    [3, "compact"],
    [2, "json"],
    [3, "duplicate"],
    [4, "alg"],
    [3, "crit"],
    [2, "b64"],
    [3, "iat"],
    [3, "iss"],
    [2, "tan"],
    [2, "kid"],
    [4, "x5c"],
    [3, "tamper"],
  ],
  modes: [
    [4, "valid"],
    [10, "hostile"],
    [2, "replay"],
  ],
  // Signed back in UK OB (ingress.ts verifies it with the UK OB unit's response checks when its crit says so).
  answered(ctx, label, answer) {
    const jws = answer.headers["x-jws-signature"];
    const crit = typeof jws === "string" ? critOf(jws) : undefined;
    ctx.check(
      crit !== undefined && CRIT.every((name) => crit.includes(name)),
      "ukob-answer-dialect",
      label,
      "an x-jws-signature whose crit lists the openbanking.org.uk claims",
      () => `${typeof jws === "string" ? `crit ${JSON.stringify(crit)}` : "no x-jws-signature"}`,
    );
  },
};

export const ukOb = jwsFamily(UKOB);

export const UKOB_KINDS = UKOB.weights.map(([, kind]) => kind);
