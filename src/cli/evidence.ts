/**
 * `psd2-gateway evidence`: the evidence folder, or the PostgreSQL database, read back
 * (src/evidence/). `verify` checks every
 * chain and checkpoint and names the first record altered, removed or reordered; `show` prints a
 * record; `bundle` writes a dispute bundle that openssl alone can check; `status` says how fresh
 * each chain is.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import {
  type ChainHead,
  type ChainReport,
  checkpointKeys,
  disputeBundle,
  type EvidenceFolder,
  findRecords,
  findResponses,
  isPostgresUrl,
  placeOf,
  postgresChainHeads,
  publicKeyOf,
  readEvidenceFolder,
  readPostgresEvidenceOf,
  responseBundle,
  verifyChain,
  verifyPostgresEvidence,
} from "../evidence/index.js";
import { defineCommand, USAGE_ERROR, UsageError } from "./command.js";
import { DEFAULT_CONFIG } from "./paths.js";

const SUBCOMMANDS = ["verify", "show", "bundle", "status"] as const;
/** A request and its response share an X-Request-ID: --kind picks one. */
const KINDS = ["request", "response"] as const;
type Kind = (typeof KINDS)[number];

export const evidenceCommand = defineCommand({
  name: "evidence",
  summary: "check, show and bundle the evidence kept of accepted requests",
  usage: `psd2-gateway evidence verify [<folder>|<postgres-url>] [--config <file>] [--json]
psd2-gateway evidence show --request-id <id> [--kind request|response] [--folder <folder>|<postgres-url>] [--config <file>] [--json]
psd2-gateway evidence bundle --request-id <id> --out <dir> [--kind request|response] [--folder <folder>|<postgres-url>] [--config <file>]
psd2-gateway evidence status [--folder <folder>|<postgres-url>] [--config <file>] [--json]

  <folder>, --folder    the evidence folder, or the database (postgres://user:password@host/db);
                        default evidence.folder or evidence.postgres.url of --config
  --config <file>       the gateway's configuration; default config/default.yaml
  --request-id <id>     the X-Request-ID of the record
  --kind <kind>         request or response: which of the records sharing the X-Request-ID (a request
                        and the response that answers it) show prints or bundle bundles
  --out <dir>           where the dispute bundle is written (made; must not hold one already)
  --json                print JSON

verify   checks every chain: each line canonical and holding the SHA-256 of the line before it,
         seq and files without gaps, every checkpoint's record count and signature. Names the
         first record altered, removed or reordered in each chain; exits 1 when there is one.
show     prints the records with this X-Request-ID: the request's, then its response's (--kind: one).
bundle   writes the record, the signer's certificate and public key, the signed bytes and the
         signature, the body when kept, the chain from the record to the checkpoint covering it,
         the certificate's CAs and validation report, the checkpoint's statement, signature and
         public key, and a README.txt saying how to check each with openssl alone. By default the
         request's record (ingress: with the response it signed), or, when there is none, the
         response's (egress: the bank's answer it checked); --kind response bundles the response.
status   each chain's files, records, last record and last checkpoint; exits 1 when a chain has a
         problem or the newest chain's last checkpoint is older than twice evidence.checkpointSeconds.
         A database is read by its chains' heads (the last checkpoint's signature checked, the
         gap lines summed; the whole chain is verify's), show and bundle by the request-id index.`,
  options: {
    config: { type: "string", path: "file" },
    folder: { type: "string", path: "folder-or-database" },
    "request-id": { type: "string" },
    kind: { type: "string" },
    out: { type: "string", path: "new-folder" },
    json: { type: "boolean", default: false },
  },
  allowPositionals: true,
  check(values, positionals) {
    const [sub, ...rest] = positionals;
    if (sub === undefined || !(SUBCOMMANDS as readonly string[]).includes(sub))
      throw new UsageError(`say one of ${SUBCOMMANDS.join(", ")}; see psd2-gateway evidence --help`);
    if (rest.length > (sub === "verify" ? 1 : 0))
      throw new UsageError(`unexpected argument '${rest.at(-1)}'`);
    if ((sub === "show" || sub === "bundle") && values["request-id"] === undefined)
      throw new UsageError(`${sub} needs --request-id`);
    if (sub === "bundle" && values.out === undefined) throw new UsageError("bundle needs --out <dir>");
    if (values.kind !== undefined && !(KINDS as readonly string[]).includes(values.kind))
      throw new UsageError(`--kind is request or response, not '${values.kind}'`);
    if (values.kind !== undefined && sub !== "show" && sub !== "bundle")
      throw new UsageError("--kind goes with show and bundle");
  },
  async run(values, positionals) {
    const [sub, given] = positionals as [(typeof SUBCOMMANDS)[number], string | undefined];
    const folder = given ?? values.folder ?? folderOfConfig(values.config);
    if (folder === undefined) return USAGE_ERROR;
    const json = values.json ?? false;
    const requestId = values["request-id"]!;
    const kind = values.kind as Kind | undefined;
    try {
      if (isPostgresUrl(folder)) {
        // A bank's table grows to millions of rows: show and bundle read by request id, status the
        // chains' heads, verify line by line as the pages arrive.
        switch (sub) {
          case "verify": {
            const read = await verifyPostgresEvidence(folder, publicKeyOf);
            return verifyFolder(read.folder, read.reports, json);
          }
          case "show":
            return show(await readPostgresEvidenceOf(folder, requestId), requestId, kind, json);
          case "bundle":
            return bundle(await readPostgresEvidenceOf(folder, requestId), requestId, kind, values.out!);
          case "status": {
            const read = await postgresChainHeads(folder, publicKeyOf);
            return status(read.folder, read.heads, values.config, json);
          }
        }
      }
      const read = readEvidenceFolder(folder);
      switch (sub) {
        case "verify":
          return verifyFolder(read.folder, reports(read), json);
        case "show":
          return show(read, requestId, kind, json);
        case "bundle":
          return bundle(read, requestId, kind, values.out!);
        case "status":
          return status(read.folder, reports(read), values.config, json);
      }
    } catch (error) {
      console.error(`psd2-gateway evidence: ${(error as Error).message}`);
      return 1;
    }
  },
});

