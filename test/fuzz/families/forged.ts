/**
 * Forged requests in every dialect, to a backend that acts on the head (`x-fuzz-eager: 1`, as a
 * legacy core's GET or DELETE handler does): issue 37's attack and its cousins. Each request
 * carries a good TPP's public certificate, its body comes chunked and slowly, on GET, DELETE or
 * POST; what it may do at the backend follows from what its dialect's signature authenticates.
 *
 * - a garbage signature, or one made with another key than the certificate's: refused, the backend
 *   never sees even the head (a head dialect checks it in the head; UK OB reads the body whole first);
 * - a genuine signature over another body: a head dialect's head is authenticated and may reach the
 *   backend, but never its whole body; UK OB's head is only bound by the QWAC, so nothing at all.
 */

import { randomBytes, randomUUID } from "node:crypto";
import { dialectUnit } from "../../../src/checks/index.js";
import { JadesRequestSigner } from "../../../src/signature/jws/request-signer.js";
import { UkObRequestSigner } from "../../../src/signature/jws/ukob-request-signer.js";
import { Rfc9421RequestSigner } from "../../../src/signature/rfc9421/request-signer.js";
import type { RequestToSign } from "../../../src/signature/sign.js";
import type { Rng } from "../prng.js";
import { ACCOUNTS_PATH, PAYMENT_PATH, paymentBody, type RawRequest, serialize, withTag } from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import type { CaseContext, Expectation, Family } from "../types.js";
import { isTppMessages } from "../verdicts.js";
import { chunked, randomPieces } from "./common.js";

/** The built-in dialects (the registry is open: these are the four this family signs in). */
type Dialect = "cavage" | "rfc9421" | "jades" | "uk-ob";

/**
 * A request whose signature holds for another body: what may reach the backend, per dialect. The
 * house's promise (README.md and docs/dialects.md, "What each dialect authenticates"), written out
 * here rather than read from src/, so that a change to a dialect's statement has to change this table too.
 */
const BODY_SWAPPED: Readonly<Record<Dialect, Expectation>> = {
  cavage: "no-execute",
  rfc9421: "no-execute",
  jades: "no-execute",
  "uk-ob": "refuse",
};

const DIALECTS = Object.keys(BODY_SWAPPED) as Dialect[];

type Signer = (request: RequestToSign) => Promise<Record<string, string>>;

/** Each TPP's signer per dialect, made once. */
const signers = new WeakMap<FuzzTpp, Map<Dialect, Signer>>();

function signerFor(tpp: FuzzTpp, dialect: Dialect): Signer {
  let byDialect = signers.get(tpp);
  if (!byDialect) {
    byDialect = new Map();
    signers.set(tpp, byDialect);
  }
  let signer = byDialect.get(dialect);
  if (signer) return signer;
  const key = tpp.privateKey;
  switch (dialect) {
    case "cavage":
      signer = (r) => tpp.signer.sign(r) as Promise<Record<string, string>>;
      break;
    case "rfc9421": {
      const s = new Rfc9421RequestSigner({ privateKey: key, certificate: tpp.der, scheme: "https" });
      signer = (r) => s.sign(r);
      break;
    }
    case "jades": {
      const s = new JadesRequestSigner({ privateKey: key, certificateChain: [tpp.der] });
      signer = (r) => s.sign(r);
      break;
    }
    case "uk-ob": {
      const s = new UkObRequestSigner({
        privateKey: key,
        certificate: tpp.der,
        kid: `forged-${tpp.name}`,
        iss: tpp.organizationId,
        tan: "openbanking.org.uk",
      });
      signer = (r) => s.sign(r);
      break;
    }
  }
  byDialect.set(dialect, signer);
  return signer;
}

/** The signature's bytes replaced by `garbage` (base64 or base64url, as the dialect writes them). */
function withSignature(dialect: Dialect, headers: Record<string, string>, garbage: Buffer): void {
  switch (dialect) {
    case "cavage":
      headers.Signature = headers.Signature!.replace(
        /signature="[^"]*"/,
        `signature="${garbage.toString("base64")}"`,
      );
      return;
    case "rfc9421":
      headers.Signature = headers.Signature!.replace(/=:[^:]*:/, `=:${garbage.toString("base64")}:`);
      return;
    default: {
      const [protectedHeader, payload] = headers["x-jws-signature"]!.split(".");
      headers["x-jws-signature"] = `${protectedHeader}.${payload}.${garbage.toString("base64url")}`;
    }
  }
}

const FORGERIES = ["garbage signature", "another key's signature", "body swapped after signing"] as const;
type Forgery = (typeof FORGERIES)[number];

