/**
 * One row per class of hostile TPP-Signature-Certificate the gateway once mishandled (issue 11,
 * defect 4): each ends in a refusal with a certificate code and a text that says what is wrong,
 * cached, so the same bytes again are a synchronous hit. Most rows are dev-PKI certificates with
 * one field changed and signed again with the issuing CA's key, so the change is what is judged,
 * not a broken signature.
 */

import { generateKeyPairSync } from "node:crypto";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFECT_CHANNEL, type DefectEvent } from "../../../src/eidas/defects.js";
import { TppRegister } from "../../../src/eidas/register.js";
import type { RevocationChecker, RevocationStatus } from "../../../src/eidas/revocation.js";
import { MAX_REFUSAL_TEXT, TppVerifier } from "../../../src/eidas/tpp-verifier.js";
import { isRejection, type Rejection } from "../../../src/errors.js";
import { loadTrustMaterial, type TrustMaterial } from "../../../src/trust/trust-material.js";
import { encodeTlvTree, parseTlv, type Tlv } from "../../helpers/der-mutation.js";
import { base64, extensionsOf, oidTlv, rebuild, TBS, tlv } from "../../helpers/rebuilt-certificate.js";

let pki: DevPki;
let trust: TrustMaterial;

beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-hostile-")));
  trust = loadTrustMaterial(pki.paths.trustDir);
});

interface Setup {
  readonly revocation?: RevocationChecker;
  readonly maxEntries?: number;
  readonly maxRefusals?: number;
}

function setup(options: Setup = {}) {
  let t = Date.now();
  const now = () => t;
  const register = new TppRegister(3_600_000, now);
  register.replace(
    [pki.tppA, pki.tppB].map((tpp) => ({
      organizationIdentifier: tpp.organizationId,
      name: tpp.name,
      roles: [...tpp.roles],
      status: "authorised",
    })),
    "test",
  );
  const verifier = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => options.revocation ?? trust.revocation,
    register,
    now,
    cacheTtlMs: 60_000,
    failureTtlMs: 5_000,
    maxEntries: options.maxEntries ?? 1000,
    maxRefusals: options.maxRefusals,
  });
  return { verifier, advance: (ms: number) => (t += ms) };
}

/** A QSealC of TPP A with its TBSCertificate edited and signed again by the issuing CA. */
function signedTppA(edit: (tbs: Tlv, algorithm: Tlv) => void): string {
  return base64(
    rebuild(pki.tppA.qseal.der, ({ tbs, algorithm }) => edit(tbs, algorithm), pki.issuingCa.privateKey),
  );
}

/** TPP A's QSealC with another SubjectPublicKeyInfo, signed again. */
function withKey(spki: Uint8Array | Tlv): string {
  const node = spki instanceof Uint8Array ? parseTlv(spki) : spki;
  return signedTppA((tbs) => {
    tbs.children![TBS.subjectPublicKeyInfo] = node;
  });
}

function spkiOf(algorithmOid: string, parameters: Tlv | undefined, key: Uint8Array): Tlv {
  return {
    tag: 0x30,
    children: [
      { tag: 0x30, children: [oidTlv(algorithmOid), ...(parameters ? [parameters] : [])] },
      { tag: 0x03, content: Buffer.concat([Uint8Array.of(0), key]) },
    ],
  };
}

const P256 = "2a8648ce3d030107";
const EC_PUBLIC_KEY = "2a8648ce3d0201";

/** TPP A's own RSA key with the modulus or exponent content replaced. */
function rsaKeyWith(part: "modulus" | "exponent", content: Uint8Array): string {
  const spki = parseTlv(
    Uint8Array.from(
      Buffer.from(
        encodeTlvTree(parseTlv(pki.tppA.qseal.der).children![0]!.children![TBS.subjectPublicKeyInfo]!),
      ),
    ),
  );
  const rsaPublicKey = spki.children![1]!.children![0]!;
  rsaPublicKey.children![part === "modulus" ? 0 : 1] = { tag: 0x02, content };
  return withKey(spki);
}

function exported(type: "x25519" | "x448" | "ed25519"): Uint8Array {
  return generateKeyPairSync(type as "x25519").publicKey.export({ format: "der", type: "spki" });
}

