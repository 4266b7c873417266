/**
 * RFC 9421 (FAPI 2.0 HTTP Signatures with the Berlin Group certificate and keyId) at the ingress
 * gateway: valid requests (GET, and POST with a body, chunked or not, up to near maxBodyBytes, and
 * Content-Digest; rsa-pss-sha512, rsa-v1_5-sha256 and ecdsa-p256-sha256, `alg` sent or left to the
 * key; labels, parameter and component order, extra components (`;sf`, `;key`, `@query-param`),
 * signatures and parameters as a signer may choose) that must be forwarded,
 * and hostile ones that must be refused with the code of the step that refuses them: malformed
 * Signature-Input and Signature, the parser's bounds (at them: forwarded; past them: refused),
 * labels without their pair, `created`/`expires` edges, `alg` games, unsupported component
 * parameters (a response's `;req` binding among them), uncovered components, the tag, Content-Digest games, and replays whose second send
 * is re-encoded only where nothing is signed (label, whitespace, member order, an extra member, a
 * duplicate parameter, the headers split in two lines): refused as a replay all the same.
 *
 * The signature base is built here, independently of src/signature/rfc9421 (which only the
 * gateway runs): a valid request forwarded is an interop check as well.
 */

import { constants, createHash, sign as cryptoSign, type KeyObject } from "node:crypto";
import { buildKeyId, keyIdTargetFromDer } from "../../../src/signature/index.js";
import type { Rng } from "../prng.js";
import type { ParsedResponse } from "../raw-client.js";
import {
  ACCOUNTS_PATH,
  type HeaderLine,
  PAYMENT_PATH,
  paymentBody,
  type RawRequest,
  serialize,
  withTag,
} from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import type { CaseContext, ExchangeResult, Expectation, ExpectedRequest, Family } from "../types.js";
import { isTppMessages } from "../verdicts.js";
import { chunked, forwardOf, validSigned } from "./common.js";

/** The gateway's RFC 9421 window (its defaults in the fuzz config): created ≤ 300 s old, 60 s skew. */
const MAX_AGE = 300;
const TOLERANCE = 60;
/** The parser's bounds (src/signature/rfc9421/signature-input.ts). */
const MAX_SIGNATURES = 4;
const MAX_COMPONENTS = 32;
const MAX_PARAMS = 12;
const SIGNATURE_INPUT_MAX_LENGTH = 4096;
const SIGNATURE_MAX_LENGTH = 8192;
const MAX_SIGNATURE_BYTES = 1024;

const TAG = '"fapi-2-request"';
const HOST = "localhost";

type Alg = "rsa-pss-sha512" | "rsa-v1_5-sha256" | "ecdsa-p256-sha256";

/** How the signature bytes are made, whatever `alg` says. */
interface Scheme {
  readonly alg: Alg;
  /** RSA-PSS salt length (RFC 9421: 64). */
  readonly salt?: number;
  /** ECDSA as DER instead of r||s. */
  readonly der?: boolean;
}

/** A request to sign: everything the signature is built from, each piece as text to send. */
interface Draft {
  tpp: FuzzTpp;
  method: "GET" | "POST";
  target: string;
  tag: string;
  requestId: string;
  headers: HeaderLine[];
  body?: Buffer;
  /** Serialized component identifiers, e.g. `"@method"`, `"content-type";sf`. */
  components: string[];
  /** Serialized parameters in order: [key, serialized value]. */
  params: [string, string][];
  label: string;
  scheme: Scheme;
  /** `@target-uri` as signed (default https://localhost<target>). */
  targetUri?: string;
}

interface Signed {
  readonly draft: Draft;
  readonly request: RawRequest;
  /** The Signature-Input member (`label=(…);…`) and the Signature member (`label=:…:`). */
  readonly inputMember: string;
  readonly signatureMember: string;
  readonly bytes: Buffer;
}

interface Verdict {
  readonly expect: Expectation;
  /** The refusal's code, when certain (any one of these). */
  readonly codes?: readonly string[];
  /** Text the refusal must hold. */
  readonly text?: string;
}

const FORWARD: Verdict = { expect: "forward" };
const refuse = (...codes: string[]): Verdict => ({ expect: "refuse", codes });
const FORMAT = refuse("FORMAT_ERROR");
const INVALID = refuse("SIGNATURE_INVALID");
const MISSING = refuse("SIGNATURE_MISSING");
const TIMESTAMP = refuse("TIMESTAMP_INVALID");

function uuid(rng: Rng): string {
  const b = rng.bytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function contentDigest(body: Uint8Array, algorithm: "sha-256" | "sha-512" = "sha-256"): string {
  const hash = createHash(algorithm === "sha-256" ? "sha256" : "sha512")
    .update(body)
    .digest("base64");
  return `${algorithm}=:${hash}:`;
}

function header(headers: readonly HeaderLine[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

function keyidOf(tpp: FuzzTpp): string {
  return buildKeyId(keyIdTargetFromDer(tpp.der));
}

function defaultAlg(tpp: FuzzTpp): Alg {
  return tpp.privateKey.asymmetricKeyType === "ec" ? "ecdsa-p256-sha256" : "rsa-pss-sha512";
}

/** A valid draft: GET accounts (A, B or EC) or POST a payment (A or EC), covered as the gateway requires. */
function draft(
  ctx: CaseContext,
  options: { tpp?: FuzzTpp; pay?: boolean; alg?: Alg | "absent"; extraHeaders?: HeaderLine[] } = {},
): Draft {
  const { rng, tpps } = ctx;
  const pay =
    options.pay ?? (options.tpp ? options.tpp.roles.includes("PSP_PI") && rng.chance(0.4) : rng.chance(0.4));
  const tpp = options.tpp ?? (pay ? rng.pick([tpps.A, tpps.EC]) : rng.pick([tpps.A, tpps.B, tpps.EC]));
  const tag = ctx.tag();
  const path = pay
    ? PAYMENT_PATH
    : rng.pick([ACCOUNTS_PATH, `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`, `${ACCOUNTS_PATH}?withBalance=true`]);
  const target = withTag(path, tag);
  const requestId = uuid(rng);
  const body = pay ? paymentBody(`${rng.range(1, 9999)}.${rng.range(10, 99)}`) : undefined;
  const headers: HeaderLine[] = [
    ["X-Request-ID", requestId],
    ["PSU-ID", `psu-${rng.int(100000)}`],
    ["PSU-IP-Address", "192.0.2.10"],
    ["TPP-Redirect-URI", "https://tpp.example/cb"],
    ["TPP-Signature-Certificate", tpp.headerValue],
    ...(body ? ([["Content-Type", "application/json"]] as HeaderLine[]) : []),
    ...(options.extraHeaders ?? []),
  ];
  if (body) {
    const digest = rng.weighted<string>([
      [8, contentDigest(body)],
      [1, contentDigest(body, "sha-512")],
      [1, `${contentDigest(body)}, ${contentDigest(body, "sha-512")}`],
    ]);
    headers.push(["Content-Digest", digest]);
  }
  const components = [
    "@method",
    "@target-uri",
    ...(body ? ["content-digest"] : []),
    "tpp-signature-certificate",
    "x-request-id",
    "psu-id",
    "tpp-redirect-uri",
  ].map((c) => `"${c}"`);
  const alg = options.alg ?? (rng.chance(0.3) ? "absent" : defaultAlg(tpp));
  const created = Math.floor(Date.now() / 1000);
  const params: [string, string][] = [
    ["created", String(created)],
    ["keyid", JSON.stringify(keyidOf(tpp))],
    ...(alg === "absent" ? [] : ([["alg", `"${alg}"`]] as [string, string][])),
    ["tag", TAG],
  ];
  return {
    tpp,
    method: pay ? "POST" : "GET",
    target,
    tag,
    requestId,
    headers,
    ...(body ? { body } : {}),
    components,
    params,
    label: "sig1",
    scheme: { alg: alg === "absent" ? defaultAlg(tpp) : alg },
  };
}

/** A component's value for the base: derived ones from the request, fields trimmed. */
function componentValue(d: Draft, id: string): string {
  const name = /^"([^"]*)"/.exec(id)?.[1] ?? id;
  const uri = d.targetUri ?? `https://${HOST}${d.target}`;
  const url = new URL(`https://${HOST}${d.target}`);
  switch (name) {
    case "@method":
      return d.method;
    case "@target-uri":
      return uri;
    case "@path":
      return url.pathname;
    case "@query":
      return url.search === "" ? "?" : url.search;
    case "@authority":
      return HOST;
    case "@scheme":
      return "https";
    case "@request-target":
      return d.target;
    case "content-digest": {
      const text = (header(d.headers, "Content-Digest") ?? "").trim();
      const key = /;key="([^"]*)"/.exec(id)?.[1];
      if (key === undefined) return text;
      // The member's value as RFC 8941 serializes it: the byte sequence as sent.
      return new RegExp(`(?:^|, )${key}=(:[^:]*:)`).exec(text)?.[1] ?? "";
    }
    case "@query-param": {
      // Only "fz" (the tag) is covered by name: letters, digits and '.', encoded as they are.
      const param = /;name="([^"]*)"/.exec(id)?.[1] ?? "";
      return url.searchParams.get(param) ?? "";
    }
    default:
      return (header(d.headers, name) ?? "").trim();
  }
}

