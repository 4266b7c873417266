import { X509Certificate } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { children, readNode, stringTypeName } from "../../../src/asn1/der.js";
import {
  encodeBitString,
  encodeBoolean,
  encodeContext,
  encodeInteger,
  encodeOctetString,
  encodeOid,
  encodeSequence,
  encodeUtf8String,
} from "../../../src/asn1/writer.js";
import {
  decodeCertificateHeader,
  isPsd2Certificate,
  type ParsedCertificate,
  parseCertificate,
  requirePsd2,
} from "../../../src/eidas/certificate.js";
import { parsePsdOrganizationIdentifier } from "../../../src/eidas/organization-identifier.js";
import {
  encodeQcStatements,
  PSD2_ROLE_OID,
  QC_STATEMENT,
  QC_STATEMENTS_OID,
} from "../../../src/eidas/qcstatements.js";
import { isRejection, type Rejection } from "../../../src/errors.js";
import { dnStringMatches } from "../../../src/x500/name.js";
import { INTEROP_DIR } from "../../helpers/interop-corpus.js";
import { type JsonName, makeCertificate, resign, toPem, withSerialContent } from "./generate.js";

const CERTS = new URL("certs/", INTEROP_DIR);

interface ExpectedRole {
  oid: string;
  name: string;
  nameType: string;
  oidMeans: string;
}

interface ExpectedCertificate {
  serial: {
    opensslHex: string;
    derContentHex: string;
    derHasLeadingZeroByte: boolean;
    negative: boolean;
    decimal: string;
    nodeSerialNumber: string;
  };
  issuerRfc2253: string;
  issuerRfc2253Utf8: string;
  subjectRfc2253: string;
  subjectRfc2253Utf8: string;
  issuerAttributes: { oid: string; type: string; value: string }[];
  organizationIdentifier: string | null;
  qcStatements: {
    bareQcStatementNotSequenceOf: boolean;
    statements: { oid: string; name: string }[];
    qcType: string[];
    psd2: {
      roles: ExpectedRole[];
      ncaName: string;
      ncaNameType: string;
      ncaId: string;
      ncaIdType: string;
    };
  } | null;
  psd2Roles: string[];
  ncaName: string | null;
  ncaId: string | null;
  notBefore: string;
  notAfter: string;
  publicKey: string;
  sha256Fingerprint: string;
}

const EXPECTED = JSON.parse(readFileSync(new URL("EXPECTED.json", CERTS), "utf8")) as {
  certificates: Record<string, ExpectedCertificate>;
};

function pemOf(file: string): string {
  return readFileSync(new URL(file, CERTS), "latin1");
}

function parsed(input: string | Uint8Array): ParsedCertificate {
  const der = typeof input === "string" ? decodeCertificateHeader(input) : input;
  if (isRejection(der)) throw new Error(`decode refused: ${der.text}`);
  const cert = parseCertificate(der);
  if (isRejection(cert)) throw new Error(`parse refused: ${cert.text}`);
  return cert;
}

function refused(value: unknown): Rejection {
  expect(isRejection(value), `expected a Rejection, got ${String(value)}`).toBe(true);
  return value as Rejection;
}

/** The ASN.1 string type of each attribute value of a Name, in DER order, read straight from the DER. */
function stringTypes(nameDer: Uint8Array): (string | undefined)[] {
  return children(readNode(nameDer)).flatMap((rdn) =>
    children(rdn).map((ava) => stringTypeName(children(ava)[1]!.tag)),
  );
}

