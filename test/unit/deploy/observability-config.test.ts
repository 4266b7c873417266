/**
 * deploy/grafana-dashboard.json and deploy/prometheus-alerts.yaml against the code: every metric
 * and label they query must exist in GatewayMetrics, so neither can drift from src/ silently.
 * The rules are also checked by `promtool check rules` and their thresholds exercised by
 * `promtool test rules` (promtool on PATH, or PROMTOOL=/path/to/promtool). Without promtool those
 * two tests are skipped with the reason on a developer machine and fail in CI (CI=true), where
 * .ci/run installs it (Debian's prometheus package).
 */

import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { GatewayMetrics } from "../../../src/observability/metrics.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const DASHBOARD_PATH = join(root, "deploy", "grafana-dashboard.json");
const ALERTS_PATH = join(root, "deploy", "prometheus-alerts.yaml");

// ---------------------------------------------------------------------------------------------
// The metrics the code registers: name → type and label names.

interface MetricInfo {
  readonly type: string;
  readonly labels: readonly string[];
}

async function metricsOf(gateway: GatewayMetrics): Promise<Map<string, MetricInfo>> {
  const out = new Map<string, MetricInfo>();
  for (const m of await gateway.registry.getMetricsAsJSON()) {
    // prom-client keeps labelNames on the metric object; its typings do not declare it.
    const labelNames = (gateway.registry.getSingleMetric(m.name) as unknown as { labelNames?: unknown })
      ?.labelNames;
    if (!Array.isArray(labelNames)) throw new Error(`no labelNames on ${m.name}: prom-client changed?`);
    out.set(m.name, { type: String(m.type), labels: labelNames.map(String) });
  }
  return out;
}

const gatewayOnly = new GatewayMetrics({}, { defaultMetrics: false });
const withDefaults = new GatewayMetrics({});
const GATEWAY = await metricsOf(gatewayOnly);
/** Node's default process metrics (process_*, nodejs_*), as collectDefaultMetrics registers them. */
const DEFAULTS = new Map(
  [...(await metricsOf(withDefaults))].filter(([name]) => !name.startsWith("psd2_gateway_")),
);
afterAll(() => {
  gatewayOnly.registry.clear();
  withDefaults.registry.clear();
});

/** Labels Prometheus adds to every scraped series (scrape config target labels). */
const TARGET_LABELS = ["job", "instance"];
/** Every panel and query reads the Prometheus the dashboard's `datasource` variable picks. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template
const DATASOURCE = { type: "prometheus", uid: "${datasource}" };
const HISTOGRAM_SUFFIXES = ["_bucket", "_sum", "_count"] as const;

/** Resolves a series name to its metric: histograms are queried through _bucket, _sum and _count. */
function resolve(
  name: string,
  known: Map<string, MetricInfo>,
): { metric: string; allowed: Set<string> } | undefined {
  const exact = known.get(name);
  if (exact) return { metric: name, allowed: new Set([...exact.labels, ...TARGET_LABELS]) };
  for (const suffix of HISTOGRAM_SUFFIXES) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const info = known.get(base);
    if (info?.type !== "histogram") continue;
    const allowed = new Set([...info.labels, ...TARGET_LABELS]);
    if (suffix === "_bucket") allowed.add("le");
    return { metric: base, allowed };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// A small PromQL reader: enough to find selectors, matchers and grouping labels.

interface Selector {
  readonly name: string;
  readonly labels: readonly string[];
  /** Offset in the expression, to tell which aggregation a selector sits in. */
  readonly at: number;
  readonly matchers: string;
}

const SELECTOR = /\b((?:psd2_gateway|process|nodejs)_[a-zA-Z0-9_]+)\b\s*(\{[^}]*\})?/g;
const MATCHER_LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"/g;

function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  for (const m of expr.matchAll(SELECTOR)) {
    const matchers = m[2] ?? "";
    out.push({
      name: m[1]!,
      labels: [...matchers.matchAll(MATCHER_LABEL)].map((l) => l[1]!),
      at: m.index,
      matchers,
    });
  }
  return out;
}

function labelList(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** [start, end) of the parenthesised group that opens at `open`. */
function groupFrom(expr: string, open: number): [number, number] {
  let depth = 0;
  for (let i = open; i < expr.length; i++) {
    if (expr[i] === "(") depth++;
    else if (expr[i] === ")" && --depth === 0) return [open, i + 1];
  }
  throw new Error(`unbalanced parentheses in: ${expr}`);
}

/** [start, end) of the parenthesised group that closes at `close`. */
function groupTo(expr: string, close: number): [number, number] {
  let depth = 0;
  for (let i = close; i >= 0; i--) {
    if (expr[i] === ")") depth++;
    else if (expr[i] === "(" && --depth === 0) return [i, close + 1];
  }
  throw new Error(`unbalanced parentheses in: ${expr}`);
}

interface Grouping {
  readonly labels: readonly string[];
  /** `without (…)`: the labels are dropped rather than kept. */
  readonly without: boolean;
  /** The aggregation's argument: selectors in it must carry the grouping labels. */
  readonly body: readonly [number, number];
}

/** `sum by (a, b) (…)` and `sum (…) by (a, b)`, also with `without`. */
function groupings(expr: string): Grouping[] {
  const out: Grouping[] = [];
  for (const m of expr.matchAll(/\b(by|without)\s*\(([^)]*)\)/g)) {
    const after = m.index + m[0].length;
    const next = expr.slice(after).search(/\S/);
    let body: [number, number];
    if (next >= 0 && expr[after + next] === "(") {
      body = groupFrom(expr, after + next);
    } else {
      const before = expr.slice(0, m.index).trimEnd();
      expect(before.endsWith(")"), `grouping without an aggregation body in: ${expr}`).toBe(true);
      body = groupTo(expr, before.length - 1);
    }
    out.push({ labels: labelList(m[2]!), without: m[1] === "without", body });
  }
  return out;
}

