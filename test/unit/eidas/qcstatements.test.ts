import { describe, expect, it } from "vitest";
import { DerError } from "../../../src/asn1/der.js";
import {
  encodeIa5String,
  encodeInteger,
  encodeOid,
  encodePrintableString,
  encodeSequence,
  encodeUtf8String,
} from "../../../src/asn1/writer.js";
import {
  decodeQcStatements,
  encodeQcStatements,
  PSD2_ROLE_OID,
  QC_STATEMENT,
  QC_TYPE_OID,
} from "../../../src/eidas/qcstatements.js";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

describe("encodeQcStatements writes the strict form", () => {
  it("writes a QSealC's statements as ING's sandbox certificate has them", () => {
    // The qcStatements extnValue of ext-ing-sandbox-qsealc.pem (openssl asn1parse). ING gives
    // QcCompliance an empty UTF8String as statementInfo (0c00); the standard gives it none.
    const ingCompliance = "300a060604008e4601010c00";
    const ingRest =
      "3013060604008e4601063009060704008e4601060230550606040081982702304b3039" +
      "30110607040081982701030c065053505f4149" +
      "30110607040081982701010c065053505f4153" +
      "30110607040081982701020c065053505f5049" +
      "0c06582d57494e470c064e4c2d585747";
    const ing = Buffer.from(`3078${ingCompliance}${ingRest}`, "hex");
    const encoded = encodeQcStatements({
      qcCompliance: true,
      qcType: ["eseal"],
      psd2: { roles: ["PSP_AI", "PSP_AS", "PSP_PI"], ncaName: "X-WING", ncaId: "NL-XWG" },
    });
    expect(hex(encoded)).toBe(`3076${"3008060604008e460101"}${ingRest}`);
    const [ours, theirs] = [decodeQcStatements(encoded), decodeQcStatements(ing)];
    expect(ours.psd2).toEqual(theirs.psd2);
    expect(ours.qcType).toEqual(theirs.qcType);
    expect(ours.statements.map((s) => s.oid)).toEqual(theirs.statements.map((s) => s.oid));
  });

  it("round-trips through decodeQcStatements", () => {
    const decoded = decodeQcStatements(
      encodeQcStatements({
        qcCompliance: true,
        qcSscd: true,
        qcType: ["eseal", "web"],
        psd2: {
          roles: ["PSP_AS", "PSP_PI", "PSP_AI", "PSP_IC"],
          ncaName: "Finanstilsynet – Ærø",
          ncaId: "NO-FSA",
        },
      }),
    );
    expect(decoded.statements.map((s) => s.name)).toEqual(["QcCompliance", "QcSSCD", "QcType", "PSD2QcType"]);
    expect(decoded.qcCompliance).toBe(true);
    expect(decoded.qcSscd).toBe(true);
    expect(decoded.qcType).toEqual(["eseal", "web"]);
    expect(decoded.bareQcStatementNotSequenceOf).toBe(false);
    expect(decoded.psd2?.flatRoles).toBe(false);
    expect(decoded.psd2?.ncaName).toBe("Finanstilsynet – Ærø");
    expect(decoded.psd2?.ncaId).toBe("NO-FSA");
    expect(decoded.psd2Roles).toEqual(["PSP_AS", "PSP_PI", "PSP_AI", "PSP_IC"]);
    expect(decoded.psd2?.roles.every((r) => r.nameType === "UTF8String" && r.oidMeans === r.role)).toBe(true);
  });

  it("writes an empty SEQUENCE for no statements", () => {
    expect(hex(encodeQcStatements({}))).toBe("3000");
    expect(decodeQcStatements(encodeQcStatements({})).statements).toEqual([]);
  });
});

