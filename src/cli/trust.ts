/**
 * `psd2-gateway trust status`: what a running gateway trusts, from where, and how fresh it is
 * (its admin listener's /trust): CRLs, OCSP responders, register sources and trusted lists; and
 * with `--certificate`, one certificate's validation report as the gateway judges it now.
 */

import { readFileSync } from "node:fs";
import { request } from "undici";
import { loadConfigFile } from "../config/load.js";
import type { ValidationReport } from "../eidas/index.js";
import type {
  ClusterTrustReport,
  CrlDetails,
  OcspCacheStatus,
  RelayedFetchStatus,
  TrustReport,
  TrustSourceStatus,
} from "../trust/source-status.js";
import { defineCommand, USAGE_ERROR } from "./command.js";
import { DEFAULT_CONFIG } from "./paths.js";
import { renderValidationReport } from "./validation-report.js";

export const trustCommand = defineCommand({
  name: "trust",
  summary: "show what a running gateway trusts, from where, and how fresh it is",
  usage: `psd2-gateway trust status [--config <file>] [--json]
psd2-gateway trust status --certificate <file> [--purpose qseal|qwac] [--config <file>] [--json]

  --config <file>       the running gateway's configuration: where its admin listener is
                        (admin.host, admin.port); default config/default.yaml
  --json                print the admin listener's answer as JSON
  --certificate <file>  judge this certificate (PEM or DER) as the running gateway judges a
                        TPP's now, and print its validation report (ETSI TS 119 102-2 terms:
                        indication, path with each certificate's revocation evidence,
                        trusted-list service, register entry); exits 0 when it passes, 1 when not
  --purpose <p>         qseal (a signing certificate, default) or qwac (a TLS client certificate)

Prints a block per source: CRLs (files in trust.crlDir, revocation.crl.urls and the certificates'
distribution points, with issuer, thisUpdate, nextUpdate and age), OCSP responders, register
sources and trusted lists, each with its state, last success, size, failures and last error; then
the OCSP answer cache (entries, hits, misses, evictions). With workers > 1 the primary answers: what
it fetched for the workers (URL, when, bytes, asks, upstream fetches, last error), then each worker's
view. Exits 0 when every source is fresh (in every worker), 1 when one is stale, a worker does not
answer, or the gateway does not answer.`,
  options: {
    config: { type: "string", path: "file" },
    json: { type: "boolean", default: false },
    certificate: { type: "string", path: "file" },
    purpose: { type: "string" },
  },
  allowPositionals: true,
  async run(values, positionals) {
    if (positionals.length !== 1 || positionals[0] !== "status") {
      console.error("psd2-gateway trust: say `psd2-gateway trust status`; see psd2-gateway trust --help");
      return USAGE_ERROR;
    }
    const config = loadConfigFile(values.config ?? DEFAULT_CONFIG);
    if (!config.admin.enabled) {
      console.error("psd2-gateway trust: admin.enabled is false in this configuration; nothing to ask");
      return 1;
    }
    if (config.admin.tls) {
      // Mutual TLS: this command holds no client certificate from admin.tls.clientCa.
      console.error(
        "psd2-gateway trust: the admin listener requires a client certificate (admin.tls); ask it with curl --cert <yours> --key <yours> --cacert <its CA>",
      );
      return 1;
    }
    const host = ["0.0.0.0", "::"].includes(config.admin.host) ? "127.0.0.1" : config.admin.host;
    const admin = `http://${host.includes(":") ? `[${host}]` : host}:${config.admin.port}`;
    if (values.certificate !== undefined) {
      const purpose = values.purpose ?? "qseal";
      if (purpose !== "qseal" && purpose !== "qwac") {
        console.error("psd2-gateway trust: --purpose is qseal or qwac");
        return USAGE_ERROR;
      }
      const report = await ask<ValidationReport>(`${admin}/trust/certificate?purpose=${purpose}`, {
        method: "POST",
        body: readFileSync(values.certificate),
        // POST needs the bearer token where admin.tokenFile is set (observability/admin-guard.ts).
        ...(config.admin.tokenFile !== undefined
          ? { authorization: `Bearer ${readFileSync(config.admin.tokenFile, "utf8").trim()}` }
          : {}),
        // A cold certificate waits on OCSP or a CRL as a first request would.
        timeoutMs: 30_000,
      });
      if (report === undefined) return 1;
      console.log(values.json ? JSON.stringify(report, null, 2) : renderValidationReport(report));
      return report.indication === "TOTAL_PASSED" ? 0 : 1;
    }
    const answer = await ask<(TrustReport | ClusterTrustReport) & { now: string }>(`${admin}/trust`, {
      timeoutMs: 2_000,
    });
    if (answer === undefined) return 1;
    const now = Date.parse(answer.now);
    if (values.json) console.log(JSON.stringify(answer, null, 2));
    else if ("workers" in answer) console.log(renderClusterTrustStatus(answer, now));
    else console.log(renderTrustStatus(answer, now));
    return trustStatusOk(answer) ? 0 : 1;
  },
});

