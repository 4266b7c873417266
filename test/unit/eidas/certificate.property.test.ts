/**
 * The header and the certificate are attacker input: whatever arrives, decodeCertificateHeader and
 * parseCertificate return a value or a Rejection — they never throw and never hang.
 */

import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DerError } from "../../../src/asn1/der.js";
import {
  encodeInteger,
  encodeOctetString,
  encodeOid,
  encodeSequence,
  encodeUtf8String,
} from "../../../src/asn1/writer.js";
import {
  decodeCertificateHeader,
  type ParsedCertificate,
  parseCertificate,
} from "../../../src/eidas/certificate.js";
import { decodeQcStatements, PSD2_ROLE_OID, QC_STATEMENT } from "../../../src/eidas/qcstatements.js";
import { isRejection, type Rejection } from "../../../src/errors.js";
import { encodeTlvTree, mutateTree, mutationsArbitrary, parseTlv } from "../../helpers/der-mutation.js";
import { INTEROP_DIR } from "../../helpers/interop-corpus.js";

const CERTS = new URL("certs/", INTEROP_DIR);
const REAL = [
  "ext-ing-sandbox-qsealc.pem",
  "ext-microsec-eszigno-test-psd2.pem",
  "ext-adorsys-qsealc-lf-issuer.pem",
].map((file) => new Uint8Array(new X509Certificate(readFileSync(new URL(file, CERTS))).raw));

// A throw fails the property with the input that caused it; these check the shape of what came back.
function expectDerOrRejection(result: Uint8Array | Rejection): void {
  if (isRejection(result)) expect(["CERTIFICATE_MISSING", "CERTIFICATE_INVALID"]).toContain(result.code);
  else expect(result).toBeInstanceOf(Uint8Array);
}

function expectParsedOrRejection(result: ParsedCertificate | Rejection): void {
  if (isRejection(result)) expect(result.code).toBe("CERTIFICATE_INVALID");
  else expect(typeof result.sha256Fingerprint).toBe("string");
}

function decodeAndParse(header: string): void {
  const der = decodeCertificateHeader(header);
  expectDerOrRejection(der);
  if (!isRejection(der)) expectParsedOrRejection(parseCertificate(der));
}

type Mutation =
  | { kind: "flip"; at: number; mask: number }
  | { kind: "set"; at: number; value: number }
  | { kind: "insert"; at: number; value: number }
  | { kind: "delete"; at: number; count: number }
  | { kind: "truncate"; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
);

function mutate(der: Uint8Array, mutations: readonly Mutation[]): Uint8Array {
  let bytes = [...der];
  for (const m of mutations) {
    const at = bytes.length === 0 ? 0 : m.at % bytes.length;
    if (m.kind === "flip") bytes[at] = (bytes[at] ?? 0) ^ m.mask;
    else if (m.kind === "set") bytes[at] = m.value;
    else if (m.kind === "insert") bytes.splice(at, 0, m.value);
    else if (m.kind === "delete") bytes.splice(at, m.count);
    else bytes = bytes.slice(0, at);
  }
  return Uint8Array.from(bytes);
}

