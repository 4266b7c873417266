/**
 * A certificate's validation report as text (`verify`, `trust status --certificate`): the
 * indication, the refusal it gave, the path with each certificate's revocation evidence, the trust
 * anchor (trusted-list service and qualification, or the bank's trust folder) and the register entry.
 */

import {
  type PathElement,
  type RevocationEvidence,
  shortStatus,
  type ValidationReport,
} from "../eidas/index.js";
import { statusFor } from "../errors.js";

const INDENT = "                ";

export function renderValidationReport(r: ValidationReport): string {
  const outcome = r.subIndication ? `${r.indication} / ${r.subIndication}` : r.indication;
  const lines = [
    `Validation report ${r.id} (ETSI TS 119 102-2 terms), ${r.validationTime}, as a ${r.policy}:`,
    `  indication    ${outcome}${r.check ? `  (decided by: ${r.check})` : ""}`,
  ];
  if (r.refusal)
    lines.push(`  refusal       ${statusFor(r.refusal.code)} ${r.refusal.code}: ${r.refusal.text}`);
  if (r.path.length > 0) {
    lines.push("  path");
    for (const element of r.path) lines.push(...pathLines(element));
  }
  const anchor = r.trustAnchor;
  if (anchor?.kind === "trusted-list") {
    const status = anchor.statusAtIssuance
      ? `; at issuance ${shortStatus(anchor.statusAtIssuance.status)} since ${anchor.statusAtIssuance.from}`
      : "";
    lines.push(
      `  trust anchor  trusted list${anchor.territory ? ` ${anchor.territory}` : ""}: ${anchor.service}`,
      `${INDENT}qualified for ${anchor.qualification.join(", ") || "neither QWAC nor QSealC"}${status}`,
    );
  } else if (anchor) lines.push(`  trust anchor  the bank's trust folder: ${anchor.subject}`);
  if (r.register) {
    const e = r.register.entry;
    lines.push(
      e
        ? `  register      ${r.register.organizationIdentifier}: ${e.name}, ${e.status}${e.withdrawnOn ? ` on ${e.withdrawnOn}` : ""} (source ${e.source ?? "register"}); roles ${e.roles.join(", ") || "none"}`
        : `  register      ${r.register.organizationIdentifier}: no entry`,
    );
    if (r.register.effectiveRoles)
      lines.push(`${INDENT}roles for this bank: ${r.register.effectiveRoles.join(", ") || "none"}`);
  }
  for (const w of r.warnings) lines.push(`  warning       ${w}`);
  return lines.join("\n");
}

function pathLines(p: PathElement): string[] {
  const lines = [
    `    ${p.role.padEnd(12)}  ${p.subject}`,
    `${INDENT}  SN ${p.serialNumber}; valid ${p.notBefore} – ${p.notAfter}`,
  ];
  if (p.revocation) lines.push(`${INDENT}  revocation: ${evidenceText(p.revocation)}`);
  return lines;
}

function evidenceText(e: RevocationEvidence): string {
  if (!e.source) return `${e.status}${e.reason ? ` (${e.reason})` : ""}`;
  const when = [
    e.producedAt ? `produced ${e.producedAt}` : undefined,
    e.thisUpdate ? `thisUpdate ${e.thisUpdate}` : undefined,
    `nextUpdate ${e.nextUpdate ?? "none given"}`,
    e.revokedAt ? `revoked ${e.revokedAt}${e.revocationReason ? ` (${e.revocationReason})` : ""}` : undefined,
  ].filter((x) => x !== undefined);
  return `${e.status} by ${e.source} ${e.location}; ${when.join(", ")}`;
}
