/**
 * Whatever arrives in TPP-Signature-Certificate, the real TppVerifier (dev-PKI trust store, CRL and
 * register) answers a trusted TPP or a Rejection with a certificate code: it never throws, never
 * returns a promise that rejects, never answers INTERNAL_SERVER_ERROR, and the same value asked
 * again is a synchronous cache hit that costs no parse.
 *
 * The inputs are arbitrary text and bytes, and real certificates mutated along their DER structure
 * (test/helpers/der-mutation.ts) — sent as they are, and signed again with the issuing CA's key so
 * that a mutation gets past the signature check to the chain, revocation, register and key policy.
 */

import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki, type IssuedCertificate } from "@psd2-gateway/dev-pki";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { TppRegister } from "../../../src/eidas/register.js";
import { TppVerifier, type TrustedTpp } from "../../../src/eidas/tpp-verifier.js";
import type { ValidationReport } from "../../../src/eidas/validation-report.js";
import { type ErrorCode, isRejection, type Rejection } from "../../../src/errors.js";
import { loadTrustMaterial, type TrustMaterial } from "../../../src/trust/trust-material.js";
import {
  encodeTlvTree,
  mutateTree,
  mutationsArbitrary,
  parseTlv,
  type Tlv,
} from "../../helpers/der-mutation.js";
import { rebuild, TBS } from "../../helpers/rebuilt-certificate.js";

const CERTIFICATE_CODES: readonly ErrorCode[] = [
  "CERTIFICATE_INVALID",
  "CERTIFICATE_EXPIRED",
  "CERTIFICATE_REVOKED",
  "CERTIFICATE_BLOCKED",
  "CERTIFICATE_MISSING",
];

let pki: DevPki;
let trust: TrustMaterial;
let bases: IssuedCertificate[];
/** DER of certificates the issuing CA signed: RSA, EC and Ed25519 keys, so every key reader is reached. */
let issued: Uint8Array[];

beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-verifier-property-")));
  trust = loadTrustMaterial(pki.paths.trustDir);
  bases = [
    pki.tppA.qseal,
    pki.tppB.qseal,
    pki.tppA.qwac,
    pki.revoked,
    pki.expired,
    pki.unregistered,
    pki.untrusted,
    pki.gatewayTls,
    pki.issuingCa,
  ];
  const withKey = (type: "ec" | "ed25519") =>
    rebuild(
      pki.tppA.qseal.der,
      ({ tbs }) => {
        const key = generateKeyPairSync(type as "ec", { namedCurve: "P-256" }).publicKey;
        tbs.children![TBS.subjectPublicKeyInfo] = parseTlv(key.export({ format: "der", type: "spki" }));
      },
      pki.issuingCa.privateKey,
    );
  issued = [
    ...[pki.tppA.qseal, pki.tppB.qseal, pki.tppA.qwac, pki.revoked, pki.unregistered].map((c) => c.der),
    withKey("ec"),
    withKey("ed25519"),
  ];
});

function newVerifier(registerMaxAgeMs = 3_600_000, loaded = true) {
  const t = Date.now();
  const register = new TppRegister(registerMaxAgeMs, () => t);
  if (loaded) {
    register.replace(
      [pki.tppA, pki.tppB].map((tpp) => ({
        organizationIdentifier: tpp.organizationId,
        name: tpp.name,
        roles: [...tpp.roles],
        status: "authorised",
      })),
      "test",
    );
  }
  return new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    register,
    now: () => t,
    cacheTtlMs: 60_000,
    failureTtlMs: 10_000,
    maxEntries: 10_000,
    onReport: (report) => {
      lastReport = report;
    },
  });
}

/** The report of the latest judgement. */
let lastReport: ValidationReport | undefined;
/** Every text in a report is clipped: its size does not follow what the sender put in. */
const MAX_REPORT_JSON = 24 * 1024;

/** The invariant, checked for one header value on a verifier with a fresh register. */
async function checkVerdict(verifier: TppVerifier, header: string): Promise<TrustedTpp | Rejection> {
  // A throw or a rejected promise fails the property with the input that caused it.
  lastReport = undefined;
  const first = await verifier.verify(header);
  // Each judgement has its report, bounded, and the verdict is the report's (a value fast-check
  // repeats is a cache hit: the verdict of the report made before).
  const report = lastReport as ValidationReport | undefined;
  expect(first.reportId).toEqual(expect.any(String));
  if (report) expect(report.id).toBe(first.reportId);
  expect(JSON.stringify(report ?? {}).length).toBeLessThan(MAX_REPORT_JSON);
  if (isRejection(first)) {
    expect(CERTIFICATE_CODES).toContain(first.code);
    expect(first.text.length).toBeGreaterThan(0);
    if (report) expect(report.refusal).toMatchObject({ code: first.code, text: first.text });
    if (report) expect(report.indication).not.toBe("TOTAL_PASSED");
  } else {
    if (report) expect(report.indication).toBe("TOTAL_PASSED");
    expect(typeof first.identity.organizationId).toBe("string");
    expect(first.publicKey.type).toBe("public");
  }
  const before = verifier.stats;
  const again = verifier.verify(header);
  expect(again).toBe(first);
  expect(verifier.stats).toMatchObject({ hits: before.hits + 1, misses: before.misses });
  return first;
}

