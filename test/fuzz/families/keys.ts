/**
 * Keys by reference (issue 41): UK OB requests naming their key by `kid` only, JAdES requests naming
 * their certificate by `x5t#S256` only, against the run's key directory on loopback HTTPS
 * (ingress.ts KEY_DIRECTORY: TPP A's JWKS with two kids, TPP B's with one, documents that are slow,
 * huge and down) and `keys.files` (TPP A's QSealC). A kid the directory lists, or a certificate
 * kept, is forwarded; an unknown kid, a wrong hash, another TPP's key, a directory slow, huge or down,
 * an `iss` that would move the URL, an unknown thumbprint: each refused, nothing reaches the backend.
 * A key removed (or rotated away) from its JWKS: forwarded while listed, refused once the fuzz
 * gateway's short `keys.keyTtlSeconds` has passed since the removal, never forwarded after it
 * (its own document per case, so that cases in flight do not meet; the 24 h default with a clock
 * the test moves: test/unit/trust/key-resolver.test.ts).
 */

import { createHash, randomBytes, randomUUID, sign } from "node:crypto";
import { computeDigestHeader } from "../../../src/signature/index.js";
import {
  buildHttpHeadersPayload,
  formatSigT,
  HTTP_HEADERS_MID,
  keyOptions,
  signingInput,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
} from "../../../src/signature/jws/index.js";
import { KEY_DIRECTORY } from "../ingress.js";
import { ACCOUNTS_PATH, type HeaderLine, serialize, withTag } from "../request.js";
import type { FuzzTpp } from "../tpps.js";
import type { CaseContext, Expectation, Family } from "../types.js";

type Kind =
  | "kid"
  | "unknown-kid"
  | "wrong-hash"
  | "another-tpps-kid"
  | "bad-directory"
  | "hostile-iss"
  | "x5t-kept"
  | "x5t-unknown"
  | "removed";

const thumbprint = (der: Uint8Array) => createHash("sha256").update(der).digest("base64url");

function detachedJws(header: Record<string, unknown>, payload: Buffer, tpp: FuzzTpp): string {
  const protectedB64 = Buffer.from(JSON.stringify(header)).toString("base64url");
  const signature = sign("sha256", signingInput(protectedB64, payload), keyOptions("PS256", tpp.privateKey));
  return `${protectedB64}..${signature.toString("base64url")}`;
}

/** One request, its JWS made by `jws` over the tagged target and headers; expected `expect`. */
async function send(
  ctx: CaseContext,
  label: string,
  expect: Expectation,
  tpp: FuzzTpp,
  jws: (target: string, headers: Record<string, string>) => string,
): Promise<void> {
  const tag = ctx.tag();
  const requestId = randomUUID();
  const target = withTag(ACCOUNTS_PATH, tag);
  const headers: Record<string, string> = {
    "x-request-id": requestId,
    "tpp-redirect-uri": "https://tpp.example/cb",
    "psu-ip-address": "192.0.2.10",
  };
  headers["x-jws-signature"] = jws(target, headers);
  const lines = Object.entries(headers) as HeaderLine[];
  await ctx.exchange({
    requests: [{ tag, requestId, label, expect, ...(expect === "forward" ? { tpp } : {}) }],
    writes: [{ data: serialize({ method: "GET", target, headers: lines }) }],
  });
}

/** A UK OB GET (the empty payload) by `tpp`, its key named by `kid` and `iss`, never by x5c. */
function ukOb(tpp: FuzzTpp, kid: string, iss: string, more: Record<string, unknown> = {}) {
  return () =>
    detachedJws(
      {
        alg: "PS256",
        kid,
        [UKOB_IAT]: Math.floor(Date.now() / 1000),
        [UKOB_ISS]: iss,
        [UKOB_TAN]: "openbanking.org.uk",
        crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN],
        typ: "JOSE",
        ...more,
      },
      Buffer.alloc(0),
      tpp,
    );
}

const PARS = ["(request-target)", "digest", "x-request-id", "tpp-redirect-uri"];

/** A JAdES GET by `tpp` naming its certificate by `x5t#S256` only. */
function jades(tpp: FuzzTpp, x5t: string) {
  return (target: string, headers: Record<string, string>) => {
    headers.digest = computeDigestHeader("");
    const payload = buildHttpHeadersPayload(PARS, { method: "GET", target, headers });
    if (!Buffer.isBuffer(payload)) throw new Error(payload.text);
    return detachedJws(
      {
        alg: "PS256",
        b64: false,
        crit: ["b64", "sigT", "sigD"],
        sigT: formatSigT(Date.now()),
        sigD: { mId: HTTP_HEADERS_MID, pars: PARS },
        "x5t#S256": x5t,
      },
      payload,
      tpp,
    );
  };
}

