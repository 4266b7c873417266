/**
 * JAdES requests (Berlin Group openFinance API Framework 2.x: a detached JWS in x-jws-signature
 * over the headers sigD.pars lists, the QSealC in x5c): valid ones by TPP A, B (GET) and the EC
 * TPP (ES256), GET and POST with a body, that must be forwarded; and hostile ones, each refused at
 * its step with its code where the code is certain (src/signature/jws/, src/checks/jades-steps.ts):
 * broken compact forms, protected headers that are not one JSON object or hold a member twice
 * (also spelled with \u escapes), alg games (none, HS256 keyed with the certificate's public key,
 * unknown, not fitting the key), crit, b64, sigT, sigD, x5c and x5t#S256 games, coverage gaps, a
 * body changed after signing, a UK-OB-looking header (judged as UK OB, which the fuzz gateway
 * accepts too, and refused there), and replays re-encoded (whitespace, an extra header, header order): the second send of
 * the same signed request must be refused.
 */

import { createHash, createHmac, createPublicKey, randomUUID } from "node:crypto";
import { computeDigestHeader } from "../../../src/signature/index.js";
import { signJwsInput } from "../../../src/signature/jws/compact.js";
import {
  buildHttpHeadersPayload,
  formatSigT,
  HTTP_HEADERS_MID,
  type JwsAlgorithm,
  MAX_JWS_LENGTH,
  signingInput,
} from "../../../src/signature/jws/index.js";
import type { Rng } from "../prng.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, paymentBody, type RawRequest, serialize, withTag } from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import type { CaseContext, ExchangeResult, Expectation, ExpectedRequest, Family } from "../types.js";
import { isTppMessages } from "../verdicts.js";
import { chunked } from "./common.js";