interface Query {
  readonly where: string;
  readonly expr: string;
  readonly legendFormat?: string;
}

/** Every metric and label a query uses exists in the code's registry; returns the problems found. */
function problemsOf(q: Query): string[] {
  const problems: string[] = [];
  const found = selectors(q.expr).map((s) => ({
    ...s,
    resolved: resolve(s.name, s.name.startsWith("psd2_gateway_") ? GATEWAY : DEFAULTS),
  }));
  for (const s of found) {
    if (!s.resolved) {
      problems.push(`${q.where}: metric ${s.name} is not registered by GatewayMetrics`);
      continue;
    }
    for (const label of s.labels) {
      if (!s.resolved.allowed.has(label)) problems.push(`${q.where}: ${s.name} has no label "${label}"`);
    }
  }
  const grouped = groupings(q.expr);
  for (const g of grouped) {
    const inside = found.filter((s) => s.at >= g.body[0] && s.at < g.body[1]);
    for (const s of inside) {
      for (const label of g.labels) {
        if (s.resolved && !s.resolved.allowed.has(label)) {
          problems.push(`${q.where}: grouping by "${label}" over ${s.name}, which has no such label`);
        }
      }
    }
  }
  for (const m of q.expr.matchAll(/\b(?:on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g)) {
    const all = new Set(found.flatMap((s) => [...(s.resolved?.allowed ?? [])]));
    for (const label of labelList(m[1]!)) {
      if (!all.has(label))
        problems.push(`${q.where}: vector matching on "${label}", which no metric here has`);
    }
  }
  // A legend can only name labels the query's result keeps.
  if (q.legendFormat && !grouped.some((g) => g.without)) {
    const kept = grouped.length
      ? new Set(grouped.flatMap((g) => g.labels))
      : new Set(found.flatMap((s) => [...(s.resolved?.allowed ?? [])]));
    for (const m of q.legendFormat.matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)) {
      if (!kept.has(m[1]!))
        problems.push(`${q.where}: legend uses {{${m[1]}}}, which the query does not keep`);
    }
  }
  return problems;
}

describe("the PromQL reader", () => {
  it("finds metrics, matchers and grouping labels, before and after the aggregation body", () => {
    const expr =
      'histogram_quantile(0.99, sum by (le, route_class) (rate(psd2_gateway_request_duration_seconds_bucket{job=~"$job", route_class="ais"}[5m]))) / sum(rate(psd2_gateway_rejections_total[5m])) by (code)';
    expect(selectors(expr).map((s) => [s.name, s.labels])).toEqual([
      ["psd2_gateway_request_duration_seconds_bucket", ["job", "route_class"]],
      ["psd2_gateway_rejections_total", []],
    ]);
    expect(groupings(expr).map((g) => [g.labels, expr.slice(...g.body).includes("rejections")])).toEqual([
      [["le", "route_class"], false],
      [["code"], true],
    ]);
    expect(problemsOf({ where: "ok", expr, legendFormat: "{{route_class}} {{code}}" })).toEqual([]);
  });

  it("reports unknown metrics, unknown labels, wrong groupings and legends", () => {
    expect(
      problemsOf({
        where: "bad",
        expr: 'sum by (tpp) (rate(psd2_gateway_rejections_total{reason="x"}[5m])) + psd2_gateway_nope_total + psd2_gateway_requests_total_bucket',
        legendFormat: "{{code}}",
      }),
    ).toEqual([
      'bad: psd2_gateway_rejections_total has no label "reason"',
      "bad: metric psd2_gateway_nope_total is not registered by GatewayMetrics",
      "bad: metric psd2_gateway_requests_total_bucket is not registered by GatewayMetrics",
      'bad: grouping by "tpp" over psd2_gateway_rejections_total, which has no such label',
      "bad: legend uses {{code}}, which the query does not keep",
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// The dashboard.

interface Target {
  readonly refId?: string;
  readonly expr?: string;
  readonly legendFormat?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
}
interface Panel {
  readonly id?: number;
  readonly type: string;
  readonly title?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly gridPos?: { readonly h: number; readonly w: number; readonly x: number; readonly y: number };
  readonly targets?: readonly Target[];
  readonly panels?: readonly Panel[];
  readonly fieldConfig?: {
    readonly defaults?: { readonly thresholds?: { readonly steps?: readonly { value: number | null }[] } };
  };
}
interface Variable {
  readonly name: string;
  readonly type: string;
  readonly query?: string | { readonly query?: string };
}
interface Dashboard {
  readonly uid: string;
  readonly title: string;
  readonly tags: readonly string[];
  readonly schemaVersion: number;
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly Variable[] };
  readonly annotations?: { readonly list: readonly { readonly name: string; readonly expr?: string }[] };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD_PATH, "utf8")) as Dashboard;
const allPanels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const graphPanels = allPanels.filter((p) => p.type !== "row");
const variableQuery = (v: Variable) => (typeof v.query === "string" ? v.query : (v.query?.query ?? ""));

const dashboardQueries: Query[] = [
  ...graphPanels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      where: `panel ${p.id} "${p.title}" ${t.refId}`,
      expr: t.expr ?? "",
      ...(t.legendFormat ? { legendFormat: t.legendFormat } : {}),
    })),
  ),
  ...(dashboard.annotations?.list ?? [])
    .filter((a) => a.expr !== undefined)
    .map((a) => ({ where: `annotation "${a.name}"`, expr: a.expr ?? "" })),
];