/** `;key=value` each, a value "" as the bare key (a true boolean, as RFC 8941 serializes it). */
function paramsText(params: readonly [string, string][]): string {
  return params.map(([k, v]) => (v === "" ? `;${k}` : `;${k}=${v}`)).join("");
}

function innerList(d: Draft): string {
  return `(${d.components.join(" ")})${paramsText(d.params)}`;
}

function signBytes(key: KeyObject, scheme: Scheme, data: Buffer): Buffer {
  switch (scheme.alg) {
    case "rsa-pss-sha512":
      return cryptoSign("sha512", data, {
        key,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: scheme.salt ?? 64,
      });
    case "rsa-v1_5-sha256":
      return cryptoSign("sha256", data, { key, padding: constants.RSA_PKCS1_PADDING });
    case "ecdsa-p256-sha256":
      return cryptoSign("sha256", data, { key, dsaEncoding: scheme.der ? "der" : "ieee-p1363" });
  }
}

/** Signs a draft as RFC 9421 2.5 and 3.1 say (a base of its own making, see the file comment). */
function signDraft(d: Draft): Signed {
  const list = innerList(d);
  let base = "";
  for (const id of d.components) base += `${id}: ${componentValue(d, id)}\n`;
  base += `"@signature-params": ${list}`;
  const bytes = signBytes(d.tpp.privateKey, d.scheme, Buffer.from(base, "latin1"));
  const inputMember = `${d.label}=${list}`;
  const signatureMember = `${d.label}=:${bytes.toString("base64")}:`;
  return {
    draft: d,
    request: {
      method: d.method,
      target: d.target,
      headers: [...d.headers, ["Signature-Input", inputMember], ["Signature", signatureMember]],
      ...(d.body ? { body: d.body } : {}),
    },
    inputMember,
    signatureMember,
    bytes,
  };
}

/** The request with its body sent chunked (Transfer-Encoding: chunked, no Content-Length). */
function asChunked(request: RawRequest, rng: Rng): RawRequest {
  return {
    ...request,
    headers: [...request.headers, ["Transfer-Encoding", "chunked"]],
    body: chunked(request.body ?? Buffer.alloc(0), rng.range(1, 6)),
  };
}

/** Replaces (or with undefined removes) a header's value; adds it when absent. */
function withHeader(request: RawRequest, name: string, value: string | undefined): RawRequest {
  const lower = name.toLowerCase();
  const headers = request.headers.filter(([n]) => n.toLowerCase() !== lower);
  const at = request.headers.findIndex(([n]) => n.toLowerCase() === lower);
  if (value !== undefined) headers.splice(at < 0 ? headers.length : at, 0, [name, value]);
  return { ...request, headers };
}

/** Another signature by the same TPP over a subset, with another tag: a member a signer may add. */
function unrelatedMember(d: Draft, label: string, rng: Rng): { input: string; signature: string } {
  const other: Draft = {
    ...d,
    components: rng.chance(0.5) ? ['"@method"', '"x-request-id"'] : ['"@target-uri"'],
    params: [
      ["created", String(Math.floor(Date.now() / 1000))],
      ["keyid", JSON.stringify(keyidOf(d.tpp))],
      ["tag", rng.pick(['"bank-audit"', '"tpp-internal"', '"fapi-2-response"'])],
    ],
    label,
  };
  const s = signDraft(other);
  return { input: s.inputMember, signature: s.signatureMember };
}

/** The two headers, member lists given: one line each. */
function withMembers(
  request: RawRequest,
  inputs: readonly string[],
  signatures: readonly string[],
): RawRequest {
  return withHeader(
    withHeader(request, "Signature-Input", inputs.join(", ")),
    "Signature",
    signatures.join(", "),
  );
}

interface Sent {
  readonly label: string;
  readonly bytes: Buffer;
  readonly tag: string;
  readonly requestId: string;
  readonly tpp: FuzzTpp;
  readonly verdict: Verdict;
}

function describeDraft(d: Draft): string {
  return `${d.method} ${d.target.replace(/[?&]fz=.*/, "")} by TPP ${d.tpp.name} (${d.scheme.alg})`;
}

function sent(s: Signed, request: RawRequest, label: string, verdict: Verdict): Sent {
  return {
    label: `${label}: ${describeDraft(s.draft)}`,
    bytes: serialize(request, { host: HOST }),
    tag: s.draft.tag,
    requestId: s.draft.requestId,
    tpp: s.draft.tpp,
    verdict,
  };
}

/** A draft changed before signing, sent as signed. */
function signedWith(
  ctx: CaseContext,
  label: string,
  verdict: Verdict,
  change: (d: Draft) => void,
  base?: Draft,
): Sent {
  const d = base ?? draft(ctx);
  change(d);
  const s = signDraft(d);
  return sent(s, s.request, label, verdict);
}

/** A valid draft signed, then its request changed. */
function tampered(
  ctx: CaseContext,
  label: string,
  verdict: Verdict,
  change: (s: Signed) => RawRequest,
  base?: Draft,
): Sent {
  const s = signDraft(base ?? draft(ctx));
  return sent(s, change(s), label, verdict);
}

