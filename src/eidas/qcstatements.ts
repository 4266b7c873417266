/**
 * The qcStatements extension (RFC 3739, OID 1.3.6.1.5.5.7.1.3) with the ETSI EN 319 412-5
 * statements and the PSD2 statement of ETSI TS 119 495 — the ASN.1 that generic X.509 libraries
 * lack. `decodeQcStatements` reads what real certificates carry, including two encodings the
 * standards do not allow but QTSP test CAs issued (one bare QCStatement where a SEQUENCE OF was
 * due; RolesOfPSP as a flat OID, name, OID, name … list). `encodeQcStatements` writes the strict
 * form, for dev certificates.
 *
 *   QCStatements ::= SEQUENCE OF QCStatement
 *   QCStatement  ::= SEQUENCE { statementId OBJECT IDENTIFIER, statementInfo ANY OPTIONAL }
 *   QcType       ::= SEQUENCE OF OBJECT IDENTIFIER            -- id-etsi-qct-esign/eseal/web
 *   PSD2QcType   ::= SEQUENCE { rolesOfPSP RolesOfPSP, nCAName UTF8String, nCAId UTF8String }
 *   RolesOfPSP   ::= SEQUENCE OF RoleOfPSP
 *   RoleOfPSP    ::= SEQUENCE { roleOfPspOid OBJECT IDENTIFIER, roleOfPspName UTF8String }
 */

import {
  children,
  DerError,
  type DerNode,
  isStringTag,
  readNode,
  readOid,
  readString,
  stringTypeName,
  TAG,
  whole,
} from "../asn1/der.js";
import { encodeOid, encodeSequence, encodeUtf8String } from "../asn1/writer.js";

export const QC_STATEMENTS_OID = "1.3.6.1.5.5.7.1.3";

export const QC_STATEMENT = {
  QcCompliance: "0.4.0.1862.1.1",
  QcLimitValue: "0.4.0.1862.1.2",
  QcRetentionPeriod: "0.4.0.1862.1.3",
  QcSSCD: "0.4.0.1862.1.4",
  QcPDS: "0.4.0.1862.1.5",
  QcType: "0.4.0.1862.1.6",
  PSD2QcType: "0.4.0.19495.2",
} as const;

export type QcStatementName = keyof typeof QC_STATEMENT;

const STATEMENT_NAME_BY_OID: Readonly<Record<string, QcStatementName>> = Object.fromEntries(
  Object.entries(QC_STATEMENT).map(([name, oid]) => [oid, name as QcStatementName]),
);

export type QcTypeName = "esign" | "eseal" | "web";

export const QC_TYPE_OID: Readonly<Record<QcTypeName, string>> = {
  esign: "0.4.0.1862.1.6.1",
  eseal: "0.4.0.1862.1.6.2",
  web: "0.4.0.1862.1.6.3",
};

const QC_TYPE_BY_OID: Readonly<Record<string, QcTypeName>> = Object.fromEntries(
  Object.entries(QC_TYPE_OID).map(([name, oid]) => [oid, name as QcTypeName]),
);

export const PSD2_ROLES = ["PSP_AS", "PSP_PI", "PSP_AI", "PSP_IC"] as const;

/** PSP_AS account servicing, PSP_PI payment initiation, PSP_AI account information, PSP_IC card-based instruments. */
export type Psd2Role = (typeof PSD2_ROLES)[number];

export const PSD2_ROLE_OID: Readonly<Record<Psd2Role, string>> = {
  PSP_AS: "0.4.0.19495.1.1",
  PSP_PI: "0.4.0.19495.1.2",
  PSP_AI: "0.4.0.19495.1.3",
  PSP_IC: "0.4.0.19495.1.4",
};

const ROLE_BY_OID: Readonly<Record<string, Psd2Role>> = Object.fromEntries(
  Object.entries(PSD2_ROLE_OID).map(([role, oid]) => [oid, role as Psd2Role]),
);

export interface QcStatement {
  readonly oid: string;
  /** The ETSI name (`QcCompliance`, `PSD2QcType`, …), or undefined for a statement this table does not know. */
  readonly name: QcStatementName | undefined;
  /** The whole DER of statementInfo, when present. */
  readonly info: Uint8Array | undefined;
}