describe("deploy/grafana-dashboard.json", () => {
  it("is an importable dashboard: uid, title, tags, schemaVersion ≥ 36", () => {
    expect(dashboard.uid).toBe("psd2-gateway");
    expect(dashboard.title).toBe("psd2-gateway");
    expect(dashboard.tags.length).toBeGreaterThan(0);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
  });

  it("picks its Prometheus through a datasource variable and filters by job and instance", () => {
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get("datasource")).toMatchObject({ type: "datasource", query: "prometheus" });
    for (const name of ["job", "instance"]) {
      const v = vars.get(name);
      expect(v?.type, name).toBe("query");
      // label_values(<metric>{…}, <label>): the metric exists and carries the label.
      const m = /^label_values\(\s*([a-z_:][a-z0-9_:]*)\s*(\{[^}]*\})?\s*,\s*([a-z_][a-z0-9_]*)\s*\)$/i.exec(
        variableQuery(v!),
      );
      expect(m, variableQuery(v!)).not.toBeNull();
      expect(m![3]).toBe(name);
      expect(problemsOf({ where: `variable ${name}`, expr: `${m![1]}${m![2] ?? ""}` })).toEqual([]);
    }
    for (const v of dashboard.templating.list.filter((v) => v.type === "query")) {
      const m = /^label_values\((.*),\s*([a-z_][a-z0-9_]*)\s*\)$/i.exec(variableQuery(v));
      expect(m, `variable ${v.name}`).not.toBeNull();
      const [selector] = selectors(m![1]!);
      expect(selector && resolve(selector.name, GATEWAY)?.allowed.has(m![2]!), `variable ${v.name}`).toBe(
        true,
      );
    }
  });

  it("has unique panel ids, a datasource on every panel and target, and no overlapping panels", () => {
    const ids = allPanels.map((p) => p.id);
    expect(ids.every((id) => typeof id === "number")).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of graphPanels) {
      expect(p.datasource, `panel ${p.id} "${p.title}"`).toEqual(DATASOURCE);
      expect(p.targets?.length, `panel ${p.id} has queries`).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource, `panel ${p.id} ${t.refId}`).toEqual(DATASOURCE);
        expect(t.expr, `panel ${p.id} ${t.refId}`).toBeTruthy();
      }
    }
    const boxes = allPanels.map((p) => ({ id: p.id, ...p.gridPos! }));
    for (const b of boxes) expect(b.x + b.w, `panel ${b.id} fits in 24 columns`).toBeLessThanOrEqual(24);
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
        expect(overlap, `panels ${a.id} and ${b.id} overlap`).toBe(false);
      }
    }
  });

  it("queries only metrics and labels GatewayMetrics registers", () => {
    expect(dashboardQueries.length).toBeGreaterThan(20);
    expect(dashboardQueries.flatMap(problemsOf)).toEqual([]);
  });

  it("covers every psd2_gateway metric the code registers", () => {
    const used = new Set(
      dashboardQueries.flatMap((q) => selectors(q.expr).map((s) => resolve(s.name, GATEWAY)?.metric)),
    );
    expect([...GATEWAY.keys()].filter((name) => !used.has(name))).toEqual([]);
  });

  it("filters every series by $job and $instance and uses $__rate_interval for rates", () => {
    for (const q of dashboardQueries) {
      for (const s of selectors(q.expr)) {
        expect(s.matchers, `${q.where}: ${s.name}`).toContain('job=~"$job"');
        expect(s.matchers, `${q.where}: ${s.name}`).toContain('instance=~"$instance"');
      }
      for (const m of q.expr.matchAll(/\[([^\]]+)\]/g)) {
        // $__range only for totals over the whole time range (increase), never for a rate.
        expect(["$__rate_interval", "$__range"], `${q.where}: [${m[1]}]`).toContain(m[1]);
      }
      for (const m of q.expr.matchAll(/\b(rate|irate)\(([^()]|\([^()]*\))*\[([^\]]+)\]/g)) {
        expect(m[3], `${q.where}: ${m[1]}`).toBe("$__rate_interval");
      }
    }
  });

  it("marks certificate expiry at 30 and 7 days and the register's max age", () => {
    const steps = (p: Panel) => (p.fieldConfig?.defaults?.thresholds?.steps ?? []).map((s) => s.value);
    const expiry = graphPanels.filter((p) =>
      p.targets?.some((t) => t.expr?.includes("psd2_gateway_certificate_expiry_seconds")),
    );
    expect(expiry.length).toBeGreaterThan(0);
    for (const p of expiry) expect(steps(p), `panel ${p.id}`).toEqual(expect.arrayContaining([7, 30]));
    const age = graphPanels.filter(
      (p) =>
        p.type === "timeseries" &&
        p.targets?.some((t) => t.expr?.includes("psd2_gateway_register_age_seconds")),
    );
    expect(age.length).toBeGreaterThan(0);
    for (const p of age) expect(steps(p), `panel ${p.id}`).toContain(86400);
  });
});

// ---------------------------------------------------------------------------------------------
// The alert rules.

interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr?: unknown;
  readonly for?: unknown;
  readonly labels?: Record<string, unknown>;
  readonly annotations?: Record<string, unknown>;
}
interface RuleFile {
  readonly groups: readonly { readonly name: string; readonly rules: readonly Rule[] }[];
}

const alertsText = readFileSync(ALERTS_PATH, "utf8");
const ruleFile = parse(alertsText) as RuleFile;
const rules = ruleFile.groups.flatMap((g) => g.rules);
const alerts = rules.filter((r) => r.alert !== undefined);

describe("deploy/prometheus-alerts.yaml", () => {
  it("is a groups/rules file of alerts with expr, for, severity, summary and description", () => {
    expect(ruleFile.groups.length).toBeGreaterThan(0);
    expect(new Set(ruleFile.groups.map((g) => g.name)).size).toBe(ruleFile.groups.length);
    expect(alerts.length).toBe(rules.length);
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
    for (const a of alerts) {
      expect(typeof a.expr === "string" && a.expr.trim().length > 0, `${a.alert}: expr`).toBe(true);
      expect(a.for, `${a.alert}: for`).toMatch(/^(\d+(ms|s|m|h|d|w|y))+$/);
      expect(["warning", "critical"], `${a.alert}: severity`).toContain(a.labels?.severity);
      expect(String(a.annotations?.summary ?? ""), `${a.alert}: summary`).not.toBe("");
      expect(String(a.annotations?.description ?? ""), `${a.alert}: description`).not.toBe("");
    }
  });

  it("queries only metrics and labels GatewayMetrics registers", () => {
    const problems = alerts.flatMap((a) => problemsOf({ where: `alert ${a.alert}`, expr: String(a.expr) }));
    expect(problems).toEqual([]);
  });

  it("alerts on what operations asked for", () => {
    const exprOf = (name: string) => String(alerts.find((a) => a.alert === name)?.expr ?? "");
    const severityOf = (name: string) => alerts.find((a) => a.alert === name)?.labels?.severity;
    expect(exprOf("Psd2GatewayCertificateExpiringSoon")).toContain("30 * 86400");
    expect(exprOf("Psd2GatewayCertificateExpiryCritical")).toContain("7 * 86400");
    expect(exprOf("Psd2GatewayTrustedCaExpiringSoon")).toContain("30 * 86400");
    expect(exprOf("Psd2GatewayTrustedCaExpiryCritical")).toContain("7 * 86400");
    expect(severityOf("Psd2GatewayCertificateExpiryCritical")).toBe("critical");
    expect(severityOf("Psd2GatewayTrustedCaExpiryCritical")).toBe("critical");
    expect(exprOf("Psd2GatewayRejectionRatioJump")).toMatch(/\[1d\]/);
    expect(exprOf("Psd2GatewayRegisterExpired")).toContain("86400");
    expect(severityOf("Psd2GatewayRegisterExpired")).toBe("critical");
    expect(exprOf("Psd2GatewayLimitStoreErrors")).toContain("psd2_gateway_store_errors_total[5m]");
    expect(exprOf("Psd2GatewayLimitStoreEvictions")).toContain("psd2_gateway_store_evictions_total");
    expect(exprOf("Psd2GatewayUpstream5xx")).toContain('status=~"5.."');
    expect(exprOf("Psd2GatewayDown")).toMatch(/^up\{.*\} == 0$/);
    expect(severityOf("Psd2GatewayTrustSourceStale")).toBe("critical");
    expect(severityOf("Psd2GatewayCrlStale")).toBe("warning");
    expect(severityOf("Psd2GatewayOcspResponderFailing")).toBe("warning");
    expect(exprOf("Psd2GatewayTrustSourceNextUpdateSoon")).toContain("psd2_gateway_trust_source_age_seconds");
    expect(exprOf("Psd2GatewayTrustSourceNextUpdateSoon")).toMatch(
      /next_update_timestamp_seconds.*- time\(\) < 3600/,
    );
    expect(exprOf("Psd2GatewayOcspErrorRatioHigh")).toContain('outcome="error"');
    expect(exprOf("Psd2GatewayRevocationUnknownRefusals")).toContain('action="refused"');
    expect(exprOf("Psd2GatewayRevocationSoftFailInUse")).toContain('action="allowed"');
    expect(exprOf("Psd2GatewayEvidenceStoreFailing")).toContain("psd2_gateway_evidence_store_failing");
    expect(severityOf("Psd2GatewayEvidenceStoreFailing")).toBe("critical");
    expect(exprOf("Psd2GatewayEvidenceCheckpointStale")).toContain(
      "psd2_gateway_evidence_checkpoint_age_seconds",
    );
  });

  it("pages for stale sources that fail every request, warns for those that fail one QTSP's TPPs", () => {
    // TrustSourceStatus.failsReadiness (src/trust/source-status.ts): a stale register or trusted list
    // fails /readyz and every request; a stale CRL or failing OCSP responder only its QTSP's TPPs.
    const FAILS_READINESS = ["register", "trusted-list"];
    const ALL_KINDS = ["crl", "ocsp", "register", "trusted-list"];
    const staleKinds = (severity: string) =>
      alerts
        .filter((a) => a.labels?.severity === severity)
        .flatMap((a) =>
          selectors(String(a.expr))
            .filter((s) => s.name === "psd2_gateway_trust_source_stale")
            .flatMap((s) => {
              const m = /kind\s*(=~?)\s*"([^"]*)"/.exec(s.matchers);
              expect(m, `${a.alert}: the stale alerts name their kinds`).not.toBeNull();
              return m![2]!.split("|");
            }),
        );
    expect(ruleFile.groups.map((g) => g.name)).toContain("psd2-gateway-trust");
    expect([...new Set(staleKinds("critical"))].sort()).toEqual(FAILS_READINESS);
    expect([...new Set([...staleKinds("critical"), ...staleKinds("warning")])].sort()).toEqual(ALL_KINDS);
    // The per-source alerts keep kind and source, so on-call sees which URL or file to fix.
    for (const name of [
      "Psd2GatewayTrustSourceStale",
      "Psd2GatewayCrlStale",
      "Psd2GatewayOcspResponderFailing",
    ]) {
      const a = alerts.find((r) => r.alert === name);
      expect(String(a?.expr), name).not.toMatch(/\b(sum|max|min|avg|count)\b/);
      expect(String(a?.annotations?.summary), name).toContain("{{ $labels.source }}");
    }
  });
});