function setParam(d: Draft, key: string, value: string | undefined): void {
  const at = d.params.findIndex(([k]) => k === key);
  if (value === undefined) {
    if (at >= 0) d.params.splice(at, 1);
  } else if (at >= 0) d.params[at] = [key, value];
  else d.params.push([key, value]);
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

// --- the case kinds --------------------------------------------------------------------------

/** Valid requests as signers may vary them: forwarded and answered. */
function valid(ctx: CaseContext): Sent {
  const { rng, tpps } = ctx;
  const variant = rng.weighted<string>([
    [4, "plain"],
    [2, "rsa-v1_5"],
    [2, "shuffled"],
    [1, "label"],
    [1, "expires"],
    [1, "nonce"],
    [1, "unknown-param"],
    [1, "extra-components"],
    [1, "extra-signature"],
    [1, "psu-corporate-id"],
    [1, "empty-digest-get"],
    [2, "chunked"],
    [1, "large-body"],
    [1, "query-param"],
    [1, "authorization"],
    [1, "structured"],
  ]);
  switch (variant) {
    case "rsa-v1_5":
      return signedWith(
        ctx,
        "valid, rsa-v1_5-sha256",
        FORWARD,
        () => {},
        draft(ctx, { tpp: rng.pick([tpps.A, tpps.B]), alg: "rsa-v1_5-sha256" }),
      );
    case "shuffled":
      return signedWith(ctx, "valid, components and parameters in another order", FORWARD, (d) => {
        rng.shuffle(d.components);
        rng.shuffle(d.params);
      });
    case "label":
      return signedWith(ctx, "valid, another label", FORWARD, (d) => {
        d.label = rng.pick(["fapi", "sig-b21", "a", "x.y_z-1", "*star", "tpp2024"]);
      });
    case "expires":
      return signedWith(ctx, "valid, expires in the future", FORWARD, (d) =>
        setParam(d, "expires", String(now() + rng.range(30, 600))),
      );
    case "nonce":
      return signedWith(ctx, "valid, with a nonce", FORWARD, (d) =>
        setParam(d, "nonce", `"${rng.bytes(12).toString("base64")}"`),
      );
    case "unknown-param":
      return signedWith(ctx, "valid, an unregistered parameter signed", FORWARD, (d) =>
        setParam(
          d,
          rng.pick(["foo", "x-tpp", "v"]),
          rng.pick(['"bar"', "1", "", "?0", "tok", "-1.5", ":AAAA:"]),
        ),
      );
    case "extra-components":
      return signedWith(ctx, "valid, more components covered", FORWARD, (d) => {
        d.components.push(
          ...rng
            .shuffle(['"psu-ip-address"', '"@authority"', '"@path"', '"@query"', '"@scheme"'])
            .slice(0, rng.range(1, 5)),
        );
      });
    case "extra-signature": {
      const s = signDraft(draft(ctx));
      const other = unrelatedMember(s.draft, "other", rng);
      const first = rng.chance(0.5);
      return sent(
        s,
        withMembers(
          s.request,
          first ? [other.input, s.inputMember] : [s.inputMember, other.input],
          first ? [other.signature, s.signatureMember] : [s.signatureMember, other.signature],
        ),
        `valid, another signature ${first ? "before" : "after"} it`,
        FORWARD,
      );
    }
    case "psu-corporate-id":
      return signedWith(ctx, "valid, PSU-Corporate-ID covered", FORWARD, (d) => {
        d.headers.push(["PSU-Corporate-ID", "corp-77"]);
        d.components.push('"psu-corporate-id"');
      });
    case "empty-digest-get":
      return signedWith(
        ctx,
        "valid, GET with the empty body's Content-Digest covered",
        FORWARD,
        (d) => {
          d.headers.push(["Content-Digest", contentDigest(Buffer.alloc(0))]);
          d.components.push('"content-digest"');
        },
        draft(ctx, { pay: false }),
      );
    case "chunked": {
      const s = signDraft(draft(ctx, { pay: true, tpp: rng.pick([tpps.A, tpps.EC]) }));
      return sent(s, asChunked(s.request, rng), "valid, the body chunked", FORWARD);
    }
    case "large-body": {
      // Near maxBodyBytes (64 KiB), the digest checked as it streams.
      const d = draft(ctx, { pay: true, tpp: rng.pick([tpps.A, tpps.EC]) });
      const pad = "p".repeat(rng.range(40_000, 64_000));
      d.body = Buffer.from(
        JSON.stringify({ ...JSON.parse(d.body!.toString()), remittanceInformationUnstructured: pad }),
      );
      d.headers = d.headers.map(([n, v]) => (n === "Content-Digest" ? [n, contentDigest(d.body!)] : [n, v]));
      const s = signDraft(d);
      return sent(
        s,
        rng.chance(0.5) ? asChunked(s.request, rng) : s.request,
        `valid, a ${d.body.length}-byte body`,
        FORWARD,
      );
    }
    case "structured": {
      // ;sf (the dictionary re-serialized: what was sent, already canonical) and ;key (one member).
      const d = draft(ctx, { pay: true, tpp: rng.pick([tpps.A, tpps.EC]) });
      const algorithm = /^(sha-\d+)=/.exec(header(d.headers, "Content-Digest")!)![1]!;
      d.components.push(rng.chance(0.5) ? '"content-digest";sf' : `"content-digest";key="${algorithm}"`);
      return signedWith(ctx, `valid, ${d.components.at(-1)} covered too`, FORWARD, () => {}, d);
    }
    case "query-param":
      return signedWith(
        ctx,
        'valid, "@query-param";name="fz" and "@request-target" covered',
        FORWARD,
        (d) => {
          d.components.push('"@query-param";name="fz"', '"@request-target"');
        },
      );
    case "authorization":
      return signedWith(ctx, "valid, Authorization and DPoP covered", FORWARD, (d) => {
        d.headers.push(
          ["Authorization", `Bearer ${rng.bytes(16).toString("hex")}`],
          ["DPoP", "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.c2ln"],
        );
        d.components.push('"authorization"', '"dpop"');
      });
    default:
      return signedWith(ctx, "valid", FORWARD, () => {});
  }
}

/** At the parser's bounds (forwarded) and just past them (refused). */
function bounds(ctx: CaseContext): Sent {
  const { rng } = ctx;
  const past = rng.chance(0.5);
  const kind = rng.pick([
    "components",
    "members",
    "params",
    "input-length",
    "signature-length",
    "signature-bytes",
    "huge",
  ] as const);
  switch (kind) {
    case "huge": {
      // Far past a bound yet under the length limit: the parser stops at the bound.
      const shape = rng.pick([
        "inner-list",
        "members",
        "params",
        "repeated-param",
        "nested",
        "signature-members",
      ] as const);
      // As many as fit beside `used` characters under the length limit (half of that, at least).
      const fill = (unit: (i: number) => string, sep: string, used = 50) => {
        const n = Math.floor((SIGNATURE_INPUT_MAX_LENGTH - used - 20) / (unit(999).length + sep.length));
        return Array.from({ length: rng.range(Math.floor(n / 2), n) }, (_, i) => unit(i)).join(sep);
      };
      // One parameter repeated a thousand times is one parameter (RFC 8941: the last wins), not
      // past the bound; it was not signed, so the signature fails.
      const verdict = shape === "repeated-param" ? INVALID : FORMAT;
      return tampered(ctx, `huge: ${shape}`, verdict, (s) => {
        const label = s.draft.label;
        switch (shape) {
          case "inner-list":
            return withHeader(
              s.request,
              "Signature-Input",
              `${label}=(${fill(() => '"x-request-id"', " ")});tag=${TAG}`,
            );
          case "members":
            return withHeader(
              s.request,
              "Signature-Input",
              `${s.inputMember}, ${fill((i) => `a${i}=()`, ", ", s.inputMember.length)}`,
            );
          case "params":
            return withHeader(
              s.request,
              "Signature-Input",
              `${s.inputMember}${fill((i) => `;p${i}=1`, "", s.inputMember.length)}`,
            );
          case "repeated-param":
            return withHeader(
              s.request,
              "Signature-Input",
              `${s.inputMember}${fill(() => ";p=1", "", s.inputMember.length)}`,
            );
          case "nested": {
            const depth = rng.range(2, 1500);
            return withHeader(
              s.request,
              "Signature-Input",
              `${label}=${"(".repeat(depth)}"@method"${")".repeat(depth)}`,
            );
          }
          default:
            return withHeader(
              s.request,
              "Signature",
              `${s.signatureMember}, ${Array.from({ length: rng.range(5, 150) }, (_, i) => `m${i}=:AAAA:`).join(", ")}`,
            );
        }
      });
    }
    case "components": {
      const d = draft(ctx);
      const total = past ? MAX_COMPONENTS + rng.range(1, 3) : MAX_COMPONENTS;
      for (let i = 0; d.components.length < total; i++) {
        d.headers.push([`X-Fz-${i}`, `v${i}`]);
        d.components.push(`"x-fz-${i}"`);
      }
      return signedWith(
        ctx,
        `${total} components (bound ${MAX_COMPONENTS})`,
        past ? FORMAT : FORWARD,
        () => {},
        d,
      );
    }
    case "members": {
      const s = signDraft(draft(ctx));
      const total = past ? MAX_SIGNATURES + 1 : MAX_SIGNATURES;
      const inputs = [s.inputMember];
      const sigs = [s.signatureMember];
      for (let i = 1; i < total; i++) {
        const o = unrelatedMember(s.draft, `extra${i}`, rng);
        inputs.push(o.input);
        sigs.push(o.signature);
      }
      // Past the bound in one header only, or both.
      const which = past ? rng.pick(["both", "input", "signature"] as const) : "both";
      const inputsSent = which === "signature" ? inputs.slice(0, MAX_SIGNATURES) : inputs;
      const sigsSent = which === "input" ? sigs.slice(0, MAX_SIGNATURES) : sigs;
      return sent(
        s,
        withMembers(s.request, inputsSent, sigsSent),
        `${total} signatures in ${which} (bound ${MAX_SIGNATURES})`,
        past ? FORMAT : FORWARD,
      );
    }
    case "params": {
      const total = past ? MAX_PARAMS + 1 : MAX_PARAMS;
      return signedWith(
        ctx,
        `${total} signature parameters (bound ${MAX_PARAMS})`,
        past ? FORMAT : FORWARD,
        (d) => {
          for (let i = 0; d.params.length < total; i++) d.params.push([`p${i}`, String(i)]);
        },
      );
    }
    case "input-length":
      // A nonce long enough for the header to pass the bound, or to stay under it.
      return signedWith(
        ctx,
        `Signature-Input ${past ? "over" : "under"} ${SIGNATURE_INPUT_MAX_LENGTH} characters`,
        past ? FORMAT : FORWARD,
        (d) => {
          const rest = innerList(d).length + d.label.length + 1 + ";nonce=".length + 2;
          const size = past
            ? SIGNATURE_INPUT_MAX_LENGTH - rest + rng.range(1, 200)
            : SIGNATURE_INPUT_MAX_LENGTH - rest - rng.range(0, 50);
          setParam(d, "nonce", `"${"n".repeat(size)}"`);
        },
      );
    case "signature-length":
      // Signature header over its bound by padding members (refused before anything is paired).
      return tampered(ctx, `Signature over ${SIGNATURE_MAX_LENGTH} characters`, FORMAT, (s) =>
        withHeader(
          s.request,
          "Signature",
          `${s.signatureMember}, pad=:${Buffer.alloc(6200).toString("base64")}:`,
        ),
      );
    default: {
      const n = past ? MAX_SIGNATURE_BYTES + rng.range(1, 64) : 0;
      return tampered(
        ctx,
        past ? `a ${n}-byte signature (at most ${MAX_SIGNATURE_BYTES})` : "an empty byte sequence",
        FORMAT,
        (s) => withHeader(s.request, "Signature", `${s.draft.label}=:${rng.bytes(n).toString("base64")}:`),
      );
    }
  }
}

/** Structured-field syntax broken in Signature-Input or Signature (refused FORMAT_ERROR, unless noted). */
function malformed(ctx: CaseContext): Sent {
  const { rng } = ctx;
  type Edit = [label: string, verdict: Verdict, change: (s: Signed) => RawRequest];
  const input = (f: (m: string, s: Signed) => string) => (s: Signed) =>
    withHeader(s.request, "Signature-Input", f(s.inputMember, s));
  const signature = (f: (m: string, s: Signed) => string) => (s: Signed) =>
    withHeader(s.request, "Signature", f(s.signatureMember, s));
  const edits: Edit[] = [
    ["unbalanced: no ')'", FORMAT, input((m) => m.replace(")", ""))],
    ["unbalanced: an extra ')'", FORMAT, input((m) => m.replace(")", "))"))],
    ["unbalanced: no '('", FORMAT, input((m) => m.replace("(", ""))],
    ["unbalanced: an extra '('", FORMAT, input((m) => m.replace("(", "(("))],
    [
      "label in upper case (both headers)",
      FORMAT,
      (s) =>
        withMembers(
          s.request,
          [s.inputMember.replace(/^sig1/, "Sig1")],
          [s.signatureMember.replace(/^sig1/, "Sig1")],
        ),
    ],
    [
      "label starting with a digit (both headers)",
      FORMAT,
      (s) =>
        withMembers(
          s.request,
          [s.inputMember.replace(/^sig1/, "1sig")],
          [s.signatureMember.replace(/^sig1/, "1sig")],
        ),
    ],
    ["components as tokens", FORMAT, input((m) => m.replace(/"([a-z-]+)"/g, "$1"))],
    ["a derived component unquoted", FORMAT, input((m) => m.replace('"@method"', "@method"))],
    ["a component as an integer", FORMAT, input((m) => m.replace('"@method"', "42"))],
    ["tab inside the inner list", FORMAT, input((m) => m.replace('" "', '"\t"'))],
    ["a comma inside the inner list", FORMAT, input((m) => m.replace('" "', '", "'))],
    [
      "non-ASCII (UTF-8) in a component name",
      FORMAT,
      input((m) => m.replace('"x-request-id"', '"x-r\xc3\xa9quest-id"')),
    ],
    ["non-ASCII (Latin-1) in keyid", FORMAT, input((m) => m.replace(/keyid="SN=/, 'keyid="SN=\xe6'))],
    ["non-ASCII in the byte sequence", FORMAT, signature((m) => m.replace(":", ":\xc3\xb8"))],
    ["a member that is not an inner list", FORMAT, input((m) => m.replace(/=\(.*\)/, '="@method"'))],
    ["a bare label", FORMAT, input(() => "sig1")],
    ["a trailing comma", FORMAT, input((m) => `${m},`)],
    ["an unterminated string", FORMAT, input((m) => m.replace(/"$/, ""))],
    ["a backslash escape of another character", FORMAT, input((m) => m.replace('"@method"', '"@met\\hod"'))],
    ["an empty inner list", INVALID, input((m) => m.replace(/\(.*\)/, "()"))],
    ["an empty Signature-Input", MISSING, input(() => "")],
    ["Signature without the colons", FORMAT, signature((m) => m.replace(/=:(.*):$/, "=$1"))],
    ["Signature as a string", FORMAT, signature((m) => m.replace(/=:(.*):$/, '="$1"'))],
    ["Signature: an unterminated byte sequence", FORMAT, signature((m) => m.slice(0, -1))],
    ["Signature: one colon too many", FORMAT, signature((m) => `${m}:`)],
    [
      "Signature in base64url",
      FORMAT,
      signature((_m, s) => `${s.draft.label}=:${s.bytes.toString("base64url")}:`),
    ],
    [
      "Signature base64 without padding",
      FORMAT,
      signature(
        (_m, s) =>
          `${s.draft.label}=:${Buffer.concat([s.bytes, Buffer.from([1])])
            .toString("base64")
            .replace(/=+$/, "")}:`,
      ),
    ],
    ["Signature base64 with a space", FORMAT, signature((m) => m.replace(/:(.{8})/, ":$1 "))],
    ["Signature as an inner list", FORMAT, signature((m) => m.replace(/=(:.*:)$/, "=($1)"))],
    [
      "Signature with the byte sequence's bytes flipped",
      INVALID,
      signature(
        (_m, s) =>
          `${s.draft.label}=:${Buffer.from(s.bytes.map((b, i) => (i === 7 ? b ^ 1 : b))).toString("base64")}:`,
      ),
    ],
    ["duplicate label in Signature-Input", FORMAT, input((m) => `${m}, ${m}`)],
    ["duplicate label in Signature", FORMAT, signature((m) => `${m}, ${m}`)],
    [
      "duplicate label in both",
      FORMAT,
      (s) => withMembers(s.request, [s.inputMember, s.inputMember], [s.signatureMember, s.signatureMember]),
    ],
    // RFC 8941: the last value of a repeated parameter wins; here a value that was not signed.
    [
      "duplicate created, another value last",
      refuse("SIGNATURE_INVALID", "TIMESTAMP_INVALID"),
      input((m) => `${m};created=${now() - 5}`),
    ],
    ["duplicate tag, another value last", MISSING, input((m) => `${m};tag="other"`)],
    ["duplicate keyid, another value last", INVALID, input((m) => `${m};keyid="SN=1,CA=CN=Other"`)],
    [
      "a duplicate component parameter",
      refuse("SIGNATURE_INVALID"),
      input((m) => m.replace('"x-request-id"', '"x-request-id";req;req')),
    ],
    ["an integer of 16 digits", FORMAT, input((m) => m.replace(/created=\d+/, "created=1234567890123456"))],
    [
      "a decimal with 4 fractional digits",
      FORMAT,
      input((m) => m.replace(/created=(\d+)/, "created=$1.1234")),
    ],
    ["'=' with no value", FORMAT, input((m) => m.replace(/created=\d+/, "created="))],
    ["a key with an upper-case letter", FORMAT, input((m) => m.replace("keyid", "keyId"))],
  ];
  const [label, verdict, change] = rng.pick(edits);
  return tampered(ctx, `malformed: ${label}`, verdict, change);
}

/** Signature-Input and Signature that do not pair up. */
function pairing(ctx: CaseContext): Sent {
  const { rng } = ctx;
  const kind = rng.pick([
    "extra-signature",
    "extra-input",
    "renamed-one",
    "no-signature",
    "no-input",
  ] as const);
  return tampered(
    ctx,
    `pairing: ${kind}`,
    kind === "no-signature" ? MISSING : kind === "no-input" ? { expect: "refuse" } : FORMAT,
    (s) => {
      switch (kind) {
        case "extra-signature":
          return withHeader(
            s.request,
            "Signature",
            `${s.signatureMember}, orphan=:${rng.bytes(64).toString("base64")}:`,
          );
        case "extra-input":
          return withHeader(
            s.request,
            "Signature-Input",
            `${s.inputMember}, orphan=("@method");created=${now()};tag="other"`,
          );
        case "renamed-one":
          return rng.chance(0.5)
            ? withHeader(s.request, "Signature", s.signatureMember.replace(/^sig1/, "sig2"))
            : withHeader(s.request, "Signature-Input", s.inputMember.replace(/^sig1/, "sig2"));
        case "no-signature":
          return withHeader(s.request, "Signature", undefined);
        default:
          // Only an RFC 9421 Signature: read as draft-cavage, which it is not.
          return withHeader(s.request, "Signature-Input", undefined);
      }
    },
  );
}

/** `created` and `expires` at and past their edges. */
function created(ctx: CaseContext): Sent {
  const { rng } = ctx;
  type Edit = [label: string, verdict: Verdict, change: (d: Draft) => void];
  const edits: Edit[] = [
    ["created missing", TIMESTAMP, (d) => setParam(d, "created", undefined)],
    ["created a decimal", FORMAT, (d) => setParam(d, "created", `${now()}.5`)],
    ["created a string", FORMAT, (d) => setParam(d, "created", `"${now()}"`)],
    ["created a token", FORMAT, (d) => setParam(d, "created", "now")],
    ["created a boolean", FORMAT, (d) => setParam(d, "created", "?1")],
    ["created a byte sequence", FORMAT, (d) => setParam(d, "created", ":AAAA:")],
    ["created negative", TIMESTAMP, (d) => setParam(d, "created", `-${rng.range(1, 1_000_000)}`)],
    ["created 0", TIMESTAMP, (d) => setParam(d, "created", "0")],
    [
      "created far in the future",
      TIMESTAMP,
      (d) => setParam(d, "created", String(now() + rng.range(3600, 1e9))),
    ],
    ["created the largest integer", TIMESTAMP, (d) => setParam(d, "created", "999999999999999")],
    [
      `created ${MAX_AGE + 30} s ago (inside the window)`,
      FORWARD,
      (d) => setParam(d, "created", String(now() - MAX_AGE - TOLERANCE + 30)),
    ],
    [
      `created ${MAX_AGE + TOLERANCE + 40} s ago (outside)`,
      TIMESTAMP,
      (d) => setParam(d, "created", String(now() - MAX_AGE - TOLERANCE - 40)),
    ],
    [
      `created ${TOLERANCE - 30} s ahead (inside the skew)`,
      FORWARD,
      (d) => setParam(d, "created", String(now() + TOLERANCE - 30)),
    ],
    [
      `created ${TOLERANCE + 40} s ahead (outside)`,
      TIMESTAMP,
      (d) => setParam(d, "created", String(now() + TOLERANCE + 40)),
    ],
    ["expires before created", TIMESTAMP, (d) => setParam(d, "expires", String(now() - rng.range(1, 30)))],
    [
      "expires passed",
      TIMESTAMP,
      (d) => {
        setParam(d, "created", String(now() - 250));
        setParam(d, "expires", String(now() - TOLERANCE - 40));
      },
    ],
    // The base holds the canonical serialization (RFC 9421 2.3): `;flag=?1` is `;flag` there.
    ["a true boolean parameter signed as ';flag=?1'", INVALID, (d) => setParam(d, "flag", "?1")],
    ["expires a string", FORMAT, (d) => setParam(d, "expires", `"${now() + 60}"`)],
    [
      "expires passed but within the skew",
      FORWARD,
      (d) => {
        setParam(d, "created", String(now() - 100));
        setParam(d, "expires", String(now() - TOLERANCE + 30));
      },
    ],
  ];
  const [label, verdict, change] = rng.pick(edits);
  return signedWith(ctx, label, verdict, change);
}

/** `alg` and the signature scheme at odds. */
function alg(ctx: CaseContext): Sent {
  const { rng, tpps } = ctx;
  type Edit = [label: string, tpp: FuzzTpp, verdict: Verdict, change: (d: Draft) => void];
  const rsa = rng.pick([tpps.A, tpps.B]);
  const edits: Edit[] = [
    ["alg hmac-sha256", rng.pick([tpps.A, tpps.EC]), INVALID, (d) => setParam(d, "alg", '"hmac-sha256"')],
    ["alg unknown (rsa-sha256)", rsa, INVALID, (d) => setParam(d, "alg", '"rsa-sha256"')],
    ["alg unknown (RSA-PSS-SHA512)", rsa, INVALID, (d) => setParam(d, "alg", '"RSA-PSS-SHA512"')],
    ["alg unknown (ecdsa-p384-sha384)", tpps.EC, INVALID, (d) => setParam(d, "alg", '"ecdsa-p384-sha384"')],
    ["alg none", rsa, INVALID, (d) => setParam(d, "alg", '"none"')],
    ["alg ecdsa-p256-sha256 on an RSA key", rsa, INVALID, (d) => setParam(d, "alg", '"ecdsa-p256-sha256"')],
    ["alg ed25519 on an RSA key", rsa, INVALID, (d) => setParam(d, "alg", '"ed25519"')],
    ["alg rsa-pss-sha512 on an EC key", tpps.EC, INVALID, (d) => setParam(d, "alg", '"rsa-pss-sha512"')],
    ["alg rsa-v1_5-sha256 on an EC key", tpps.EC, INVALID, (d) => setParam(d, "alg", '"rsa-v1_5-sha256"')],
    [
      "alg absent, signed with rsa-v1_5-sha256 (the key implies PSS)",
      rsa,
      INVALID,
      (d) => {
        setParam(d, "alg", undefined);
        d.scheme = { alg: "rsa-v1_5-sha256" };
      },
    ],
    [
      "alg rsa-v1_5-sha256, signed with PSS",
      rsa,
      INVALID,
      (d) => {
        setParam(d, "alg", '"rsa-v1_5-sha256"');
        d.scheme = { alg: "rsa-pss-sha512" };
      },
    ],
    [
      "rsa-pss-sha512 with a 32-byte salt",
      rsa,
      INVALID,
      (d) => {
        d.scheme = { alg: "rsa-pss-sha512", salt: 32 };
      },
    ],
    [
      "ecdsa-p256-sha256 as DER",
      tpps.EC,
      INVALID,
      (d) => {
        d.scheme = { alg: "ecdsa-p256-sha256", der: true };
      },
    ],
    ["alg as a token", rsa, FORMAT, (d) => setParam(d, "alg", "rsa-pss-sha512")],
    ["alg an integer", rsa, FORMAT, (d) => setParam(d, "alg", "256")],
    ["alg absent, EC key", tpps.EC, FORWARD, (d) => setParam(d, "alg", undefined)],
  ];
  const [label, tpp, verdict, change] = rng.pick(edits);
  return signedWith(ctx, label, verdict, change, draft(ctx, { tpp, alg: defaultAlg(tpp) }));
}

/** Component parameters the gateway does not support on a request. */
function componentParams(ctx: CaseContext): Sent {
  const { rng } = ctx;
  type Edit = [label: string, verdict: Verdict, change: (d: Draft) => void];
  const replace = (from: string, to: string) => (d: Draft) => {
    d.components = d.components.map((c) => (c === from ? to : c));
  };
  const add = (id: string) => (d: Draft) => void d.components.push(id);
  const edits: Edit[] = [
    ['"psu-ip-address";bs added', INVALID, add('"psu-ip-address";bs')],
    ['"x-request-id";bs instead of "x-request-id"', INVALID, replace('"x-request-id"', '"x-request-id";bs')],
    ['"psu-ip-address";tr added', INVALID, add('"psu-ip-address";tr')],
    ['"tpp-redirect-uri";tr instead', INVALID, replace('"tpp-redirect-uri"', '"tpp-redirect-uri";tr')],
    ['"@method";req instead of "@method"', INVALID, replace('"@method"', '"@method";req')],
    ['"@authority";req added', INVALID, add('"@authority";req')],
    ['"@authority";req=?0 added', FORMAT, add('"@authority";req=?0')],
    // A response's binding to its request (FAPI 2.0 full profile) has no place in a request.
    ['"signature";req;key="sig1" added', INVALID, add('"signature";req;key="sig1"')],
    ['"signature-input";req;key="sig1" added', INVALID, add('"signature-input";req;key="sig1"')],
    [
      '"content-digest";req in place of "content-digest" (or added on a GET)',
      INVALID,
      (d) => {
        const at = d.components.indexOf('"content-digest"');
        if (at >= 0) d.components[at] = '"content-digest";req';
        else d.components.push('"content-digest";req');
      },
    ],
    ['"psu-ip-address";sf added (not a structured field)', INVALID, add('"psu-ip-address";sf')],
    [
      '"psu-ip-address";key="a" added (not a dictionary)',
      refuse("SIGNATURE_INVALID", "FORMAT_ERROR"),
      add('"psu-ip-address";key="a"'),
    ],
    ['"@query";name="x" added (name is for "@query-param")', INVALID, add('"@query";name="x"')],
    ['"psu-ip-address";foo added (unknown)', INVALID, add('"psu-ip-address";foo')],
    ['"@signature-params" covered', FORMAT, add('"@signature-params"')],
    ['"PSU-IP-Address" (upper case) added', FORMAT, add('"PSU-IP-Address"')],
    ['"@method" listed twice', FORMAT, add('"@method"')],
    ['"@foo" (unknown derived component) added', INVALID, add('"@foo"')],
    ['"x-absent" (a header not sent) added', INVALID, add('"x-absent"')],
    ['"@status" on a request', INVALID, add('"@status"')],
  ];
  const [label, verdict, change] = rng.pick(edits);
  return signedWith(ctx, `component parameter: ${label}`, verdict, change);
}

/** What the gateway requires covered, left out (or changed after signing). */
function coverage(ctx: CaseContext): Sent {
  const { rng } = ctx;
  const kind = rng.weighted<string>([
    [6, "drop"],
    [1, "psu-corporate-id"],
    [1, "authorization"],
    [1, "path-for-target-uri"],
    [1, "http-scheme"],
    [2, "changed-after"],
    [1, "host-changed"],
  ]);
  switch (kind) {
    case "drop": {
      const d = draft(ctx, { pay: rng.chance(0.5) });
      const name = rng.pick(d.components);
      return signedWith(
        ctx,
        `${name} not covered`,
        INVALID,
        () => {
          d.components = d.components.filter((c) => c !== name);
        },
        d,
      );
    }
    case "psu-corporate-id":
      return signedWith(
        ctx,
        "PSU-Corporate-ID sent, not covered",
        INVALID,
        (d) => void d.headers.push(["PSU-Corporate-ID", "corp-9"]),
      );
    case "path-for-target-uri":
      return signedWith(
        ctx,
        '"@scheme" "@authority" "@path" "@query" instead of "@target-uri"',
        INVALID,
        (d) => {
          d.components = d.components.flatMap((c) =>
            c === '"@target-uri"' ? ['"@scheme"', '"@authority"', '"@path"', '"@query"'] : [c],
          );
        },
      );
    case "http-scheme":
      return signedWith(ctx, "@target-uri signed as http://", INVALID, (d) => {
        d.targetUri = `http://${HOST}${d.target}`;
      });
    case "host-changed": {
      // @target-uri is https://<Host><target>: another Host is another URI than the one signed.
      const s = signDraft(draft(ctx));
      return {
        ...sent(s, s.request, "Host changed after signing", INVALID),
        bytes: serialize(s.request, { host: "bank.example" }),
      };
    }
    default: {
      const name = rng.pick(["PSU-ID", "TPP-Redirect-URI", "TPP-Signature-Certificate"]);
      const verdict = name === "TPP-Signature-Certificate" ? { expect: "refuse" as const } : INVALID;
      return tampered(ctx, `${name} changed after signing`, verdict, (s) => {
        const value = header(s.request.headers, name)!;
        const changed =
          name === "TPP-Signature-Certificate"
            ? ctx.tpps.B.headerValue === value
              ? ctx.tpps.A.headerValue
              : ctx.tpps.B.headerValue
            : `${value}x`;
        return withHeader(s.request, name, changed);
      });
    }
  }
}

/** The tag: absent, another, the FAPI one on a bad signature before a good one. */
function tag(ctx: CaseContext): Sent {
  const { rng } = ctx;
  const kind = rng.pick(["absent", "response", "upper", "token", "first-bad"] as const);
  switch (kind) {
    case "absent":
      return signedWith(ctx, "no tag", MISSING, (d) => setParam(d, "tag", undefined));
    case "response":
      return signedWith(ctx, 'tag="fapi-2-response"', MISSING, (d) =>
        setParam(d, "tag", '"fapi-2-response"'),
      );
    case "upper":
      return signedWith(ctx, 'tag="FAPI-2-REQUEST"', MISSING, (d) => setParam(d, "tag", '"FAPI-2-REQUEST"'));
    case "token":
      return signedWith(ctx, "tag a token", FORMAT, (d) => setParam(d, "tag", "fapi-2-request"));
    default:
      // Two fapi-2-request signatures: the first is the one checked, and it is broken.
      return tampered(ctx, "a broken fapi-2-request signature before a good one", INVALID, (s) => {
        const bad = `bad=${s.inputMember.slice(s.draft.label.length + 1)}`;
        return withMembers(
          s.request,
          [bad, s.inputMember],
          [`bad=:${rng.bytes(s.bytes.length).toString("base64")}:`, s.signatureMember],
        );
      });
  }
}

/** Content-Digest games: values, members, lengths, algorithms, a digest on a body-less request. */
function digest(ctx: CaseContext): Sent {
  const { rng } = ctx;
  const b64 = (n: number) => rng.bytes(n).toString("base64");
  type Edit = [label: string, verdict: Verdict, value: (body: Buffer) => string, pay?: boolean];
  const noExecute: Verdict = { expect: "no-execute", codes: ["SIGNATURE_INVALID"] };
  const edits: Edit[] = [
    ["the digest of another body", noExecute, (b) => contentDigest(Buffer.concat([b, Buffer.from(" ")]))],
    ["a wrong sha-512 beside a right sha-256", noExecute, (b) => `${contentDigest(b)}, sha-512=:${b64(64)}:`],
    [
      "a right sha-512 beside a wrong sha-256",
      noExecute,
      (b) => `sha-256=:${b64(32)}:, ${contentDigest(b, "sha-512")}`,
    ],
    ["sha-256 twice, the same value", FORMAT, (b) => `${contentDigest(b)}, ${contentDigest(b)}`],
    ["sha-256 twice, another value", FORMAT, (b) => `${contentDigest(b)}, sha-256=:${b64(32)}:`],
    ["md5 only", FORMAT, (b) => `md5=:${createHash("md5").update(b).digest("base64")}:`],
    ["SHA-256 (upper case) only", FORMAT, (b) => contentDigest(b).replace("sha-256", "SHA-256")],
    ["unixsum only", FORMAT, () => "unixsum=:AAAA:"],
    ["sha-256 of 31 bytes", FORMAT, () => `sha-256=:${b64(31)}:`],
    ["sha-256 of 64 bytes", FORMAT, () => `sha-256=:${b64(64)}:`],
    ["sha-512 of 32 bytes", FORMAT, () => `sha-512=:${b64(32)}:`],
    ["sha-256 as a string", FORMAT, (b) => `sha-256="${createHash("sha256").update(b).digest("base64")}"`],
    ["sha-256 as a token", FORMAT, () => "sha-256=abc"],
    ["sha-256 unpadded", FORMAT, (b) => contentDigest(b).replace("=:", "=:").replace(/=+:$/, ":")],
    [
      "more than 8 members",
      FORMAT,
      (b) => [contentDigest(b), ...Array.from({ length: 8 }, (_, i) => `x${i}=:AAAA:`)].join(", "),
    ],
    ["over 1024 characters", FORMAT, (b) => `${contentDigest(b)}, pad=:${b64(800)}:`],
    [
      "md5 beside a right sha-256 (ignored)",
      FORWARD,
      (b) => `md5=:${createHash("md5").update(b).digest("base64")}:, ${contentDigest(b)}`,
    ],
    [
      "a body-less GET with a non-empty digest",
      INVALID,
      () => contentDigest(Buffer.from(rng.pick(["{}", "x", "null"]))),
      false,
    ],
    ["a body-less GET with an unknown algorithm", FORMAT, () => "md5=:1B2M2Y8AsgTpgAmY7PhCfg==:", false],
  ];
  const [label, verdict, value, pay] = rng.pick(edits);
  const d = draft(
    ctx,
    pay === false ? { pay: false } : { tpp: rng.pick([ctx.tpps.A, ctx.tpps.EC]), pay: true },
  );
  const body = d.body ?? Buffer.alloc(0);
  const text = value(body);
  // Covered as sent (what a signer would do), or set after signing over a right one.
  const after = pay !== false && rng.chance(0.2);
  if (!after) {
    d.headers = d.headers.filter(([n]) => n !== "Content-Digest");
    d.headers.push(["Content-Digest", text]);
    if (pay === false) d.components.push('"content-digest"');
    const s = signDraft(d);
    // A body may come chunked: the digest is checked as it streams all the same.
    return pay !== false && rng.chance(0.3)
      ? sent(s, asChunked(s.request, rng), `Content-Digest: ${label}, the body chunked`, verdict)
      : sent(s, s.request, `Content-Digest: ${label}`, verdict);
  }
  // Changed after signing: the digest step refuses what it cannot parse, the signature the rest (at the head).
  const refused = verdict.expect === "forward" || verdict.expect === "no-execute" ? INVALID : verdict;
  return tampered(
    ctx,
    `Content-Digest: ${label}, set after signing`,
    refused,
    (s) => withHeader(s.request, "Content-Digest", text),
    d,
  );
}

/** Re-encodings of a signed request that change nothing signed. */
function reencodings(s: Signed, rng: Rng): { label: string; request: RawRequest }[] {
  const { inputMember: input, signatureMember: sig, draft: d } = s;
  const other = unrelatedMember(d, "zz", rng);
  const rename = rng.pick(["fapi", "sig2", "a1", "*x"]);
  const spaced = input
    .replace("(", "(  ")
    .replace(")", "   )")
    .replaceAll('" "', '"   "')
    .replaceAll(";", "; ");
  const [first, ...restParams] = d.params;
  const dupParam = `${d.label}=(${d.components.join(" ")})${paramsText([[first![0], first![0] === "created" ? "0" : '"decoy"'], ...restParams, first!])}`;
  return [
    {
      label: `label renamed to ${rename}`,
      request: withMembers(s.request, [input.replace(d.label, rename)], [sig.replace(d.label, rename)]),
    },
    {
      label: "whitespace inside the inner list and after ';'",
      request: withMembers(s.request, [spaced], [sig]),
    },
    {
      label: "leading and trailing whitespace in both headers",
      request: withMembers(s.request, [`  ${input} \t`], [` \t${sig}  `]),
    },
    {
      label: "an extra signature before it (member order)",
      request: withMembers(s.request, [other.input, input], [other.signature, sig]),
    },
    {
      label: "an extra signature after it, members in other orders in each header",
      request: withMembers(s.request, [input, other.input], [other.signature, sig]),
    },
    {
      label: "both headers split over two lines",
      request: {
        ...s.request,
        headers: [
          ...s.request.headers.filter(([n]) => n !== "Signature-Input" && n !== "Signature"),
          ["Signature-Input", other.input],
          ["Signature", sig],
          ["signature-input", input],
          ["SIGNATURE", other.signature],
        ],
      },
    },
    {
      label: `a duplicate '${first![0]}' parameter, the signed value last`,
      request: withMembers(s.request, [dupParam], [sig]),
    },
    {
      label: "header names in another case",
      request: {
        ...s.request,
        headers: s.request.headers.map(
          ([n, v]) => (/^signature(-input)?$/i.test(n) ? [n.toUpperCase(), v] : [n, v]) as HeaderLine,
        ),
      },
    },
    ...(d.scheme.alg === "ecdsa-p256-sha256" && !d.scheme.der
      ? [
          {
            // Another signature over the same base that verifies just as well (ECDSA malleability).
            label: "ECDSA s → n−s",
            request: withHeader(s.request, "Signature", `${d.label}=:${flipS(s.bytes).toString("base64")}:`),
          },
        ]
      : []),
  ];
}

const P256_N = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

/** An r||s P-256 signature with s replaced by n−s. */
function flipS(signature: Buffer): Buffer {
  const s = BigInt(`0x${signature.subarray(32).toString("hex")}`);
  const flipped = Buffer.from((P256_N - s).toString(16).padStart(64, "0"), "hex");
  return Buffer.concat([signature.subarray(0, 32), flipped]);
}

/** One signed request sent twice: the first forwarded, the second refused as a replay whatever its encoding. */
async function replay(ctx: CaseContext): Promise<void> {
  const { rng } = ctx;
  const s = signDraft(draft(ctx));
  const all = reencodings(s, rng);
  const copies = rng.shuffle(all).slice(0, rng.range(1, 3));
  const firstEncoded = rng.chance(0.3) ? rng.pick(all) : { label: "as signed", request: s.request };
  const original: ExpectedRequest = {
    tag: s.draft.tag,
    requestId: s.draft.requestId,
    label: `replay original (${firstEncoded.label}): ${describeDraft(s.draft)}`,
    expect: "forward",
    tpp: s.draft.tpp,
  };
  const copyOf = (label: string): ExpectedRequest => ({
    tag: s.draft.tag,
    requestId: s.draft.requestId,
    label: `replay re-encoded (${label}): ${describeDraft(s.draft)}`,
    // The backend's record of the tag holds the original: "at most once" is checked by the target.
    expect: "any",
    tpp: s.draft.tpp,
  });
  const bytes = (r: RawRequest) => serialize(r, { host: HOST });
  const id = s.draft.requestId;
  const describeAll = (result: ExchangeResult) =>
    result.outcome.responses
      .filter((r) => r.headers["x-request-id"] === id)
      .map((r) => {
        const tpp = isTppMessages(r);
        return r.headers["x-backend-seq"] !== undefined
          ? `${r.status} from the backend`
          : `${r.status} ${tpp ? `${tpp.code}: ${tpp.text.slice(0, 120)}` : r.body.toString("latin1").slice(0, 120)}`;
      })
      .join(" / ") || "no answer for its X-Request-ID";
  const isReplayRefusal = (r: ParsedResponse) => {
    const tpp = isTppMessages(r);
    return r.status === 400 && tpp?.code === "SIGNATURE_INVALID" && tpp.text.includes("already used");
  };
  if (rng.chance(0.25)) {
    // Pipelined on one connection: which send runs first is the gateway's to decide; exactly one
    // runs, every other is refused as a replay.
    const sends = [firstEncoded, ...copies];
    const result = await ctx.exchange({
      requests: sends.map((c) => ({
        ...copyOf(c.label),
        label: `replay, pipelined (${c.label}): ${describeDraft(s.draft)}`,
      })),
      writes: [{ data: Buffer.concat(sends.map((c) => bytes(c.request))) }],
    });
    const answers = result.outcome.responses.filter((r) => r.headers["x-request-id"] === id);
    const executed = answers.filter((r) => r.headers["x-backend-seq"] !== undefined).length;
    const refused = answers.filter(isReplayRefusal).length;
    ctx.check(
      answers.length === sends.length &&
        executed === 1 &&
        refused === sends.length - 1 &&
        result.backendSaw(s.draft.tag) === 1,
      "rfc9421-replay",
      `replay pipelined (${sends.map((c) => c.label).join(", ")}): ${describeDraft(s.draft)}`,
      `one of ${sends.length} sends answered by the backend, the others refused 400 SIGNATURE_INVALID as replays`,
      () => `${describeAll(result)}; the backend saw it ${result.backendSaw(s.draft.tag)}×`,
    );
    return;
  }
  const first = await ctx.exchange({ requests: [original], writes: [{ data: bytes(firstEncoded.request) }] });
  if (first.backendAnswer(s.draft.tag) === undefined) return; // valid-refused is reported already
  for (const copy of copies) {
    const result = await ctx.exchange({
      requests: [copyOf(copy.label)],
      writes: [{ data: bytes(copy.request) }],
    });
    const refusal = result.refusal(id);
    ctx.check(
      refusal !== undefined && isReplayRefusal(refusal) && result.backendSaw(s.draft.tag) === 1,
      "rfc9421-replay",
      `replay re-encoded (${copy.label}): ${describeDraft(s.draft)}`,
      "refused 400 SIGNATURE_INVALID as a replay (already used), the backend saw it once",
      () => `${describeAll(result)}; the backend saw it ${result.backendSaw(s.draft.tag)}×`,
    );
  }
}

type Kind = (ctx: CaseContext) => Sent;

const KINDS: readonly (readonly [number, string, Kind | "replay"])[] = [
  [24, "valid", valid],
  [6, "bounds", bounds],
  [14, "malformed", malformed],
  [4, "pairing", pairing],
  [10, "created", created],
  [8, "alg", alg],
  [6, "component-params", componentParams],
  [9, "coverage", coverage],
  [4, "tag", tag],
  [9, "content-digest", digest],
  [8, "replay", "replay"],
];

/** The refusal read for `s` has the code its step gives (when certain), is a 4xx tppMessages body. */
function checkVerdict(ctx: CaseContext, s: Sent, refusal: ParsedResponse | undefined): void {
  const { verdict } = s;
  if (verdict.expect === "forward" || verdict.expect === "any") return;
  const tpp = refusal ? isTppMessages(refusal) : undefined;
  // A body that fails its digest may be cut once streaming: its refusal is checked when read.
  if (verdict.expect === "no-execute" && refusal === undefined) return;
  const codes = verdict.codes;
  ctx.check(
    refusal !== undefined &&
      refusal.status >= 400 &&
      refusal.status < 500 &&
      tpp !== undefined &&
      (codes === undefined || codes.includes(tpp.code)),
    "rfc9421-verdict",
    s.label,
    `refused 4xx ${codes?.join(" or ") ?? "(any code)"} as a tppMessages body`,
    () =>
      refusal === undefined
        ? "no refusal read for its X-Request-ID"
        : `${refusal.status} ${tpp ? `${tpp.code}: ${tpp.text.slice(0, 200)}` : refusal.body.toString("latin1").slice(0, 200)}`,
  );
}

export const rfc9421: Family = {
  name: "rfc9421",
  weight: 3,
  async run(ctx) {
    const { rng } = ctx;
    const [, , kind] = rng.weighted(KINDS.map((k) => [k[0], k] as const));
    if (kind === "replay") {
      await replay(ctx);
      return;
    }
    // One to three requests on a connection, each with its own verdict. A body refused once
    // streamed ends its connection (what followed it is never read): such a request goes alone.
    const count = rng.weighted([
      [6, 1],
      [3, 2],
      [1, 3],
    ]);
    const cases: Sent[] = [kind(ctx)];
    while (cases.length < count && cases[0]!.verdict.expect !== "no-execute") {
      const [, , more] = rng.weighted(KINDS.filter((k) => k[2] !== "replay").map((k) => [k[0], k] as const));
      const next = (more as Kind)(ctx);
      if (next.verdict.expect === "no-execute") break;
      cases.push(next);
    }
    const requests: ExpectedRequest[] = cases.map((s) => ({
      tag: s.tag,
      requestId: s.requestId,
      label: s.label,
      expect: s.verdict.expect,
      tpp: s.tpp,
    }));
    const parts = cases.map((s) => s.bytes);
    // Now and then a draft-cavage request on the same connection: each request's own dialect.
    if (cases.length > 1 && rng.chance(0.25)) {
      const cavage = await validSigned(ctx);
      const at = rng.int(cases.length);
      requests.splice(at, 0, forwardOf(cavage, "draft-cavage among RFC 9421 requests"));
      parts.splice(at, 0, serialize(cavage.request));
    }
    const result = await ctx.exchange({
      requests,
      writes: rng.chance(0.5) ? [{ data: Buffer.concat(parts) }] : parts.map((data) => ({ data })),
      deadlineMs: 8_000,
    });
    for (const s of cases) checkVerdict(ctx, s, result.refusal(s.requestId));
  },
};
