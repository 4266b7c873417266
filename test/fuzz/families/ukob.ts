/**
 * UK Open Banking requests (a detached JWS over the body in x-jws-signature, RFC 7515 appendix F;
 * crit exactly the openbanking.org.uk iat, iss and tan claims; the QSealC in x5c; PS256 only by
 * default): valid ones by TPP A and B, GET (the empty payload signed) and POST with bodies of
 * several sizes, chunked too, that must be forwarded and answered; and hostile ones, each refused at
 * its step with its code where the code is certain (src/signature/jws/ukob.ts, compact.ts,
 * src/checks/ukob-steps.ts): broken compact forms, members written twice (also spelled with \u
 * escapes), alg games (none, HS256 keyed with the certificate's public key, unknown, RS256 and ES256
 * which are not accepted by default), crit games, b64 present, iat edges, iss of another TPP, a tan
 * not configured, kid only (no x5c), x5c games, a body changed after signing, and replays
 * re-encoded (whitespace, an extra header, header order): the second send must be refused.
 */

import { createHash, createHmac, createPublicKey, randomUUID } from "node:crypto";
import { signJwsInput } from "../../../src/signature/jws/compact.js";
import {
  type JwsAlgorithm,
  signingInput,
  signUkOb,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
} from "../../../src/signature/jws/index.js";
import type { Rng } from "../prng.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, type RawRequest, serialize, withTag } from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import type { CaseContext, ExchangeResult, Expectation, ExpectedRequest, Family } from "../types.js";
import { isTppMessages } from "../verdicts.js";
import { chunked } from "./common.js";

const CRIT = [UKOB_IAT, UKOB_ISS, UKOB_TAN];
const TAN = "openbanking.org.uk";

/** A request to sign: what is sent, before x-jws-signature. */
interface Draft {
  readonly method: string;
  readonly target: string;
  readonly body?: Buffer;
  /** As sent, in order (wire-case names). */
  headers: [string, string][];
  readonly requestId: string;
  readonly tag: string;
  readonly tpp: FuzzTpp;
  readonly describe: string;
}

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

