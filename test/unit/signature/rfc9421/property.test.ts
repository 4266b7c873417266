/**
 * Properties of the RFC 9421 module: the parsers return a value or a Rejection on any input and
 * never throw; what we serialize we parse back identically; sign → verify round-trips over
 * arbitrary header values and component orders, and any change to a covered value is refused.
 * Long adversarial inputs are bounded by the size limits before the parser runs. A response bound to
 * its request in the FAPI 2.0 full profile (`;req`, `;req;key`) verifies in any component and
 * parameter order, and a change to anything it binds, or a binding to the wrong member, is refused.
 */

import { createHash, generateKeyPairSync } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import {
  component,
  parseContentDigest,
  parseSignatures,
  type RequestMessage,
  sign,
  signatureBase,
  verify,
  verifyFapiRequest,
  verifyFapiResponse,
} from "../../../../src/signature/rfc9421/index.js";
import {
  type BareItem,
  Decimal,
  parseDictionary,
  serializeDictionary,
  Token,
} from "../../../../src/signature/rfc9421/structured-fields.js";

const RUNS = { numRuns: 300 };

/** Strings made of the characters these headers are built from, so that the parser goes deep. */
const sfChars = fc.constantFrom(...'abcxyz019=,;:()"\\ ?*-._/+@ \t'.split(""));
const sfLike = fc.oneof(
  fc.string({ unit: sfChars, maxLength: 80 }),
  fc.string({ maxLength: 80 }),
  fc.string({ unit: "binary", maxLength: 40 }),
);

describe("parsers never throw", () => {
  it("Signature-Input / Signature on arbitrary strings", () => {
    fc.assert(
      fc.property(sfLike, sfLike, (input, signature) => {
        const result = parseSignatures(input, signature);
        expect(isRejection(result) || Array.isArray(result)).toBe(true);
      }),
      RUNS,
    );
  });

  it("Content-Digest on arbitrary strings", () => {
    fc.assert(
      fc.property(sfLike, (raw) => {
        const result = parseContentDigest(raw);
        expect(isRejection(result) || Array.isArray(result)).toBe(true);
      }),
      RUNS,
    );
  });

  it("the signature base on arbitrary component names, parameters and header values", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            sfLike,
            fc.dictionary(
              fc.constantFrom("req", "sf", "key", "name", "bs", "x"),
              fc.oneof(fc.boolean(), sfLike),
            ),
          ),
          { maxLength: 5 },
        ),
        fc.dictionary(fc.string({ maxLength: 10 }), sfLike),
        sfLike,
        (components, headers, uri) => {
          const ids = components.map(([name, params]) => component(name, params));
          const result = signatureBase(ids, "()", { method: "GET", targetUri: uri, headers });
          expect(isRejection(result) || typeof result === "string").toBe(true);
        },
      ),
      RUNS,
    );
  });

  it("100 KB inputs are refused by size before parsing", () => {
    const big = `sig1=(${'"a" '.repeat(30_000)})`;
    const result = parseSignatures(big, "sig1=:AQID:");
    expect(isRejection(result) && result.text).toMatch(/at most 4096/);
  });
});

/** Items our serializer can write (RFC 8941 ranges), for the round trip. */
const key = fc.stringMatching(/^[a-z*][a-z0-9_\-.*]{0,8}$/);
const bareItem: fc.Arbitrary<BareItem> = fc.oneof(
  fc.integer({ min: -999_999_999_999_999, max: 999_999_999_999_999 }),
  fc.string({ unit: fc.constantFrom(...' !#az09"\\~'.split("")), maxLength: 20 }),
  fc.boolean(),
  fc.stringMatching(/^[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]{0,10}$/).map((t) => new Token(t)),
  fc.integer({ min: -999_999, max: 999_999 }).map((n) => new Decimal(n / 1000)),
  fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from(b)),
);
const params = fc.array(fc.tuple(key, bareItem), { maxLength: 3 }).map((entries) => new Map(entries));
const item = fc.record({ value: bareItem, params });
const member = fc.oneof(item, fc.record({ items: fc.array(item, { maxLength: 4 }), params }));

describe("structured fields round-trip", () => {
  it("serialize → parse → serialize is the identity", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, member), { minLength: 1, maxLength: 5 }), (entries) => {
        const text = serializeDictionary(new Map(entries));
        const parsed = parseDictionary(text, "test");
        if (isRejection(parsed)) throw new Error(`${text}: ${parsed.text}`);
        expect(serializeDictionary(parsed)).toBe(text);
      }),
      RUNS,
    );
  });
});