type Form = "base64" | "pem" | "urlEncodedPem";

function headerOf(der: Uint8Array, form: Form): string {
  const b64 = Buffer.from(der).toString("base64");
  if (form === "base64") return b64;
  const pem = `-----BEGIN CERTIFICATE-----\n${b64.replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
  return form === "pem" ? pem : encodeURIComponent(pem);
}

/** AlgorithmIdentifiers: ones native TBS verification takes, and ones it hands to X509Certificate. */
const signatureAlgorithm = fc.constantFrom(
  ...[
    "300d06092a864886f70d01010b0500", // sha256WithRSAEncryption
    "300a06082a8648ce3d040302", // ecdsa-with-SHA256
    "300506032b6570", // Ed25519
    "300b06092a864886f70d01010a", // RSASSA-PSS without parameters
    "3005060329010a", // 1.1.1.10, unknown
  ].map((hex) => Uint8Array.from(Buffer.from(hex, "hex"))),
);

const hex = (h: string) => Uint8Array.from(Buffer.from(h, "hex"));

function spki(algorithm: Uint8Array, key: Uint8Array): Uint8Array {
  return encodeTlvTree({
    tag: 0x30,
    children: [parseTlv(algorithm), { tag: 0x03, content: Uint8Array.of(0, ...key) }],
  });
}

function integer(content: Uint8Array): Uint8Array {
  return encodeTlvTree({ tag: 0x02, content });
}

/** SubjectPublicKeyInfos built from the values key readers get wrong: odd points, curves and RSA numbers. */
const awkwardKey: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "06082a8648ce3d030107", // prime256v1
        "06052b81040022", // secp384r1
        "06052b8104000a", // secp256k1
        "06092b2403030208010107", // brainpoolP256r1
        "0603290101", // unknown
        "3003020101", // explicit parameters
        "0500",
      ),
      fc.oneof(
        fc.constantFrom(hex("00"), hex(""), hex("04"), hex("0400"), hex("06")),
        fc
          .tuple(fc.constantFrom(2, 3, 4, 6, 7), fc.uint8Array({ minLength: 0, maxLength: 130 }))
          .map(([form, rest]) => Uint8Array.of(form, ...rest)),
      ),
    )
    .map(([curve, point]) =>
      spki(
        encodeTlvTree({ tag: 0x30, children: [parseTlv(hex("06072a8648ce3d0201")), parseTlv(hex(curve))] }),
        point,
      ),
    ),
  fc
    .tuple(
      fc.oneof(
        fc.constantFrom(hex(""), hex("00"), hex("ff"), hex("0100"), hex("00ff")),
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
      ),
      fc.constantFrom(
        hex(""),
        hex("00"),
        hex("01"),
        hex("02"),
        hex("03"),
        hex("010001"),
        hex("ff"),
        hex("00010001"),
      ),
      fc.constantFrom(
        "300d06092a864886f70d0101010500",
        "300b06092a864886f70d010101",
        "300b06092a864886f70d01010a",
      ),
    )
    .map(([n, e, algorithm]) =>
      spki(
        hex(algorithm),
        encodeTlvTree({ tag: 0x30, content: Uint8Array.of(...integer(n), ...integer(e)) }),
      ),
    ),
  fc
    .tuple(
      fc.constantFrom(
        "300506032b6570",
        "300506032b6571",
        "300506032b656e",
        "300506032b656f",
        "300706032b65700500",
      ),
      fc.uint8Array({ maxLength: 64 }),
    )
    .map(([algorithm, key]) => spki(hex(algorithm), key)),
);

const form = fc.constantFrom<Form>("base64", "pem", "urlEncodedPem");

/** Text edits on a header: junk around or inside PEM, stray and broken % escapes, cut-offs. */
const textEdit = fc.record({
  at: fc.nat(),
  insert: fc.oneof(
    fc.constantFrom(
      "%",
      "%G1",
      "%0",
      "%%",
      "%00",
      "%ZZ",
      "-----END CERTIFICATE-----",
      "-----BEGIN CERTIFICATE-----",
    ),
    fc.constantFrom("\u0000", "\u00ff", " ", "\r\n", "=", "==", "*", "é", "\ud800"),
    fc.string({ maxLength: 4 }),
  ),
  remove: fc.integer({ min: 0, max: 3 }),
});

describe("TppVerifier on hostile TPP-Signature-Certificate values", () => {
  it("on arbitrary text", async () => {
    const verifier = newVerifier();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 300 })),
        async (header) => {
          await checkVerdict(verifier, header);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("on base64 of arbitrary bytes, bare and inside a SEQUENCE", async () => {
    const verifier = newVerifier();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 800 }), fc.boolean(), async (bytes, wrap) => {
        const der = wrap ? encodeTlvTree({ tag: 0x30, content: bytes }) : bytes;
        await checkVerdict(verifier, Buffer.from(der).toString("base64"));
      }),
      { numRuns: 500 },
    );
  });

  it("on real certificates mutated along their DER structure, in every header form", async () => {
    const verifier = newVerifier();
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        mutationsArbitrary(3),
        form,
        fc.array(textEdit, { maxLength: 2 }),
        async (which, mutations, shape, edits) => {
          const base = bases[which % bases.length]!;
          let header = headerOf(encodeTlvTree(mutateTree(parseTlv(base.der), mutations)), shape);
          for (const e of edits) {
            const at = e.at % (header.length + 1);
            header = header.slice(0, at) + e.insert + header.slice(at + e.remove);
          }
          await checkVerdict(verifier, header);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("on mutated certificates signed again by the trusted issuing CA", async () => {
    const verifier = newVerifier();
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        mutationsArbitrary(2),
        fc.option(signatureAlgorithm, { freq: 2 }),
        async (which, mutations, algorithm) => {
          // Only what the issuing CA issued: a mutation then reaches everything after the signature check.
          const der = rebuild(
            issued[which % issued.length]!,
            (parts) => {
              Object.assign(parts.tbs, mutateTree(parts.tbs, mutations));
              // The same algorithm named inside and outside: the verifier must get to checking it.
              if (algorithm) {
                const node = parseTlv(algorithm);
                parts.algorithm.children = structuredClone(node.children);
                if (parts.tbs.children?.[TBS.signature]?.tag === 0x30)
                  parts.tbs.children[TBS.signature] = node;
              }
            },
            pki.issuingCa.privateKey,
          );
          const verdict = await checkVerdict(verifier, Buffer.from(der).toString("base64"));
          const outcome = isRejection(verdict) ? verdict.code : "trusted";
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        },
      ),
      { numRuns: 1000 },
    );
    // The mutations must reach past the parser, or the property proves little.
    expect([...outcomes.keys()]).toEqual(
      expect.arrayContaining([
        "trusted",
        "CERTIFICATE_INVALID",
        "CERTIFICATE_BLOCKED",
        "CERTIFICATE_REVOKED",
      ]),
    );
  });

  it("on certificates of the trusted CA whose public key is mutated or made up", async () => {
    const verifier = newVerifier();
    const mutatedKey = mutationsArbitrary(2).map(
      (mutations) => (key: Tlv) => Object.assign(key, mutateTree(key, mutations)),
    );
    const madeUpKey = awkwardKey.map((made) => (key: Tlv) => Object.assign(key, parseTlv(made)));
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.oneof(mutatedKey, madeUpKey), async (which, edit) => {
        const der = rebuild(
          issued[which % issued.length]!,
          ({ tbs }) => edit(tbs.children![TBS.subjectPublicKeyInfo]!),
          pki.issuingCa.privateKey,
        );
        await checkVerdict(verifier, Buffer.from(der).toString("base64"));
      }),
      { numRuns: 500 },
    );
  });

  it("on values longer than the header limit", async () => {
    const verifier = newVerifier();
    const b64 = pki.tppA.qseal.headerValue;
    for (const header of [b64.repeat(12), " ".repeat(20_000) + b64, `${b64}${"A".repeat(17_000)}`]) {
      const r = await checkVerdict(verifier, header);
      expect(isRejection(r) && r.code).toBe("CERTIFICATE_INVALID");
    }
  });

  it("answers SERVICE_UNAVAILABLE for everything while the register is stale, parsing nothing", async () => {
    const verifier = newVerifier(3_600_000, false);
    await fc.assert(
      fc.asyncProperty(fc.nat(), mutationsArbitrary(2), async (which, mutations) => {
        const base = bases[which % bases.length]!;
        const r = await verifier.verify(
          headerOf(encodeTlvTree(mutateTree(parseTlv(base.der), mutations)), "base64"),
        );
        expect(isRejection(r) && r.code).toBe("SERVICE_UNAVAILABLE");
      }),
      { numRuns: 100 },
    );
    expect(verifier.stats).toMatchObject({ misses: 0, size: 0 });
  });
});
