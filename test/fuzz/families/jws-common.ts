/**
 * The one JWS fuzz builder: a detached compact JWS in x-jws-signature (JAdES and UK OB, jades.ts
 * and ukob.ts). A dialect is a table of what differs (JwsDialect): the request it drafts, the
 * protected header its correct signer writes, the payload (JAdES: the header lines sigD.pars lists,
 * Digest binding the body; UK OB: the body), its default alg, the parameters of the shared games
 * and its own kinds. Everything else is here, written once: the shared hostile games (broken
 * compact forms, protected headers that are not one JSON object or hold a member twice, also
 * spelled with \u escapes, alg games: none, HS256 keyed with the certificate's public key, unknown,
 * not a string; crit games, a crit name whose member is absent, b64, x5c and x5t#S256 games, no
 * certificate at all (kid only), a body changed after signing), the valid, hostile, replay and
 * mixed modes, the re-encodings a replay is sent with, and the refusal check.
 */

import { createHash, createHmac, createPublicKey, randomUUID } from "node:crypto";
import { signJwsInput } from "../../../src/signature/jws/compact.js";
import { type JwsAlgorithm, signingInput } from "../../../src/signature/jws/index.js";
import type { Rng } from "../prng.js";
import type { ParsedResponse } from "../raw-client.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, type RawRequest, serialize, withTag } from "../request.js";
import type { FuzzTpp, TppSet } from "../tpps.js";
import type { CaseContext, ExchangeResult, Expectation, ExpectedRequest, Family } from "../types.js";
import { isTppMessages } from "../verdicts.js";
import { chunked } from "./common.js";

