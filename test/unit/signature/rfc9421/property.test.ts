/**
 * Properties of the RFC 9421 module: the parsers return a value or a Rejection on any input and
 * never throw; what we serialize we parse back identically; sign → verify round-trips over
 * arbitrary header values and component orders, and any change to a covered value is refused.
 * Long adversarial inputs are bounded by the size limits before the parser runs.
 */

import { generateKeyPairSync } from "node:crypto";
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
