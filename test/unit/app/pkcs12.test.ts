/**
 * openPkcs12 against bundles the openssl binary makes at test time: OpenSSL 3's default
 * (PBES2/AES-256-CBC, HMAC-SHA256), AES-128, PBES2 and PKCS#12 3DES, -legacy (RC2, refused),
 * SHA-1 and SHA-512 MACs, no MAC, non-ASCII and empty passwords, RSA, EC P-256 and Ed25519 keys.
 * The KDF is held to openssl's own PKCS12KDF, PBMAC1 to a bundle built here. openssl is required,
 * here and in CI: without it these tests fail, they never skip.
 */

import {
  createHmac,
  createPublicKey,
  type KeyObject,
  pbkdf2Sync,
  sign,
  verify,
  X509Certificate,
} from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bmpForms,
  type KdfDigest,
  openPkcs12,
  type Pkcs12Contents,
  Pkcs12Error,
  type Pkcs12Failure,
  pkcs12Kdf,
} from "../../../src/app/pkcs12.js";
import { children, content, readNode, whole } from "../../../src/asn1/der.js";
import {
  encodeInteger,
  encodeNull,
  encodeOctetString,
  encodeOid,
  encodeSequence,
} from "../../../src/asn1/writer.js";
import { exportPkcs12, opensslIn } from "../../helpers/openssl.js";

const dir = mkdtempSync(join(tmpdir(), "psd2gw-pkcs12-"));
const at = (name: string) => join(dir, name);

const PASSWORD = "Tr0ub4dor&3";
const UNICODE_PASSWORD = "pässwörd-ÆØÅ";
const WRONG_PASSWORDS = [PASSWORD, UNICODE_PASSWORD, "wrong-password"];

const openssl = opensslIn(dir);

function selfSigned(name: string, ...keyArgs: string[]): void {
  openssl("req", "-x509", ...keyArgs, "-nodes", "-keyout", `${name}.key`, "-out", `${name}.pem`);
  openssl("x509", "-in", `${name}.pem`, "-noout");
}

const bundle = (file: string, name: string, password: string, ...extra: string[]) =>
  exportPkcs12(openssl, file, name, password, ...extra);

const SUBJ = (cn: string) => ["-subj", `/CN=${cn}`, "-days", "2"];