/** What a forgery may do at the backend. */
function expectationOf(forgery: Forgery, dialect: Dialect): Expectation {
  return forgery === "body swapped after signing" ? BODY_SWAPPED[dialect] : "refuse";
}

/** The head first, then the chunked body in a few pieces with pauses: a slow body. */
function slowWrites(rng: Rng, request: RawRequest): { data: Buffer; delayMs?: number }[] {
  const bytes = serialize(request);
  const end = bytes.indexOf("\r\n\r\n") + 4;
  return [{ data: bytes.subarray(0, end) }, ...randomPieces(rng, bytes.subarray(end), rng.range(2, 4), 60)];
}

function bodyFor(rng: Rng, method: string): Buffer {
  return method === "POST"
    ? paymentBody(`${rng.range(1, 9999)}.${rng.range(10, 99)}`)
    : Buffer.from(JSON.stringify({ reason: "forged", n: rng.int(1_000_000) }));
}

export const forged: Family = {
  name: "forged",
  weight: 2,
  async run(ctx: CaseContext) {
    const { rng, tpps } = ctx;
    const dialect = rng.pick(DIALECTS);
    // The house's statement in src/ must match the table above (and the docs').
    ctx.check(
      (dialectUnit(dialect)?.authenticates === "body") === (BODY_SWAPPED[dialect] === "refuse"),
      "dialect-statement",
      dialect,
      `${dialect} authenticates ${BODY_SWAPPED[dialect] === "refuse" ? "the body only" : "the head"}`,
      () => `src/checks/dialects.ts says ${dialectUnit(dialect)?.authenticates}`,
    );
    const forgery = rng.pick(FORGERIES);
    const method = rng.pick(["GET", "DELETE", "POST"] as const);
    const tpp = method === "GET" ? rng.pick([tpps.A, tpps.B]) : tpps.A;
    const path =
      method === "POST"
        ? PAYMENT_PATH
        : method === "DELETE"
          ? `${PAYMENT_PATH}/pay-${rng.int(100_000)}`
          : `${ACCOUNTS_PATH}/acc-${rng.int(1000)}`;
    const tag = ctx.tag();
    const target = withTag(path, tag);
    const body = bodyFor(rng, method);
    const requestId = randomUUID();
    const base: Record<string, string> = {
      "X-Request-ID": requestId,
      "TPP-Redirect-URI": "https://tpp.example/cb",
      "PSU-IP-Address": "192.0.2.10",
      "Content-Type": "application/json",
    };
    const signedBody = forgery === "body swapped after signing" ? bodyFor(rng, method) : body;
    // Another key: TPP A's certificate, TPP B's key (or the other way round).
    const keyHolder = forgery === "another key's signature" ? (tpp === tpps.A ? tpps.B : tpps.A) : tpp;
    const signed = await signerFor(
      keyHolder === tpp ? tpp : { ...keyHolder, der: tpp.der, organizationId: tpp.organizationId },
      dialect,
    )({ method, target, headers: { ...base, Host: "localhost" }, body: signedBody });
    const headers: Record<string, string> = { ...base, ...signed };
    if (keyHolder !== tpp && dialect === "cavage") {
      // RequestSigner names its own certificate: put the claimed TPP's in its place.
      headers["TPP-Signature-Certificate"] = tpp.headerValue;
    }
    if (forgery === "garbage signature") withSignature(dialect, headers, randomBytes(256));
    const request: RawRequest = {
      method,
      target,
      headers: [...Object.entries(headers), ["Transfer-Encoding", "chunked"], ["x-fuzz-eager", "1"]],
      body: chunked(body, rng.range(2, 5)),
    };
    const expect = expectationOf(forgery, dialect);
    const label = `${forgery}, ${dialect}, ${method} ${path} by TPP ${tpp.name}'s certificate, slow chunked body, backend acting on the head`;
    const result = await ctx.exchange({
      requests: [{ tag, requestId, label, expect, tpp }],
      writes: slowWrites(rng, request),
    });
    if (expect !== "refuse") return;
    const refusal = result.refusal(requestId);
    const code = refusal && isTppMessages(refusal)?.code;
    ctx.check(
      refusal !== undefined && refusal.status >= 400 && refusal.status < 500 && code !== undefined,
      "forged-refusal",
      label,
      "a 4xx Berlin Group refusal echoing its X-Request-ID",
      () => (refusal ? `${refusal.status} ${code ?? refusal.body.toString("latin1").slice(0, 200)}` : "none"),
    );
  },
};