export const keys: Family = {
  name: "keys",
  weight: 1,
  async run(ctx) {
    const { rng, tpps } = ctx;
    const { A, B } = tpps;
    const iss = (tpp: FuzzTpp, software: string = KEY_DIRECTORY.software) =>
      `${tpp.organizationId}/${software}`;
    const kind = rng.weighted<Kind>([
      [5, "kid"],
      [3, "unknown-kid"],
      [2, "wrong-hash"],
      [2, "another-tpps-kid"],
      [2, "bad-directory"],
      [2, "hostile-iss"],
      [3, "x5t-kept"],
      [2, "x5t-unknown"],
      [2, "removed"],
    ]);
    switch (kind) {
      case "kid": {
        const kid = rng.pick(KEY_DIRECTORY.aKids);
        const withHash = rng.chance(0.3) ? { "x5t#S256": thumbprint(A.der) } : {};
        return send(
          ctx,
          `UK OB kid ${kid} only${withHash["x5t#S256"] ? " with its x5t#S256" : ""}`,
          "forward",
          A,
          ukOb(A, kid, iss(A), withHash),
        );
      }
      case "unknown-kid": {
        const kid = rng.pick([
          `rotated-${rng.int(1_000_000)}`,
          "",
          " ",
          "key-a1 ",
          "KEY-A1",
          "x".repeat(256),
        ]);
        return send(ctx, `UK OB unknown kid '${kid.slice(0, 20)}'`, "refuse", A, ukOb(A, kid, iss(A)));
      }
      case "wrong-hash":
        return send(
          ctx,
          "UK OB kid of A with B's x5t#S256",
          "refuse",
          A,
          ukOb(A, KEY_DIRECTORY.aKids[0], iss(A), { "x5t#S256": thumbprint(B.der) }),
        );
      case "another-tpps-kid":
        // B's key named, signed by A (over A's QWAC): the signature, the claims or the QWAC refuse it.
        return send(
          ctx,
          "UK OB naming TPP B's kid, signed by A",
          "refuse",
          A,
          ukOb(A, KEY_DIRECTORY.bKid, iss(B)),
        );
      case "bad-directory": {
        const behaviour = rng.pick(Object.values(KEY_DIRECTORY.bad));
        return send(
          ctx,
          `UK OB kid in a ${behaviour} directory`,
          "refuse",
          A,
          ukOb(A, KEY_DIRECTORY.aKids[0], iss(A, behaviour)),
        );
      }
      case "hostile-iss": {
        const hostile = rng.pick([
          `${A.organizationId}/../${B.organizationId}/fuzz`,
          `${A.organizationId}/fuzz%2f..`,
          `${A.organizationId}/@127.0.0.1:1`,
          `${A.organizationId}`,
          `/${A.organizationId}/fuzz`,
          `${A.organizationId}/fuzz?x=1`,
          `${A.organizationId}/${"s".repeat(65)}`,
        ]);
        return send(
          ctx,
          `UK OB iss '${hostile.slice(0, 40)}'`,
          "refuse",
          A,
          ukOb(A, KEY_DIRECTORY.aKids[0], hostile),
        );
      }
      case "x5t-kept":
        return send(
          ctx,
          "JAdES x5t#S256 only, the certificate kept in keys.files",
          "forward",
          A,
          jades(A, thumbprint(A.der)),
        );
      case "removed":
        return removed(ctx);
      case "x5t-unknown": {
        const untrusted = tpps.untrusted;
        const x5t = rng.chance(0.5) ? thumbprint(untrusted.der) : randomBytes(32).toString("base64url");
        return send(
          ctx,
          "JAdES x5t#S256 of a certificate never seen nor kept",
          "refuse",
          untrusted,
          jades(untrusted, x5t),
        );
      }
    }
  },
};

/**
 * A key the directory lists, then removes (or rotates away: a new kid in its place): forwarded while
 * listed; right after the removal either way (the gateway may still hold it); refused once its cache
 * time has passed. A fetch that listed it was asked before the removal and ended within
 * `keys.timeoutSeconds` (1 s) of it, so the key is stale at most TTL + 1 s after the removal.
 */
async function removed(ctx: CaseContext): Promise<void> {
  const { rng, tpps, keyDirectory } = ctx;
  const { A } = tpps;
  const software = `${KEY_DIRECTORY.removedPrefix}${ctx.caseIndex}`;
  const path = `/${A.organizationId}/${software}.jwks`;
  const kid = `gone-${ctx.caseIndex}`;
  const iss = `${A.organizationId}/${software}`;
  keyDirectory.publish(path, [{ kid, der: A.der }]);
  await send(ctx, `UK OB kid ${kid} while its JWKS lists it`, "forward", A, ukOb(A, kid, iss));
  const rotated = rng.chance(0.5);
  keyDirectory.publish(path, rotated ? [{ kid: `${kid}-next`, der: A.der }] : []);
  const how = rotated ? "rotated away" : "removed";
  if (rng.chance(0.5))
    await send(ctx, `UK OB kid ${kid} just ${how} (may still be cached)`, "any", A, ukOb(A, kid, iss));
  await new Promise((r) => setTimeout(r, (KEY_DIRECTORY.keyTtlSeconds + 1) * 1000 + 300));
  const after = rng.range(1, 3);
  for (let i = 0; i < after; i++)
    await send(
      ctx,
      `UK OB kid ${kid} ${how} from its JWKS ${KEY_DIRECTORY.keyTtlSeconds} s (keys.keyTtlSeconds) ago`,
      "refuse",
      A,
      ukOb(A, kid, iss),
    );
}