beforeAll(() => {
  selfSigned("rsa", "-newkey", "rsa:2048", ...SUBJ("rsa"));
  selfSigned("ec", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", ...SUBJ("ec"));
  selfSigned("ec384", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", ...SUBJ("ec384"));
  selfSigned("ed25519", "-newkey", "ed25519", ...SUBJ("ed25519"));
  selfSigned("ca", "-newkey", "rsa:2048", ...SUBJ("ca"), "-addext", "basicConstraints=critical,CA:TRUE");
  openssl(
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    "leaf.key",
    "-out",
    "leaf.csr",
    "-subj",
    "/CN=leaf",
  );
  openssl(
    "x509",
    "-req",
    "-in",
    "leaf.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-set_serial",
    "2",
    "-days",
    "2",
    "-out",
    "leaf.pem",
  );
  writeFileSync(
    at("ca-first.pem"),
    readFileSync(at("ca.pem"), "latin1") + readFileSync(at("leaf.pem"), "latin1"),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Opens {
  what: string;
  /** Basename of the key and certificate openssl wrote. */
  name: string;
  password: string;
  args: string[];
  /** Subjects of the certificates, in bag order (default: the one leaf). */
  subjects?: string[];
}

const AES128 = ["-keypbe", "AES-128-CBC", "-certpbe", "AES-128-CBC"];
const PBES2_3DES = ["-keypbe", "DES-EDE3-CBC", "-certpbe", "DES-EDE3-CBC"];
const PKCS12_3DES = ["-keypbe", "PBE-SHA1-3DES", "-certpbe", "PBE-SHA1-3DES"];

const opens: Opens[] = [
  {
    what: "RSA, OpenSSL 3's default (PBES2 AES-256-CBC, HMAC-SHA256)",
    name: "rsa",
    password: PASSWORD,
    args: [],
  },
  { what: "EC P-256, OpenSSL 3's default", name: "ec", password: PASSWORD, args: [] },
  { what: "EC P-384, OpenSSL 3's default", name: "ec384", password: PASSWORD, args: [] },
  { what: "Ed25519, OpenSSL 3's default", name: "ed25519", password: PASSWORD, args: [] },
  { what: "RSA, PBES2 AES-128-CBC", name: "rsa", password: PASSWORD, args: AES128 },
  { what: "EC, PBES2 AES-128-CBC", name: "ec", password: PASSWORD, args: AES128 },
  { what: "RSA, PBES2 DES-EDE3-CBC", name: "rsa", password: PASSWORD, args: PBES2_3DES },
  { what: "EC, PBES2 DES-EDE3-CBC", name: "ec", password: PASSWORD, args: PBES2_3DES },
  {
    what: "RSA, PKCS#12 pbeWithSHAAnd3-KeyTripleDES-CBC",
    name: "rsa",
    password: PASSWORD,
    args: PKCS12_3DES,
  },
  {
    what: "EC, PKCS#12 3DES with a SHA-1 MAC",
    name: "ec",
    password: PASSWORD,
    args: [...PKCS12_3DES, "-macalg", "sha1"],
  },
  { what: "RSA, HMAC-SHA1 MAC", name: "rsa", password: PASSWORD, args: ["-macalg", "sha1"] },
  { what: "RSA, HMAC-SHA512 MAC", name: "rsa", password: PASSWORD, args: ["-macalg", "sha512"] },
  { what: "RSA, no MAC (-nomac), AES", name: "rsa", password: PASSWORD, args: ["-nomac"] },
  { what: "EC, no MAC, PKCS#12 3DES", name: "ec", password: PASSWORD, args: [...PKCS12_3DES, "-nomac"] },
  { what: "RSA, a non-ASCII password, AES", name: "rsa", password: UNICODE_PASSWORD, args: [] },
  {
    what: "EC, a non-ASCII password, PKCS#12 3DES",
    name: "ec",
    password: UNICODE_PASSWORD,
    args: PKCS12_3DES,
  },
  {
    what: "RSA, a non-ASCII password, 3DES key and AES certificate (both password forms in one bundle)",
    name: "rsa",
    password: UNICODE_PASSWORD,
    args: ["-keypbe", "PBE-SHA1-3DES", "-certpbe", "AES-256-CBC"],
  },
  { what: "RSA, the empty password, AES", name: "rsa", password: "", args: [] },
  { what: "EC, the empty password, PKCS#12 3DES", name: "ec", password: "", args: PKCS12_3DES },
  {
    what: "RSA, no encryption and no MAC",
    name: "rsa",
    password: "",
    args: ["-keypbe", "NONE", "-certpbe", "NONE", "-nomac"],
  },
  {
    what: "EC leaf after its CA, no localKeyId (-nocerts -certfile)",
    name: "leaf",
    password: PASSWORD,
    args: ["-nocerts", "-certfile", "ca-first.pem"],
    subjects: ["CN=ca", "CN=leaf"],
  },
];

/** The bundle's one key signs; the certificate holding its public key verifies; it is openssl's, byte for byte. */
function expectSigning(contents: Pkcs12Contents, name: string): void {
  expect(contents.keys).toHaveLength(1);
  const key = contents.keys[0] as KeyObject;
  const spki = (k: KeyObject) => k.export({ type: "spki", format: "der" });
  const own = spki(createPublicKey(key));
  const leaf = contents.certificates
    .map((der) => new X509Certificate(der))
    .find((certificate) => spki(certificate.publicKey).equals(own));
  expect(leaf).toBeDefined();
  expect(leaf!.raw.equals(new X509Certificate(readFileSync(at(`${name}.pem`))).raw)).toBe(true);
  const digest = key.asymmetricKeyType === "ed25519" ? null : "sha256";
  const data = Buffer.from("PSD2 signing string");
  expect(verify(digest, data, leaf!.publicKey, sign(digest, data, key))).toBe(true);
}

function refusal(open: () => unknown): Pkcs12Error {
  try {
    open();
  } catch (error) {
    expect(error).toBeInstanceOf(Pkcs12Error);
    return error as Pkcs12Error;
  }
  throw new Error("it opened");
}

function expectClean(error: Pkcs12Error, failure: Pkcs12Failure): void {
  expect(error.failure).toBe(failure);
  for (const password of WRONG_PASSWORDS) expect(error.message).not.toContain(password);
  expect(error.message).not.toMatch(/PRIVATE KEY|[A-Za-z0-9+/]{40,}|[0-9a-fA-F]{32,}/);
}

describe("openPkcs12", () => {
  describe.each(opens.map((c, i) => ({ ...c, file: `open-${i}.p12` })))(
    "$what",
    ({ file, name, password, args, subjects }) => {
      beforeAll(() => bundle(file, name, password, ...args));

      it("opens: the key signs and its certificate verifies", () => {
        const contents = openPkcs12(readFileSync(at(file)), password);
        expectSigning(contents, name);
        const names = contents.certificates.map((der) => new X509Certificate(der).subject);
        expect(names).toEqual(subjects ?? [`CN=${name}`]);
      });

      if (!args.includes("NONE")) {
        it("refuses a wrong password, without quoting it", () => {
          const wrong = password === PASSWORD ? "wrong-password" : PASSWORD;
          expectClean(
            refusal(() => openPkcs12(readFileSync(at(file)), wrong)),
            "password",
          );
        });
      }
    },
  );

  describe("-legacy (3DES key, RC2-40 certificates, SHA-1 MAC)", () => {
    beforeAll(() => {
      bundle("legacy.p12", "rsa", PASSWORD, "-legacy");
      bundle("legacy-unicode.p12", "ec", UNICODE_PASSWORD, "-legacy");
    });

    // node's OpenSSL 3 keeps RC2 in its legacy provider, which node loads only with --openssl-legacy-provider.
    it.each([
      ["legacy.p12", PASSWORD],
      ["legacy-unicode.p12", UNICODE_PASSWORD],
    ])("%s: refused, naming the algorithm and how to re-export", (file, password) => {
      const error = refusal(() => openPkcs12(readFileSync(at(file)), password));
      expectClean(error, "unsupported");
      expect(error.message).toContain("pbeWithSHAAnd40BitRC2-CBC encrypts the bundle's certificates");
      expect(error.message).toContain("re-export the bundle with `openssl pkcs12 -export` without -legacy");
    });

    it("a wrong password is still a wrong password (the MAC is checked first)", () => {
      expectClean(
        refusal(() => openPkcs12(readFileSync(at("legacy.p12")), "wrong-password")),
        "password",
      );
    });
  });

  describe("no MAC: a wrong password whose decryption happens to keep valid padding", () => {
    beforeAll(() => {
      bundle("nomac-key.p12", "ec", PASSWORD, "-certpbe", "NONE", "-nomac");
      // openssl's -nomac leaves the certificates unencrypted: this one is a MACed bundle, its MAC cut off.
      bundle("mac-certs.p12", "ec", PASSWORD);
      const [version, authSafe] = children(readNode(readFileSync(at("mac-certs.p12"))));
      writeFileSync(at("nomac-certs.p12"), encodeSequence(whole(version!), whole(authSafe!)));
    });

    // About one wrong password in 256 decrypts AES-CBC to garbage ending in valid padding.
    it.each([
      ["nomac-key.p12", "private key decrypts"],
      ["nomac-certs.p12", "certificates decrypt"],
    ])("%s: is still a wrong password when %s do not parse", (file, what) => {
      const der = readFileSync(at(file));
      let garbage: Pkcs12Error | undefined;
      for (let i = 0; i < 4000 && !garbage; i++) {
        const error = refusal(() => openPkcs12(der, `wrong-${i}`));
        expectClean(error, "password");
        if (!error.message.startsWith("cannot decrypt")) garbage = error;
      }
      expect(garbage, "no wrong password in 4000 kept valid padding").toBeDefined();
      expect(garbage!.message).toContain(`${what} to no`);
    });
  });

  describe("PBMAC1 (RFC 9579), on a bundle built here around openssl's -nomac contents", () => {
    const PBMAC1 = "1.2.840.113549.1.5.14";
    const PBKDF2 = "1.2.840.113549.1.5.12";
    const HMAC_SHA256 = "1.2.840.113549.2.9";
    const hmacSha256 = () => encodeSequence(encodeOid(HMAC_SHA256), encodeNull());

    function withPbmac1(source: Buffer, password: string, keyLength: boolean): Buffer {
      const [version, authSafe] = children(readNode(source));
      const octets = children(children(authSafe!)[1]!)[0]!;
      const salt = Buffer.from("0123456789abcdef");
      const key = pbkdf2Sync(Buffer.from(password, "utf8"), salt, 2048, 32, "sha256");
      const mac = createHmac("sha256", key).update(content(octets)).digest();
      const pbkdf2 = encodeSequence(
        encodeOctetString(salt),
        encodeInteger(2048),
        ...(keyLength ? [encodeInteger(32)] : []),
        hmacSha256(),
      );
      const algorithm = encodeSequence(
        encodeOid(PBMAC1),
        encodeSequence(encodeSequence(encodeOid(PBKDF2), pbkdf2), hmacSha256()),
      );
      const macData = encodeSequence(
        encodeSequence(algorithm, encodeOctetString(mac)),
        encodeOctetString(Buffer.from("NOT USED")),
        encodeInteger(1),
      );
      return Buffer.from(encodeSequence(whole(version!), whole(authSafe!), macData));
    }

    beforeAll(() => {
      bundle("nomac-rsa.p12", "rsa", UNICODE_PASSWORD, "-nomac");
      bundle("nomac-ec.p12", "ec", PASSWORD, "-nomac");
    });

    it.each([
      ["nomac-rsa.p12", "rsa", UNICODE_PASSWORD],
      ["nomac-ec.p12", "ec", PASSWORD],
    ])("%s: opens with its password, refuses another", (file, name, password) => {
      const pfx = withPbmac1(readFileSync(at(file)), password, true);
      expectSigning(openPkcs12(pfx, password), name);
      expectClean(
        refusal(() => openPkcs12(pfx, password === PASSWORD ? UNICODE_PASSWORD : PASSWORD)),
        "password",
      );
    });

    it("refuses PBMAC1 without the keyLength RFC 9579 requires", () => {
      const pfx = withPbmac1(readFileSync(at("nomac-ec.p12")), PASSWORD, false);
      expectClean(
        refusal(() => openPkcs12(pfx, PASSWORD)),
        "malformed",
      );
    });
  });

  describe("BER, as Windows and Java write some bundles", () => {
    /**
     * `der` re-encoded around its primitives: every constructed element with an indefinite length,
     * every OCTET STRING over 256 bytes as a constructed one in 256-byte pieces. The primitives'
     * bytes, the MACed AuthenticatedSafe among them, stay as they were.
     */
    function toBer(der: Uint8Array): Buffer {
      const node = readNode(der);
      const eoc = Buffer.alloc(2);
      if (node.tag & 0x20) {
        const parts = children(node).map((child) => toBer(whole(child)));
        return Buffer.concat([Buffer.from([node.tag, 0x80]), ...parts, eoc]);
      }
      const bytes = content(node);
      if (node.tag !== 0x04 || bytes.length <= 256) return Buffer.from(whole(node));
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += 256) {
        pieces.push(encodeOctetString(bytes.subarray(at, at + 256)));
      }
      return Buffer.concat([Buffer.from([0x24, 0x80]), ...pieces, eoc]);
    }

    beforeAll(() => {
      bundle("der-mac.p12", "rsa", PASSWORD);
      bundle("der-nomac.p12", "ec", "", "-keypbe", "NONE", "-certpbe", "NONE", "-nomac");
    });

    it.each([
      ["der-mac.p12", "rsa", PASSWORD],
      ["der-nomac.p12", "ec", ""],
    ])("%s with indefinite lengths and a constructed authSafe opens", (file, name, password) => {
      const ber = toBer(readFileSync(at(file)));
      expect(ber.subarray(0, 2).toString("hex")).toBe("3080");
      expectSigning(openPkcs12(ber, password), name);
    });
  });

  describe("what is not a bundle", () => {
    beforeAll(() => {
      bundle("whole.p12", "ec", PASSWORD);
      bundle("unprotected.p12", "ec", "", "-keypbe", "NONE", "-certpbe", "NONE", "-nomac");
      bundle("nomac.p12", "ec", PASSWORD, "-nomac");
    });

    it.each([
      ["an empty file", () => Buffer.alloc(0)],
      ["garbage", () => Buffer.from("not a PKCS#12 bundle at all, just text")],
      ["a PEM certificate", () => readFileSync(at("ec.pem"))],
      ["a DER certificate", () => new X509Certificate(readFileSync(at("ec.pem"))).raw],
      ["the first half of a bundle", () => readFileSync(at("whole.p12")).subarray(0, 600)],
      ["a bundle less its last byte", () => readFileSync(at("whole.p12")).subarray(0, -1)],
    ])("%s: refused as malformed", (_what, bytes) => {
      expectClean(
        refusal(() => openPkcs12(bytes(), PASSWORD)),
        "malformed",
      );
    });

    it("a bundle with a flipped byte or cut short anywhere: opens or throws Pkcs12Error, never anything else", () => {
      for (const file of ["whole.p12", "unprotected.p12", "nomac.p12"]) {
        const good = readFileSync(at(file));
        const password = file === "unprotected.p12" ? "" : PASSWORD;
        for (let offset = 0; offset < good.length; offset += 7) {
          const flipped = Buffer.from(good);
          flipped[offset]! ^= 0x41;
          for (const bytes of [flipped, good.subarray(0, offset)]) {
            try {
              openPkcs12(bytes, password);
            } catch (error) {
              expect(error).toBeInstanceOf(Pkcs12Error);
              expect((error as Error).message).not.toContain(PASSWORD);
            }
          }
        }
      }
    });
  });
});

describe("pkcs12Kdf (RFC 7292 appendix B.2) against openssl's PKCS12KDF", () => {
  const cases: [string, KdfDigest, string, 1 | 2 | 3, number, number][] = [
    ["a 3DES key, SHA-1", "sha1", PASSWORD, 1, 2048, 24],
    ["an IV, SHA-1", "sha1", PASSWORD, 2, 2048, 8],
    ["two blocks (45 bytes), SHA-1, a non-ASCII password", "sha1", UNICODE_PASSWORD, 1, 3, 45],
    ["a MAC key, SHA-256, a non-ASCII password", "sha256", UNICODE_PASSWORD, 3, 2048, 32],
    ["three blocks, SHA-512 (128-byte blocks)", "sha512", "p", 3, 1, 150],
  ];

  it.each(cases)("%s", (_what, digest, password, id, iterations, length) => {
    const salt = Buffer.from("a1b2c3d4e5f60718", "hex");
    const form = bmpForms(password)[0]!;
    const expected = openssl(
      "kdf",
      "-keylen",
      String(length),
      "-kdfopt",
      `digest:${digest.toUpperCase()}`,
      "-kdfopt",
      `hexpass:${form.toString("hex")}`,
      "-kdfopt",
      `hexsalt:${salt.toString("hex")}`,
      "-kdfopt",
      `iter:${iterations}`,
      "-kdfopt",
      `id:${id}`,
      "-binary",
      "PKCS12KDF",
    );
    expect(pkcs12Kdf(digest, form, salt, id, iterations, length).toString("hex")).toBe(
      expected.toString("hex"),
    );
  });

  it("takes the password as UTF-16BE with a two-byte zero", () => {
    expect(bmpForms("pä€")[0]!.toString("hex")).toBe("007000e420ac0000");
    expect(bmpForms("")[0]!.toString("hex")).toBe("0000");
  });
});