describe("decodeCertificateHeader never throws", () => {
  it("on arbitrary strings", () => {
    fc.assert(fc.property(fc.string({ maxLength: 400 }), decodeAndParse), { numRuns: 1000 });
  });

  it("on arbitrary full-Unicode strings", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), decodeAndParse), { numRuns: 500 });
  });

  it("on strings made of the pieces real headers are made of", () => {
    const piece = fc.constantFrom(
      "-----BEGIN CERTIFICATE-----",
      "-----END CERTIFICATE-----",
      "-----BEGIN",
      "-----",
      "MII",
      "MIIB",
      "AAAA",
      "=",
      "==",
      "+",
      "/",
      "%",
      "%0A",
      "%2B",
      "%3D",
      "%2",
      " ",
      "\n",
      "\r\n",
      "LS0tLS1CRUdJTi",
      "MA",
      "MAA=",
      "_",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => decodeAndParse(pieces.join(""))),
      { numRuns: 1000 },
    );
  });

  it("on mutated base64 and PEM of real certificates", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...REAL),
        fc.boolean(),
        fc.array(fc.record({ at: fc.nat(), ch: fc.string({ minLength: 0, maxLength: 3 }) }), {
          minLength: 1,
          maxLength: 4,
        }),
        (der, pem, edits) => {
          const b64 = Buffer.from(der).toString("base64");
          let text = pem ? `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----` : b64;
          for (const e of edits) {
            const at = e.at % (text.length + 1);
            text = text.slice(0, at) + e.ch + text.slice(at + 1);
          }
          decodeAndParse(text);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("decodes every header form to the same DER", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...REAL),
        fc.record({
          width: fc.constantFrom(0, 64, 76),
          lineBreak: fc.constantFrom("\n", "\r\n", " "),
          armour: fc.boolean(),
          urlEncode: fc.boolean(),
          base64Again: fc.boolean(),
        }),
        (der, form) => {
          const b64 = Buffer.from(der).toString("base64");
          const lines = form.width === 0 ? [b64] : (b64.match(new RegExp(`.{1,${form.width}}`, "g")) ?? []);
          let text = lines.join(form.lineBreak);
          if (form.armour) {
            text = `-----BEGIN CERTIFICATE-----${form.lineBreak}${text}${form.lineBreak}-----END CERTIFICATE-----`;
          }
          if (form.urlEncode) text = encodeURIComponent(text);
          else if (form.base64Again) text = Buffer.from(text).toString("base64");
          const decoded = decodeCertificateHeader(text);
          expect(isRejection(decoded) ? decoded.text : Buffer.from(decoded).equals(der)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("parseCertificate never throws", () => {
  it("on arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) =>
        expectParsedOrRejection(parseCertificate(bytes)),
      ),
      { numRuns: 1000 },
    );
  });

  it("on arbitrary bytes inside a SEQUENCE (past the first tag check)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) =>
        expectParsedOrRejection(parseCertificate(encodeSequence(bytes))),
      ),
      { numRuns: 500 },
    );
  });

  it("on real certificates with bytes flipped, set, inserted, deleted or cut off", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...REAL),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        (der, mutations) => {
          expectParsedOrRejection(parseCertificate(mutate(der, mutations)));
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe("structure-aware: real certificates mutated along their DER tree", () => {
  it("parseCertificate returns a certificate or CERTIFICATE_INVALID", () => {
    fc.assert(
      fc.property(fc.constantFrom(...REAL), mutationsArbitrary(4), (der, mutations) => {
        expectParsedOrRejection(parseCertificate(encodeTlvTree(mutateTree(parseTlv(der), mutations))));
      }),
      { numRuns: 2000 },
    );
  });

  it("decodeCertificateHeader and parseCertificate do, in base64, PEM and URL-encoded PEM with stray escapes", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...REAL),
        mutationsArbitrary(2),
        fc.constantFrom("base64", "pem", "url"),
        fc.array(
          fc.record({
            at: fc.nat(),
            text: fc.constantFrom("%", "%4", "%zz", "%25", "%0A%0A", "-----", "\u0000", "="),
          }),
          { maxLength: 2 },
        ),
        (der, mutations, shape, edits) => {
          const b64 = Buffer.from(encodeTlvTree(mutateTree(parseTlv(der), mutations))).toString("base64");
          const pem = `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----`;
          let text = shape === "base64" ? b64 : shape === "pem" ? pem : encodeURIComponent(pem);
          for (const e of edits) {
            const at = e.at % (text.length + 1);
            text = text.slice(0, at) + e.text + text.slice(at);
          }
          decodeAndParse(text);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("a parsed certificate's fields are those of the bytes: what parses twice parses the same", () => {
    fc.assert(
      fc.property(fc.constantFrom(...REAL), mutationsArbitrary(2), (der, mutations) => {
        const bytes = encodeTlvTree(mutateTree(parseTlv(der), mutations));
        const first = parseCertificate(bytes);
        const second = parseCertificate(Uint8Array.from(bytes));
        if (isRejection(first)) expect(isRejection(second) && second.text).toBe(first.text);
        else
          expect(isRejection(second) ? second.text : second.sha256Fingerprint).toBe(first.sha256Fingerprint);
      }),
      { numRuns: 300 },
    );
  });
});

describe("decodeQcStatements throws nothing but DerError", () => {
  // Random DER trees built from the pieces a qcStatements extension holds.
  const tree = fc.letrec<{ node: Uint8Array }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom(
        encodeOid(QC_STATEMENT.PSD2QcType),
        encodeOid(QC_STATEMENT.QcType),
        encodeOid(QC_STATEMENT.QcCompliance),
        encodeOid(PSD2_ROLE_OID.PSP_AI),
        encodeOid("1.2.3"),
        encodeUtf8String("PSP_PI"),
        encodeUtf8String("Ærø"),
        encodeInteger(-1),
        encodeOctetString(Uint8Array.of(1)),
      ),
      fc.uint8Array({ maxLength: 6 }),
      fc.array(tie("node"), { maxLength: 4 }).map((items) => encodeSequence(...items)),
    ),
  }));

  it("on random trees of statement-like elements", () => {
    fc.assert(
      fc.property(tree.node, (bytes) => {
        try {
          const decoded = decodeQcStatements(bytes);
          expect(Array.isArray(decoded.psd2Roles)).toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(DerError);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