/** A request to sign: what is sent, before x-jws-signature. */
export interface Draft {
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

export interface DraftOptions {
  readonly tpp?: FuzzTpp;
  readonly pay?: boolean;
  /** Headers sent after the dialect's own (JAdES: not listed in sigD.pars). */
  readonly extra?: Record<string, string>;
  /** JAdES: a body without Digest. */
  readonly noDigest?: boolean;
}

/** What a hostile variant must come to: its refusal's code where certain (undefined: any 4xx refusal). */
export interface Verdict {
  readonly expect: Expectation;
  readonly codes?: readonly string[];
  /** The refusal may come before the X-Request-ID is read (Node's head limit): no echo to look for. */
  readonly mayLackId?: boolean;
}

export const REFUSE = (...codes: string[]): Verdict => ({
  expect: "refuse",
  ...(codes.length ? { codes } : {}),
});

export interface Variant {
  /** The signer: a forwarded request must carry its identity. */
  readonly tpp: FuzzTpp;
  readonly label: string;
  readonly request: RawRequest;
  readonly verdict: Verdict;
}

/** Members set on the correct header (an `undefined` value drops the member). */
export type Members = Record<string, unknown>;

/** One hostile game: members set on the correct header and signed with the key, or a variant of its own. */
export type Game =
  | {
      readonly label: string;
      readonly set: Members;
      readonly verdict: Verdict;
      /** Signed over this payload instead of the correct one. */
      readonly payload?: Buffer;
    }
  | (() => Variant);

/** A row of a game table: label, members set, verdict. */
export const game = (label: string, set: Members, verdict: Verdict, payload?: Buffer): Game => ({
  label,
  set,
  verdict,
  ...(payload ? { payload } : {}),
});

/** What every game of one case is built from: a fresh draft, signed correctly by its dialect. */
export interface Base {
  readonly ctx: CaseContext;
  readonly rng: Rng;
  readonly tpps: TppSet;
  readonly d: Draft;
  readonly alg: JwsAlgorithm;
  /** The protected header the dialect's correct signer writes. */
  readonly header: Members;
  /** The payload the dialect's correct signer signs. */
  readonly payload: Buffer;
  /** The correct signature. */
  good(): string;
  /** `h` written as JSON, signed with the key over `p`, claiming nothing of `a` but what `h` says. */
  signedWith(h: Members, p?: Buffer, a?: JwsAlgorithm): string;
  v(label: string, jws: string, verdict: Verdict, request?: RawRequest): Variant;
  /** Another request drafted by the dialect. */
  draft(options: DraftOptions): Draft;
  /** Another request, drafted and signed correctly by the dialect (alg its default for the TPP unless given). */
  signed(options: DraftOptions, alg?: JwsAlgorithm, header?: Members): { d: Draft; request: RawRequest };
}

export interface Valid {
  readonly d: Draft;
  readonly request: RawRequest;
  readonly label: string;
}

/** The shared hostile kinds; a dialect weighs them and adds its own. */
export type SharedKind = "compact" | "json" | "duplicate" | "alg" | "crit" | "b64" | "x5c" | "tamper";

/** What differs between two JWS dialects: everything the builder does not write itself. */
export interface JwsDialect<OwnKind extends string> {
  /** The family's name. */
  readonly name: string;
  /** The prefix of its checks' names (`<prefix>-refusal`, `-forward`, `-replay`). */
  readonly checks: string;
  readonly weight: number;
  /** The crit a correct signer writes. */
  readonly crit: readonly string[];
  /** Drafting: the chance of a payment, who may sign one (and anything else), a body, the dialect's headers. */
  readonly payChance: number;
  signers(tpps: TppSet, pay: boolean): readonly FuzzTpp[];
  body(rng: Rng): Buffer;
  /** The headers after X-Request-ID and TPP-Redirect-URI. */
  headers(body: Buffer | undefined, options: DraftOptions): [string, string][];
  /** Whether `describe` names the body's size. */
  readonly describeSize: boolean;
  /** The alg a correct signer picks for `tpp`. */
  algOf(tpp: FuzzTpp, rng: Rng): JwsAlgorithm;
  headerOf(d: Draft, alg: JwsAlgorithm): Members;
  payloadOf(d: Draft): Buffer;
  /** A correct signature of a valid request (its own spread of what a signer may write), and its label. */
  signValid(ctx: CaseContext, d: Draft): { jws: string; label: string };
  /** The chance a valid request with a body is sent chunked, and in at most how many chunks. */
  readonly validChunked: readonly [chance: number, maxChunks: number];
  /** The shared games' parameters. */
  readonly games: {
    /** The second value of each member `duplicate` writes twice. */
    duplicates(b: Base): Members;
    /** Its games written twice inside a member (JAdES: sigD.pars). */
    duplicatesInside?(b: Base): readonly Game[];
    /** Its own alg games (what the key cannot have made, what is not accepted by default). */
    alg(b: Base): readonly Game[];
    /** crit values a correct signer never writes. */
    crit(b: Base): readonly (readonly [label: string, crit: unknown])[];
    b64(b: Base): readonly Game[];
    /** A body changed after signing must come to this. */
    readonly tampered: Verdict;
  };
  /** The dialect's own kinds: the games of each. */
  readonly own: Record<OwnKind, (b: Base) => readonly Game[]>;
  readonly weights: readonly (readonly [number, SharedKind | OwnKind])[];
  readonly modes: readonly (readonly [number, "valid" | "hostile" | "replay" | "mixed"])[];
  /** The kinds the mixed mode sends between two valid requests. */
  readonly mixedKinds?: readonly (SharedKind | OwnKind)[];
  /** A check of a forwarded valid request's answer. */
  answered?(ctx: CaseContext, label: string, answer: ParsedResponse): void;
}

export const b64u = (text: string | Buffer) => Buffer.from(text).toString("base64url");

export function thumbprint(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("base64url");
}

export function caBase64(ctx: CaseContext): string {
  return ctx.pki.root.pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
}

/** `<protected>..<signature>` over the protected header as written (JSON text or bytes) and the payload. */
export function signText(
  json: string | Buffer,
  d: Draft,
  alg: JwsAlgorithm,
  payload: Buffer,
  key = d.tpp.privateKey,
): string {
  const protectedB64 = b64u(typeof json === "string" ? Buffer.from(json, "utf8") : json);
  return `${protectedB64}..${signJwsInput(alg, key, signingInput(protectedB64, payload)).toString("base64url")}`;
}

export function sendable(d: Draft, jws: string): RawRequest {
  return {
    method: d.method,
    target: d.target,
    headers: [...d.headers, ["x-jws-signature", jws]],
    ...(d.body ? { body: d.body } : {}),
  };
}

/** A member written again at the end of the JSON text, its name as `nameJson` (quoted, maybe escaped). */
export function duplicated(header: Members, nameJson: string, second: unknown): string {
  return `${JSON.stringify(header).slice(0, -1)},${nameJson}:${JSON.stringify(second)}}`;
}

/** `\u0061lg`-style spelling of a name: its first char escaped. */
export function escaped(name: string): string {
  return `"\\u${name.charCodeAt(0).toString(16).padStart(4, "0")}${name.slice(1)}"`;
}

export function requestIdOf(request: RawRequest): string {
  // As the gateway reads it: Node trims the value's surrounding whitespace.
  return request.headers.find(([n]) => n.toLowerCase() === "x-request-id")![1].trim();
}

/** The crit of a compact JWS's protected header, when it is an array. */
export function critOf(jws: string): unknown[] | undefined {
  try {
    const header = JSON.parse(Buffer.from(jws.slice(0, jws.indexOf(".")), "base64url").toString("utf8")) as {
      crit?: unknown;
    };
    return Array.isArray(header.crit) ? header.crit : undefined;
  } catch {
    return undefined;
  }
}

function draftOf(dialect: JwsDialect<string>, ctx: CaseContext, options: DraftOptions = {}): Draft {
  const { rng, tpps } = ctx;
  const canPay = !options.tpp || options.tpp.roles.includes("PSP_PI");
  const pay = options.pay ?? (canPay && rng.chance(dialect.payChance));
  const tpp = options.tpp ?? rng.pick(dialect.signers(tpps, pay));
  const tag = ctx.tag();
  const path = pay
    ? PAYMENT_PATH
    : rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`, `${ACCOUNTS_PATH}?withBalance=true`]);
  const body = pay ? dialect.body(rng) : undefined;
  const requestId = randomUUID();
  const headers: [string, string][] = [
    ["X-Request-ID", requestId],
    ["TPP-Redirect-URI", "https://tpp.example/cb"],
    ...dialect.headers(body, options),
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
    describe: `${method} ${path}${body && dialect.describeSize ? ` (${body.length} bytes)` : ""} by TPP ${tpp.name}`,
  };
}

function baseOf(dialect: JwsDialect<string>, ctx: CaseContext, options: DraftOptions): Base {
  const { rng, tpps } = ctx;
  const d = draftOf(dialect, ctx, options);
  const alg = dialect.algOf(d.tpp, rng);
  const header = dialect.headerOf(d, alg);
  const payload = dialect.payloadOf(d);
  return {
    ctx,
    rng,
    tpps,
    d,
    alg,
    header,
    payload,
    good: () => signText(JSON.stringify(header), d, alg, payload),
    signedWith: (h, p = payload, a = alg) => signText(JSON.stringify(h), d, a, p),
    v: (label, jws, verdict, request = sendable(d, jws)) => ({
      tpp: d.tpp,
      label: `${label}: ${d.describe}`,
      request,
      verdict,
    }),
    draft: (o) => draftOf(dialect, ctx, o),
    signed(o, a, h) {
      const e = draftOf(dialect, ctx, o);
      const alg = a ?? dialect.algOf(e.tpp, rng);
      const text = JSON.stringify(h ?? dialect.headerOf(e, alg));
      return { d: e, request: sendable(e, signText(text, e, alg, dialect.payloadOf(e))) };
    },
  };
}

/** The last char of a base64url signature with its unused bits set (not canonical). */
function spare(s: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = alphabet.indexOf(s.at(-1)!);
  // 256-byte RSA signatures end with 2 spare bits; 64-byte ES256 ones with 4: bit 0 is spare either way.
  return alphabet[last ^ 1]!;
}

function compactGames(b: Base): readonly Game[] {
  const { rng, d, v, good } = b;
  const [h, , s] = good().split(".") as [string, string, string];
  const F = REFUSE("FORMAT_ERROR");
  return [
    () => v("one dot", `${h}.${s}`, F),
    () => v("three dots", `${h}..${s}.`, F),
    () => v("three dots, payload split", `${h}...${s}`, F),
    // At most its first KiB (a whole 16 KiB body would pass Node's head limit, refused before the
    // X-Request-ID is read); never empty (an empty payload part is the detached form, UK OB's for a GET).
    () =>
      v(
        "non-empty payload part",
        `${h}.${b64u(b.payload.length ? b.payload.subarray(0, 1024) : "x")}.${s}`,
        F,
      ),
    () => v("no dots", `${h}${s}`, F),
    () => v("header padded with '='", `${h}=..${s}`, F),
    () => v("signature padded with '='", `${h}..${s}==`, F),
    () =>
      v(
        "signature in base64 ('+/')",
        `${h}..${s.includes("-") || s.includes("_") ? s.replaceAll("-", "+").replaceAll("_", "/") : `${s.slice(0, -1)}+`}`,
        F,
      ),
    () =>
      v(
        "header in base64 ('+/' and padding)",
        `${Buffer.from(h, "base64url").toString("base64")}${h.includes("-") || h.includes("_") ? "" : "+"}..${s}`,
        F,
      ),
    () => v("empty header part", `..${s}`, F),
    () => v("empty signature part", `${h}..`, F),
    // A signature of the wrong length is judged like any that does not verify (UK OB: at the body's
    // end, nothing of the request reaching the backend); its last char's unused bits set refuse it in
    // the head (not canonical base64url).
    () => v("signature cut short", `${h}..${s.slice(0, -4)}`, REFUSE("SIGNATURE_INVALID", "FORMAT_ERROR")),
    () => {
      // Two header lines: Node joins them with ", ", which is no compact JWS.
      const request = sendable(d, good());
      request.headers.push(["X-JWS-Signature", rng.pick([good(), "", `${h}..${s}`])]);
      return v("x-jws-signature twice", "", F, request);
    },
    () => v("spare bits in the signature's last char", `${h}..${s.slice(0, -1)}${spare(s)}`, REFUSE()),
  ];
}

function jsonGames(b: Base): readonly Game[] {
  const { d, alg, payload, header, v } = b;
  const text = JSON.stringify(header);
  const as = (label: string, written: string | Buffer) =>
    v(label, signText(written, d, alg, payload), REFUSE("FORMAT_ERROR"));
  const deep = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;
  return [
    () => as("protected header not JSON", text.slice(0, -1)),
    () => as("protected header a JSON array", JSON.stringify([header])),
    () => as("protected header a JSON string", JSON.stringify(text)),
    () => as("protected header null", "null"),
    () => as("protected header with trailing garbage", `${text}x`),
    () => as("protected header with a comment", `/*c*/${text}`),
    () => as("protected header nested 9 deep", `${text.slice(0, -1)},"n":${deep(8)}}`),
    () => as("protected header nested 2000 deep", `${text.slice(0, -1)},"n":${deep(2000)}}`),
    () =>
      as(
        "protected header not UTF-8",
        Buffer.concat([Buffer.from(text.slice(0, -1)), Buffer.from(',"k":"\xff"}', "latin1")]),
      ),
    // The UTF-8 decoder drops a BOM and the signing input is the bytes as sent: either verdict will do.
    () => v("protected header with a BOM", signText(`\ufeff${text}`, d, alg, payload), { expect: "any" }),
  ];
}

function duplicateGames(b: Base, seconds: Members, inside: readonly Game[]): readonly Game[] {
  const { rng, d, alg, payload, header, v } = b;
  return [
    ...Object.entries(seconds).map(([name, second]) => () => {
      const esc = rng.chance(0.5);
      return v(
        `'${name}' twice${esc ? " (the second \\u escaped)" : ""}`,
        signText(duplicated(header, esc ? escaped(name) : JSON.stringify(name), second), d, alg, payload),
        REFUSE("SIGNATURE_INVALID"),
      );
    }),
    ...inside,
  ];
}

function algGames(b: Base, own: readonly Game[]): readonly Game[] {
  const { rng, d, payload, header, v } = b;
  return [
    () => {
      const h = { ...header, alg: rng.pick(["none", "None", "NONE"]) };
      // Without a signature (the compact reader refuses the empty part) or with the key's own.
      return rng.chance(0.5)
        ? v(`alg ${h.alg}, no signature`, `${b64u(JSON.stringify(h))}..`, REFUSE("FORMAT_ERROR"))
        : v(`alg ${h.alg}, the key's signature`, b.signedWith(h), REFUSE("SIGNATURE_INVALID"));
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
      return v(`alg '${a}'`, b.signedWith({ ...header, alg: a }), REFUSE("SIGNATURE_INVALID"));
    },
    () =>
      v(
        "alg not a string",
        b.signedWith({ ...header, alg: rng.pick([256, null, ["PS256"], { name: "PS256" }]) }),
        REFUSE("FORMAT_ERROR"),
      ),
    game("alg absent", { alg: undefined }, REFUSE("FORMAT_ERROR")),
    ...own,
  ];
}