/** The subject's last attribute value (the CN) replaced. */
function commonName(tag: number, content: Uint8Array) {
  return (tbs: Tlv) => {
    const cn = tbs.children![TBS.subject]!.children!.at(-1)!.children![0]!;
    cn.children![1] = { tag, content };
  };
}

const hex = (h: string) => Uint8Array.from(Buffer.from(h.replace(/\s+/g, ""), "hex"));

interface Row {
  readonly name: string;
  readonly header: () => string;
  readonly code: Rejection["code"];
  readonly text: string | RegExp;
}

const ROWS: Row[] = [
  // Before: the trust store handed an algorithm native crypto does not check to X509Certificate,
  // whose parser refuses a padded serial our reader takes: the throw became a 500, uncached.
  {
    name: "an issuer lookup that threw: Ed25519 signature algorithm and a serial OpenSSL refuses",
    header: () =>
      signedTppA((tbs, algorithm) => {
        tbs.children![TBS.serialNumber] = { tag: 0x02, content: hex("000001") };
        tbs.children![TBS.signature] = { tag: 0x30, children: [oidTlv("2b6570")] };
        algorithm.children = [oidTlv("2b6570")];
      }),
    code: "CERTIFICATE_INVALID",
    text: /its signature \(algorithm 1\.3\.101\.112\) cannot be checked with the key of SN=.*Demo Qualified Issuing CA/,
  },
  // Before: createPublicKey took it and the first asymmetricKeyDetails aborted the process.
  {
    name: "an EC key at the point at infinity",
    header: () => withKey(spkiOf(EC_PUBLIC_KEY, oidTlv(P256), hex("00"))),
    code: "CERTIFICATE_INVALID",
    text: "the prime256v1 public key is the point at infinity",
  },
  {
    name: "an EC key with explicit curve parameters",
    header: () => withKey(spkiOf(EC_PUBLIC_KEY, { tag: 0x30, children: [tlv("020101")] }, hex("04"))),
    code: "CERTIFICATE_INVALID",
    text: "an EC key must name its curve",
  },
  {
    name: "an EC key on a curve outside ETSI TS 119 312 (secp256k1)",
    header: () => withKey(spkiOf(EC_PUBLIC_KEY, oidTlv("2b8104000a"), new Uint8Array(65).fill(4))),
    code: "CERTIFICATE_INVALID",
    text: "the EC key is on curve 1.3.132.0.10",
  },
  {
    name: "an EC point of the wrong length",
    header: () => withKey(spkiOf(EC_PUBLIC_KEY, oidTlv(P256), hex("0401020304"))),
    code: "CERTIFICATE_INVALID",
    text: "the prime256v1 public key is 5 bytes",
  },
  {
    name: "an X25519 key",
    header: () => withKey(exported("x25519")),
    code: "CERTIFICATE_INVALID",
    text: "the public key is X25519, a key-agreement key that cannot sign",
  },
  {
    name: "an X448 key",
    header: () => withKey(exported("x448")),
    code: "CERTIFICATE_INVALID",
    text: "the public key is X448",
  },
  {
    name: "a DSA key",
    header: () => withKey(spkiOf("2a8648ce380401", undefined, hex("020101"))),
    code: "CERTIFICATE_INVALID",
    text: "the public key is DSA",
  },
  {
    name: "a Diffie-Hellman key",
    header: () => withKey(spkiOf("2a864886f70d010301", undefined, hex("020101"))),
    code: "CERTIFICATE_INVALID",
    text: "the public key is Diffie-Hellman",
  },
  {
    name: "an Ed25519 key with parameters",
    header: () => withKey(spkiOf("2b6570", tlv("0500"), new Uint8Array(32).fill(9))),
    code: "CERTIFICATE_INVALID",
    text: "an Ed25519 key has parameters",
  },
  {
    name: "an RSA key with e = 1",
    header: () => rsaKeyWith("exponent", hex("01")),
    code: "CERTIFICATE_INVALID",
    text: "the RSA public exponent is 1",
  },
  {
    name: "an RSA key with an even exponent",
    header: () => rsaKeyWith("exponent", hex("010000")),
    code: "CERTIFICATE_INVALID",
    text: "the RSA public exponent is even",
  },
  {
    name: "an RSA key with an empty exponent",
    header: () => rsaKeyWith("exponent", hex("")),
    code: "CERTIFICATE_INVALID",
    text: "the RSA public exponent is an empty INTEGER",
  },
  {
    name: "an RSA key with a negative modulus",
    header: () => rsaKeyWith("modulus", Uint8Array.of(0x80, ...new Uint8Array(255).fill(0xab))),
    code: "CERTIFICATE_INVALID",
    text: "the RSA modulus is negative",
  },
  {
    name: "an RSA key with an even modulus",
    header: () => rsaKeyWith("modulus", Uint8Array.of(0x00, ...new Uint8Array(256).fill(0xaa))),
    code: "CERTIFICATE_INVALID",
    text: "the RSA modulus is even",
  },
  {
    name: "an RSA modulus over 16384 bits",
    header: () => rsaKeyWith("modulus", Uint8Array.of(0x7f, ...new Uint8Array(2100).fill(0xff))),
    code: "CERTIFICATE_INVALID",
    text: "more than the 16384 OpenSSL verifies with",
  },
  // RFC 5280 4.1.1.2.
  {
    name: "a signatureAlgorithm other than tbsCertificate.signature",
    header: () =>
      signedTppA((tbs) => {
        tbs.children![TBS.signature]!.children![0] = oidTlv("2a864886f70d010105");
      }),
    code: "CERTIFICATE_INVALID",
    text: "its signatureAlgorithm is 1.2.840.113549.1.1.11 (sha256WithRSAEncryption) but tbsCertificate.signature is 1.2.840.113549.1.1.5 (sha1WithRSAEncryption); RFC 5280 4.1.1.2",
  },
  {
    name: "the same algorithm with other parameters outside than inside",
    header: () =>
      signedTppA((_tbs, algorithm) => {
        algorithm.children = [algorithm.children![0]!];
      }),
    code: "CERTIFICATE_INVALID",
    text: "both name 1.2.840.113549.1.1.11 (sha256WithRSAEncryption), but with different parameters (absent outside, 0500 inside)",
  },
  // Before: the hash came from the OID and the padding from the key, so this verified.
  {
    name: "an ECDSA algorithm over a signature an RSA key made",
    header: () =>
      signedTppA((tbs, algorithm) => {
        tbs.children![TBS.signature] = { tag: 0x30, children: [oidTlv("2a8648ce3d040302")] };
        algorithm.children = [oidTlv("2a8648ce3d040302")];
      }),
    code: "CERTIFICATE_INVALID",
    text: "its signature does not verify with the key of",
  },
  // Before: the version was the INTEGER's last octet plus one, whatever came before it.
  {
    name: "an eleven-octet version ending in 02",
    header: () =>
      signedTppA((tbs) => {
        tbs.children![TBS.version] = {
          tag: 0xa0,
          children: [{ tag: 0x02, content: hex("0100000000000000000002") }],
        };
      }),
    code: "CERTIFICATE_INVALID",
    text: "version 0x0100000000000000… (11 bytes) is not v1, v2 or v3",
  },
  {
    name: "version 5",
    header: () =>
      signedTppA((tbs) => {
        tbs.children![TBS.version] = { tag: 0xa0, children: [{ tag: 0x02, content: hex("04") }] };
      }),
    code: "CERTIFICATE_INVALID",
    text: "version 0x04 is not v1, v2 or v3",
  },
  {
    name: "a v1 certificate with extensions",
    header: () =>
      signedTppA((tbs) => {
        tbs.children!.splice(TBS.version, 1);
      }),
    code: "CERTIFICATE_INVALID",
    text: "a v1 certificate carries extensions; they need v3",
  },
  {
    name: "an element after the extensions",
    header: () =>
      signedTppA((tbs) => {
        tbs.children!.push(tlv("0500"));
      }),
    code: "CERTIFICATE_INVALID",
    text: "TBSCertificate holds an unexpected element (tag 0x05)",
  },
  // Before: the last [3] counted, OpenSSL refuses the certificate.
  {
    name: "extensions twice",
    header: () =>
      signedTppA((tbs) => {
        tbs.children!.push(structuredClone(tbs.children![TBS.extensions]!));
      }),
    code: "CERTIFICATE_INVALID",
    text: "TBSCertificate holds an unexpected element (tag 0xa3)",
  },
  {
    name: "an extension twice",
    header: () =>
      signedTppA((tbs) => {
        const extensions = extensionsOf(tbs);
        extensions.push(structuredClone(extensions[0]!));
      }),
    code: "CERTIFICATE_INVALID",
    text: "appears more than once",
  },
  {
    name: "a critical extension the gateway does not know",
    header: () =>
      signedTppA((tbs) => {
        extensionsOf(tbs).push(tlv("300a 0603 2a0304 0101ff 0400"));
      }),
    code: "CERTIFICATE_INVALID",
    text: "has a critical extension 1.2.3.4 the gateway does not know; RFC 5280 4.2",
  },
  {
    name: "a UTF8String that is not UTF-8",
    header: () => signedTppA(commonName(0x0c, hex("c328a1"))),
    code: "CERTIFICATE_INVALID",
    text: /subject: UTF8String at byte \d+ is not valid UTF-8/,
  },
  {
    name: "a BMPString with a lone surrogate",
    header: () => signedTppA(commonName(0x1e, hex("d800"))),
    code: "CERTIFICATE_INVALID",
    text: /subject: BMPString at byte \d+ holds a lone surrogate/,
  },
  {
    name: "a UniversalString holding a surrogate code point",
    header: () => signedTppA(commonName(0x1c, hex("0000dc00"))),
    code: "CERTIFICATE_INVALID",
    text: "UniversalString holds U+DC00, which is not a character",
  },
  {
    name: "an empty RelativeDistinguishedName",
    header: () =>
      signedTppA((tbs) => {
        tbs.children![TBS.subject]!.children!.push({ tag: 0x31, children: [] });
      }),
    code: "CERTIFICATE_INVALID",
    text: /subject: RelativeDistinguishedName at byte \d+ is empty/,
  },
  {
    name: "an OID arc with a leading 0x80 octet",
    header: () =>
      signedTppA((tbs) => {
        extensionsOf(tbs).push(tlv("3009 0604 2a808003 0401 00"));
      }),
    code: "CERTIFICATE_INVALID",
    text: "has an arc with a leading 0x80 octet",
  },
  // Before: BigInt arithmetic on a 12 KB arc cost about 18 ms a header.
  {
    name: "an OID arc wider than 128 bits",
    header: () =>
      signedTppA((tbs) => {
        extensionsOf(tbs).push({
          tag: 0x30,
          children: [
            { tag: 0x06, content: Uint8Array.of(0x2a, ...new Uint8Array(4000).fill(0xff), 0x7f) },
            tlv("0400"),
          ],
        });
      }),
    code: "CERTIFICATE_INVALID",
    text: "has an arc wider than 128 bits",
  },
];