function draft(ctx: CaseContext, options: { tpp?: FuzzTpp; pay?: boolean } = {}): Draft {
  const { rng, tpps } = ctx;
  const canPay = !options.tpp || options.tpp.roles.includes("PSP_PI");
  const pay = options.pay ?? (canPay && rng.chance(0.5));
  const tpp = options.tpp ?? (pay ? tpps.A : rng.pick([tpps.A, tpps.B]));
  const tag = ctx.tag();
  const path = pay
    ? PAYMENT_PATH
    : rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`, `${ACCOUNTS_PATH}?withBalance=true`]);
  const size = rng.pick([150, 151, 152, 1_000, 4_097, 16_385, 40_000, 60_001]);
  const body = pay ? bodyOf(rng, size) : undefined;
  const requestId = randomUUID();
  const headers: [string, string][] = [
    ["X-Request-ID", requestId],
    ["TPP-Redirect-URI", "https://tpp.example/cb"],
    ["PSU-IP-Address", "192.0.2.10"],
    ...(body ? ([["Content-Type", "application/json"]] as [string, string][]) : []),
  ];
  const method = pay ? "POST" : "GET";
  return {
    method,
    target: withTag(path, tag),
    ...(body ? { body } : {}),
    headers,
    requestId,
    tag,
    tpp,
    describe: `${method} ${path}${body ? ` (${body.length} bytes)` : ""} by TPP ${tpp.name}`,
  };
}

/** The payload: the body's base64url (or the raw body when `raw`), the empty payload without one. */
function payloadOf(d: Draft, raw = false): Buffer {
  const body = d.body ?? Buffer.alloc(0);
  return raw ? body : Buffer.from(body.toString("base64url"), "latin1");
}

/** The protected header a correct signer writes. */
function headerOf(d: Draft, iatOffsetS = 0, iss = d.tpp.organizationId): Record<string, unknown> {
  return {
    alg: "PS256",
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

const b64u = (text: string | Buffer) => Buffer.from(text).toString("base64url");

/** `<protected>..<signature>` over the protected header as written (JSON text or bytes) and the payload. */
function signText(
  json: string | Buffer,
  d: Draft,
  alg: JwsAlgorithm,
  payload: Buffer,
  key = d.tpp.privateKey,
): string {
  const protectedB64 = b64u(typeof json === "string" ? Buffer.from(json, "utf8") : json);
  return `${protectedB64}..${signJwsInput(alg, key, signingInput(protectedB64, payload)).toString("base64url")}`;
}

function sendable(d: Draft, jws: string): RawRequest {
  return {
    method: d.method,
    target: d.target,
    headers: [...d.headers, ["x-jws-signature", jws]],
    ...(d.body ? { body: d.body } : {}),
  };
}

/** What a hostile variant must come to: its refusal's code where certain (undefined: any 4xx refusal). */
interface Verdict {
  readonly expect: Expectation;
  readonly codes?: readonly string[];
}

const REFUSE = (...codes: string[]): Verdict => ({ expect: "refuse", ...(codes.length ? { codes } : {}) });

interface Variant {
  readonly tpp: FuzzTpp;
  readonly label: string;
  readonly request: RawRequest;
  readonly verdict: Verdict;
}

/** A member written again at the end of the JSON text, its name as `nameJson` (quoted, maybe escaped). */
function duplicated(header: Record<string, unknown>, nameJson: string, second: unknown): string {
  return `${JSON.stringify(header).slice(0, -1)},${nameJson}:${JSON.stringify(second)}}`;
}

/** `\u0061lg`-style spelling of a name: its first char escaped. */
function escaped(name: string): string {
  return `"\\u${name.charCodeAt(0).toString(16).padStart(4, "0")}${name.slice(1)}"`;
}

const KINDS = [
  "compact",
  "json",
  "duplicate",
  "alg",
  "crit",
  "b64",
  "iat",
  "iss",
  "tan",
  "kid",
  "x5c",
  "tamper",
] as const;
type Kind = (typeof KINDS)[number];

/** One hostile variant of `kind` over a fresh draft. */
function hostile(ctx: CaseContext, kind: Kind): Variant {
  const { rng, tpps } = ctx;
  const d = draft(ctx, kind === "tamper" ? { pay: true } : {});
  const header = headerOf(d);
  const payload = payloadOf(d);
  const good = (): string => signText(JSON.stringify(header), d, "PS256", payload);
  const signedWith = (h: Record<string, unknown>, p = payload, a: JwsAlgorithm = "PS256") =>
    signText(JSON.stringify(h), d, a, p);
  const v = (label: string, jws: string, verdict: Verdict, request = sendable(d, jws)): Variant => ({
    tpp: d.tpp,
    label: `${label}: ${d.describe}`,
    request,
    verdict,
  });
  const without = (name: string): Record<string, unknown> => {
    const h = { ...header };
    delete h[name];
    return h;
  };
  switch (kind) {
    case "compact": {
      const [h, , s] = good().split(".") as [string, string, string];
      return rng.pick([
        () => v("one dot", `${h}.${s}`, REFUSE("FORMAT_ERROR")),
        () => v("three dots", `${h}..${s}.`, REFUSE("FORMAT_ERROR")),
        () =>
          // The body attached, its first KiB: a whole 16 KiB body would pass Node's head limit,
          // refused before the X-Request-ID is read.
          v(
            "non-empty payload part (attached)",
            `${h}.${b64u((d.body ?? Buffer.from("x")).subarray(0, 1024))}.${s}`,
            REFUSE("FORMAT_ERROR"),
          ),
        () => v("no dots", `${h}${s}`, REFUSE("FORMAT_ERROR")),
        () => v("header padded with '='", `${h}=..${s}`, REFUSE("FORMAT_ERROR")),
        () => v("signature padded with '='", `${h}..${s}==`, REFUSE("FORMAT_ERROR")),
        () =>
          v(
            "signature in base64 ('+/')",
            `${h}..${s.includes("-") || s.includes("_") ? s.replaceAll("-", "+").replaceAll("_", "/") : `${s.slice(0, -1)}+`}`,
            REFUSE("FORMAT_ERROR"),
          ),
        () => v("empty header part", `..${s}`, REFUSE("FORMAT_ERROR")),
        () => v("empty signature part", `${h}..`, REFUSE("FORMAT_ERROR")),
        // A signature of the wrong length is judged at the body's end, like any that does not
        // verify: UK OB signs the body only, so nothing of the request reaches the backend.
        () =>
          v(
            "signature cut short",
            `${h}..${s.slice(0, -4)}`,
            // Its last char's unused bits set refuse it in the head (not canonical base64url).
            REFUSE("SIGNATURE_INVALID", "FORMAT_ERROR"),
          ),
        () => {
          // Two header lines: Node joins them with ", ", which is no compact JWS.
          const request = sendable(d, good());
          request.headers.push(["X-JWS-Signature", rng.pick([good(), "", `${h}..${s}`])]);
          return v("x-jws-signature twice", "", REFUSE("FORMAT_ERROR"), request);
        },
      ])();
    }
    case "json": {
      const as = (label: string, text: string | Buffer) =>
        v(label, signText(text, d, "PS256", payload), REFUSE("FORMAT_ERROR"));
      const text = JSON.stringify(header);
      return rng.pick([
        () => as("protected header not JSON", text.slice(0, -1)),
        () => as("protected header a JSON array", JSON.stringify([header])),
        () => as("protected header a JSON string", JSON.stringify(text)),
        () => as("protected header with trailing garbage", `${text}x`),
        () =>
          as(
            "protected header nested 2000 deep",
            `${text.slice(0, -1)},"n":${"[".repeat(2000)}1${"]".repeat(2000)}}`,
          ),
        () =>
          as(
            "protected header not UTF-8",
            Buffer.concat([Buffer.from(text.slice(0, -1)), Buffer.from(',"k":"\xff"}', "latin1")]),
          ),
      ])();
    }
    case "duplicate": {
      const name = rng.pick(["alg", "crit", "kid", UKOB_IAT, UKOB_ISS, UKOB_TAN, "x5c"] as const);
      const second: Record<string, unknown> = {
        alg: rng.pick(["none", "HS256", "PS256"]),
        crit: rng.pick([CRIT.slice(0, 2), [...CRIT]]),
        kid: "other",
        [UKOB_IAT]: header[UKOB_IAT],
        [UKOB_ISS]: tpps.B.organizationId,
        [UKOB_TAN]: TAN,
        x5c: header.x5c,
      };
      const esc = rng.chance(0.5);
      return v(
        `'${name}' twice${esc ? " (the second \\u escaped)" : ""}`,
        signText(
          duplicated(header, esc ? escaped(name) : JSON.stringify(name), second[name]),
          d,
          "PS256",
          payload,
        ),
        REFUSE("SIGNATURE_INVALID"),
      );
    }
    case "alg": {
      return rng.pick([
        () => {
          const h = { ...header, alg: rng.pick(["none", "None", "NONE"]) };
          return rng.chance(0.5)
            ? v(`alg ${h.alg}, no signature`, `${b64u(JSON.stringify(h))}..`, REFUSE("FORMAT_ERROR"))
            : v(`alg ${h.alg}, the key's signature`, signedWith(h), REFUSE("SIGNATURE_INVALID"));
        },
        () => {
          // HMAC keyed with the certificate's public key, as a confused verifier would check it.
          const h = { ...header, alg: rng.pick(["HS256", "hs256", "HS512"]) };
          const protectedB64 = b64u(JSON.stringify(h));
          const secret = rng.chance(0.5)
            ? Buffer.from(d.tpp.der)
            : Buffer.from(createPublicKey(d.tpp.privateKey).export({ type: "spki", format: "pem" }));
          const mac = createHmac("sha256", secret)
            .update(signingInput(protectedB64, payload))
            .digest("base64url");
          return v(
            `alg ${h.alg} keyed with the certificate's public key`,
            `${protectedB64}..${mac}`,
            REFUSE("SIGNATURE_INVALID"),
          );
        },
        () => {
          const a = rng.pick(["RS512", "PS384", "ES384", "EdDSA", "ps256", "RSA-OAEP", ""]);
          return v(`alg '${a}'`, signedWith({ ...header, alg: a }), REFUSE("SIGNATURE_INVALID"));
        },
        () =>
          v(
            "alg not a string",
            signedWith({ ...header, alg: rng.pick([256, null, ["PS256"]]) }),
            REFUSE("FORMAT_ERROR"),
          ),
        () => v("alg absent", signedWith(without("alg")), REFUSE("FORMAT_ERROR")),
        // RS256: fits the key and verifies, but UK OB accepts PS256 only by default.
        () =>
          v(
            "alg RS256 (not accepted)",
            signedWith({ ...header, alg: "RS256" }, payload, "RS256"),
            REFUSE("SIGNATURE_INVALID"),
          ),
        () => {
          // ES256 by the EC TPP, its own certificate and a valid signature: not accepted by default.
          const e = draft(ctx, { tpp: tpps.EC });
          const h = { ...headerOf(e), alg: "ES256" };
          return {
            tpp: e.tpp,
            label: `alg ES256 (not accepted): ${e.describe}`,
            request: sendable(e, signText(JSON.stringify(h), e, "ES256", payloadOf(e))),
            verdict: REFUSE("SIGNATURE_INVALID"),
          };
        },
      ])();
    }
    case "crit": {
      const c = rng.pick<[string, unknown]>([
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
      ]);
      const h = c[1] === undefined ? without("crit") : { ...header, crit: c[1] };
      if (rng.chance(0.2)) {
        // crit lists a claim the header lacks.
        const name = rng.pick(CRIT);
        const g = { ...header };
        delete g[name];
        return v(`crit lists ${name} which is absent`, signedWith(g), REFUSE("SIGNATURE_INVALID"));
      }
      return v(c[0], signedWith(h), REFUSE("SIGNATURE_INVALID"));
    }
    case "b64": {
      return rng.pick([
        // 3.1.3 style: not accepted unless verification.dialects.ukOb.allowB64False.
        () =>
          v(
            "b64 false with b64 in crit, the raw body signed",
            signedWith({ ...header, b64: false, crit: ["b64", ...CRIT] }, payloadOf(d, true)),
            REFUSE("SIGNATURE_INVALID"),
          ),
        () =>
          v(
            "b64 false, not in crit, the raw body signed",
            signedWith({ ...header, b64: false }, payloadOf(d, true)),
            REFUSE("SIGNATURE_INVALID"),
          ),
        () => v("b64 true", signedWith({ ...header, b64: true }), REFUSE("SIGNATURE_INVALID")),
        () =>
          v(
            "b64 'false' (a string)",
            signedWith({ ...header, b64: "false", crit: ["b64", ...CRIT] }),
            REFUSE("SIGNATURE_INVALID"),
          ),
      ])();
    }
    case "iat": {
      const now = Math.floor(Date.now() / 1000);
      const c = rng.pick<[string, unknown, string]>([
        ["iat 90 s behind", now - 90, "TIMESTAMP_INVALID"],
        ["iat 90 s ahead", now + 90, "TIMESTAMP_INVALID"],
        ["iat an hour behind", now - 3600, "TIMESTAMP_INVALID"],
        ["iat a day ahead", now + 86_400, "TIMESTAMP_INVALID"],
        ["iat 0", 0, "TIMESTAMP_INVALID"],
        ["iat in milliseconds", Date.now(), "TIMESTAMP_INVALID"],
        ["iat a string", String(now), "FORMAT_ERROR"],
        ["iat an ISO date", new Date().toISOString(), "FORMAT_ERROR"],
        ["iat fractional", now + 0.5, "FORMAT_ERROR"],
        ["iat negative", -now, "FORMAT_ERROR"],
        ["iat past 2^53", 2 ** 53 + 2, "FORMAT_ERROR"],
        ["iat null", null, "FORMAT_ERROR"],
      ]);
      return v(c[0], signedWith({ ...header, [UKOB_IAT]: c[1] }), REFUSE(c[2]));
    }
    case "iss": {
      const own = d.tpp.organizationId;
      const other = d.tpp === tpps.B ? tpps.A.organizationId : tpps.B.organizationId;
      const c = rng.pick<[string, unknown, string]>([
        ["iss of another TPP", other, "SIGNATURE_INVALID"],
        ["iss of another TPP with a software id", `${other}/software-1`, "SIGNATURE_INVALID"],
        ["iss the own id with a suffix", `${own}X`, "SIGNATURE_INVALID"],
        ["iss the own id in lower case", own.toLowerCase(), "SIGNATURE_INVALID"],
        ["iss another's id with the own as software id", `${other}/${own}`, "SIGNATURE_INVALID"],
        ["iss empty", "", "FORMAT_ERROR"],
        ["iss of 300 chars", `${own}/${"s".repeat(300)}`, "FORMAT_ERROR"],
        ["iss not a string", 42, "FORMAT_ERROR"],
      ]);
      return v(c[0], signedWith({ ...header, [UKOB_ISS]: c[1] }), REFUSE(c[2]));
    }
    case "tan": {
      const c = rng.pick<[string, unknown, string]>([
        ["tan not configured", "example.org", "SIGNATURE_INVALID"],
        ["tan in upper case", TAN.toUpperCase(), "SIGNATURE_INVALID"],
        ["tan with a trailing dot", `${TAN}.`, "SIGNATURE_INVALID"],
        ["tan a subdomain", `evil.${TAN}`, "SIGNATURE_INVALID"],
        ["tan empty", "", "FORMAT_ERROR"],
        ["tan an array", [TAN], "FORMAT_ERROR"],
      ]);
      return v(c[0], signedWith({ ...header, [UKOB_TAN]: c[1] }), REFUSE(c[2]));
    }
    case "kid": {
      const thumb = createHash("sha256").update(d.tpp.der).digest("base64url");
      return rng.pick([
        () => v("kid only, no x5c", signedWith(without("x5c")), REFUSE("CERTIFICATE_MISSING")),
        () =>
          v(
            "kid and x5t#S256, no x5c",
            signedWith({ ...without("x5c"), "x5t#S256": thumb }),
            REFUSE("CERTIFICATE_MISSING"),
          ),
        () => v("kid absent", signedWith(without("kid")), REFUSE("FORMAT_ERROR")),
        () => v("kid empty", signedWith({ ...header, kid: "" }), REFUSE("FORMAT_ERROR")),
        () => v("kid not a string", signedWith({ ...header, kid: 7 }), REFUSE("FORMAT_ERROR")),
        () => v("typ JWT", signedWith({ ...header, typ: "JWT" }), REFUSE("FORMAT_ERROR")),
        () => v("cty text/plain", signedWith({ ...header, cty: "text/plain" }), REFUSE("FORMAT_ERROR")),
      ])();
    }
    case "x5c": {
      const own = Buffer.from(d.tpp.der).toString("base64");
      const other = d.tpp === tpps.B ? tpps.A : tpps.B;
      return rng.pick([
        () => v("x5c empty", signedWith({ ...header, x5c: [] }), REFUSE("CERTIFICATE_INVALID")),
        () => v("x5c a string", signedWith({ ...header, x5c: own }), REFUSE("CERTIFICATE_INVALID")),
        () =>
          v(
            "x5c in base64url",
            signedWith({ ...header, x5c: [Buffer.from(d.tpp.der).toString("base64url")] }),
            own.includes("+") || own.includes("/") || own.endsWith("=")
              ? REFUSE("CERTIFICATE_INVALID")
              : { expect: "any" },
          ),
        () =>
          v(
            "x5c as PEM lines",
            signedWith({ ...header, x5c: [own.replace(/(.{64})/g, "$1\n")] }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () =>
          v(
            "x5c[0] not a certificate",
            signedWith({ ...header, x5c: [b64(Buffer.from("not a cert"))] }),
            REFUSE(),
          ),
        () =>
          v(
            "x5c[0] another TPP's certificate, signed with the own key",
            signedWith({ ...header, x5c: [Buffer.from(other.der).toString("base64")] }),
            REFUSE("SIGNATURE_INVALID"),
          ),
        () => v("x5c[0] the CA certificate", signedWith({ ...header, x5c: [caBase64(ctx)] }), REFUSE()),
        () =>
          v(
            "x5t#S256 not x5c[0]'s",
            signedWith({ ...header, "x5t#S256": createHash("sha256").update("x").digest("base64url") }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () => {
          // Certificates that must not pass, each signing with its own key.
          const bad = rng.pick([tpps.expired, tpps.revoked, tpps.untrusted]);
          const e = draft(ctx, { tpp: bad, pay: false });
          return {
            tpp: bad,
            label: `x5c[0] ${bad.name}: ${e.describe}`,
            request: sendable(e, signText(JSON.stringify(headerOf(e)), e, "PS256", payloadOf(e))),
            verdict: REFUSE(),
          };
        },
      ])();
    }
    case "tamper": {
      // The body changed after signing: the signature no longer holds. It may reach the backend in part.
      const request = sendable(d, good());
      const body = Buffer.from(d.body!);
      const at = rng.chance(0.5) ? body.indexOf('"amount":"') + 10 : body.length - 3;
      body[at] = body[at] === 0x39 ? 0x31 : body[at]! + 1;
      const isChunked = rng.chance(0.3);
      return {
        tpp: d.tpp,
        label: `body changed after signing${isChunked ? ", chunked" : ""}: ${d.describe}`,
        request: isChunked
          ? {
              ...request,
              headers: [...request.headers, ["Transfer-Encoding", "chunked"]],
              body: chunked(body, rng.range(2, 5)),
            }
          : { ...request, body },
        // The body is verified whole before anything is sent: the backend never sees the head either.
        verdict: REFUSE("SIGNATURE_INVALID"),
      };
    }
  }
}

const b64 = (bytes: Buffer) => bytes.toString("base64");

function caBase64(ctx: CaseContext): string {
  return ctx.pki.root.pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
}

/** A valid request signed per UK OB, iat off by up to ±45 s, iss the organisation or `<org>/<software>`. */
function valid(
  ctx: CaseContext,
  options: { tpp?: FuzzTpp; pay?: boolean } = {},
): { d: Draft; request: RawRequest; label: string } {
  const { rng } = ctx;
  const d = draft(ctx, options);
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
    const h = headerOf(d, offset, iss);
    if (rng.chance(0.3)) delete h.typ;
    if (rng.chance(0.3)) delete h.cty;
    if (rng.chance(0.3)) h.crit = rng.shuffle([...CRIT]);
    if (rng.chance(0.2)) h["x5t#S256"] = createHash("sha256").update(d.tpp.der).digest("base64url");
    const text = JSON.stringify(h);
    // A signer that escapes '/' in JSON (PHP's default): the same header.
    jws = signText(rng.chance(0.2) ? text.replaceAll("/", "\\/") : text, d, "PS256", payloadOf(d));
  }
  const request = sendable(d, jws);
  const isChunked = d.body !== undefined && rng.chance(0.3);
  if (isChunked) {
    request.headers.push(["Transfer-Encoding", "chunked"]);
    request.body = chunked(d.body!, rng.range(1, 6));
  }
  return {
    d,
    request,
    label: `valid PS256${offset ? `, iat ${offset} s` : ""}${iss.includes("/") ? ", iss with a software id" : ""}${isChunked ? ", chunked" : ""}`,
  };
}

function expected(d: Draft, label: string, expect: Expectation): ExpectedRequest {
  return { tag: d.tag, requestId: d.requestId, label: `${label}: ${d.describe}`, expect, tpp: d.tpp };
}

/** Re-encodings of a signed request that change nothing signed. */
function reencoded(rng: Rng, request: RawRequest): { label: string; request: RawRequest } {
  const r = { ...request, headers: [...request.headers] };
  return rng.pick<() => { label: string; request: RawRequest }>([
    () => ({
      label: "whitespace around header values",
      request: { ...r, headers: r.headers.map(([n, val]) => [n, ` \t${val}  `] as [string, string]) },
    }),
    () => ({
      label: "an extra unrelated header",
      request: { ...r, headers: [...r.headers, ["X-Fuzz-Extra", "1"]] as [string, string][] },
    }),
    () => ({ label: "header order changed", request: { ...r, headers: rng.shuffle(r.headers) } }),
    () => ({
      label: "header names in other case",
      request: { ...r, headers: r.headers.map(([n, val]) => [n.toUpperCase(), val] as [string, string]) },
    }),
    () => ({
      label: "another X-Request-ID",
      request: {
        ...r,
        headers: r.headers.map(
          ([n, val]) => [n, n === "X-Request-ID" ? randomUUID() : val] as [string, string],
        ),
      },
    }),
    () => ({
      label: "whitespace, order and an extra header",
      request: {
        ...r,
        headers: rng.shuffle([
          ...r.headers.map(([n, val]) => [n, `${val} `] as [string, string]),
          ["Accept", "*/*"] as [string, string],
        ]),
      },
    }),
  ])();
}

function checkRefusal(
  ctx: CaseContext,
  result: ExchangeResult,
  requestId: string,
  label: string,
  verdict: Verdict,
): void {
  const r = result.refusal(requestId);
  if (r === undefined) {
    ctx.check(false, "ukob-refusal", label, "a refusal echoing its X-Request-ID", () => "none");
    return;
  }
  const tpp = isTppMessages(r);
  ctx.check(
    r.status >= 400 &&
      r.status < 500 &&
      tpp !== undefined &&
      (verdict.codes === undefined || verdict.codes.includes(tpp.code)),
    "ukob-refusal",
    label,
    `a 4xx Berlin Group refusal${verdict.codes ? ` with ${verdict.codes.join(" or ")}` : ""}`,
    () =>
      `${r.status} ${tpp ? `${tpp.code}: ${tpp.text.slice(0, 200)}` : r.body.toString("latin1").slice(0, 200)}`,
  );
}

function critOf(jws: string): unknown[] | undefined {
  try {
    const header = JSON.parse(Buffer.from(jws.slice(0, jws.indexOf(".")), "base64url").toString("utf8")) as {
      crit?: unknown;
    };
    return Array.isArray(header.crit) ? header.crit : undefined;
  } catch {
    return undefined;
  }
}

function requestIdOf(request: RawRequest): string {
  // As the gateway reads it: Node trims the value's surrounding whitespace.
  return request.headers.find(([n]) => n.toLowerCase() === "x-request-id")![1].trim();
}

export const ukOb: Family = {
  name: "uk-ob",
  weight: 2,
  async run(ctx) {
    const { rng } = ctx;
    const mode = rng.weighted<"valid" | "hostile" | "replay">([
      [4, "valid"],
      [10, "hostile"],
      [2, "replay"],
    ]);
    if (mode === "valid") {
      const { d, request, label } = valid(ctx);
      const result = await ctx.exchange({
        requests: [expected(d, label, "forward")],
        writes: [{ data: serialize(request) }],
      });
      const answer = result.backendAnswer(d.tag);
      // The backend picks its own status (200 mostly); the shared checks hold the answer to it, signed.
      ctx.check(
        answer !== undefined,
        "ukob-forward",
        `${label}: ${d.describe}`,
        "answered by the backend",
        () => `${result.refusal(d.requestId)?.body.toString("latin1").slice(0, 200) ?? "no answer"}`,
      );
      // Signed back in UK OB (ingress.ts verifies it with UkObResponseVerifier when its crit says so).
      if (answer !== undefined) {
        const jws = answer.headers["x-jws-signature"];
        const crit = typeof jws === "string" ? critOf(jws) : undefined;
        ctx.check(
          crit !== undefined && CRIT.every((name) => crit.includes(name)),
          "ukob-answer-dialect",
          `${label}: ${d.describe}`,
          "an x-jws-signature whose crit lists the openbanking.org.uk claims",
          () => `${typeof jws === "string" ? `crit ${JSON.stringify(crit)}` : "no x-jws-signature"}`,
        );
      }
      return;
    }
    if (mode === "hostile") {
      const kind = rng.weighted<Kind>([
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
      ]);
      const variant = hostile(ctx, kind);
      const id = requestIdOf(variant.request);
      const tag = /fz=([^&#]+)/.exec(variant.request.target)![1]!;
      const result = await ctx.exchange({
        requests: [
          { tag, requestId: id, label: variant.label, expect: variant.verdict.expect, tpp: variant.tpp },
        ],
        writes: [{ data: serialize(variant.request) }],
      });
      if (variant.verdict.expect !== "any") checkRefusal(ctx, result, id, variant.label, variant.verdict);
      return;
    }
    const { d, request, label } = valid(ctx);
    const copy = reencoded(rng, request);
    const how = rng.pick(["sequential", "sequential", "concurrent", "pipelined"] as const);
    const replayLabel = `replay (${copy.label}, ${how}) of ${label}`;
    if (how === "sequential") {
      await ctx.exchange({
        requests: [expected(d, label, "forward")],
        writes: [{ data: serialize(request) }],
      });
      const secondId = requestIdOf(copy.request);
      const second = await ctx.exchange({
        requests: [{ ...expected(d, replayLabel, "any"), requestId: secondId }],
        writes: [{ data: serialize(copy.request) }],
      });
      checkRefusal(ctx, second, secondId, replayLabel, REFUSE("SIGNATURE_INVALID"));
      ctx.check(
        second.backendSaw(d.tag) === 1,
        "ukob-replay",
        replayLabel,
        "the backend saw it once",
        () => `${second.backendSaw(d.tag)} times`,
      );
    } else if (how === "pipelined") {
      await ctx.exchange({
        requests: [
          expected(d, label, "forward"),
          { ...expected(d, replayLabel, "any"), requestId: requestIdOf(copy.request) },
        ],
        writes: [{ data: Buffer.concat([serialize(request), serialize(copy.request)]) }],
      });
    } else {
      const results = await Promise.all(
        [request, copy.request].map((r, i) =>
          ctx.exchange({
            requests: [
              { ...expected(d, i ? replayLabel : `${label}, concurrent`, "any"), requestId: requestIdOf(r) },
            ],
            writes: [{ data: serialize(r) }],
          }),
        ),
      );
      const saw = results[1]!.backendSaw(d.tag);
      ctx.check(saw === 1, "ukob-replay", replayLabel, "exactly one of the two ran", () => `${saw}`);
    }
  },
};

export const UKOB_KINDS = KINDS;