function critGames(crit: readonly string[], table: readonly (readonly [string, unknown])[]): readonly Game[] {
  const S = REFUSE("SIGNATURE_INVALID");
  return [
    ...table.map(([label, value]) => game(label, { crit: value }, S)),
    // crit lists a member the header lacks.
    ...crit.map((name) => game(`crit lists ${name} which is absent`, { [name]: undefined }, S)),
  ];
}

function x5cGames(b: Base): readonly Game[] {
  const { rng, tpps, d, header, v } = b;
  const own = Buffer.from(d.tpp.der).toString("base64");
  const other = d.tpp === tpps.B ? tpps.A : tpps.B;
  const hasThumbprint = header["x5t#S256"] !== undefined;
  const I = REFUSE("CERTIFICATE_INVALID");
  const M = REFUSE("CERTIFICATE_MISSING");
  return [
    // No certificate at all: kid only where the dialect writes one.
    game(
      header.kid === undefined ? "x5c absent" : "kid only, no x5c",
      { x5c: undefined, "x5t#S256": undefined },
      M,
    ),
    // A thumbprint names a certificate (keys by reference): a good TPP's is forwarded once the gateway
    // has seen and trusted it (and, for UK OB, the QWAC is of its organisation), which depends on what
    // was sent before; the `keys` family holds each outcome on its own. Any other TPP's: refused.
    game(
      "x5t#S256, no x5c",
      { x5c: undefined, "x5t#S256": thumbprint(d.tpp.der) },
      d.tpp.good ? { expect: "any" } : M,
    ),
    game(
      "x5t (SHA-1) only, x5c absent",
      {
        x5c: undefined,
        "x5t#S256": undefined,
        x5t: createHash("sha1").update(d.tpp.der).digest("base64url"),
      },
      M,
    ),
    game("x5c empty", { x5c: [] }, I),
    game("x5c a string", { x5c: own }, I),
    game("x5c five certificates", { x5c: [own, ...Array.from({ length: 4 }, () => caBase64(b.ctx))] }, I),
    () => {
      // Spelled apart from base64 (a space) where base64url spells it the same.
      const url = Buffer.from(d.tpp.der).toString("base64url");
      return v("x5c[0] in base64url", b.signedWith({ ...header, x5c: [url === own ? `${own} ` : url] }), I);
    },
    game("x5c[0] in PEM lines", { x5c: [own.replace(/.{64}/g, "$&\n")] }, I),
    game(
      "x5c[0] a PEM block",
      { x5c: [`-----BEGIN CERTIFICATE-----\n${own}\n-----END CERTIFICATE-----`] },
      I,
    ),
    game("x5c[0] a huge entry", { x5c: ["A".repeat(8 * 1024 + 4)], "x5t#S256": undefined }, I),
    () =>
      v(
        "x5c[0] not a certificate",
        b.signedWith({
          ...header,
          x5c: [rng.pick(["AAAA", Buffer.from("not a cert").toString("base64")])],
          "x5t#S256": undefined,
        }),
        REFUSE(),
      ),
    game("x5c[0] the CA certificate", { x5c: [caBase64(b.ctx)], "x5t#S256": undefined }, REFUSE()),
    // Another TPP's certificate (with its own thumbprint where the dialect writes one) carrying the signer's signature.
    game(
      `TPP ${other.name}'s certificate with TPP ${d.tpp.name}'s signature`,
      {
        x5c: [Buffer.from(other.der).toString("base64")],
        ...(hasThumbprint ? { "x5t#S256": thumbprint(other.der) } : {}),
      },
      REFUSE("SIGNATURE_INVALID"),
    ),
    game("x5t#S256 of another certificate", { "x5t#S256": thumbprint(other.der) }, I),
    () =>
      v(
        "x5t#S256 malformed",
        b.signedWith({ ...header, "x5t#S256": rng.pick(["", "abc", `${thumbprint(d.tpp.der)}=`, 42]) }),
        I,
      ),
    () => {
      // Certificates that sign correctly but are not to be trusted: refused by the certificate step.
      const bad = rng.pick([tpps.untrusted, tpps.expired, tpps.revoked, tpps.unregistered]);
      const { d: e, request } = b.signed({ tpp: bad, pay: false });
      return {
        tpp: bad,
        label: `${bad.name} certificate, signed correctly: ${e.describe}`,
        request,
        verdict: REFUSE(),
      };
    },
  ];
}