/** One RoleOfPSP as written, with what it resolves to. */
export interface RoleOfPsp {
  /** undefined only when a malformed list gave a name without an OID. */
  readonly oid: string | undefined;
  readonly name: string | undefined;
  /** `UTF8String` as the standard wants, or the string type actually used. */
  readonly nameType: string | undefined;
  /** The role the OID stands for, when it is one of the four. */
  readonly oidMeans: Psd2Role | undefined;
  /** The role: by OID, or by name when the OID is unknown or missing. */
  readonly role: Psd2Role | undefined;
}

export interface Psd2Statement {
  readonly roles: readonly RoleOfPsp[];
  readonly ncaName: string | undefined;
  readonly ncaNameType: string | undefined;
  readonly ncaId: string | undefined;
  readonly ncaIdType: string | undefined;
  /** True when RolesOfPSP held OID, name, OID, name … directly instead of one SEQUENCE per role. */
  readonly flatRoles: boolean;
}

export interface QcStatements {
  readonly statements: readonly QcStatement[];
  readonly qcCompliance: boolean;
  readonly qcSscd: boolean;
  readonly qcType: readonly QcTypeName[];
  /** True when the extension held one bare QCStatement instead of a SEQUENCE OF QCStatement. */
  readonly bareQcStatementNotSequenceOf: boolean;
  /** The first PSD2QcType statement, when present. */
  readonly psd2: Psd2Statement | undefined;
  /** The roles the PSD2 statement grants, each once, in certificate order. */
  readonly psd2Roles: readonly Psd2Role[];
}

/** Reads the extnValue contents of a qcStatements extension. Throws DerError when nothing sensible can be read. */
export function decodeQcStatements(extnValue: Uint8Array): QcStatements {
  const outer = readNode(extnValue);
  if (outer.end !== extnValue.length)
    throw new DerError(`${extnValue.length - outer.end} bytes follow QCStatements`);
  if (outer.tag !== TAG.SEQUENCE) throw new DerError("QCStatements is not a SEQUENCE");
  const items = children(outer);
  // A bare QCStatement starts with its statementId; a SEQUENCE OF starts with a SEQUENCE.
  const bare = items[0]?.tag === TAG.OID;
  const statementNodes = bare ? [outer] : items;

  const statements: QcStatement[] = [];
  const qcType: QcTypeName[] = [];
  let psd2: Psd2Statement | undefined;
  for (const node of statementNodes) {
    if (node.tag !== TAG.SEQUENCE)
      throw new DerError(`QCStatement at byte ${node.headerStart} is not a SEQUENCE`);
    const [idNode, infoNode, extra] = children(node);
    if (!idNode) throw new DerError(`QCStatement at byte ${node.headerStart} is empty`);
    if (extra) throw new DerError(`QCStatement at byte ${node.headerStart} has more than an id and an info`);
    const oid = readOid(idNode);
    const name = STATEMENT_NAME_BY_OID[oid];
    statements.push({ oid, name, info: infoNode ? whole(infoNode) : undefined });
    if (name === "QcType" && infoNode) {
      for (const t of readQcTypes(infoNode)) if (!qcType.includes(t)) qcType.push(t);
    } else if (name === "PSD2QcType" && infoNode && !psd2) {
      psd2 = readPsd2Statement(infoNode);
    }
  }

  const psd2Roles: Psd2Role[] = [];
  for (const r of psd2?.roles ?? []) if (r.role && !psd2Roles.includes(r.role)) psd2Roles.push(r.role);
  return {
    statements,
    qcCompliance: statements.some((s) => s.name === "QcCompliance"),
    qcSscd: statements.some((s) => s.name === "QcSSCD"),
    qcType,
    bareQcStatementNotSequenceOf: bare,
    psd2,
    psd2Roles,
  };
}

/** QcType is a SEQUENCE OF OID; a lone OID is read too. Unknown type OIDs are skipped. */
function readQcTypes(info: DerNode): QcTypeName[] {
  const oids = info.tag === TAG.OID ? [info] : info.tag === TAG.SEQUENCE ? children(info) : [];
  const out: QcTypeName[] = [];
  for (const node of oids) {
    if (node.tag !== TAG.OID) continue;
    const type = QC_TYPE_BY_OID[readOid(node)];
    if (type) out.push(type);
  }
  return out;
}