// ---------------------------------------------------------------------------------------------
// promtool: skipped where it is missing, except in CI, where a missing promtool fails.

function findPromtool(): string | undefined {
  const candidates = [
    ...(process.env.PROMTOOL ? [process.env.PROMTOOL] : []),
    ...(process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, "promtool")),
  ];
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there
    }
  }
  return undefined;
}
const promtool = findPromtool();
const PROMTOOL_HINT =
  "install Debian's prometheus package (.ci/run does so in CI) or set PROMTOOL=/path/to/promtool";

/** `it` when promtool is there or in CI (where its absence must fail), a skipped `it` saying why otherwise. */
function itWithPromtool(name: string, body: (promtool: string) => void): void {
  if (!promtool && process.env["CI"] !== "true") {
    const reason = `promtool not on PATH; ${PROMTOOL_HINT}`;
    console.warn(`skipping "${name}": ${reason}`);
    it.skip(`${name} (skipped: ${reason})`, () => {});
    return;
  }
  it(name, () => {
    if (!promtool)
      throw new Error(`promtool is not on PATH and CI=true: the rule tests must run in CI; ${PROMTOOL_HINT}`);
    body(promtool);
  });
}

/** `promtool test rules` cases: synthetic series in, the alerts that must (not) fire out. */
const JOB = "psd2-gateway";
const GW1 = "gw1:9090";
const GW2 = "gw2:9090";
const GW3 = "gw3:9090";

function series(name: string, labels: Record<string, string>, values: string) {
  const all = { job: JOB, ...labels };
  const text = Object.entries(all)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(", ");
  return { series: `${name}{${text}}`, values };
}
const requests = (instance: string, outcome: string, status: string, values: string) =>
  series(
    "psd2_gateway_requests_total",
    { instance, mode: "ingress", route_class: "ais", outcome, status },
    values,
  );
const at = (instance: string, extra: Record<string, string> = {}) => ({ job: JOB, instance, ...extra });
/** psd2_gateway_trust_source_<property>{kind, source}: sources named as the code names them. */
const REGISTER = "eba: https://euclid.eba.europa.eu/register/pir/psd2.zip";
const TRUSTED_LIST = "NO https://tl.example.no/tsl.xml";
const CRL = "http://crl.qtsp.example/issuing-ca.crl";
const CRL_OK = "http://crl.other-qtsp.example/ca.crl";
const OCSP = "http://ocsp.qtsp.example";
const OCSP_IDLE = "http://ocsp.other-qtsp.example";
const trust = (property: string, instance: string, kind: string, source: string, values: string) =>
  series(`psd2_gateway_trust_source_${property}`, { instance, kind, source }, values);
const ocsp = (instance: string, outcome: string, values: string) =>
  series("psd2_gateway_ocsp_request_duration_seconds_count", { instance, outcome }, values);
function expect_(evalTime: string, alertname: string, ...labels: Record<string, string>[]) {
  return { eval_time: evalTime, alertname, exp_alerts: labels.map((l) => ({ exp_labels: l })) };
}