function folderOfConfig(file: string | undefined): string | undefined {
  const config = loadConfigFile(file ?? DEFAULT_CONFIG);
  // Both modes keep evidence: ingress of requests and signed responses, egress of checked bank answers.
  const evidence = config.evidence;
  const folder = evidence?.store === "postgres" ? evidence.postgres?.url : evidence?.folder;
  if (folder === undefined)
    console.error(
      `psd2-gateway evidence: ${file ?? DEFAULT_CONFIG} keeps no evidence (no evidence.folder or evidence.postgres.url); name the folder or database`,
    );
  return folder;
}

function reports(read: EvidenceFolder): ChainReport[] {
  const key = checkpointKeys((id) => read.publicKeyPem(id));
  return read.chains.map((chain) => verifyChain(chain, key));
}

function verifyFolder(folder: string, all: readonly ChainReport[], json: boolean): number {
  const failed = all.filter((r) => r.problem);
  if (json) {
    console.log(JSON.stringify({ folder, ok: failed.length === 0, chains: all }, null, 2));
    return failed.length === 0 ? 0 : 1;
  }
  if (all.length === 0) console.log(`${folder}: no chains yet`);
  for (const r of all) {
    if (r.problem) {
      console.log(`FAILED ${r.chain}: ${r.problem.text}`);
      continue;
    }
    const tail =
      r.uncovered > 0
        ? `; ${r.uncovered} record${r.uncovered === 1 ? "" : "s"} after the last checkpoint (not yet signed)`
        : "";
    const retention = r.startsAtFile > 1 ? `; files before ${r.startsAtFile} removed by retention` : "";
    const gaps = r.dropped > 0 ? `; ${r.dropped} records not kept (gap lines)` : "";
    console.log(
      `ok     ${r.chain}: ${r.records} records in ${r.files} file${r.files === 1 ? "" : "s"}, ${r.checkpoints} checkpoints${tail}${retention}${gaps}`,
    );
  }
  if (failed.length > 0)
    console.log(
      `${failed.length} of ${all.length} chains failed: the evidence was altered, removed or reordered`,
    );
  return failed.length === 0 ? 0 : 1;
}