function readPsd2Statement(info: DerNode): Psd2Statement {
  if (info.tag !== TAG.SEQUENCE) throw new DerError("PSD2QcType statementInfo is not a SEQUENCE");
  const [rolesNode, ...rest] = children(info);
  if (!rolesNode || rolesNode.tag !== TAG.SEQUENCE)
    throw new DerError("PSD2QcType does not start with RolesOfPSP");
  const { roles, flat } = readRoles(rolesNode);
  const strings = rest.filter((n) => isStringTag(n.tag));
  const [nameNode, idNode] = strings;
  return {
    roles,
    ncaName: nameNode ? readString(nameNode) : undefined,
    ncaNameType: nameNode ? stringTypeName(nameNode.tag) : undefined,
    ncaId: idNode ? readString(idNode) : undefined,
    ncaIdType: idNode ? stringTypeName(idNode.tag) : undefined,
    flatRoles: flat,
  };
}

/**
 * RolesOfPSP, in the nested form the standard gives and the flat one some CAs wrote. Each OID
 * starts a role and a string right after it is that role's name; a SEQUENCE is one whole role.
 */
function readRoles(rolesNode: DerNode): { roles: RoleOfPsp[]; flat: boolean } {
  const roles: RoleOfPsp[] = [];
  const items = children(rolesNode);
  let flat = false;
  for (let i = 0; i < items.length; i++) {
    const node = items[i]!;
    if (node.tag === TAG.SEQUENCE) {
      const parts = children(node);
      const oidNode = parts.find((p) => p.tag === TAG.OID);
      const nameNode = parts.find((p) => isStringTag(p.tag));
      roles.push(role(oidNode, nameNode));
    } else if (node.tag === TAG.OID) {
      flat = true;
      const next = items[i + 1];
      const nameNode = next && isStringTag(next.tag) ? next : undefined;
      if (nameNode) i++;
      roles.push(role(node, nameNode));
    } else if (isStringTag(node.tag)) {
      flat = true;
      roles.push(role(undefined, node));
    } else {
      throw new DerError(`RolesOfPSP holds an unexpected element (tag 0x${node.tag.toString(16)})`);
    }
  }
  return { roles, flat };
}

function role(oidNode: DerNode | undefined, nameNode: DerNode | undefined): RoleOfPsp {
  const oid = oidNode ? readOid(oidNode) : undefined;
  const name = nameNode ? readString(nameNode) : undefined;
  const oidMeans = oid ? ROLE_BY_OID[oid] : undefined;
  return {
    oid,
    name,
    nameType: nameNode ? stringTypeName(nameNode.tag) : undefined,
    oidMeans,
    role: oidMeans ?? roleByName(name),
  };
}

function roleByName(name: string | undefined): Psd2Role | undefined {
  const upper = name?.trim().toUpperCase();
  return PSD2_ROLES.find((r) => r === upper);
}

// ---------------------------------------------------------------------------------------------
// Writing

export interface QcStatementsSpec {
  /** Adds QcCompliance: an EU qualified certificate. */
  readonly qcCompliance?: boolean;
  /** Adds QcSSCD: the private key is in a qualified signature/seal creation device. */
  readonly qcSscd?: boolean;
  /** Adds QcType with these types (a QSealC is `["eseal"]`). */
  readonly qcType?: readonly QcTypeName[];
  readonly psd2?: {
    readonly roles: readonly Psd2Role[];
    readonly ncaName: string;
    readonly ncaId: string;
  };
}

/** The extnValue contents (DER of SEQUENCE OF QCStatement) for a qcStatements extension, in ETSI's order. */
export function encodeQcStatements(spec: QcStatementsSpec): Uint8Array {
  const statements: Uint8Array[] = [];
  if (spec.qcCompliance) statements.push(encodeSequence(encodeOid(QC_STATEMENT.QcCompliance)));
  if (spec.qcSscd) statements.push(encodeSequence(encodeOid(QC_STATEMENT.QcSSCD)));
  if (spec.qcType && spec.qcType.length > 0) {
    const types = spec.qcType.map((t) => encodeOid(QC_TYPE_OID[t]));
    statements.push(encodeSequence(encodeOid(QC_STATEMENT.QcType), encodeSequence(...types)));
  }
  if (spec.psd2) {
    const roles = spec.psd2.roles.map((r) =>
      encodeSequence(encodeOid(PSD2_ROLE_OID[r]), encodeUtf8String(r)),
    );
    statements.push(
      encodeSequence(
        encodeOid(QC_STATEMENT.PSD2QcType),
        encodeSequence(
          encodeSequence(...roles),
          encodeUtf8String(spec.psd2.ncaName),
          encodeUtf8String(spec.psd2.ncaId),
        ),
      ),
    );
  }
  return encodeSequence(...statements);
}