const PROMTOOL_TESTS = [
  {
    name: "gateway down",
    interval: "1m",
    input_series: [{ series: `up{job="${JOB}", instance="${GW1}"}`, values: "1 1 0x10" }],
    alert_rule_test: [
      expect_("3m", "Psd2GatewayDown"),
      expect_("6m", "Psd2GatewayDown", at(GW1, { severity: "critical" })),
      expect_("6m", "Psd2GatewayAbsent"),
    ],
  },
  {
    name: "gateway absent",
    interval: "1m",
    input_series: [{ series: `up{job="other", instance="x"}`, values: "1x20" }],
    alert_rule_test: [expect_("15m", "Psd2GatewayAbsent", { job: JOB, severity: "warning" })],
  },
  {
    name: "certificates",
    interval: "1m",
    input_series: [
      series(
        "psd2_gateway_certificate_expiry_seconds",
        { instance: GW1, kind: "tls", name: "gw.bank.example" },
        `${20 * 86400}x30`,
      ),
      series(
        "psd2_gateway_certificate_expiry_seconds",
        { instance: GW1, kind: "qseal", name: "qseal.pem" },
        `${5 * 86400}x30`,
      ),
      series(
        "psd2_gateway_certificate_expiry_seconds",
        { instance: GW1, kind: "qwac", name: "qwac.pem" },
        `${90 * 86400}x30`,
      ),
      series(
        "psd2_gateway_certificate_expiry_seconds",
        { instance: GW1, kind: "ca", name: "Old Root CA" },
        "-86400x30",
      ),
      series(
        "psd2_gateway_certificate_expiry_seconds",
        { instance: GW1, kind: "ca", name: "New Root CA" },
        `${3650 * 86400}x30`,
      ),
    ],
    alert_rule_test: [
      // for: 15m: nothing yet at 10 minutes; the 7-day ones (for: 5m) already.
      expect_("10m", "Psd2GatewayCertificateExpiringSoon"),
      expect_(
        "10m",
        "Psd2GatewayCertificateExpiryCritical",
        at(GW1, { kind: "qseal", name: "qseal.pem", severity: "critical" }),
      ),
      expect_(
        "20m",
        "Psd2GatewayCertificateExpiringSoon",
        at(GW1, { kind: "tls", name: "gw.bank.example", severity: "warning" }),
        at(GW1, { kind: "qseal", name: "qseal.pem", severity: "warning" }),
      ),
      expect_(
        "20m",
        "Psd2GatewayTrustedCaExpiringSoon",
        at(GW1, { kind: "ca", name: "Old Root CA", severity: "warning" }),
      ),
      expect_(
        "20m",
        "Psd2GatewayTrustedCaExpiryCritical",
        at(GW1, { kind: "ca", name: "Old Root CA", severity: "critical" }),
      ),
    ],
  },
  {
    name: "rejection ratio jump, with a floor for low traffic",
    interval: "1m",
    input_series: [
      // gw1: 1 request/s forwarded; 1 rejection/min for a day, then 20/min.
      requests(GW1, "forwarded", "200", "0+60x1500"),
      requests(GW1, "rejected", "400", "0+1x1440 1460+20x59"),
      // gw2: half its calls rejected from the same moment, but only 2 calls a minute: below the floor.
      requests(GW2, "forwarded", "200", "0+1x1500"),
      requests(GW2, "rejected", "400", "0x1440 1+1x59"),
    ],
    alert_rule_test: [
      expect_("1430m", "Psd2GatewayRejectionRatioJump"),
      expect_("1470m", "Psd2GatewayRejectionRatioJump", at(GW1, { severity: "warning" })),
    ],
  },
  {
    name: "register",
    interval: "1m",
    input_series: [
      series("psd2_gateway_register_age_seconds", { instance: GW1 }, "0+60x120"),
      series("psd2_gateway_register_age_seconds", { instance: GW2 }, "86000+60x120"),
      series("psd2_gateway_register_age_seconds", { instance: GW3 }, "-1x120"),
      series("psd2_gateway_register_refresh_failures_total", { instance: GW1 }, "0+1x120"),
      series("psd2_gateway_register_refresh_failures_total", { instance: GW2 }, "0x120"),
    ],
    alert_rule_test: [
      expect_("55m", "Psd2GatewayRegisterStale", at(GW2, { severity: "warning" })),
      expect_(
        "70m",
        "Psd2GatewayRegisterStale",
        at(GW1, { severity: "warning" }),
        at(GW2, { severity: "warning" }),
      ),
      expect_("70m", "Psd2GatewayRegisterExpired", at(GW2, { severity: "critical" })),
      expect_("70m", "Psd2GatewayRegisterNeverLoaded", at(GW3, { severity: "critical" })),
      expect_("10m", "Psd2GatewayRegisterRefreshFailing"),
      expect_("70m", "Psd2GatewayRegisterRefreshFailing", at(GW1, { severity: "warning" })),
    ],
  },
  {
    name: "limit store",
    interval: "1m",
    input_series: [
      series("psd2_gateway_store_errors_total", { instance: GW1 }, "0x10 1 2 3 3x30"),
      series("psd2_gateway_store_errors_total", { instance: GW2 }, "0x40"),
      series("psd2_gateway_store_evictions_total", { instance: GW1 }, "0+5x40"),
      series("psd2_gateway_store_evictions_total", { instance: GW2 }, "0x40"),
    ],
    alert_rule_test: [
      expect_("10m", "Psd2GatewayLimitStoreErrors"),
      expect_("15m", "Psd2GatewayLimitStoreErrors", at(GW1, { severity: "critical" })),
      // Five minutes without a new error: resolved.
      expect_("30m", "Psd2GatewayLimitStoreErrors"),
      expect_("20m", "Psd2GatewayLimitStoreEvictions", at(GW1, { severity: "warning" })),
    ],
  },
  {
    name: "evidence store",
    interval: "1m",
    input_series: [
      // gw1: its store fails from minute 10 and records are refused; gw2 writes and checkpoints.
      series("psd2_gateway_evidence_store_failing", { instance: GW1 }, "0x9 1x30"),
      series("psd2_gateway_evidence_checkpoint_age_seconds", { instance: GW1 }, "30x9 90+60x30"),
      series(
        "psd2_gateway_evidence_failures_total",
        { instance: GW1, reason: "store-failing" },
        "0x10 0+3x30",
      ),
      series("psd2_gateway_evidence_store_failing", { instance: GW2 }, "0x40"),
      series("psd2_gateway_evidence_checkpoint_age_seconds", { instance: GW2 }, "30x40"),
      series("psd2_gateway_evidence_failures_total", { instance: GW2, reason: "store-failing" }, "0x40"),
    ],
    alert_rule_test: [
      expect_("9m", "Psd2GatewayEvidenceStoreFailing"),
      expect_("12m", "Psd2GatewayEvidenceStoreFailing", at(GW1, { severity: "critical" })),
      expect_(
        "12m",
        "Psd2GatewayEvidenceRecordsNotKept",
        at(GW1, { reason: "store-failing", severity: "warning" }),
      ),
      // Over 300 s from minute 14, for 5m.
      expect_("16m", "Psd2GatewayEvidenceCheckpointStale"),
      expect_("22m", "Psd2GatewayEvidenceCheckpointStale", at(GW1, { severity: "warning" })),
    ],
  },
  {
    name: "defects",
    interval: "1m",
    input_series: [
      series("psd2_gateway_defects_total", { instance: GW1, where: "TppVerifier" }, "0x10 1 1x40"),
      series("psd2_gateway_defects_total", { instance: GW2, where: "TppVerifier" }, "0x40"),
    ],
    alert_rule_test: [
      expect_("5m", "Psd2GatewayDefects"),
      expect_("15m", "Psd2GatewayDefects", at(GW1, { severity: "warning", where: "TppVerifier" })),
      // Fifteen minutes without a new one: resolved.
      expect_("40m", "Psd2GatewayDefects"),
    ],
  },
  {
    name: "upstream",
    interval: "1m",
    input_series: [
      // gw1: of 120 calls/min to the bank, 10 time out and 10 come back 503.
      requests(GW1, "forwarded", "200", "0+100x40"),
      requests(GW1, "forwarded", "503", "0+10x40"),
      requests(GW1, "upstream_error", "504", "0+10x40"),
      series("psd2_gateway_upstream_errors_total", { instance: GW1, kind: "timeout" }, "0+10x40"),
      // gw2: about 1 % of each: below both thresholds.
      requests(GW2, "forwarded", "200", "0+100x40"),
      requests(GW2, "forwarded", "500", "0+1x40"),
      requests(GW2, "upstream_error", "502", "0+1x40"),
      series("psd2_gateway_upstream_errors_total", { instance: GW2, kind: "bad_gateway" }, "0+1x40"),
    ],
    alert_rule_test: [
      expect_("8m", "Psd2GatewayUpstreamErrors", at(GW1, { severity: "critical" })),
      expect_("8m", "Psd2GatewayUpstream5xx"),
      expect_("20m", "Psd2GatewayUpstream5xx", at(GW1, { severity: "warning" })),
    ],
  },
  {
    name: "stale trust sources",
    interval: "1m",
    input_series: [
      // gw1: its register source never loads (critical: every request refused); its trusted list is fresh.
      trust("stale", GW1, "register", REGISTER, "1x30"),
      trust("stale", GW1, "trusted-list", TRUSTED_LIST, "0x30"),
      // gw2: the trusted list goes stale at minute 10.
      trust("stale", GW2, "trusted-list", TRUSTED_LIST, "0x9 1x20"),
      // gw1: one CRL goes stale at minute 6, another stays fresh.
      trust("stale", GW1, "crl", CRL, "0x5 1x30"),
      trust("stale", GW1, "crl", CRL_OK, "0x30"),
    ],
    alert_rule_test: [
      // for: 3m
      expect_("2m", "Psd2GatewayTrustSourceStale"),
      expect_(
        "5m",
        "Psd2GatewayTrustSourceStale",
        at(GW1, { kind: "register", source: REGISTER, severity: "critical" }),
      ),
      expect_(
        "15m",
        "Psd2GatewayTrustSourceStale",
        at(GW1, { kind: "register", source: REGISTER, severity: "critical" }),
        at(GW2, { kind: "trusted-list", source: TRUSTED_LIST, severity: "critical" }),
      ),
      // for: 5m, and a CRL is never a reason to page.
      expect_("9m", "Psd2GatewayCrlStale"),
      expect_("15m", "Psd2GatewayCrlStale", at(GW1, { kind: "crl", source: CRL, severity: "warning" })),
    ],
  },
  {
    name: "OCSP responders",
    interval: "1m",
    input_series: [
      // R1 fails every minute; R2 failed three times long ago and nobody has needed it since.
      trust("stale", GW1, "ocsp", OCSP, "1x40"),
      trust("failures", GW1, "ocsp", OCSP, "0+1x40"),
      trust("stale", GW1, "ocsp", OCSP_IDLE, "1x40"),
      trust("failures", GW1, "ocsp", OCSP_IDLE, "3x40"),
      // gw1: 3 of 13 requests a minute fail; gw2: 1 of 101; gw3: only errors, but 2 in 10 minutes.
      ocsp(GW1, "error", "0+3x40"),
      ocsp(GW1, "good", "0+10x40"),
      ocsp(GW2, "error", "0+1x40"),
      ocsp(GW2, "good", "0+100x40"),
      ocsp(GW3, "error", "0+0.2x40"),
    ],
    alert_rule_test: [
      expect_("3m", "Psd2GatewayOcspResponderFailing"),
      expect_(
        "10m",
        "Psd2GatewayOcspResponderFailing",
        at(GW1, { kind: "ocsp", source: OCSP, severity: "warning" }),
      ),
      // Refresh failures are about fetched sources: OCSP has its own two alerts.
      expect_("30m", "Psd2GatewayTrustSourceRefreshFailing"),
      expect_("8m", "Psd2GatewayOcspErrorRatioHigh"),
      expect_("15m", "Psd2GatewayOcspErrorRatioHigh", at(GW1, { severity: "warning" })),
    ],
  },
  {
    name: "trust source refreshes",
    interval: "1m",
    input_series: [
      // A CRL 50 min (3000 s) from its nextUpdate whose last refresh is 100 min old: refreshes fail.
      trust("next_update_timestamp_seconds", GW1, "crl", CRL, "3000x60"),
      trust("age_seconds", GW1, "crl", CRL, "6000+60x60"),
      trust("failures", GW1, "crl", CRL, "0+1x60"),
      // As close to its nextUpdate but refreshed a minute ago: the QTSP has not published yet.
      trust("next_update_timestamp_seconds", GW1, "crl", CRL_OK, "3000x60"),
      trust("age_seconds", GW1, "crl", CRL_OK, "60x60"),
      // A trusted list not refreshed for 2.5 h, but with months to go.
      trust("next_update_timestamp_seconds", GW1, "trusted-list", TRUSTED_LIST, `${180 * 86400}x60`),
      trust("age_seconds", GW1, "trusted-list", TRUSTED_LIST, "9000+60x60"),
      trust("failures", GW1, "register", REGISTER, "2x60"),
    ],
    alert_rule_test: [
      expect_("3m", "Psd2GatewayTrustSourceNextUpdateSoon"),
      expect_(
        "10m",
        "Psd2GatewayTrustSourceNextUpdateSoon",
        at(GW1, { kind: "crl", source: CRL, severity: "warning" }),
      ),
      // Past its nextUpdate it is stale (Psd2GatewayCrlStale), no longer "soon".
      expect_("55m", "Psd2GatewayTrustSourceNextUpdateSoon"),
      expect_("10m", "Psd2GatewayTrustSourceRefreshFailing"),
      expect_(
        "20m",
        "Psd2GatewayTrustSourceRefreshFailing",
        at(GW1, { kind: "crl", source: CRL, severity: "warning" }),
      ),
    ],
  },
  {
    name: "revocation status unknown",
    interval: "1m",
    input_series: [
      series("psd2_gateway_revocation_unknown_total", { instance: GW1, action: "refused" }, "0x5 1+1x30"),
      series("psd2_gateway_revocation_unknown_total", { instance: GW2, action: "refused" }, "0x40"),
      // gw2 runs with revocation.softFail: one certificate let through at minute 10.
      series("psd2_gateway_revocation_unknown_total", { instance: GW2, action: "allowed" }, "0x9 1x30"),
    ],
    alert_rule_test: [
      expect_("4m", "Psd2GatewayRevocationUnknownRefusals"),
      expect_("15m", "Psd2GatewayRevocationUnknownRefusals", at(GW1, { severity: "warning" })),
      expect_("5m", "Psd2GatewayRevocationSoftFailInUse"),
      expect_("12m", "Psd2GatewayRevocationSoftFailInUse", at(GW2, { severity: "warning" })),
      // Fifteen minutes without another: resolved.
      expect_("30m", "Psd2GatewayRevocationSoftFailInUse"),
    ],
  },
  {
    name: "backend pool exhausted",
    interval: "1m",
    input_series: [
      // gw1: requests wait for a backend connection from minute 5 on; gw2: a blip of two minutes.
      series(
        "psd2_gateway_backend_requests",
        { instance: GW1, backend: "core:8080", state: "queued" },
        "0x4 7x20",
      ),
      series(
        "psd2_gateway_backend_requests",
        { instance: GW2, backend: "core:8080", state: "queued" },
        "0x4 3 3 0x15",
      ),
    ],
    alert_rule_test: [
      expect_("8m", "Psd2GatewayBackendPoolExhausted"),
      expect_(
        "12m",
        "Psd2GatewayBackendPoolExhausted",
        at(GW1, { backend: "core:8080", severity: "warning" }),
      ),
    ],
  },
];