describe("the interop corpus (certs/EXPECTED.json)", () => {
  const files = readdirSync(CERTS).filter((f) => f.endsWith(".pem") && !f.endsWith(".key.pem"));

  it("has an EXPECTED entry for every certificate file, and a file for every entry", () => {
    expect(files.sort()).toEqual(Object.keys(EXPECTED.certificates).sort());
  });

  describe.each(Object.entries(EXPECTED.certificates))("%s", (file, want) => {
    const cert = parsed(pemOf(file));

    it("reads the serial in every spelling", () => {
      expect(cert.serialHex).toBe(want.serial.opensslHex);
      expect(Buffer.from(cert.serial).toString("hex")).toBe(want.serial.derContentHex);
      expect(cert.serial.length > 1 && cert.serial[0] === 0).toBe(want.serial.derHasLeadingZeroByte);
      expect(cert.negativeSerial).toBe(want.serial.negative);
      expect(cert.serialDecimal).toBe(want.serial.decimal);
      expect(new X509Certificate(cert.der).serialNumber).toBe(want.serial.nodeSerialNumber);
    });

    it("writes issuer and subject as OpenSSL's RFC 2253, UTF-8 kept", () => {
      expect(cert.issuerRfc2253).toBe(want.issuerRfc2253);
      expect(cert.issuerRfc2253).toBe(want.issuerRfc2253Utf8);
      expect(cert.subjectRfc2253).toBe(want.subjectRfc2253);
      expect(cert.subjectRfc2253).toBe(want.subjectRfc2253Utf8);
    });

    it("reads the issuer's attributes in DER order with their string types", () => {
      expect(cert.issuer.flat().map((a) => ({ oid: a.oid, value: a.value }))).toEqual(
        want.issuerAttributes.map((a) => ({ oid: a.oid, value: a.value })),
      );
      expect(stringTypes(cert.issuerDer)).toEqual(want.issuerAttributes.map((a) => a.type));
    });

    it("reads organizationIdentifier", () => {
      expect(cert.organizationIdentifier ?? null).toBe(want.organizationIdentifier);
      if (want.organizationIdentifier?.startsWith("PSD")) {
        expect(cert.organizationIdentifierParts).toMatchObject({ scheme: "PSD" });
      }
    });

    it("reads the QCStatements, QcType and the PSD2 roles and NCA", () => {
      if (want.qcStatements === null) {
        expect(cert.qcStatements).toBeUndefined();
      } else {
        const qc = cert.qcStatements!;
        expect(qc.bareQcStatementNotSequenceOf).toBe(want.qcStatements.bareQcStatementNotSequenceOf);
        expect(qc.statements.map((s) => ({ oid: s.oid, name: s.name }))).toEqual(
          want.qcStatements.statements,
        );
        expect(qc.qcType).toEqual(want.qcStatements.qcType);
        expect(qc.qcCompliance).toBe(want.qcStatements.statements.some((s) => s.name === "QcCompliance"));
        const psd2 = qc.psd2!;
        expect(
          psd2.roles.map((r) => ({ oid: r.oid, name: r.name, nameType: r.nameType, oidMeans: r.oidMeans })),
        ).toEqual(want.qcStatements.psd2.roles);
        expect(psd2.ncaName).toBe(want.qcStatements.psd2.ncaName);
        expect(psd2.ncaNameType).toBe(want.qcStatements.psd2.ncaNameType);
        expect(psd2.ncaId).toBe(want.qcStatements.psd2.ncaId);
        expect(psd2.ncaIdType).toBe(want.qcStatements.psd2.ncaIdType);
      }
      expect(cert.psd2Roles).toEqual(want.psd2Roles);
      expect(cert.qcStatements?.psd2?.ncaName ?? null).toBe(want.ncaName);
      expect(cert.qcStatements?.psd2?.ncaId ?? null).toBe(want.ncaId);
    });

    it("reads validity, the public key and the fingerprint", () => {
      expect(cert.notBefore.toISOString()).toBe(want.notBefore);
      expect(cert.notAfter.toISOString()).toBe(want.notAfter);
      expect(`${cert.keyType}-${cert.keyBits}`).toBe(want.publicKey);
      expect(cert.sha256Fingerprint).toBe(want.sha256Fingerprint);
      expect(cert.publicKey.equals(new X509Certificate(cert.der).publicKey)).toBe(true);
    });

    it("is a TPP certificate exactly when it carries the PSD2 statement and organizationIdentifier", () => {
      const psd2 = want.qcStatements?.psd2 !== undefined && want.organizationIdentifier !== null;
      expect(isPsd2Certificate(cert)).toBe(psd2);
    });
  });

  it("reads key identifiers and key usage where the certificates have them", () => {
    const ing = parsed(pemOf("ext-ing-sandbox-qsealc.pem"));
    expect(ing.subjectKeyIdentifier).toBe("b408d478a0e323d49bac48ca04e191bafad17f30");
    expect(ing.authorityKeyIdentifier).toBe("7048bb5e00c0f426f8c474d178d2c44edfb47259");
    expect(ing.keyUsage).toBeUndefined();
    const microsec = parsed(pemOf("ext-microsec-eszigno-test-psd2.pem"));
    expect(microsec.keyUsage).toEqual(["nonRepudiation"]);
    expect(microsec.extensions.find((e) => e.oid === "2.5.29.15")?.critical).toBe(true);
    expect(microsec.basicConstraints).toBeUndefined();
    expect(microsec.organizationIdentifierParts).toEqual({
      scheme: "PSD",
      country: "EU",
      ncaId: "NCA",
      number: "1DFD21",
    });
  });

  it("keeps the issuer's trailing line feed so that keyId CA= still matches the real DN", () => {
    const cert = parsed(pemOf("ext-adorsys-qsealc-lf-issuer.pem"));
    expect(cert.issuer[3]?.[0]?.value).toBe("Trust Service Provider AG\n");
    expect(cert.issuerRfc2253).toContain("Trust Service Provider AG\\0A");
  });
});