describe("hostile certificates end in a cached certificate refusal", () => {
  it.each(ROWS)("$name", async ({ header, code, text }) => {
    const { verifier } = setup();
    const value = header();
    const first = await verifier.verify(value);
    expect(isRejection(first) ? first.code : "trusted").toBe(code);
    const rejection = first as Rejection;
    if (typeof text === "string") expect(rejection.text).toContain(text);
    else expect(rejection.text).toMatch(text);
    expect(rejection.text.length).toBeLessThanOrEqual(MAX_REFUSAL_TEXT);
    const before = verifier.stats;
    expect(verifier.verify(value)).toBe(first);
    expect(verifier.stats).toMatchObject({ hits: before.hits + 1, misses: before.misses });
  });

  it("still trusts the certificates the rows were made from, re-signed unchanged", async () => {
    const { verifier } = setup();
    const same = await verifier.verify(signedTppA(() => {}));
    expect(isRejection(same) ? same.text : same.identity.organizationId).toBe(pki.tppA.organizationId);
    const ed25519 = await verifier.verify(withKey(exported("ed25519")));
    expect(isRejection(ed25519) ? ed25519.text : ed25519.publicKey.asymmetricKeyType).toBe("ed25519");
  });
});

describe("the verifier's boundary", () => {
  /** A revocation source that fails the way a future OCSP client might: by throwing or rejecting. */
  class FailingRevocation implements RevocationChecker {
    calls = 0;
    constructor(private readonly how: "throw" | "reject") {}
    check(): RevocationStatus | Promise<RevocationStatus> {
      this.calls++;
      if (this.how === "throw") throw new TypeError("responder answer has no certStatus");
      return Promise.reject(new Error("socket hang up"));
    }
  }

  it.each(["throw", "reject"] as const)(
    "turns a revocation check that %ss into a cached CERTIFICATE_INVALID and reports the defect",
    async (how) => {
      const revocation = new FailingRevocation(how);
      const { verifier } = setup({ revocation });
      const events: DefectEvent[] = [];
      const listen = (message: unknown) => events.push(message as DefectEvent);
      subscribe(DEFECT_CHANNEL, listen);
      try {
        const first = await verifier.verify(pki.tppA.qseal.headerValue);
        expect(isRejection(first) && first.code).toBe("CERTIFICATE_INVALID");
        expect((first as Rejection).text).toMatch(
          /^TPP-Signature-Certificate could not be checked: the gateway failed on it \((TypeError: responder answer has no certStatus|Error: socket hang up)\)/,
        );
        expect(verifier.verify(pki.tppA.qseal.headerValue)).toBe(first);
        // One per link of the path (leaf, issuing CA), asked together; a throw stops at the first.
        expect(revocation.calls).toBe(how === "throw" ? 1 : 2);
        expect(events.map((e) => e.where)).toEqual(["TppVerifier"]);
      } finally {
        unsubscribe(DEFECT_CHANNEL, listen);
      }
    },
  );

  it("answers a header value that is not a string with CERTIFICATE_MISSING, caching nothing", () => {
    const { verifier } = setup();
    const r = verifier.verify(undefined as unknown as string);
    expect(isRejection(r) && r.code).toBe("CERTIFICATE_MISSING");
    expect(verifier.stats.size).toBe(0);
  });
});