function show(read: EvidenceFolder, requestId: string, kind: Kind | undefined, json: boolean): number {
  // The request's record, then the response's (signed by ingress) when there is one; egress keeps responses only.
  const found = [
    ...(kind !== "response" ? findRecords(read.chains, requestId) : []),
    ...(kind !== "request" ? findResponses(read.chains, requestId) : []),
  ];
  if (found.length === 0) {
    console.error(`psd2-gateway evidence: no ${kind ? `${kind} ` : ""}record has X-Request-ID ${requestId}`);
    return 1;
  }
  for (const f of found) {
    if (json) console.log(f.at.text);
    else {
      console.log(`# ${placeOf(f.chain, f.at.file, f.at.lineNumber)}`);
      console.log(JSON.stringify(f.at.line, null, 2));
    }
  }
  return 0;
}

function bundle(read: EvidenceFolder, requestId: string, kind: Kind | undefined, out: string): number {
  const requests = kind === "response" ? [] : findRecords(read.chains, requestId);
  // Without --kind, the request's record when there is one; egress keeps only the bank's answers.
  const responses = kind === "request" || requests.length > 0 ? [] : findResponses(read.chains, requestId);
  const found = requests.length > 0 ? requests : responses;
  if (found.length === 0) {
    console.error(`psd2-gateway evidence: no ${kind ? `${kind} ` : ""}record has X-Request-ID ${requestId}`);
    return 1;
  }
  if (found.length > 1)
    console.error(
      `psd2-gateway evidence: ${found.length} ${requests.length > 0 ? "request" : "response"} records have X-Request-ID ${requestId}; bundling the first (chains/${found[0]!.chain.id})`,
    );
  const files = requests.length > 0 ? disputeBundle(read, requests[0]!) : responseBundle(read, responses[0]!);
  if (typeof files === "string") {
    console.error(`psd2-gateway evidence: ${files}`);
    return 1;
  }
  mkdirSync(out, { recursive: true });
  for (const [name, content] of files) {
    const path = join(out, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content, { flag: "wx" });
  }
  console.log(
    `wrote ${files.size} files to ${out}; ${join(out, "README.txt")} says how to check them with openssl`,
  );
  return 0;
}

function status(
  folder: string,
  all: readonly ChainHead[],
  configFile: string | undefined,
  json: boolean,
): number {
  let checkpointSeconds = 60;
  try {
    const config = loadConfigFile(configFile ?? DEFAULT_CONFIG);
    if (config.evidence) checkpointSeconds = config.evidence.checkpointSeconds;
  } catch {
    // The folder alone: the default interval.
  }
  const now = Date.now();
  const newest = [...all].sort((a, b) =>
    (b.lastCheckpointTime ?? "").localeCompare(a.lastCheckpointTime ?? ""),
  )[0];
  const age = (r: ChainHead) =>
    r.lastCheckpointTime === undefined
      ? undefined
      : Math.round((now - Date.parse(r.lastCheckpointTime)) / 1000);
  const stale =
    newest !== undefined && !newest.endsWithCheckpoint && (age(newest) ?? Infinity) > 2 * checkpointSeconds;
  const ok = !stale && all.every((r) => !r.problem);
  if (json) {
    console.log(
      JSON.stringify(
        { folder, ok, chains: all.map((r) => ({ ...r, checkpointAgeSeconds: age(r) })) },
        null,
        2,
      ),
    );
    return ok ? 0 : 1;
  }
  if (all.length === 0) console.log(`${folder}: no chains yet`);
  for (const r of all) {
    const state = r.problem
      ? "FAILED"
      : r.endsWithCheckpoint
        ? "closed"
        : r === newest && stale
          ? "STALE"
          : "open";
    console.log(`${state.padEnd(6)} ${r.chain}`);
    console.log(
      `${INDENT}${r.records} records in ${r.files} file${r.files === 1 ? "" : "s"}; last record ${r.lastTime ?? "none"}; last checkpoint ${
        r.lastCheckpointTime === undefined ? "none" : `${r.lastCheckpointTime} (${age(r)} s ago)`
      }`,
    );
    if (r.dropped > 0) console.log(`${INDENT}${r.dropped} records not kept (onFailure: continue)`);
    if (r.problem) console.log(`${INDENT}${r.problem.text}`);
  }
  if (stale)
    console.log(
      `the newest chain's last checkpoint is older than ${2 * checkpointSeconds} s: its gateway stopped without closing it, or its store is failing`,
    );
  return ok ? 0 : 1;
}

const INDENT = " ".repeat(7);