describe("promtool", () => {
  const work = mkdtempSync(join(tmpdir(), "psd2-alerts-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("the promtool test cases feed only real metrics and labels", () => {
    const problems = PROMTOOL_TESTS.flatMap((t) =>
      t.input_series
        .filter((s) => s.series.startsWith("psd2_gateway_"))
        .flatMap((s) => problemsOf({ where: `promtool test "${t.name}"`, expr: s.series })),
    );
    expect(problems).toEqual([]);
  });

  it("the promtool test cases exercise every alert", () => {
    const tested = new Set(PROMTOOL_TESTS.flatMap((t) => t.alert_rule_test.map((a) => a.alertname)));
    expect(alerts.map((a) => a.alert).filter((name) => !tested.has(name!))).toEqual([]);
  });

  itWithPromtool("promtool check rules accepts the rules", (promtool) => {
    const run = spawnSync(promtool, ["check", "rules", ALERTS_PATH], { encoding: "utf8" });
    expect(run.status, run.stdout + run.stderr).toBe(0);
  });

  itWithPromtool("promtool test rules: each alert fires at its threshold and not below", (promtool) => {
    // promtool compares annotations too: test the expressions, for and labels on a copy without them.
    const bare = {
      groups: ruleFile.groups.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _, ...r }) => r) })),
    };
    writeFileSync(join(work, "rules.yaml"), stringify(bare));
    writeFileSync(
      join(work, "tests.yaml"),
      stringify({ rule_files: ["rules.yaml"], evaluation_interval: "1m", tests: PROMTOOL_TESTS }),
    );
    const run = spawnSync(promtool, ["test", "rules", join(work, "tests.yaml")], { encoding: "utf8" });
    expect(run.status, run.stdout + run.stderr).toBe(0);
  });
});