describe("the refusal cache is bounded and apart from accepted certificates", () => {
  it("keeps at most maxRefusals refusals, and distinct garbage never pushes out an accepted TPP", async () => {
    const { verifier } = setup({ maxEntries: 2, maxRefusals: 5 });
    expect(isRejection(await verifier.verify(pki.tppA.qseal.headerValue))).toBe(false);
    for (let i = 0; i < 200; i++) await verifier.verify(Buffer.from(`garbage ${i}`).toString("base64"));
    expect(verifier.stats).toMatchObject({ refusals: 5, size: 6 });
    const misses = verifier.stats.misses;
    expect(isRejection(verifier.verify(pki.tppA.qseal.headerValue))).toBe(false);
    expect(verifier.stats.misses).toBe(misses);
  });

  it("keeps a refusal for failureTtlMs only", async () => {
    const { verifier, advance } = setup();
    const value = signedTppA(commonName(0x0c, hex("ff")));
    await verifier.verify(value);
    advance(4_999);
    verifier.verify(value);
    expect(verifier.stats.misses).toBe(1);
    advance(2);
    verifier.verify(value);
    expect(verifier.stats.misses).toBe(2);
  });

  it("keeps refusal texts short whatever the certificate quotes", async () => {
    const { verifier } = setup();
    const long = (): Tlv => ({ tag: 0x0c, content: new Uint8Array(6000).fill(0x41) });
    // A 6000-character organizationIdentifier, signed by the store's CA: refused by the register.
    const unregistered = signedTppA((tbs) => {
      const rdn = tbs.children![TBS.subject]!.children!.find(
        (set) => Buffer.from(set.children![0]!.children![0]!.content!).toString("hex") === "550461",
      )!;
      rdn.children![0]!.children![1] = long();
    });
    // Issuer and subject of 6000 characters, from a CA outside the store.
    const untrusted = base64(
      rebuild(pki.untrusted.der, ({ tbs }) => {
        for (const field of [TBS.issuer, TBS.subject]) {
          tbs.children![field]!.children!.at(-1)!.children![0]!.children![1] = long();
        }
      }),
    );
    for (const [value, code] of [
      [unregistered, "CERTIFICATE_BLOCKED"],
      [untrusted, "CERTIFICATE_INVALID"],
    ] as const) {
      const r = await verifier.verify(value);
      expect(isRejection(r) && r.code).toBe(code);
      expect((r as Rejection).text.length).toBeLessThanOrEqual(MAX_REFUSAL_TEXT);
    }
  });
});