function tamperGame(b: Base, verdict: Verdict): Game {
  return () => {
    // The body changed after signing: the signature (JAdES: Digest) no longer holds. It may reach
    // the backend in part where the signature covers the head only.
    const { rng, d } = b;
    const request = sendable(d, b.good());
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
      verdict,
    };
  };
}

function play(b: Base, g: Game): Variant {
  if (typeof g === "function") return g();
  const h: Members = { ...b.header, ...g.set };
  for (const [name, value] of Object.entries(g.set)) if (value === undefined) delete h[name];
  return b.v(g.label, b.signedWith(h, g.payload ?? b.payload), g.verdict);
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
 * nothing the gateway reads once it has refused it; for another X-Request-ID, nothing UK OB signs):
 * `anyCode` when the refusal may come before the replay step.
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

/** The family of a JWS dialect: its valid, hostile, replay and mixed cases. */
export function jwsFamily<OwnKind extends string>(dialect: JwsDialect<OwnKind>): Family {
  const dialectAny = dialect as unknown as JwsDialect<string>;
  const { checks, games } = dialect;

  function hostile(ctx: CaseContext, kind: SharedKind | OwnKind): Variant {
    // A body where the variant needs one.
    const b = baseOf(dialectAny, ctx, kind === "tamper" ? { pay: true } : {});
    const table = ((): readonly Game[] => {
      switch (kind) {
        case "compact":
          return compactGames(b);
        case "json":
          return jsonGames(b);
        case "duplicate":
          return duplicateGames(b, games.duplicates(b), games.duplicatesInside?.(b) ?? []);
        case "alg":
          return algGames(b, games.alg(b));
        case "crit":
          return critGames(dialect.crit, games.crit(b));
        case "b64":
          return games.b64(b);
        case "x5c":
          return x5cGames(b);
        case "tamper":
          return [tamperGame(b, games.tampered)];
        default:
          return dialect.own[kind as OwnKind](b);
      }
    })();
    return play(b, ctx.rng.pick(table));
  }

  function valid(ctx: CaseContext, options: DraftOptions = {}): Valid {
    const { rng } = ctx;
    const d = draftOf(dialectAny, ctx, options);
    const { jws, label } = dialect.signValid(ctx, d);
    const request = sendable(d, jws);
    const [chance, chunks] = dialect.validChunked;
    const isChunked = d.body !== undefined && rng.chance(chance);
    if (isChunked) {
      request.headers.push(["Transfer-Encoding", "chunked"]);
      request.body = chunked(d.body!, rng.range(1, chunks));
    }
    return { d, request, label: `${label}${isChunked ? ", chunked" : ""}` };
  }

  function expected(d: Draft, label: string, expect: Expectation, request: RawRequest): ExpectedRequest {
    return {
      tag: d.tag,
      requestId: requestIdOf(request),
      label: `${label}: ${d.describe}`,
      expect,
      tpp: d.tpp,
    };
  }

  function expectedOf(variant: Variant): ExpectedRequest {
    const tag = /fz=([^&#]+)/.exec(variant.request.target)![1]!;
    const requestId = requestIdOf(variant.request);
    return { tag, requestId, label: variant.label, expect: variant.verdict.expect, tpp: variant.tpp };
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
      ctx.check(false, `${checks}-refusal`, label, "a refusal echoing its X-Request-ID", () => "none");
      return;
    }
    const tpp = isTppMessages(r);
    ctx.check(
      r.status >= 400 &&
        r.status < 500 &&
        tpp !== undefined &&
        (verdict.codes === undefined || verdict.codes.includes(tpp.code)),
      `${checks}-refusal`,
      label,
      `a 4xx Berlin Group refusal${verdict.codes ? ` with ${verdict.codes.join(" or ")}` : ""}`,
      () =>
        `${r.status} ${tpp ? `${tpp.code}: ${tpp.text.slice(0, 200)}` : r.body.toString("latin1").slice(0, 200)}`,
    );
  }

  function checkForwarded(ctx: CaseContext, result: ExchangeResult, e: ExpectedRequest): void {
    const answer = result.backendAnswer(e.tag);
    ctx.check(
      answer !== undefined,
      `${checks}-forward`,
      e.label,
      "answered by the backend",
      () => `${result.refusal(e.requestId!)?.body.toString("latin1").slice(0, 200) ?? "no answer"}`,
    );
    if (answer !== undefined) dialect.answered?.(ctx, e.label, answer);
  }

  function judge(ctx: CaseContext, result: ExchangeResult, variant: Variant, e: ExpectedRequest): void {
    if (variant.verdict.expect === "forward") checkForwarded(ctx, result, e);
    else if (variant.verdict.expect !== "any")
      checkRefusal(ctx, result, e.requestId!, variant.label, variant.verdict);
  }

  return {
    name: dialect.name,
    weight: dialect.weight,
    async run(ctx) {
      const { rng } = ctx;
      const mode = rng.weighted(dialect.modes);
      if (mode === "valid") {
        const { d, request, label } = valid(ctx);
        const e = expected(d, label, "forward", request);
        const result = await ctx.exchange({ requests: [e], writes: [{ data: serialize(request) }] });
        // The backend picks its own status (200 mostly); the shared checks hold the answer to it, signed.
        checkForwarded(ctx, result, e);
        return;
      }
      if (mode === "hostile") {
        const variant = hostile(ctx, rng.weighted(dialect.weights));
        const e = expectedOf(variant);
        const result = await ctx.exchange({ requests: [e], writes: [{ data: serialize(variant.request) }] });
        judge(ctx, result, variant, e);
        return;
      }
      if (mode === "replay") {
        const { d, request, label } = valid(ctx);
        const copy = reencoded(rng, request);
        const how = rng.pick(["sequential", "sequential", "concurrent", "pipelined"] as const);
        const replayLabel = `replay (${copy.label}, ${how}) of ${label}`;
        if (how === "sequential") {
          await ctx.exchange({
            requests: [expected(d, label, "forward", request)],
            writes: [{ data: serialize(request) }],
          });
          const e = expected(d, replayLabel, "any", copy.request);
          const second = await ctx.exchange({ requests: [e], writes: [{ data: serialize(copy.request) }] });
          checkRefusal(
            ctx,
            second,
            e.requestId!,
            e.label,
            copy.anyCode ? REFUSE() : REFUSE("SIGNATURE_INVALID"),
          );
          ctx.check(
            second.backendSaw(d.tag) === 1,
            `${checks}-replay`,
            e.label,
            "the backend saw it once",
            () => `${second.backendSaw(d.tag)} times`,
          );
        } else if (how === "pipelined") {
          await ctx.exchange({
            requests: [expected(d, label, "forward", request), expected(d, replayLabel, "any", copy.request)],
            writes: [{ data: Buffer.concat([serialize(request), serialize(copy.request)]) }],
          });
        } else {
          const results = await Promise.all(
            [request, copy.request].map((r, i) =>
              ctx.exchange({
                requests: [expected(d, i ? replayLabel : `${label}, concurrent`, "any", r)],
                writes: [{ data: serialize(r) }],
              }),
            ),
          );
          const saw = results[1]!.backendSaw(d.tag);
          ctx.check(
            saw === 1,
            `${checks}-replay`,
            `${replayLabel}: ${d.describe}`,
            "exactly one of the two ran",
            () => `${saw}`,
          );
        }
        return;
      }
      // mixed: a valid request, a hostile one and a valid one again on one keep-alive connection.
      const first = valid(ctx);
      const bad = hostile(ctx, rng.pick(dialect.mixedKinds ?? ["alg"]));
      const last = valid(ctx);
      const e = expectedOf(bad);
      const result = await ctx.exchange({
        requests: [
          expected(first.d, first.label, "forward", first.request),
          e,
          expected(last.d, last.label, "forward", last.request),
        ],
        writes: [
          { data: serialize(first.request) },
          { data: serialize(bad.request), delayMs: 30 },
          { data: serialize(last.request), delayMs: 30 },
        ],
      });
      judge(ctx, result, bad, e);
    },
  };
}
