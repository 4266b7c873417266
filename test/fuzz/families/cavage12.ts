/**
 * draft-cavage-12 as signers send it today: `hs2019` (the algorithm from the key: RSASSA-PSS
 * SHA-512, ECDSA SHA-512) and the `created`/`expires` parameters, signed as `(created)` and
 * `(expires)`, with and without Date (the fuzz gateway has `createdForDate` on). Valid ones must be
 * forwarded; times off the clock, expires passed or before created, malformed or repeated
 * parameters, a parameter changed after signing and a signed `(created)` without its parameter
 * must be refused; the same content signed again (PSS is randomised, so the bytes differ) may run
 * once only.
 */

import { constants, sign as cryptoSign } from "node:crypto";
import { buildSigningString } from "../../../src/signature/index.js";
import { getHeader, type RawRequest, removeHeader, serialize, setHeader } from "../request.js";
import type { ExpectedRequest, Family } from "../types.js";
import { type Valid, validSigned } from "./common.js";

/** The headers a Berlin Group signer covers, when the request carries them. */
const COVERED = ["digest", "x-request-id", "psu-id", "psu-ip-address", "tpp-redirect-uri"];

interface Resign {
  readonly algorithm: "hs2019" | "classic";
  readonly created?: number | string;
  readonly expires?: number | string;
  /** The pseudo-headers signed: `(created)`, `(expires)`, or both. */
  readonly pseudo: readonly string[];
  readonly withDate: boolean;
  /** Parameters as written, after signing (a change the signature does not cover, or a duplicate). */
  readonly rewrite?: (params: string) => string;
}

/** The request signed anew over (request-target), the pseudo-headers and the Berlin Group headers. */
function resigned(valid: Valid, spec: Resign): RawRequest {
  const request: RawRequest = { ...valid.request, headers: [...valid.request.headers] };
  if (!spec.withDate) removeHeader(request, "Date");
  const headers: Record<string, string> = {};
  for (const [name, value] of request.headers) headers[name.toLowerCase()] = value;
  const signed = [
    "(request-target)",
    ...spec.pseudo,
    ...(spec.withDate ? ["date"] : []),
    ...COVERED.filter((n) => headers[n] !== undefined),
  ];
  // The times as a verifier reads them from the parameters' text (an unreadable one is left out).
  const created = /^\d+$/.test(String(spec.created)) ? Number(spec.created) : undefined;
  const expiresText = String(spec.expires);
  const expires = /^\d+(\.\d+)?$/.test(expiresText) ? Math.floor(Number(expiresText)) : undefined;
  const signingString = buildSigningString(
    signed,
    { method: request.method, target: request.target, headers },
    {
      ...(created !== undefined ? { created } : {}),
      ...(expires !== undefined ? { expires } : {}),
      ...(expiresText.includes(".") ? { expiresText } : {}),
    },
  );
  const data = Buffer.from(typeof signingString === "string" ? signingString : "", "latin1");
  const key = valid.tpp.privateKey;
  const ec = key.asymmetricKeyType === "ec";
  const hs2019 = spec.algorithm === "hs2019";
  const signature = hs2019
    ? cryptoSign("sha512", data, ec ? key : { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 })
    : cryptoSign("sha256", data, key);
  const keyId = /keyId="([^"]*)"/.exec(getHeader(valid.request, "Signature")!)![1]!;
  let params = `keyId="${keyId}",algorithm="${hs2019 ? "hs2019" : ec ? "ecdsa-sha256" : "rsa-sha256"}"`;
  if (spec.created !== undefined) params += `,created=${spec.created}`;
  if (spec.expires !== undefined) params += `,expires=${spec.expires}`;
  params += `,headers="${signed.join(" ")}"`;
  if (spec.rewrite) params = spec.rewrite(params);
  setHeader(request, "Signature", `${params},signature="${signature.toString("base64")}"`);
  return request;
}

export const cavage12: Family = {
  name: "cavage-12",
  weight: 2,
  async run(ctx) {
    const { rng } = ctx;
    const valid = await validSigned(ctx, { tpp: rng.pick([ctx.tpps.A, ctx.tpps.EC]) });
    const now = Math.floor(Date.now() / 1000);
    const algorithm = rng.pick(["hs2019", "hs2019", "classic"] as const);
    const withDate = rng.chance(0.5);
    const good: Resign = rng.pick<Resign>([
      { algorithm, created: now, pseudo: ["(created)"], withDate },
      { algorithm, created: now - 5, expires: now + 300, pseudo: ["(created)", "(expires)"], withDate },
      // Subsecond expires (draft-cavage-12 2.1.5), signed as written.
      { algorithm, created: now, expires: `${now + 120}.25`, pseudo: ["(created)", "(expires)"], withDate },
      // created sent but not signed, with Date: judged against the clock, the signature still holds.
      { algorithm, created: now, pseudo: [], withDate: true },
    ]);
    const expected = (label: string, expect: ExpectedRequest["expect"]): ExpectedRequest => ({
      tag: valid.tag,
      requestId: valid.requestId,
      label: `draft-cavage-12 ${algorithm}${withDate ? "" : " without Date"}: ${label}: ${valid.describe}`,
      expect,
      tpp: valid.tpp,
    });
    const bad: [string, Resign][] = [
      ["created 5 minutes ahead", { ...good, created: now + 300, pseudo: ["(created)"] }],
      ["created 5 minutes ago", { ...good, created: now - 300, pseudo: ["(created)"] }],
      [
        "expired a minute ago",
        { ...good, created: now - 5, expires: now - 60, pseudo: ["(created)", "(expires)"] },
      ],
      [
        "expires before created",
        { ...good, created: now, expires: now - 1, pseudo: ["(created)", "(expires)"] },
      ],
      [
        "(created) signed without a created parameter",
        { ...good, created: undefined, pseudo: ["(created)"] } as Resign,
      ],
      [
        "(expires) signed without an expires parameter",
        { ...good, expires: undefined, pseudo: ["(expires)"] } as Resign,
      ],
      [
        "created not a whole number",
        { ...good, created: rng.pick([`${now}.5`, "-1", "1e9", "0x10", '""', "99999999999999999999"]) },
      ],
      [
        "created changed by a second after signing",
        { ...good, rewrite: (p) => p.replace(/created=(\d+)/, (_m, c) => `created=${Number(c) + 1}`) },
      ],
      ["created twice", { ...good, rewrite: (p) => p.replace(/,created=(\d+)/, (m) => `${m}${m}`) }],
      ["no Date and nothing signed for it", { ...good, withDate: false, pseudo: [] }],
    ];
    const choice = rng.int(4);
    if (choice === 0) {
      // A valid one, then the same content signed again: once only.
      const first = serialize(resigned(valid, good));
      const again = serialize(resigned(valid, good));
      await ctx.exchange({ requests: [expected("valid", "forward")], writes: [{ data: first }] });
      await ctx.exchange({
        requests: [expected("signed again (a replay)", "any")],
        writes: [{ data: again }],
      });
      return;
    }
    if (choice === 1) {
      await ctx.exchange({
        requests: [expected("valid", "forward")],
        writes: [{ data: serialize(resigned(valid, good)) }],
      });
      return;
    }
    const [label, spec] = rng.pick(bad);
    // Where the change makes a parameter the signature does not cover (created sent, unsigned,
    // within the window) the gateway may accept it; everything else must never reach the bank.
    const harmless = label === "created changed by a second after signing" && good.pseudo.length === 0;
    await ctx.exchange({
      requests: [expected(label, harmless ? "any" : "refuse")],
      writes: [{ data: serialize(resigned(valid, spec)) }],
    });
  },
};