describe("decodeCertificateHeader accepts the forms certificates arrive in", () => {
  const pem = pemOf("ext-ing-sandbox-qsealc.pem");
  const der = new X509Certificate(pem).raw;
  const base64 = der.toString("base64");
  const lines = base64.match(/.{1,64}/g)!;
  const armoured = `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;

  const forms: [string, string][] = [
    ["base64 DER (SPEC 5.2)", base64],
    ["base64 DER without padding", base64.replace(/=+$/, "")],
    ["base64 DER with surrounding white space", `  ${base64}\t `],
    ["base64 of a PEM", Buffer.from(armoured).toString("base64")],
    ["base64 of an unarmoured PEM", Buffer.from(lines.join("\n")).toString("base64")],
    ["PEM with armour and LF", armoured],
    ["PEM with armour and CRLF", armoured.replace(/\n/g, "\r\n")],
    ["PEM without armour, with line breaks", lines.join("\n")],
    ["PEM armour on one line, spaces for line breaks", armoured.replace(/\n/g, " ")],
    [
      "PEM base64 on one line between armour lines",
      `-----BEGIN CERTIFICATE-----\n${base64}\n-----END CERTIFICATE-----`,
    ],
    ["PEM with X509 CERTIFICATE armour", armoured.replace(/CERTIFICATE/g, "X509 CERTIFICATE")],
    ["URL-encoded PEM (nginx $ssl_client_escaped_cert)", encodeURIComponent(armoured)],
    [
      "URL-encoded PEM with lower-case escapes",
      encodeURIComponent(armoured).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    ],
    ["URL-encoded line breaks with literal '+' and '/'", armoured.replace(/\n/g, "%0A")],
    ["form-encoded armour ('+' between words)", encodeURIComponent(armoured).replace(/%20/g, "+")],
    ["URL-encoded base64 DER", encodeURIComponent(base64)],
  ];

  it.each(forms)("%s", (_form, header) => {
    const decoded = decodeCertificateHeader(header);
    expect(isRejection(decoded) ? decoded.text : Buffer.from(decoded).toString("base64")).toBe(base64);
  });

  it("gives the certificate its own buffer, not a view into Node's shared pool", () => {
    const decoded = decodeCertificateHeader(base64) as Uint8Array;
    expect(decoded.byteOffset).toBe(0);
    expect(decoded.buffer.byteLength).toBe(decoded.length);
  });

  it("accepts the variants recorded from adorsys' tests (berlin-group-examples.json)", () => {
    const examples = JSON.parse(readFileSync(new URL("berlin-group-examples.json", INTEROP_DIR), "utf8")) as {
      examples: { tppSignatureCertificateVariants?: { form: string; value: string }[] }[];
    };
    const variants = examples.examples.flatMap((e) => e.tppSignatureCertificateVariants ?? []);
    expect(variants.length).toBeGreaterThan(1);
    const expected = parsed(pemOf("ext-adorsys-tpp-signature-highbit-serial.pem")).sha256Fingerprint;
    for (const variant of variants) {
      expect(parsed(variant.value).sha256Fingerprint, variant.form).toBe(expected);
    }
  });
});

describe("decodeCertificateHeader refuses what is not one certificate", () => {
  const base64 = new X509Certificate(pemOf("ext-ing-sandbox-qsealc.pem")).raw.toString("base64");
  const pem = toPem(Buffer.from(base64, "base64"));

  it.each([
    ["absent", undefined],
    ["empty", ""],
    ["only white space", " \t\r\n "],
  ])("answers CERTIFICATE_MISSING when the header is %s", (_label, header) => {
    const r = refused(decodeCertificateHeader(header));
    expect(r.code).toBe("CERTIFICATE_MISSING");
    expect(r.text).toContain("TPP-Signature-Certificate");
  });

  const invalid: [string, string, string][] = [
    ["plain words", "not a certificate.", "character '.' (0x2e) at offset 15"],
    ["base64-looking words", "notacertificate", "it decodes to 11 bytes starting with 0x9e"],
    ["base64url characters", base64.replace(/\+/g, "-").replace(/\//g, "_"), "is not base64"],
    [
      "'=' inside the data",
      `${base64.slice(0, 8)}=${base64.slice(8)}`,
      "'=' at offset 8 comes before the end",
    ],
    ["a length no base64 has", "QUJD" + "Q", "a length no base64 encoding has"],
    [
      "base64 of bytes that are not DER",
      Buffer.from([1, 2, 3, 4, 5, 6]).toString("base64"),
      "starting with 0x01, not a DER certificate",
    ],
    [
      "base64 of prose",
      Buffer.from("hello, world").toString("base64"),
      "base64 of text that is not a certificate",
    ],
    ["truncated DER", base64.slice(0, 400), "cut or malformed"],
    [
      "DER with bytes after the certificate",
      Buffer.concat([Buffer.from(base64, "base64"), Buffer.from([0, 0])]).toString("base64"),
      "2 more bytes follow",
    ],
    ["a stray '%'", `${base64}%`, "'%' not followed by two hex digits"],
    ["a private key PEM", pem.replace(/CERTIFICATE/g, "PRIVATE KEY"), "'PRIVATE KEY', not 'CERTIFICATE'"],
    ["mismatched armour", pem.replace("END CERTIFICATE", "END X509 CERTIFICATE"), "END line does not match"],
    ["BEGIN without END", pem.replace("-----END CERTIFICATE-----", ""), "no END line"],
    ["END without BEGIN", pem.replace("-----BEGIN CERTIFICATE-----", ""), "END line but no BEGIN line"],
    ["two certificates", pem + pem, "more than one PEM block"],
    ["text before the armour", `subject=CN=x\n${pem}`, "text stands before the PEM BEGIN line"],
    ["text after the armour", `${pem}trailer`, "text follows the PEM END line"],
  ];

  it.each(invalid)("answers CERTIFICATE_INVALID for %s, saying what was wrong", (_label, header, why) => {
    const r = refused(decodeCertificateHeader(header));
    expect(r.code).toBe("CERTIFICATE_INVALID");
    expect(r.text).toMatch(/^TPP-Signature-Certificate is not base64 DER or PEM: /);
    expect(r.text).toContain(why);
  });

  it("refuses the garbage certificate of berlin-group-examples.json", () => {
    const examples = JSON.parse(readFileSync(new URL("berlin-group-examples.json", INTEROP_DIR), "utf8")) as {
      examples: { negativeCases?: { id: string; tppSignatureCertificate?: string }[] }[];
    };
    const garbage = examples.examples
      .flatMap((e) => e.negativeCases ?? [])
      .find((c) => c.id === "garbage-certificate")?.tppSignatureCertificate;
    expect(garbage).toBeDefined();
    const r = refused(decodeCertificateHeader(garbage));
    expect(r.code).toBe("CERTIFICATE_INVALID");
    expect(r.text).toContain("character '_' (0x5f) at offset 5 of the base64 text is not base64");
  });

  it("refuses a header over the size bound before decoding it, naming the bound", () => {
    const big = "A".repeat(16 * 1024 + 1);
    const r = refused(decodeCertificateHeader(big));
    expect(r.code).toBe("CERTIFICATE_INVALID");
    expect(r.text).toContain("16385 bytes, more than the 16384 allowed");
    expect(isRejection(decodeCertificateHeader(base64, { maxBytes: base64.length }))).toBe(false);
    expect(refused(decodeCertificateHeader(base64, { maxBytes: base64.length - 1 })).text).toContain(
      `more than the ${base64.length - 1} allowed`,
    );
  });
});

describe("parseCertificate on certificates the corpus lacks (generated at test time)", () => {
  const psd2Statement = (roles: Uint8Array, ncaName: Uint8Array, ncaId: Uint8Array): Uint8Array =>
    encodeSequence(encodeOid(QC_STATEMENT.PSD2QcType), encodeSequence(roles, ncaName, ncaId));
  const SUBJECT: JsonName = [
    { "2.5.4.3": ["tpp.example"] },
    { "2.5.4.97": ["PSDNO-FSA-123456"] },
    { "2.5.4.6": ["NO"] },
  ];

  it("reads RolesOfPSP written as one flat OID, name, OID, name … sequence", async () => {
    const flatRoles = encodeSequence(
      encodeOid(PSD2_ROLE_OID.PSP_AI),
      encodeUtf8String("PSP_AI"),
      encodeOid(PSD2_ROLE_OID.PSP_PI),
      encodeUtf8String("PSP_PI"),
    );
    const value = encodeSequence(
      psd2Statement(flatRoles, encodeUtf8String("Finanstilsynet"), encodeUtf8String("NO-FSA")),
    );
    const cert = parsed(
      await makeCertificate({ subject: SUBJECT, extensions: [{ oid: QC_STATEMENTS_OID, value }] }),
    );
    expect(cert.psd2Roles).toEqual(["PSP_AI", "PSP_PI"]);
    expect(cert.qcStatements?.psd2?.flatRoles).toBe(true);
    expect(cert.qcStatements?.psd2?.roles.map((r) => [r.oid, r.name])).toEqual([
      [PSD2_ROLE_OID.PSP_AI, "PSP_AI"],
      [PSD2_ROLE_OID.PSP_PI, "PSP_PI"],
    ]);
    expect(isPsd2Certificate(cert)).toBe(true);
  });

  it("keeps a non-ASCII NCA name and subject as UTF-8", async () => {
    const value = encodeQcStatements({
      qcCompliance: true,
      qcType: ["eseal"],
      psd2: { roles: ["PSP_AS", "PSP_IC"], ncaName: "Finanstilsynet – Ærø", ncaId: "NO-FSA" },
    });
    const subject: JsonName = [{ "2.5.4.10": ["Bank Ærø AS"] }, { "2.5.4.97": ["PSDNO-FSA-123-456"] }];
    const cert = parsed(await makeCertificate({ subject, extensions: [{ oid: QC_STATEMENTS_OID, value }] }));
    expect(cert.qcStatements?.psd2?.ncaName).toBe("Finanstilsynet – Ærø");
    expect(cert.qcStatements?.psd2?.ncaNameType).toBe("UTF8String");
    expect(cert.subjectRfc2253).toBe("organizationIdentifier=PSDNO-FSA-123-456,O=Bank Ærø AS");
    expect(cert.organizationIdentifierParts).toEqual({
      scheme: "PSD",
      country: "NO",
      ncaId: "FSA",
      number: "123-456",
    });
    expect(cert.psd2Roles).toEqual(["PSP_AS", "PSP_IC"]);
    expect(cert.qcStatements?.qcType).toEqual(["eseal"]);
    expect(cert.qcStatements?.qcCompliance).toBe(true);
  });

  it("reads a negative serial and a serial with a sign byte as OpenSSL and Node print them", async () => {
    const base = await makeCertificate({ subject: "CN=serials" });
    const negative = parsed(withSerialContent(base, Uint8Array.of(0xfe, 0xff)));
    expect(negative.negativeSerial).toBe(true);
    expect(negative.serialHex).toBe("-0101");
    expect(negative.serialDecimal).toBe("-257");
    expect(new X509Certificate(negative.der).serialNumber).toBe("-0101");

    const signByte = parsed(withSerialContent(base, Uint8Array.of(0x00, 0x8e, 0x5c)));
    expect(signByte.negativeSerial).toBe(false);
    expect(signByte.serialHex).toBe("8E5C");
    expect(signByte.serialDecimal).toBe(String(0x8e5c));
    expect(Buffer.from(signByte.serial).toString("hex")).toBe("008e5c");
  });

  it("reads a multi-valued RDN as one RDN of several attributes", async () => {
    const cert = parsed(
      await makeCertificate({
        subject: [{ "2.5.4.6": ["NO"] }, { "2.5.4.10": ["Bank"], "2.5.4.3": ["tpp"] }],
      }),
    );
    expect(cert.subject).toHaveLength(2);
    expect(cert.subject[1]?.map((a) => a.value).sort()).toEqual(["Bank", "tpp"]);
    expect(cert.subjectRfc2253).toMatch(/^(CN=tpp\+O=Bank|O=Bank\+CN=tpp),C=NO$/);
    // OpenSSL writes the attributes inside the RDN in reverse as well; a keyId built either way matches.
    expect(dnStringMatches("O=Bank+CN=tpp,C=NO", cert.subject)).toBe(true);
    expect(dnStringMatches("CN=tpp+O=Bank,C=NO", cert.subject)).toBe(true);
  });

  it("reads an EC P-256 key", async () => {
    const cert = parsed(await makeCertificate({ subject: "CN=ec", key: "ec" }));
    expect(cert.keyType).toBe("ec");
    expect(cert.keyBits).toBe(256);
    expect(cert.namedCurve).toBe("prime256v1");
    expect(cert.signatureAlgorithmOid).toBe("1.2.840.10045.4.3.2");
    expect(cert.publicKey.equals(new X509Certificate(cert.der).publicKey)).toBe(true);
  });

  it("reads basicConstraints, keyUsage and the key identifiers a chain needs", async () => {
    const cert = parsed(
      await makeCertificate({
        subject: "CN=Test CA",
        extensions: [
          { oid: "2.5.29.19", critical: true, value: encodeSequence(encodeBoolean(true), encodeInteger(0)) },
          // keyCertSign (bit 5) and cRLSign (bit 6): 0000 0110, one unused bit
          { oid: "2.5.29.15", critical: true, value: encodeBitString(Uint8Array.of(0x06), 1) },
          { oid: "2.5.29.14", value: encodeOctetString(Uint8Array.of(0xab, 0xcd)) },
          { oid: "2.5.29.35", value: encodeSequence(encodeContext(0, Uint8Array.of(0x01, 0x02), false)) },
        ],
      }),
    );
    expect(cert.basicConstraints).toEqual({ ca: true, pathLen: 0 });
    expect(cert.keyUsage).toEqual(["keyCertSign", "cRLSign"]);
    expect(cert.subjectKeyIdentifier).toBe("abcd");
    expect(cert.authorityKeyIdentifier).toBe("0102");
    expect(cert.extensions.filter((e) => e.critical).map((e) => e.oid)).toEqual(["2.5.29.19", "2.5.29.15"]);
  });

  it("resolves a role by name when its OID is unknown, and by OID when both are known", async () => {
    const roles = encodeSequence(
      encodeSequence(encodeOid("1.2.3.4"), encodeUtf8String("psp_ai")),
      encodeSequence(encodeOid(PSD2_ROLE_OID.PSP_PI), encodeUtf8String("PSP_AS")),
      encodeSequence(encodeOid("1.2.3.5"), encodeUtf8String("PSP_XX")),
    );
    const value = encodeSequence(psd2Statement(roles, encodeUtf8String("NCA"), encodeUtf8String("NO-FSA")));
    const cert = parsed(
      await makeCertificate({ subject: SUBJECT, extensions: [{ oid: QC_STATEMENTS_OID, value }] }),
    );
    expect(cert.psd2Roles).toEqual(["PSP_AI", "PSP_PI"]);
    expect(cert.qcStatements?.psd2?.roles.map((r) => r.oidMeans)).toEqual([undefined, "PSP_PI", undefined]);
  });
});

describe("parseCertificate refuses what it cannot read, saying where", () => {
  const der = new Uint8Array(new X509Certificate(pemOf("ext-ing-sandbox-qsealc.pem")).raw);

  const cases: [string, Uint8Array, string][] = [
    ["no bytes", new Uint8Array(0), "expected an ASN.1 element"],
    ["random bytes", Uint8Array.of(0x02, 0x01, 0x00), "Certificate: expected tag 0x30"],
    ["a truncated certificate", der.subarray(0, 500), "claims"],
    ["a certificate with a byte after it", Uint8Array.from([...der, 0]), "1 bytes follow the certificate"],
  ];

  it.each(cases)("%s", (_label, bytes, why) => {
    const r = refused(parseCertificate(bytes));
    expect(r.code).toBe("CERTIFICATE_INVALID");
    expect(r.text).toMatch(/^TPP-Signature-Certificate cannot be read as an X\.509 certificate: /);
    expect(r.text).toContain(why);
  });

  it("refuses an extension that appears twice (RFC 5280 4.2)", async () => {
    const value = encodeQcStatements({ psd2: { roles: ["PSP_AI"], ncaName: "NCA", ncaId: "NO-FSA" } });
    const base = await makeCertificate({
      subject: "CN=dup",
      extensions: [
        { oid: QC_STATEMENTS_OID, value },
        { oid: QC_STATEMENTS_OID, value: encodeSequence() },
      ],
    });
    expect(refused(parseCertificate(base)).text).toContain(
      "extension 1.3.6.1.5.5.7.1.3 appears more than once",
    );
  });

  it("refuses a qcStatements extension it cannot make sense of, naming the extension", async () => {
    const base = await makeCertificate({
      subject: "CN=bad-qc",
      extensions: [{ oid: QC_STATEMENTS_OID, value: encodeSequence(encodeInteger(5)) }],
    });
    expect(refused(parseCertificate(base)).text).toContain("qcStatements extension: QCStatement at byte");
  });

  it("refuses a validity time that does not exist, naming the field", async () => {
    const base = await makeCertificate({ subject: "CN=time" });
    const text = Buffer.from(base).toString("latin1");
    // notBefore 2026-01-01 → 2026-02-30
    const bad = Buffer.from(text.replace("260101000000Z", "260230000000Z"), "latin1");
    const r = refused(parseCertificate(resign(readTbs(bad), bad)));
    expect(r.text).toContain("notBefore: time '260230000000Z' has a field out of range");
  });

  it("takes a label for certificates that do not come from the header", () => {
    const r = refused(parseCertificate(new Uint8Array(0), { label: "trust store file ca.pem" }));
    expect(r.text).toMatch(/^trust store file ca\.pem cannot be read/);
  });
});

function readTbs(der: Uint8Array): Uint8Array {
  const [tbs] = children(readNode(der));
  return der.subarray(tbs!.headerStart, tbs!.end);
}

describe("requirePsd2: a TPP signs with a PSD2 certificate", () => {
  it("refuses a certificate without qcStatements, saying so", () => {
    const cert = parsed(pemOf("ext-adorsys-tpp-signature-highbit-serial.pem"));
    const r = refused(requirePsd2(cert));
    expect(r.code).toBe("CERTIFICATE_INVALID");
    expect(r.text).toContain("SN=8E5C660AD95E4DBF");
    expect(r.text).toContain("has no qcStatements extension");
    expect(r.text).toContain("0.4.0.19495.2");
  });

  it("refuses qcStatements without the PSD2 statement", async () => {
    const value = encodeQcStatements({ qcCompliance: true, qcType: ["eseal"] });
    const cert = parsed(
      await makeCertificate({
        subject: "CN=qualified but not PSD2",
        extensions: [{ oid: QC_STATEMENTS_OID, value }],
      }),
    );
    expect(refused(requirePsd2(cert)).text).toContain("has qcStatements but no PSD2QcType statement");
  });

  it("refuses a PSD2 statement without organizationIdentifier", async () => {
    const value = encodeQcStatements({ psd2: { roles: ["PSP_AI"], ncaName: "NCA", ncaId: "NO-FSA" } });
    const cert = parsed(
      await makeCertificate({ subject: "CN=no org id", extensions: [{ oid: QC_STATEMENTS_OID, value }] }),
    );
    expect(refused(requirePsd2(cert)).text).toContain("its subject has no organizationIdentifier (2.5.4.97");
  });

  it("accepts the PSD2 certificates of the corpus", () => {
    for (const file of [
      "ext-ing-sandbox-qsealc.pem",
      "ext-microsec-eszigno-test-psd2.pem",
      "ext-adorsys-qsealc-lf-issuer.pem",
    ]) {
      expect(requirePsd2(parsed(pemOf(file))), file).toBe(true);
    }
  });
});

describe("organizationIdentifier in the PSD form (ETSI EN 319 412-1, TS 119 495)", () => {
  it.each([
    ["PSDNO-FSA-123456", { scheme: "PSD", country: "NO", ncaId: "FSA", number: "123456" }],
    ["PSDDE-BAFIN-123-456-7", { scheme: "PSD", country: "DE", ncaId: "BAFIN", number: "123-456-7" }],
    ["PSDEU-NCA-1DFD21", { scheme: "PSD", country: "EU", ncaId: "NCA", number: "1DFD21" }],
  ])("splits %s", (value, parts) => {
    expect(parsePsdOrganizationIdentifier(value)).toEqual(parts);
  });

  it.each([
    "VATNO-123456789",
    "NTRNO-123456789",
    "PSDNOR-FSA-1",
    "PSDNO-FSA-",
    "PSDNO--1",
    "psdno-FSA-1",
    "PSDNO-FSA",
  ])("does not split %s", (value) => {
    expect(parsePsdOrganizationIdentifier(value)).toBeUndefined();
  });
});