const PARS = ["(request-target)", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"] as const;
const CRIT = ["b64", "sigT", "sigD"];

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

function draft(
  ctx: CaseContext,
  options: { tpp?: FuzzTpp; pay?: boolean; extra?: Record<string, string>; noDigest?: boolean } = {},
): Draft {
  const { rng, tpps } = ctx;
  const canPay = !options.tpp || options.tpp.roles.includes("PSP_PI");
  const pay = options.pay ?? (canPay && rng.chance(0.4));
  const tpp = options.tpp ?? (pay ? rng.pick([tpps.A, tpps.EC]) : rng.pick([tpps.A, tpps.B, tpps.EC]));
  const tag = ctx.tag();
  const path = pay
    ? PAYMENT_PATH
    : rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`, `${ACCOUNTS_PATH}?withBalance=true`]);
  const body = pay ? paymentBody(`${rng.range(1, 9999)}.${rng.range(10, 99)}`) : undefined;
  const requestId = randomUUID();
  const headers: [string, string][] = [
    ["X-Request-ID", requestId],
    ["TPP-Redirect-URI", "https://tpp.example/cb"],
    ["PSU-ID", "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a"],
    ["PSU-IP-Address", "192.0.2.10"],
    ...(options.noDigest
      ? []
      : ([["Digest", computeDigestHeader(body ?? Buffer.alloc(0))]] as [string, string][])),
    ...(body ? ([["Content-Type", "application/json"]] as [string, string][]) : []),
    ...Object.entries(options.extra ?? {}),
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
    describe: `${method} ${path} by TPP ${tpp.name}`,
  };
}

function lowerHeaders(d: Draft): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of d.headers) out[n.toLowerCase()] = v;
  return out;
}

/** The HttpHeaders payload of `pars` over the draft (OBP-API layout, the gateway's default). */
function payloadOf(d: Draft, pars: readonly string[]): Buffer {
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

function thumbprint(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("base64url");
}

/** The protected header a correct signer writes. */
function headerOf(
  d: Draft,
  alg: JwsAlgorithm,
  pars: readonly string[],
  sigTOffsetMs = 0,
): Record<string, unknown> {
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

const b64u = (text: string | Buffer) => Buffer.from(text).toString("base64url");

/** `<protected>..<signature>` over the protected header as written (JSON text) and the payload. */
function signText(
  json: string,
  d: Draft,
  alg: JwsAlgorithm,
  payload: Buffer,
  key = d.tpp.privateKey,
): string {
  const protectedB64 = b64u(Buffer.from(json, "utf8"));
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
  /** The refusal may come before the X-Request-ID is read (Node's head limit): no echo to look for. */
  readonly mayLackId?: boolean;
}

const REFUSE = (...codes: string[]): Verdict => ({ expect: "refuse", ...(codes.length ? { codes } : {}) });

interface Variant {
  /** The signer: a forwarded request must carry its identity. */
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
  "sigT",
  "sigD",
  "x5c",
  "coverage",
  "tamper",
  "ukob",
  "huge",
] as const;
type Kind = (typeof KINDS)[number];

/** One hostile variant of `kind` over a fresh draft. */
function hostile(ctx: CaseContext, kind: Kind): Variant {
  const { rng, tpps } = ctx;
  // GET by a good TPP unless the variant needs a body; POST by A or EC otherwise.
  const d = draft(ctx, kind === "tamper" ? { pay: true } : {});
  const alg = algOf(d.tpp, rng);
  const pars = [...PARS];
  const header = headerOf(d, alg, pars);
  const payload = payloadOf(d, pars);
  const good = (): string => signText(JSON.stringify(header), d, alg, payload);
  const signedWith = (h: Record<string, unknown>, p = payload, a = alg) =>
    signText(JSON.stringify(h), d, a, p);
  const v = (label: string, jws: string, verdict: Verdict, request = sendable(d, jws)): Variant => ({
    tpp: d.tpp,
    label: `${label}: ${d.describe}`,
    request,
    verdict,
  });
  switch (kind) {
    case "compact": {
      const [h, , s] = good().split(".") as [string, string, string];
      return rng.pick([
        () => v("one dot", `${h}.${s}`, REFUSE("FORMAT_ERROR")),
        () => v("three dots", `${h}..${s}.`, REFUSE("FORMAT_ERROR")),
        () => v("three dots, payload split", `${h}...${s}`, REFUSE("FORMAT_ERROR")),
        () => v("non-empty payload part", `${h}.${b64u(payload)}.${s}`, REFUSE("FORMAT_ERROR")),
        () => v("no dots", `${h}${s}`, REFUSE("FORMAT_ERROR")),
        () => v("header padded with '='", `${h}=..${s}`, REFUSE("FORMAT_ERROR")),
        () => v("signature padded with '='", `${h}..${s}==`, REFUSE("FORMAT_ERROR")),
        () =>
          v(
            "signature in base64 ('+/')",
            `${h}..${s.includes("-") || s.includes("_") ? s.replaceAll("-", "+").replaceAll("_", "/") : `${s.slice(0, -1)}+`}`,
            REFUSE("FORMAT_ERROR"),
          ),
        () =>
          v(
            "header in base64 ('+/' and padding)",
            `${Buffer.from(h, "base64url").toString("base64")}${h.includes("-") || h.includes("_") ? "" : "+"}..${s}`,
            REFUSE("FORMAT_ERROR"),
          ),
        () => v("empty header part", `..${s}`, REFUSE("FORMAT_ERROR")),
        () => v("empty signature part", `${h}..`, REFUSE("FORMAT_ERROR")),
        () => {
          // Two header lines: Node joins them with ", ", which is no compact JWS.
          const request = sendable(d, good());
          const second = rng.pick([good(), "", `${h}..${s}`]);
          request.headers.push(["X-JWS-Signature", second]);
          return v("x-jws-signature twice", "", REFUSE("FORMAT_ERROR"), request);
        },
        () => v("spare bits in the signature's last char", `${h}..${s.slice(0, -1)}${spare(s)}`, REFUSE()),
      ])();
    }
    case "json": {
      const as = (label: string, text: string, codes = ["FORMAT_ERROR"]) =>
        v(label, signText(text, d, alg, payload), REFUSE(...codes));
      const deep = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;
      return rng.pick([
        () => as("protected header not JSON", JSON.stringify(header).slice(0, -1)),
        () => as("protected header a JSON array", JSON.stringify([header])),
        () => as("protected header a JSON string", JSON.stringify(JSON.stringify(header))),
        () => as("protected header null", "null"),
        () => as("protected header with trailing garbage", `${JSON.stringify(header)}x`),
        () => as("protected header with a comment", `/*c*/${JSON.stringify(header)}`),
        () => as("protected header nested 9 deep", `${JSON.stringify(header).slice(0, -1)},"n":${deep(8)}}`),
        () =>
          as(
            "protected header nested 2000 deep",
            `${JSON.stringify(header).slice(0, -1)},"n":${deep(2000)}}`,
          ),
        () =>
          v(
            "protected header not UTF-8",
            signTextBytes(
              Buffer.concat([
                Buffer.from(JSON.stringify(header).slice(0, -1)),
                Buffer.from(',"k":"\xff"}', "latin1"),
              ]),
              d,
              alg,
              payload,
            ),
            REFUSE("FORMAT_ERROR"),
          ),
        // The UTF-8 decoder drops a BOM and the signing input is the bytes as sent: either verdict will do.
        () =>
          v("protected header with a BOM", signText(`\ufeff${JSON.stringify(header)}`, d, alg, payload), {
            expect: "any",
          }),
      ])();
    }
    case "duplicate": {
      const name = rng.pick(["alg", "crit", "b64", "sigD", "sigT", "x5c"] as const);
      const second: Record<string, unknown> = {
        alg: rng.pick(["none", "HS256", alg]),
        crit: rng.pick([["b64"], [...CRIT]]),
        b64: rng.pick([true, false]),
        sigD: { mId: HTTP_HEADERS_MID, pars: ["x-request-id"] },
        sigT: header.sigT,
        x5c: header.x5c,
      };
      const esc = rng.chance(0.5);
      const written = duplicated(header, esc ? escaped(name) : JSON.stringify(name), second[name]);
      if (rng.chance(0.2)) {
        // Inside sigD: pars twice.
        const inner = JSON.stringify(header).replace(
          '"pars":',
          `"pars":["(request-target)"],${esc ? escaped("pars") : '"pars"'}:`,
        );
        return v(
          `sigD.pars twice${esc ? " (\\u escaped)" : ""}`,
          signText(inner, d, alg, payload),
          REFUSE("SIGNATURE_INVALID"),
        );
      }
      return v(
        `'${name}' twice${esc ? " (the second \\u escaped)" : ""}`,
        signText(written, d, alg, payload),
        REFUSE("SIGNATURE_INVALID"),
      );
    }
    case "alg": {
      return rng.pick([
        () => {
          const h = { ...header, alg: rng.pick(["none", "None", "NONE"]) };
          // Without a signature (the compact reader refuses the empty part) or with the key's own.
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
          const a = rng.pick(["RS512", "PS384", "ES384", "EdDSA", "ES256K", "ps256", "RSA-OAEP", ""]);
          return v(`alg '${a}'`, signedWith({ ...header, alg: a }), REFUSE("SIGNATURE_INVALID"));
        },
        () =>
          v(
            "alg not a string",
            signedWith({ ...header, alg: rng.pick([256, null, ["PS256"], { name: "PS256" }]) }),
            REFUSE("FORMAT_ERROR"),
          ),
        () => {
          const { alg: _, ...rest } = header;
          return v("alg absent", signedWith(rest), REFUSE("FORMAT_ERROR"));
        },
        () => {
          // An alg the key cannot have made: the signature is the key's own, the header claims another.
          const other: JwsAlgorithm = alg === "ES256" ? rng.pick(["PS256", "RS256"] as const) : "ES256";
          const h = { ...header, alg: other };
          return v(
            `alg ${other} over a ${alg} signature`,
            signText(JSON.stringify(h), d, alg, payload),
            REFUSE("SIGNATURE_INVALID"),
          );
        },
        () => {
          // RS256 ↔ PS256 on an RSA key: fits the key, the signature does not verify.
          if (alg === "ES256")
            return v("alg ES256 with a P1363 signature cut", `${good().slice(0, -4)}`, REFUSE());
          const other: JwsAlgorithm = alg === "PS256" ? "RS256" : "PS256";
          const h = { ...header, alg: other };
          return v(
            `alg ${other} over a ${alg} signature`,
            signText(JSON.stringify(h), d, alg, payload),
            REFUSE("SIGNATURE_INVALID"),
          );
        },
      ])();
    }
    case "crit": {
      const c = rng.pick<[string, unknown]>([
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
      ]);
      const h: Record<string, unknown> = { ...header, crit: c[1] };
      if (c[1] === undefined) delete h.crit;
      return v(c[0], signedWith(h), REFUSE("SIGNATURE_INVALID"));
    }
    case "b64": {
      const b = rng.pick<[string, unknown]>([
        ["b64 true", true],
        ["b64 absent", undefined],
        ['b64 "false"', "false"],
        ["b64 0", 0],
        ["b64 null", null],
      ]);
      const h: Record<string, unknown> = { ...header, b64: b[1] };
      if (b[1] === undefined) delete h.b64;
      if (b[1] === undefined && rng.chance(0.4)) {
        // b64: false only on a "__proto__" member: JSON.parse keeps it an own member, never the prototype.
        const text = `${JSON.stringify(h).slice(0, -1)},"__proto__":{"b64":false}}`;
        return v("b64 only under __proto__", signText(text, d, alg, payload), REFUSE("SIGNATURE_INVALID"));
      }
      // b64: true would sign the payload base64url-encoded: do so, it must still be refused.
      const p = b[1] === true ? Buffer.from(b64u(payload)) : payload;
      return v(b[0], signedWith(h, p), REFUSE("SIGNATURE_INVALID"));
    }
    case "sigT": {
      const now = Date.now();
      const s = rng.pick<[string, unknown, readonly string[]]>([
        ["sigT absent", undefined, ["SIGNATURE_INVALID"]],
        ["sigT a number", Math.floor(now / 1000), ["FORMAT_ERROR"]],
        ["sigT malformed (space)", formatSigT(now).replace("T", " "), ["FORMAT_ERROR"]],
        ["sigT without Z", formatSigT(now).slice(0, -1), ["FORMAT_ERROR"]],
        ["sigT with an offset", `${formatSigT(now).slice(0, -1)}+00:00`, ["FORMAT_ERROR"]],
        ["sigT 31 Feb", `${new Date(now).getUTCFullYear()}-02-31T12:00:00Z`, ["FORMAT_ERROR"]],
        ["sigT 25:00", `${formatSigT(now).slice(0, 11)}25:00:00Z`, ["FORMAT_ERROR"]],
        ["sigT far future", "9999-12-31T23:59:59Z", ["TIMESTAMP_INVALID"]],
        ["sigT year 1970", "1970-01-01T00:00:00Z", ["TIMESTAMP_INVALID"]],
        ["sigT 80 s ahead", formatSigT(now + 80_000), ["TIMESTAMP_INVALID"]],
        ["sigT 80 s behind", formatSigT(now - 80_000), ["TIMESTAMP_INVALID"]],
        ["sigT an hour behind", formatSigT(now - 3_600_000), ["TIMESTAMP_INVALID"]],
        ["sigT empty", "", ["FORMAT_ERROR"]],
      ]);
      const h: Record<string, unknown> = { ...header, sigT: s[1] };
      if (s[1] === undefined) delete h.sigT;
      return v(s[0], signedWith(h), REFUSE(...s[2]));
    }
    case "sigD": {
      const s = rng.pick<[string, unknown, readonly string[], Buffer?]>([
        ["sigD wrong mId", { mId: "http://uri.etsi.org/19182/ObjectIdByURI", pars }, ["SIGNATURE_INVALID"]],
        ["sigD mId absent", { pars }, ["SIGNATURE_INVALID"]],
        ["sigD pars not an array", { mId: HTTP_HEADERS_MID, pars: pars.join(" ") }, ["FORMAT_ERROR"]],
        ["sigD pars empty", { mId: HTTP_HEADERS_MID, pars: [] }, ["FORMAT_ERROR"]],
        [
          "sigD pars 33 names",
          { mId: HTTP_HEADERS_MID, pars: [...pars, ...Array.from({ length: 28 }, (_, i) => `x-h${i}`)] },
          ["FORMAT_ERROR"],
        ],
        [
          "sigD pars upper-case names",
          { mId: HTTP_HEADERS_MID, pars: pars.map((p) => (p.startsWith("(") ? p : p.toUpperCase())) },
          ["FORMAT_ERROR"],
        ],
        [
          "sigD pars with a duplicate",
          { mId: HTTP_HEADERS_MID, pars: [...pars, "psu-id"] },
          ["FORMAT_ERROR"],
        ],
        ["sigD pars with a number", { mId: HTTP_HEADERS_MID, pars: [...pars, 7] }, ["FORMAT_ERROR"]],
        [
          "sigD pars with a space in a name",
          { mId: HTTP_HEADERS_MID, pars: [...pars, "psu id"] },
          ["FORMAT_ERROR"],
        ],
        [
          "sigD pars listing (status-line)",
          { mId: HTTP_HEADERS_MID, pars: [...pars, "(status-line)"] },
          ["SIGNATURE_INVALID"],
        ],
        [
          "sigD pars listing an absent header",
          { mId: HTTP_HEADERS_MID, pars: [...pars, "psu-corporate-id"] },
          ["SIGNATURE_INVALID"],
        ],
        ["sigD with an extra member", { mId: HTTP_HEADERS_MID, pars, hashM: "S256" }, ["FORMAT_ERROR"]],
        [
          "sigD with a __proto__ member",
          JSON.parse(`{"mId":"${HTTP_HEADERS_MID}","pars":${JSON.stringify(pars)},"__proto__":{}}`),
          ["FORMAT_ERROR"],
        ],
        ["sigD an array", [HTTP_HEADERS_MID, pars], ["FORMAT_ERROR"]],
        ["sigD a string", HTTP_HEADERS_MID, ["FORMAT_ERROR"]],
        ["sigD absent", undefined, ["SIGNATURE_INVALID"]],
      ]);
      const h: Record<string, unknown> = { ...header, sigD: s[1] };
      if (s[1] === undefined) delete h.sigD;
      return v(s[0], signedWith(h), REFUSE(...s[2]));
    }
    case "x5c": {
      const mine = Buffer.from(d.tpp.der).toString("base64");
      const x = rng.pick<() => Variant>([
        () => {
          const { x5c: _, "x5t#S256": __, ...rest } = header;
          return v("x5c absent", signedWith(rest), REFUSE("CERTIFICATE_MISSING"));
        },
        () => v("x5c empty", signedWith({ ...header, x5c: [] }), REFUSE("CERTIFICATE_INVALID")),
        () => v("x5c a string", signedWith({ ...header, x5c: mine }), REFUSE("CERTIFICATE_INVALID")),
        () =>
          v(
            "x5c five certificates",
            signedWith({ ...header, x5c: [mine, ...Array.from({ length: 4 }, () => caBase64(ctx))] }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () => {
          const url = Buffer.from(d.tpp.der).toString("base64url");
          const spelled = url === mine ? `${mine} ` : url;
          return v(
            "x5c[0] in base64url",
            signedWith({ ...header, x5c: [spelled] }),
            REFUSE("CERTIFICATE_INVALID"),
          );
        },
        () =>
          v(
            "x5c[0] in PEM lines",
            signedWith({ ...header, x5c: [mine.replace(/.{64}/g, "$&\n")] }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () =>
          v(
            "x5c[0] a PEM block",
            signedWith({
              ...header,
              x5c: [`-----BEGIN CERTIFICATE-----\n${mine}\n-----END CERTIFICATE-----`],
            }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () =>
          v(
            "x5c[0] a huge entry",
            signedWith({ ...header, x5c: ["A".repeat(8 * 1024 + 4)], "x5t#S256": undefined }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () =>
          v(
            "x5c[0] not a certificate",
            signedWith({ ...header, x5c: ["AAAA"], "x5t#S256": undefined }),
            REFUSE(),
          ),
        () => {
          // Another TPP's certificate (with its own thumbprint) carrying the victim's signature.
          const other = d.tpp.name === "B" ? tpps.A : tpps.B;
          const h = {
            ...header,
            x5c: [Buffer.from(other.der).toString("base64")],
            "x5t#S256": thumbprint(other.der),
          };
          return v(
            `TPP ${other.name}'s certificate with TPP ${d.tpp.name}'s signature`,
            signedWith(h),
            REFUSE("SIGNATURE_INVALID"),
          );
        },
        () => {
          // Certificates that sign correctly but are not to be trusted: refused by the certificate step.
          const bad = rng.pick([tpps.untrusted, tpps.expired, tpps.revoked, tpps.unregistered]);
          const e = draft(ctx, { tpp: bad, pay: false });
          const a = algOf(bad, rng);
          const h = headerOf(e, a, PARS);
          return {
            tpp: bad,
            label: `${bad.name} certificate, signed correctly: ${e.describe}`,
            request: sendable(e, signText(JSON.stringify(h), e, a, payloadOf(e, PARS))),
            verdict: REFUSE(),
          };
        },
        () =>
          v(
            "x5t#S256 of another certificate",
            signedWith({
              ...header,
              "x5t#S256": thumbprint(tpps.B.der === d.tpp.der ? tpps.A.der : tpps.B.der),
            }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () =>
          v(
            "x5t#S256 malformed",
            signedWith({ ...header, "x5t#S256": rng.pick(["", "abc", `${thumbprint(d.tpp.der)}=`, 42]) }),
            REFUSE("CERTIFICATE_INVALID"),
          ),
        () =>
          v(
            "x5t (SHA-1) only, x5c absent",
            signedWith({
              ...header,
              x5c: undefined,
              "x5t#S256": undefined,
              x5t: createHash("sha1").update(d.tpp.der).digest("base64url"),
            }),
            REFUSE("CERTIFICATE_MISSING"),
          ),
      ]);
      return x();
    }
    case "coverage": {
      const c = rng.pick<[string, readonly string[], Record<string, string>?, (readonly string[])?]>([
        ["pars without (request-target)", PARS.filter((p) => p !== "(request-target)")],
        ["pars without x-request-id", PARS.filter((p) => p !== "x-request-id")],
        ["pars without digest", PARS.filter((p) => p !== "digest")],
        ["pars without psu-id", PARS.filter((p) => p !== "psu-id")],
        ["pars without tpp-redirect-uri", PARS.filter((p) => p !== "tpp-redirect-uri")],
        ["PSU-Corporate-ID sent but not listed", PARS, { "PSU-Corporate-ID": "CORP-1" }],
        ["a listed header changed after signing", PARS, undefined, ["psu-id"]],
        ["(request-target) changed after signing", PARS, undefined, ["(request-target)"]],
        // required-headers refuses a body without Digest before any JAdES step.
        [
          "a body without Digest, pars without digest",
          PARS.filter((p) => p !== "digest"),
          undefined,
          ["no-digest"],
        ],
      ]);
      const noDigest = c[3]?.includes("no-digest") === true;
      const e = noDigest ? draft(ctx, { pay: true, noDigest }) : c[2] ? draft(ctx, { extra: c[2] }) : d;
      const a = algOf(e.tpp, rng);
      const h = headerOf(e, a, c[1]);
      const jws = signText(JSON.stringify(h), e, a, payloadOf(e, c[1]));
      const request = sendable(e, jws);
      if (c[3]?.includes("psu-id"))
        request.headers = request.headers.map(([n, val]) => (n === "PSU-ID" ? [n, `${val}0`] : [n, val]));
      if (c[3]?.includes("(request-target)")) request.target = `${request.target}&x=1`;
      return {
        tpp: e.tpp,
        label: `${c[0]}: ${e.describe}`,
        request,
        verdict: REFUSE(noDigest ? "FORMAT_ERROR" : "SIGNATURE_INVALID"),
      };
    }
    case "tamper": {
      // The body changed after signing: Digest no longer holds. It may reach the backend in part.
      const request = sendable(d, good());
      const body = Buffer.from(d.body!);
      const at = body.indexOf('"amount":"') + 10;
      body[at] = body[at] === 0x39 ? 0x31 : body[at]! + 1;
      return {
        tpp: d.tpp,
        label: `body changed after signing: ${d.describe}`,
        request: { ...request, body },
        verdict: { expect: "no-execute", codes: ["SIGNATURE_INVALID"] },
      };
    }
    case "ukob": {
      // A UK OB header (crit of openbanking.org.uk names) in the 3.1.3 style (b64 false): the fuzz
      // gateway accepts uk-ob too, so it is judged as UK OB and refused there (b64 is not accepted
      // by default; ES256, for the EC TPP, neither).
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
    }
    case "huge": {
      // An extra member sizing the whole value: within Node's 16 KiB head (signed, valid, so it is
      // forwarded), past it (refused by the listener), past MAX_JWS_LENGTH.
      const size = rng.pick([
        6_000,
        12_000,
        15_000,
        20_000,
        MAX_JWS_LENGTH - 100,
        MAX_JWS_LENGTH + 10,
        3 * MAX_JWS_LENGTH,
      ]);
      const base = good().length;
      const pad = Math.max(0, Math.floor(((size - base) * 3) / 4) - 8);
      const h = { ...header, "x-pad": "p".repeat(pad) };
      const jws = signedWith(h);
      const request = sendable(d, jws);
      const head = serialize({ ...request, body: Buffer.alloc(0) }).length;
      if (head < 15_500)
        return {
          tpp: d.tpp,
          label: `x-jws-signature of ${jws.length} chars (head ${head}): ${d.describe}`,
          request,
          verdict: { expect: "forward" },
        };
      return {
        tpp: d.tpp,
        label: `x-jws-signature of ${jws.length} chars (head ${head}): ${d.describe}`,
        request,
        verdict: { expect: "refuse", mayLackId: true },
      };
    }
  }
}

function signTextBytes(bytes: Buffer, d: Draft, alg: JwsAlgorithm, payload: Buffer): string {
  const protectedB64 = b64u(bytes);
  return `${protectedB64}..${signJwsInput(alg, d.tpp.privateKey, signingInput(protectedB64, payload)).toString("base64url")}`;
}

/** The last char of a base64url signature with its unused bits set (not canonical). */
function spare(s: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = alphabet.indexOf(s.at(-1)!);
  // 256-byte RSA signatures end with 2 spare bits; 64-byte ES256 ones with 4: bit 0 is spare either way.
  return alphabet[last ^ 1]!;
}

function caBase64(ctx: CaseContext): string {
  return ctx.pki.root.pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
}

/** A valid request, signed in JAdES with `pars` in a random order, sigT off by up to ±45 s. */
function valid(
  ctx: CaseContext,
  options: { tpp?: FuzzTpp; pay?: boolean } = {},
): { d: Draft; request: RawRequest; label: string } {
  const { rng } = ctx;
  const d = draft(ctx, options);
  const alg = algOf(d.tpp, rng);
  const pars = rng.chance(0.5) ? [...PARS] : rng.shuffle([...PARS]);
  const offset = rng.pick([0, 0, 0, -45_000, 45_000, -30_000, 20_000]);
  const h = headerOf(d, alg, pars, offset);
  if (rng.chance(0.15))
    h.sigT = `${String(h.sigT).slice(0, -1)}.${rng.int(1000).toString().padStart(3, "0")}Z`;
  if (rng.chance(0.2)) delete h["x5t#S256"];
  if (rng.chance(0.2)) h.kid = `fuzz-${rng.int(100)}`;
  const jws = signText(JSON.stringify(h), d, alg, payloadOf(d, pars));
  const request = sendable(d, jws);
  const isChunked = d.body !== undefined && rng.chance(0.2);
  if (isChunked) {
    request.headers.push(["Transfer-Encoding", "chunked"]);
    request.body = chunked(d.body!, rng.range(1, 4));
  }
  return {
    d,
    request,
    label: `valid ${alg}${offset ? `, sigT ${offset / 1000} s` : ""}${isChunked ? ", chunked" : ""}`,
  };
}

function expected(d: Draft, label: string, expect: Expectation): ExpectedRequest {
  return { tag: d.tag, requestId: d.requestId, label: `${label}: ${d.describe}`, expect, tpp: d.tpp };
}

const P256_N = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

/** An ES256 (r||s) signature with s → n−s: it verifies just the same. */
function flippedS(jws: string): string {
  const at = jws.lastIndexOf(".");
  const sig = Buffer.from(jws.slice(at + 1), "base64url");
  const s = BigInt(`0x${sig.subarray(32).toString("hex")}`);
  const flipped = Buffer.from((P256_N - s).toString(16).padStart(64, "0"), "hex");
  return `${jws.slice(0, at + 1)}${Buffer.concat([sig.subarray(0, 32), flipped]).toString("base64url")}`;
}

/**
 * Re-encodings of a signed request that change nothing signed (or, for the absolute-form target,
 * nothing the gateway reads once it has refused it): `anyCode` when the refusal may come before
 * the replay step.
 */
function reencoded(rng: Rng, request: RawRequest): { label: string; request: RawRequest; anyCode?: boolean } {
  const r = { ...request, headers: [...request.headers] };
  const jws = r.headers.find(([n]) => n === "x-jws-signature")![1];
  const ec = JSON.parse(Buffer.from(jws.slice(0, jws.indexOf(".")), "base64url").toString()).alg === "ES256";
  if (ec && rng.chance(0.3))
    return {
      label: "ES256 signature with s → n−s",
      request: {
        ...r,
        headers: r.headers.map(
          ([n, val]) => [n, n === "x-jws-signature" ? flippedS(val) : val] as [string, string],
        ),
      },
    };
  if (rng.chance(0.1))
    return {
      label: "absolute-form target",
      request: { ...r, target: `https://localhost${r.target}` },
      anyCode: true,
    };
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
    if (verdict.mayLackId) return;
    ctx.check(false, "jades-refusal", label, "a refusal echoing its X-Request-ID", () => "none");
    return;
  }
  const tpp = isTppMessages(r);
  ctx.check(
    r.status >= 400 &&
      r.status < 500 &&
      tpp !== undefined &&
      (verdict.codes === undefined || verdict.codes.includes(tpp.code)),
    "jades-refusal",
    label,
    `a 4xx Berlin Group refusal${verdict.codes ? ` with ${verdict.codes.join(" or ")}` : ""}`,
    () =>
      `${r.status} ${tpp ? `${tpp.code}: ${tpp.text.slice(0, 200)}` : r.body.toString("latin1").slice(0, 200)}`,
  );
}