const ed = generateKeyPairSync("ed25519");
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
/** Field values as Node hands them: visible ASCII and inner spaces, no leading or trailing space. */
const fieldValue = fc
  .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 })
  .map((s) => s.trim());
const headerName = fc.stringMatching(/^x-[a-z0-9-]{1,12}$/);

describe("sign → verify", () => {
  it("round-trips over arbitrary covered headers, and a changed value does not verify", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(headerName, fieldValue), {
          selector: ([n]) => n,
          minLength: 1,
          maxLength: 6,
        }),
        fc.constantFrom(ed, ec),
        fc.nat(),
        (fields, pair, pick) => {
          const headers = Object.fromEntries(fields);
          const message: RequestMessage = { method: "PUT", targetUri: "https://bank.example/x?y=1", headers };
          const components = ["@method", "@target-uri", ...fields.map(([n]) => n)];
          const signed = sign({
            components,
            params: { created: 1_700_000_000, keyid: "k" },
            message,
            privateKey: pair.privateKey,
          });
          if (isRejection(signed)) throw new Error(signed.text);
          const all = parseSignatures(signed.signatureInput, signed.signature);
          if (isRejection(all)) throw new Error(all.text);
          const parsed = all[0];
          const base = signatureBase(parsed!.components, parsed!.serializedParams, message) as string;
          expect(base).toBe(signed.base);
          expect(verify(parsed!, base, pair.publicKey)).toBe(true);
          const [name, value] = fields[pick % fields.length]!;
          const changed = { ...message, headers: { ...headers, [name]: `${value}!` } };
          const changedBase = signatureBase(parsed!.components, parsed!.serializedParams, changed) as string;
          expect(isRejection(verify(parsed!, changedBase, pair.publicKey))).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("a FAPI request signed by ours verifies by ours for any body and clock", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.integer({ min: 1_500_000_000_000, max: 2_500_000_000_000 }),
        (body, now) => {
          const message: RequestMessage = {
            method: "POST",
            targetUri: "https://bank.example/v1/payments",
            headers: { "content-length": String(body.length) },
          };
          // Content-Digest only when there is a body, as FAPI asks.
          const headers =
            body.length > 0
              ? { ...message.headers, "content-digest": `sha-256=:${Buffer.from(body).toString("base64")}:` }
              : message.headers;
          const m = { ...message, headers };
          const signed = sign({
            components:
              body.length > 0 ? ["@method", "@target-uri", "content-digest"] : ["@method", "@target-uri"],
            params: { created: Math.floor(now / 1000), tag: "fapi-2-request" },
            message: m,
            privateKey: ec.privateKey,
          });
          if (isRejection(signed)) throw new Error(signed.text);
          const result = verifyFapiRequest(
            {
              ...m,
              headers: { ...headers, "signature-input": signed.signatureInput, signature: signed.signature },
            },
            { publicKey: ec.publicKey, now },
          );
          expect(isRejection(result) ? result.text : "ok").toBe("ok");
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("`;req` response components (FAPI 2.0 full profile)", () => {
  const ed = generateKeyPairSync("ed25519");
  const NOW = 1_795_000_000_000;
  const created = Math.floor(NOW / 1000);
  const BODY = '{"a":1}';
  const DIGEST = `sha-256=:${createHash("sha256").update(BODY).digest("base64")}:`;

  /** A signed request with its FAPI signature under `label` and an unrelated member `other`. */
  function signedRequest(label: string, withDigest: boolean, otherFirst: boolean): RequestMessage {
    const headers: Record<string, string> = { host: "bank.example", "x-request-id": "r-1" };
    if (withDigest) headers["content-digest"] = DIGEST;
    const r = { method: "POST", targetUri: "https://bank.example/v1/payments?x=1", headers };
    const fapi = sign({
      components: ["@method", "@target-uri", "x-request-id"],
      params: { created, tag: "fapi-2-request" },
      message: r,
      privateKey: ed.privateKey,
      label,
    });
    const other = sign({
      components: ["@method"],
      params: { created, tag: "audit" },
      message: r,
      privateKey: ed.privateKey,
      label: "other",
    });
    if (isRejection(fapi) || isRejection(other)) throw new Error("request not signed");
    const [first, second] = otherFirst ? [other, fapi] : [fapi, other];
    return {
      ...r,
      headers: {
        ...headers,
        "signature-input": `${first.signatureInput}, ${second.signatureInput}`,
        signature: `${first.signature}, ${second.signature}`,
      },
    };
  }

  type Mutation =
    | "none"
    | "drop-bound"
    | "key-other"
    | "request-digest"
    | "request-signature"
    | "request-input"
    | "request-method";

  it("bound in any order and parameter order, the answer verifies; any change to what it binds does not", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("sig1", "req-a", "x.9"),
        fc.boolean(),
        fc.boolean(),
        fc.subarray(['"@authority";req', '"@path";req', '"x-request-id";req']),
        fc.constantFrom<Mutation>(
          "none",
          "drop-bound",
          "key-other",
          "request-digest",
          "request-signature",
          "request-input",
          "request-method",
        ),
        fc.nat(),
        fc.boolean(),
        (label, withDigest, keyFirst, extras, mutation, seed, otherFirst) => {
          const request = signedRequest(label, withDigest, otherFirst);
          const key = (name: string, l: string) =>
            keyFirst ? component(name, { key: l, req: true }) : component(name, { req: true, key: l });
          const bound = [
            component("@method", { req: true }),
            component("@target-uri", { req: true }),
            ...(withDigest ? [component("content-digest", { req: true })] : []),
            key("signature", label),
            key("signature-input", label),
          ];
          const dropped = seed % bound.length;
          const label2 = mutation === "key-other" ? "other" : label;
          const required = bound
            .map((c) => (c.params.has("key") ? key(c.name, label2) : c))
            .filter((_, i) => mutation !== "drop-bound" || i !== dropped);
          const extraIds = extras.map((e) => component(/^"([^"]+)"/.exec(e)![1]!, { req: true }));
          const all = [...required, ...extraIds, component("@status"), component("content-digest")];
          // A stable shuffle from the seed: any order is as good.
          const order = all.map((c, i) => [((seed >>> (i % 24)) ^ (i * 2654435761)) >>> 0, c] as const);
          order.sort((a, b) => a[0] - b[0]);
          const response = {
            status: 201,
            headers: { "content-length": String(BODY.length), "content-digest": DIGEST },
          };
          const signed = sign({
            components: order.map(([, c]) => c),
            params: { created, tag: "fapi-2-response" },
            message: response,
            request,
            privateKey: ed.privateKey,
          });
          if (isRejection(signed)) throw new Error(signed.text);
          const answer = {
            ...response,
            headers: {
              ...response.headers,
              "signature-input": signed.signatureInput,
              signature: signed.signature,
            },
          };
          const h = request.headers as Record<string, string>;
          const altered: RequestMessage =
            mutation === "request-digest" && withDigest
              ? { ...request, headers: { ...h, "content-digest": "sha-256=:AAAA:" } }
              : mutation === "request-signature"
                ? {
                    ...request,
                    headers: { ...h, signature: h.signature!.replace(/=:[A-Za-z0-9+/]{4}/g, "=:AAAA") },
                  }
                : mutation === "request-input"
                  ? {
                      ...request,
                      headers: {
                        ...h,
                        "signature-input": h["signature-input"]!.replaceAll(
                          `created=${created}`,
                          `created=${created - 1}`,
                        ),
                      },
                    }
                  : mutation === "request-method"
                    ? { ...request, method: "PUT" }
                    : request;
          const result = verifyFapiResponse(answer, altered, { publicKey: ed.publicKey, now: NOW });
          const untouched = mutation === "none" || (mutation === "request-digest" && !withDigest);
          if (untouched) expect(isRejection(result) ? result.text : "ok").toBe("ok");
          else expect(isRejection(result) && result.code, `${mutation}`).toBe("SIGNATURE_INVALID");
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a request's Signature and Signature-Input of any shape: a verdict, never a throw", () => {
    fc.assert(
      fc.property(sfLike, sfLike, (input, signature) => {
        const request = {
          method: "GET",
          targetUri: "https://bank.example/",
          headers: { "signature-input": input, signature },
        };
        const response = {
          status: 200,
          headers: {
            "signature-input": `sig1=("@status" "signature";req;key="sig1");created=${created};tag="fapi-2-response"`,
            signature: "sig1=:AAAA:",
          },
        };
        const result = verifyFapiResponse(response, request, { publicKey: ed.publicKey, now: NOW });
        expect(isRejection(result)).toBe(true);
      }),
      RUNS,
    );
  });
});