/** The admin listener's JSON answer, or undefined once it has said why there is none. */
async function ask<T>(
  url: string,
  options: { method?: "POST"; body?: Buffer; authorization?: string; timeoutMs: number },
): Promise<T | undefined> {
  try {
    const response = await request(url, {
      method: options.method ?? "GET",
      ...(options.body ? { body: options.body } : {}),
      ...(options.authorization ? { headers: { authorization: options.authorization } } : {}),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) {
      console.error(`psd2-gateway trust: ${url} answered ${response.statusCode}: ${text}`);
      return undefined;
    }
    return JSON.parse(text) as T;
  } catch (error) {
    console.error(`psd2-gateway trust: ${url} did not answer (${(error as Error).message})`);
    return undefined;
  }
}

/** No source stale; with workers, in every worker, each of which answered. */
export function trustStatusOk(answer: TrustReport | ClusterTrustReport): boolean {
  const fresh = (report: TrustReport) => !report.sources.some((s) => s.stale);
  if ("workers" in answer) return answer.workers.every((w) => "sources" in w && fresh(w));
  return fresh(answer);
}

/** The primary's fetches for its workers, then each worker's view as a single gateway's. */
export function renderClusterTrustStatus(report: ClusterTrustReport, now: number): string {
  const { fetches } = report.primary;
  const blocks = [
    `primary: ${fetches.length} document${fetches.length === 1 ? "" : "s"} fetched for the workers`,
    ...fetches.map((f) => fetchLines(f, now)),
  ];
  for (const w of report.workers) {
    const view = "error" in w ? `no answer: ${w.error}` : renderTrustStatus(w, now);
    blocks.push(`\nworker ${w.pid ?? "?"}:`, view.replace(/^/gm, "  "));
  }
  if (report.workers.length === 0) blocks.push("\nno worker is running");
  return blocks.join("\n");
}

function fetchLines(f: RelayedFetchStatus, now: number): string {
  const held =
    f.fetchedAt === undefined ? "no copy held" : `fetched ${ago(f.fetchedAt, now)}, ${f.bytes} bytes`;
  const lines = [
    `${"fetch".padEnd(12)} ${f.method.padEnd(6)} ${f.url}`,
    `${INDENT}${held}; ${f.asks} asks, ${f.upstreamFetches} upstream fetches`,
  ];
  if (f.lastError) lines.push(`${INDENT}last error: ${f.lastError}`);
  return lines.join("\n");
}

/** One block per source, the stale ones first, then the OCSP cache. */
export function renderTrustStatus(report: TrustReport, now: number): string {
  const { sources, ocspCache } = report;
  const ordered = [...sources].sort(
    (a, b) => Number(b.stale) - Number(a.stale) || a.kind.localeCompare(b.kind),
  );
  const blocks = ordered.map((s) => {
    const state = s.stale ? "STALE" : s.lastError ? "failing (last copy fresh)" : "fresh";
    const lines = [`${s.kind.padEnd(12)} ${state.padEnd(6)} ${s.source}`];
    if (s.held) lines.push(`${INDENT}holds ${s.held}`);
    if (s.crl) lines.push(...crlLines(s, s.crl, now));
    const nextUpdate = s.crl
      ? ""
      : `; next update ${s.nextUpdate === undefined ? "none given" : iso(s.nextUpdate)}`;
    lines.push(
      `${INDENT}last success ${ago(s.lastSuccess, now)}${nextUpdate}; ${s.size} entries; ${s.failures} failures`,
    );
    if (s.lastError)
      lines.push(
        `${INDENT}last error: ${s.lastError}${s.failingSince ? ` (since ${iso(s.failingSince)})` : ""}`,
      );
    return lines.join("\n");
  });
  if (blocks.length === 0) blocks.push("no trust sources yet (no certificate has been checked)");
  if (ocspCache) blocks.push(ocspCacheLine(ocspCache, sources.filter((s) => s.kind === "ocsp").length));
  return blocks.join("\n");
}

const INDENT = " ".repeat(13);

const ORIGIN: Record<CrlDetails["origin"], string> = {
  file: "file in trust.crlDir",
  "configured-url": "revocation.crl.urls",
  "distribution-point": "certificates' distribution point",
};

/** Where the list comes from, whose it is, when it was issued and until when it proves anything. */
function crlLines(s: TrustSourceStatus, crl: CrlDetails, now: number): string[] {
  if (crl.issuer === undefined || crl.thisUpdate === undefined)
    return [`${INDENT}${ORIGIN[crl.origin]}; no list held`];
  const published = crl.nextUpdate === undefined ? "none given" : iso(crl.nextUpdate);
  // The status's nextUpdate carries revocation.crl.graceSeconds on top of the published one.
  const grace =
    crl.nextUpdate !== undefined && s.nextUpdate !== undefined && s.nextUpdate > crl.nextUpdate
      ? ` (+ ${Math.round((s.nextUpdate - crl.nextUpdate) / 1000)} s grace)`
      : "";
  return [
    `${INDENT}${ORIGIN[crl.origin]}; issuer ${crl.issuer}`,
    `${INDENT}thisUpdate ${iso(crl.thisUpdate)} (${seconds(now - crl.thisUpdate)} s old); nextUpdate ${published}${grace}`,
  ];
}

function ocspCacheLine(c: OcspCacheStatus, responders: number): string {
  return `${"ocsp cache".padEnd(12)} ${c.entries} answers held (max ${c.maxEntries}); ${c.hits} hits, ${
    c.misses
  } misses, ${c.evictions} evictions; ${responders} responder${responders === 1 ? "" : "s"}`;
}

function ago(at: number | undefined, now: number): string {
  if (at === undefined) return "never";
  return `${iso(at)} (${seconds(now - at)} s ago)`;
}

function iso(at: number): string {
  return new Date(at).toISOString();
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}