export const jades: Family = {
  name: "jades",
  weight: 2,
  async run(ctx) {
    const { rng } = ctx;
    const mode = rng.weighted<"valid" | "hostile" | "replay" | "mixed">([
      [3, "valid"],
      [10, "hostile"],
      [2, "replay"],
      [1, "mixed"],
    ]);
    if (mode === "valid") {
      const { d, request, label } = valid(ctx);
      const result = await ctx.exchange({
        requests: [expected(d, label, "forward")],
        writes: [{ data: serialize(request) }],
      });
      ctx.check(
        result.backendAnswer(d.tag) !== undefined,
        "jades-forward",
        label,
        "answered by the backend",
        () => `${result.refusal(d.requestId)?.body.toString("latin1").slice(0, 200) ?? "no answer"}`,
      );
      return;
    }
    if (mode === "hostile") {
      const kind = rng.weighted<Kind>([
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
      ]);
      const variant = hostile(ctx, kind);
      const d = requestIdOf(variant.request);
      const tag = /fz=([^&#]+)/.exec(variant.request.target)![1]!;
      const result = await ctx.exchange({
        requests: [
          { tag, requestId: d, label: variant.label, expect: variant.verdict.expect, tpp: variant.tpp },
        ],
        writes: [{ data: serialize(variant.request) }],
      });
      if (variant.verdict.expect === "forward") {
        ctx.check(
          result.backendAnswer(tag) !== undefined,
          "jades-forward",
          variant.label,
          "answered by the backend",
          () => `${result.refusal(d)?.body.toString("latin1").slice(0, 200) ?? "no answer"}`,
        );
      } else if (variant.verdict.expect !== "any") {
        checkRefusal(ctx, result, d, variant.label, variant.verdict);
      }
      return;
    }
    if (mode === "replay") {
      const { d, request, label } = valid(ctx);
      const copy = reencoded(rng, request);
      const how = rng.pick(["sequential", "sequential", "concurrent", "pipelined"] as const);
      const replayLabel = `replay (${copy.label}, ${how}) of ${label}`;
      if (how === "sequential") {
        await ctx.exchange({
          requests: [expected(d, label, "forward")],
          writes: [{ data: serialize(request) }],
        });
        const second = await ctx.exchange({
          requests: [expected(d, replayLabel, "any")],
          writes: [{ data: serialize(copy.request) }],
        });
        checkRefusal(
          ctx,
          second,
          d.requestId,
          replayLabel,
          copy.anyCode ? REFUSE() : REFUSE("SIGNATURE_INVALID"),
        );
        ctx.check(
          second.backendSaw(d.tag) === 1,
          "jades-replay",
          replayLabel,
          "the backend saw it once",
          () => `${second.backendSaw(d.tag)} times`,
        );
      } else if (how === "pipelined") {
        await ctx.exchange({
          requests: [expected(d, label, "forward"), expected(d, replayLabel, "any")],
          writes: [{ data: Buffer.concat([serialize(request), serialize(copy.request)]) }],
        });
      } else {
        const results = await Promise.all(
          [request, copy.request].map((r, i) =>
            ctx.exchange({
              requests: [expected(d, i ? replayLabel : `${label}, concurrent`, "any")],
              writes: [{ data: serialize(r) }],
            }),
          ),
        );
        const saw = results[1]!.backendSaw(d.tag);
        ctx.check(saw === 1, "jades-replay", replayLabel, "exactly one of the two ran", () => `${saw}`);
      }
      return;
    }
    // mixed: a valid JAdES request, a hostile one and a valid one again on one keep-alive connection.
    const first = valid(ctx);
    const bad = hostile(ctx, rng.pick(["crit", "sigD", "alg", "sigT", "coverage", "duplicate"] as const));
    const last = valid(ctx);
    const badId = requestIdOf(bad.request);
    const badTag = /fz=([^&#]+)/.exec(bad.request.target)![1]!;
    const result = await ctx.exchange({
      requests: [
        expected(first.d, first.label, "forward"),
        { tag: badTag, requestId: badId, label: bad.label, expect: bad.verdict.expect, tpp: bad.tpp },
        expected(last.d, last.label, "forward"),
      ],
      writes: [
        { data: serialize(first.request) },
        { data: serialize(bad.request), delayMs: 30 },
        { data: serialize(last.request), delayMs: 30 },
      ],
    });
    checkRefusal(ctx, result, badId, bad.label, bad.verdict);
  },
};

function requestIdOf(request: RawRequest): string {
  return request.headers.find(([n]) => n.toLowerCase() === "x-request-id")![1];
}