describe("decodeQcStatements reads what real certificates carry", () => {
  const psd2 = (roles: Uint8Array, ...rest: Uint8Array[]): Uint8Array =>
    encodeSequence(encodeOid(QC_STATEMENT.PSD2QcType), encodeSequence(roles, ...rest));
  const role = (r: keyof typeof PSD2_ROLE_OID): Uint8Array =>
    encodeSequence(encodeOid(PSD2_ROLE_OID[r]), encodeUtf8String(r));

  it("one bare QCStatement where a SEQUENCE OF was due (adorsys)", () => {
    const bare = psd2(
      encodeSequence(role("PSP_PI")),
      encodeUtf8String("NCA\n"),
      encodeUtf8String("DE-FAKENCA"),
    );
    const decoded = decodeQcStatements(bare);
    expect(decoded.bareQcStatementNotSequenceOf).toBe(true);
    expect(decoded.statements.map((s) => s.oid)).toEqual([QC_STATEMENT.PSD2QcType]);
    expect(decoded.psd2Roles).toEqual(["PSP_PI"]);
    expect(decoded.psd2?.ncaName).toBe("NCA\n");
  });

  it("RolesOfPSP as a flat OID, name, OID, name … list, and an OID without a name", () => {
    const flat = encodeSequence(
      encodeOid(PSD2_ROLE_OID.PSP_AS),
      encodeUtf8String("PSP_AS"),
      encodeOid(PSD2_ROLE_OID.PSP_IC),
      encodeOid(PSD2_ROLE_OID.PSP_AI),
      encodeUtf8String("PSP_AI"),
    );
    const decoded = decodeQcStatements(
      encodeSequence(psd2(flat, encodeUtf8String("N"), encodeUtf8String("NO-FSA"))),
    );
    expect(decoded.psd2?.flatRoles).toBe(true);
    expect(decoded.psd2?.roles.map((r) => [r.oid, r.name])).toEqual([
      [PSD2_ROLE_OID.PSP_AS, "PSP_AS"],
      [PSD2_ROLE_OID.PSP_IC, undefined],
      [PSD2_ROLE_OID.PSP_AI, "PSP_AI"],
    ]);
    expect(decoded.psd2Roles).toEqual(["PSP_AS", "PSP_IC", "PSP_AI"]);
  });

  it("names in other string types, roles named twice, and NCA strings that are not UTF8String", () => {
    const roles = encodeSequence(
      encodeSequence(encodeOid(PSD2_ROLE_OID.PSP_AI), encodePrintableString("PSP_AI".replace("_", "-"))),
      encodeSequence(encodeOid(PSD2_ROLE_OID.PSP_AI), encodeUtf8String("PSP_AI")),
    );
    const decoded = decodeQcStatements(
      encodeSequence(psd2(roles, encodePrintableString("Finanstilsynet"), encodeIa5String("NO-FSA"))),
    );
    expect(decoded.psd2?.roles.map((r) => r.nameType)).toEqual(["PrintableString", "UTF8String"]);
    expect(decoded.psd2Roles).toEqual(["PSP_AI"]);
    expect(decoded.psd2?.ncaNameType).toBe("PrintableString");
    expect(decoded.psd2?.ncaIdType).toBe("IA5String");
  });

  it("a PSD2 statement without NCA strings still yields its roles", () => {
    const decoded = decodeQcStatements(encodeSequence(psd2(encodeSequence(role("PSP_PI")))));
    expect(decoded.psd2Roles).toEqual(["PSP_PI"]);
    expect(decoded.psd2?.ncaName).toBeUndefined();
    expect(decoded.psd2?.ncaId).toBeUndefined();
  });

  it("QcType as a lone OID, unknown QcType OIDs skipped, unknown statements kept unnamed", () => {
    const decoded = decodeQcStatements(
      encodeSequence(
        encodeSequence(encodeOid(QC_STATEMENT.QcType), encodeOid(QC_TYPE_OID.esign)),
        encodeSequence(encodeOid(QC_STATEMENT.QcType), encodeSequence(encodeOid("0.4.0.1862.1.6.9"))),
        encodeSequence(encodeOid("1.2.3.4"), encodeInteger(7)),
        encodeSequence(encodeOid(QC_STATEMENT.QcRetentionPeriod), encodeInteger(10)),
      ),
    );
    expect(decoded.qcType).toEqual(["esign"]);
    expect(decoded.statements.map((s) => s.name)).toEqual([
      "QcType",
      "QcType",
      undefined,
      "QcRetentionPeriod",
    ]);
    expect(hex(decoded.statements[2]!.info!)).toBe("020107");
    expect(decoded.psd2).toBeUndefined();
    expect(decoded.psd2Roles).toEqual([]);
  });

  it.each([
    ["not a SEQUENCE", encodeInteger(1), "QCStatements is not a SEQUENCE"],
    [
      "a statement that is not a SEQUENCE",
      encodeSequence(encodeInteger(1)),
      "QCStatement at byte 2 is not a SEQUENCE",
    ],
    ["an empty statement", encodeSequence(encodeSequence()), "is empty"],
    ["bytes after the statements", Uint8Array.of(0x30, 0x00, 0x00), "1 bytes follow QCStatements"],
    [
      "PSD2 info without RolesOfPSP",
      encodeSequence(
        encodeSequence(encodeOid(QC_STATEMENT.PSD2QcType), encodeSequence(encodeUtf8String("x"))),
      ),
      "PSD2QcType does not start with RolesOfPSP",
    ],
    [
      "RolesOfPSP holding an INTEGER",
      encodeSequence(
        encodeSequence(encodeOid(QC_STATEMENT.PSD2QcType), encodeSequence(encodeSequence(encodeInteger(1)))),
      ),
      "RolesOfPSP holds an unexpected element",
    ],
  ])("throws DerError on %s", (_label, bytes, message) => {
    expect(() => decodeQcStatements(bytes)).toThrow(DerError);
    expect(() => decodeQcStatements(bytes)).toThrow(message);
  });
});
