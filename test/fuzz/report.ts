/** The fuzz run's report as text: per family counts, RSS samples, violations with reproductions, and the final line. */

import type { FuzzReport } from "./harness.js";

export function reproduction(report: FuzzReport, family: string, caseIndex: number): string {
  if (family.startsWith("(")) return `FUZZ_SEED=${report.seed} FUZZ_COUNT=${report.count} npm run fuzz`;
  return `FUZZ_FAMILIES=${family} FUZZ_SEED=${report.seed} FUZZ_CASE=${caseIndex} npm run fuzz`;
}

export function formatReport(report: FuzzReport, familyOrder: readonly string[]): string {
  const out: string[] = [];
  out.push("");
  out.push(
    `seed ${report.seed}: ${report.sent} requests in ${(report.ms / 1000).toFixed(1)} s (${Math.round(report.sent / (report.ms / 1000))}/s)`,
  );
  out.push("family               cases      sent   refused  forwarded  no-answer  violations");
  for (const name of familyOrder) {
    const s = report.families[name];
    if (!s) continue;
    out.push(
      `${name.padEnd(19)} ${String(s.cases).padStart(6)} ${String(s.sent).padStart(9)} ${String(s.refused).padStart(9)} ${String(s.forwarded).padStart(10)} ${String(s.unanswered).padStart(10)} ${String(s.violations).padStart(11)}`,
    );
  }
  for (const [name, rss] of Object.entries(report.rssSamplesMb)) {
    if (rss.length === 0) continue;
    const step = Math.max(1, Math.ceil(rss.length / 12));
    const shown = rss.filter((_, i) => i % step === 0 || i === rss.length - 1);
    const max = Math.max(...rss.map((s) => s.mb));
    out.push(
      `${name} gateway RSS (MB, ${rss.length} samples, max ${max}): ${shown.map((s) => `${s.t}s=${s.mb}`).join(" ")}`,
    );
  }
  out.push(`/healthz checks: ${report.healthChecks}`);
  if (report.gatewayWarnings.length > 0) {
    out.push(`gateway warnings/errors (last ${report.gatewayWarnings.length}):`);
    for (const line of report.gatewayWarnings) out.push(`  ${line}`);
  }
  if (report.violations.length > 0) {
    out.push("");
    out.push(`violations (${report.failed}, first ${report.violations.length} shown):`);
    const seen = new Map<string, number>();
    for (const v of report.violations) {
      const key = `${v.kind}|${v.family}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      if ((seen.get(key) ?? 0) > 5) continue; // five of each kind per family are enough to read
      out.push(`- ${v.kind} [${v.family} case ${v.caseIndex}] ${v.label}`);
      out.push(`    expected: ${v.expected}`);
      out.push(`    got:      ${v.got}`);
      if (v.exchange) out.push(`    exchange: ${v.exchange}`);
      if (v.bytes) out.push(`    sent:     ${v.bytes}`);
      out.push(`    repro:    ${reproduction(report, v.family, v.caseIndex)}`);
    }
  }
  out.push(`${report.passed} passed, ${report.failed} failed`);
  return out.join("\n");
}
