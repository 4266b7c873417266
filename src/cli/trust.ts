/**
 * `psd2-gateway trust status`: what a running gateway trusts, from where, and how fresh it is
 * (its admin listener's /trust): CRLs, OCSP responders, register sources and trusted lists.
 */

import { request } from "undici";
import { loadConfigFile } from "../config/load.js";
import type { TrustSourceStatus } from "../trust/source-status.js";
import { defineCommand, USAGE_ERROR } from "./command.js";
import { DEFAULT_CONFIG } from "./paths.js";

export const trustCommand = defineCommand({
  name: "trust",
  summary: "show what a running gateway trusts, from where, and how fresh it is",
  usage: `psd2-gateway trust status [--config <file>] [--json]

  --config <file>  the running gateway's configuration: where its admin listener is
                   (admin.host, admin.port); default config/default.yaml
  --json           print the admin listener's /trust answer as JSON

Prints one line per source: CRLs (configured and the certificates' distribution points), OCSP
responders, register sources and trusted lists, each with its state, age, next update, size and
last error. Exits 0 when every source is fresh, 1 when one is stale or the gateway does not answer.`,
  options: {
    config: { type: "string", path: "file" },
    json: { type: "boolean", default: false },
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
    const host = ["0.0.0.0", "::"].includes(config.admin.host) ? "127.0.0.1" : config.admin.host;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${config.admin.port}/trust`;
    let answer: { now: string; sources: TrustSourceStatus[] };
    try {
      const response = await request(url, { headersTimeout: 2_000, bodyTimeout: 2_000 });
      const text = await response.body.text();
      if (response.statusCode !== 200) {
        console.error(`psd2-gateway trust: ${url} answered ${response.statusCode}: ${text}`);
        return 1;
      }
      answer = JSON.parse(text) as typeof answer;
    } catch (error) {
      console.error(`psd2-gateway trust: ${url} did not answer (${(error as Error).message})`);
      return 1;
    }
    if (values.json) console.log(JSON.stringify(answer, null, 2));
    else console.log(renderTrustStatus(answer.sources, Date.parse(answer.now)));
    return answer.sources.some((s) => s.stale) ? 1 : 0;
  },
});

/** One block per source, the stale ones first. */
export function renderTrustStatus(sources: readonly TrustSourceStatus[], now: number): string {
  if (sources.length === 0) return "no trust sources yet (no certificate has been checked)";
  const ordered = [...sources].sort(
    (a, b) => Number(b.stale) - Number(a.stale) || a.kind.localeCompare(b.kind),
  );
  return ordered
    .map((s) => {
      const state = s.stale ? "STALE" : s.lastError ? "failing (last copy fresh)" : "fresh";
      const lines = [
        `${s.kind.padEnd(12)} ${state.padEnd(6)} ${s.source}`,
        `             last success ${ago(s.lastSuccess, now)}; next update ${
          s.nextUpdate === undefined ? "none given" : new Date(s.nextUpdate).toISOString()
        }; ${s.size} entries; ${s.failures} failures`,
      ];
      if (s.lastError)
        lines.push(
          `             last error: ${s.lastError}${s.failingSince ? ` (since ${new Date(s.failingSince).toISOString()})` : ""}`,
        );
      return lines.join("\n");
    })
    .join("\n");
}

function ago(at: number | undefined, now: number): string {
  if (at === undefined) return "never";
  const seconds = Math.round((now - at) / 1000);
  return `${new Date(at).toISOString()} (${seconds} s ago)`;
}
